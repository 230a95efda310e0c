"""Sanity bounds over every hardware, fabric and price entry; each carries its source and note."""

import pytest

from mlsysim import Hardware, Infrastructure, Systems, ureg
from mlsysim.core.units import to_canonical
from mlsysim.hardware.types import Accelerator, Fabric, Node, Price
from mlsysim.physics.precision import COMPUTE_FORMATS

ACCELERATORS = list(Hardware.walk())
NODES = list(Systems.Nodes.walk())
FABRICS = list(Systems.Fabrics.walk())
PRICES = list(Infrastructure.Pricing.walk("Pricing."))
GRIDS = list(Infrastructure.Grid.walk("Grid."))
FAILURES = list(Infrastructure.Reliability.walk("Reliability."))


def test_registries_have_the_contract_entries():
    for name in (
        "H100", "H800", "H200", "A100", "A100_40GB", "V100", "B200", "GB200", "GB300", "MI300X"
    ):
        assert isinstance(getattr(Hardware.Cloud, name), Accelerator)
    for name in (
        "DGX_H100", "DGX_A100", "DGX_B200", "DGX1_V100", "DGX2", "HGX_B200",
        "HGX_H800", "GB200_NVL72", "GB300_NVL72",
    ):
        assert isinstance(getattr(Systems.Nodes, name), Node)
    for name in (
        "Ethernet_10G",
        "Ethernet_25G",
        "Ethernet_40G",
        "Ethernet_100G",
        "Ethernet_200G",
        "Ethernet_400G",
        "Ethernet_800G",
        "InfiniBand_EDR",
        "InfiniBand_HDR",
        "InfiniBand_NDR",
        "InfiniBand_XDR",
        "NVLink2",
        "NVLink3",
        "NVLink4",
        "NVLink5",
        "NVLink4_H800",
        "PCIe3_x16",
        "PCIe4_x16",
        "PCIe5_x16",
    ):
        assert isinstance(getattr(Systems.Fabrics, name), Fabric)
    assert isinstance(Infrastructure.Pricing.Cloud.GpuTrainingPerHour, Price)


def test_contract_figures():
    assert Hardware.Cloud.H100.nvlink.bandwidth_per_direction == ureg.Quantity(450, "GB/s")
    assert Hardware.Cloud.H100.nvlink.bandwidth == ureg.Quantity(900, "GB/s")
    assert Systems.Nodes.DGX_H100.accelerators_per_node == 8
    assert Systems.Fabrics.Ethernet_10G.bandwidth == ureg.Quantity(10, "Gbps")
    assert Infrastructure.Pricing.Cloud.GpuTrainingPerHour.rate == ureg.Quantity(4, "USD/hour")


@pytest.mark.parametrize(
    "path, entry", ACCELERATORS + NODES + FABRICS + PRICES + GRIDS + FAILURES
)
def test_every_entry_cites_a_source_and_says_what_the_figure_is(path, entry):
    assert len(entry.source) > 10, path
    assert len(entry.note) > 10, path


@pytest.mark.parametrize("path, gpu", ACCELERATORS)
def test_accelerator_bounds(path, gpu):
    assert 8e9 <= to_canonical(gpu.memory.capacity, "data") <= 512e9
    assert 100e9 <= to_canonical(gpu.memory.bandwidth, "bandwidth") <= 20e12
    per_dir = to_canonical(gpu.nvlink.bandwidth_per_direction, "bandwidth")
    assert 10e9 <= per_dir <= 2e12
    assert to_canonical(gpu.nvlink.bandwidth, "bandwidth") == pytest.approx(2 * per_dir)
    assert len(gpu.nvlink.source) > 10 and len(gpu.nvlink.note) > 10
    assert {"fp32", "fp16"} <= set(gpu.dense_flops) <= set(COMPUTE_FORMATS)
    rates = {p: to_canonical(gpu.peak_flops(p), "compute_rate") for p in gpu.dense_flops}
    assert all(5e12 <= r <= 20e15 for r in rates.values()), rates
    # tensor rates never fall below the vector fp32 rate; fewer bits are never slower
    assert all(rates[p] >= rates["fp32"] for p in rates)
    for low, high in (
        ("fp8", "fp16"), ("int8", "fp16"), ("fp16", "tf32"), ("bf16", "tf32"),
        ("mxfp8", "fp16"), ("fp6", "fp16"), ("fp4", "fp8"), ("nvfp4", "fp8"),
    ):
        if low in rates and high in rates:
            assert rates[low] >= rates[high], (low, high)


def test_peak_flops_by_precision_and_a_clear_error_for_an_unsupported_one():
    from mlsysim import InputError

    h100 = Hardware.Cloud.H100
    assert h100.peak_flops("bf16") == ureg.Quantity(989.4, "Tflop/s")
    assert h100.peak_flops("BF16") is h100.peak_flops("bf16")
    assert Hardware.Cloud.A100.peak_flops("tf32") == ureg.Quantity(156, "Tflop/s")
    with pytest.raises(
        InputError, match=r"precision 'fp8'.*supported: fp32, tf32, fp16, bf16, int8"
    ):
        Hardware.Cloud.A100.peak_flops("fp8")
    with pytest.raises(InputError, match="'int4'"):
        h100.peak_flops("int4")


def test_memory_bandwidth_is_a_quantity():
    assert Hardware.Cloud.H100.memory.bandwidth == ureg.Quantity(3.35, "TB/s")


@pytest.mark.parametrize("path, node", NODES)
def test_node_bounds(path, node):
    assert 1 <= node.accelerators_per_node <= 72
    assert node.accelerators_per_node <= node.domain_size <= 576
    assert node.domain_size % node.accelerators_per_node == 0
    assert 1 <= node.nics_per_node <= 64
    assert 10e9 <= to_canonical(node.intra_node_bw, "bandwidth") <= 2e12
    assert 1e9 <= to_canonical(node.nic_bandwidth, "bandwidth") <= 200e9
    # the node's intra link never beats its accelerators' own link
    assert node.intra_node_bw <= node.accelerator.nvlink.bandwidth_per_direction
    # every node names its NIC technology and its intra link, whose figures it carries
    assert isinstance(node.nic_fabric, Fabric) and node.nic_bandwidth == node.nic_fabric.bandwidth
    assert isinstance(node.intra_fabric, Fabric) and node.intra_latency == node.intra_fabric.latency
    assert 0 <= to_canonical(node.intra_latency, "time") <= 100e-6
    # all the node's network adapters together: 10 Gb/s to 6.4 Tb/s per node
    total = node.nics_per_node * to_canonical(node.nic_bandwidth, "bandwidth")
    assert 1.25e9 <= total <= 800e9
    if node.price is not None:
        assert isinstance(node.price, Price)
        # a node-hour costs between 1 and 50 USD per accelerator
        per_gpu = to_canonical(node.price.rate, "money_rate") / node.accelerators_per_node
        assert 1 <= per_gpu <= 50


def test_contract_node_figures():
    node = Systems.Nodes.DGX_H100
    assert node.accelerator is Hardware.Cloud.H100
    assert node.intra_node_bw == ureg.Quantity(450, "GB/s")
    assert node.nics_per_node == 8 and node.nic_bandwidth == ureg.Quantity(400, "Gbps")
    assert node.nic_fabric is Systems.Fabrics.InfiniBand_NDR
    assert node.price is None  # sold, not rented: no public hourly price
    p5 = Systems.Nodes.AWS_p5_48xlarge
    assert p5.price is Infrastructure.Pricing.Cloud.AWS_p5_48xlarge
    assert p5.price.rate == ureg.Quantity(98.32, "USD/hour")


@pytest.mark.parametrize("path, fabric", FABRICS)
def test_fabric_bounds(path, fabric):
    assert 1e9 <= to_canonical(fabric.bandwidth, "bandwidth") <= 2e12
    assert 0 <= to_canonical(fabric.latency, "time") <= 100e-6


@pytest.mark.parametrize("path, price", PRICES)
def test_price_bounds(path, price):
    assert 0.1 <= to_canonical(price.rate, "money_rate") <= 1000


def test_lookup_by_name_is_case_insensitive_and_errors_list_names():
    from mlsysim import UnknownNameError

    assert Hardware.get("h100") is Hardware.Cloud.H100
    assert Systems.get("Nodes.DGX_H100") is Systems.Nodes.DGX_H100
    with pytest.raises(UnknownNameError, match="H100"):
        Hardware.get("Z9000")


@pytest.mark.parametrize("path, gpu", ACCELERATORS)
def test_accelerator_power_is_a_datasheet_tdp_with_its_source(path, gpu):
    assert gpu.power is not None, path
    assert 200 <= to_canonical(gpu.power.tdp, "power") <= 1500
    assert len(gpu.power.source) > 10
    assert "TDP" in gpu.power.note or "power" in gpu.power.note


def test_contract_tdps():
    assert Hardware.Cloud.H100.power.tdp == ureg.Quantity(700, "W")
    assert Hardware.Cloud.A100.power.tdp == ureg.Quantity(400, "W")
    assert Hardware.Cloud.V100.power.tdp == ureg.Quantity(300, "W")


@pytest.mark.parametrize("path, grid", GRIDS)
def test_grid_bounds(path, grid):
    g_per_kwh = to_canonical(grid.intensity, "carbon_intensity") * 1000 * 3.6e6
    assert 10 <= g_per_kwh <= 1200
    assert 2015 <= grid.year <= 2030


@pytest.mark.parametrize("path, failure", FAILURES)
def test_failure_rate_bounds(path, failure):
    per_hour = to_canonical(failure.rate, "event_rate") * 3600
    per_device = per_hour / failure.devices_per_node if failure.per == "node" else per_hour
    assert 1e-6 <= per_device <= 1e-3  # an MTBF per device of 1,000 to 1,000,000 hours


def test_failure_rates_are_the_published_counts():
    """419 and 466 interruptions in 54 days on 16,384 GPUs; 2 of 128 machines a day; 105 in 60
    days on 124 nodes."""
    rel = Infrastructure.Reliability
    per_hour = {k: to_canonical(e.rate, "event_rate") * 3600 for k, e in rel.entries().items()}
    assert per_hour["Llama3_405B_unexpected"] == pytest.approx(419 / (16_384 * 54 * 24), rel=1e-4)
    assert per_hour["Llama3_405B_all"] == pytest.approx(466 / (16_384 * 54 * 24), rel=1e-4)
    assert per_hour["OPT_175B_chronicles"] == pytest.approx(2 / (128 * 24), rel=1e-4)
    assert per_hour["OPT_175B_paper"] == pytest.approx(105 / (124 * 60 * 24), rel=1e-4)


def test_grid_intensities_are_the_published_figures():
    grid = Infrastructure.Grid
    assert grid.US_average_LLaMA2023.intensity == ureg.Quantity(385, "g/kWh")
    assert grid.US_average_Patterson2021.intensity == ureg.Quantity(429, "g/kWh")
    assert grid.France_BLOOM.intensity == ureg.Quantity(57, "g/kWh")


def test_a_users_grid_and_failure_rate_load_and_bad_ones_name_the_field(tmp_path):
    from mlsysim import ScenarioFileError, load_registry
    from mlsysim.core.registry import reset_registry

    good = tmp_path / "site.toml"
    good.write_text(
        '[grids.MySite]\nintensity = "120 g/kWh"\nyear = 2025\nsource = "utility bill 2025"\n'
        'note = "location-based annual average"\n'
        '[failures.MyCluster]\nrate = "1e-4 failures/hour"\nper = "node"\ndevices_per_node = 8\n'
        'source = "our scheduler logs 2025"\nnote = "node failures per node-hour"\n'
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[failures.Odd]\nrate = "1e-4 failures/hour"\nper = "rack"\ndevices_per_node = 8\n'
        'source = "nowhere in particular"\nnote = "a rate per rack"\n'
    )
    try:
        load_registry(good)
        assert Infrastructure.Grid.MySite.intensity == ureg.Quantity(120, "g/kWh")
        assert Infrastructure.Reliability.MyCluster.per == "node"
        with pytest.raises(ScenarioFileError, match=r"bad.toml:\d+: failures.Odd.per: expected"):
            load_registry(bad)
    finally:
        reset_registry()
