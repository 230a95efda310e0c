"""The accelerators of the published runs: peaks per number format, memory, links and compute
units, each sourced; the relations the datasheets state between them; the figures the nodes and
scenarios read before these entries were added, unchanged."""

import pytest

from mlsysim import Q_, Hardware, InputError, Models, Systems, ureg
from mlsysim.core.registry import reset_registry
from mlsysim.core.units import to_canonical
from mlsysim.physics.precision import (
    BYTES_PER_ELEMENT,
    COMPUTE_FORMATS,
    check_compute_format,
    check_precision,
)

ACCELERATORS = list(Hardware.walk())
CLOUD = Hardware.Cloud

HOPPER = ("H100", "H800", "H200")
BLACKWELL = ("B200", "GB200", "GB300")


def peak(name, fmt):
    return to_canonical(getattr(CLOUD, name).peak_flops(fmt), "compute_rate")


@pytest.mark.parametrize("path, gpu", ACCELERATORS)
def test_every_figure_of_an_accelerator_carries_its_source_and_what_it_is(path, gpu):
    parts = [gpu, gpu.nvlink, gpu.power, gpu.compute_units]
    for part in (p for p in parts if p is not None):
        assert len(part.source) > 10 and len(part.note) > 10, (path, part.name)
    assert "per GPU" in gpu.note, path  # per device, never per superchip or rack
    assert "dense" in gpu.note or "sparsity" in gpu.note, path  # which peak it is
    assert "per direction" in gpu.nvlink.note, path


@pytest.mark.parametrize("path, gpu", ACCELERATORS)
def test_compute_units_are_sourced_where_a_document_states_them(path, gpu):
    # every entry states its count: a vendor document, or where NVIDIA states none a cited measurement
    # (B200 and GB200: Chips and Cheese; H800: DeepSeek-V3's report; H200: the ML Engineering Open Book)
    name = path.split(".")[-1]
    units = gpu.compute_units
    assert units is not None and 60 <= units.count <= 320
    kind = "compute units (CUs)" if name.startswith("MI") else "streaming multiprocessors (SMs)"
    assert units.name == kind and units.source


def test_compute_unit_counts_are_the_documented_ones():
    counts = {k: getattr(CLOUD, k).compute_units.count for k in (
        "V100", "A100", "A100_40GB", "H100", "H800", "H200", "GB300", "MI300X")}
    assert counts == {"V100": 80, "A100": 108, "A100_40GB": 108, "H100": 132, "H800": 132, "H200": 132,
                      "GB300": 160, "MI300X": 304}


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_fp8_dense_peak_is_twice_bf16_on_hopper_and_blackwell(name):
    assert peak(name, "fp8") == pytest.approx(2 * peak(name, "bf16"), rel=1e-4)
    assert peak(name, "fp16") == peak(name, "bf16")


@pytest.mark.parametrize("name", BLACKWELL)
def test_blackwell_block_scaled_formats_run_at_their_element_formats_rate(name):
    assert peak(name, "mxfp8") == peak(name, "fp8") == peak(name, "fp6")
    assert peak(name, "nvfp4") == peak(name, "fp4")
    assert peak(name, "fp4") >= 2 * peak(name, "fp8")


@pytest.mark.parametrize("name", ("H100", "H800", "H200", "A100", "A100_40GB", "V100", "MI300X"))
def test_formats_without_hardware_support_are_absent_and_the_error_lists_those_present(name):
    gpu = getattr(CLOUD, name)
    for fmt in ("mxfp8", "nvfp4", "fp4", "fp6"):
        with pytest.raises(InputError, match=rf"precision '{fmt}'; supported: fp32, ") as info:
            gpu.peak_flops(fmt)
        assert info.value.field == "precision"
        assert "mxfp8" not in str(info.value).split("supported:")[1]


def test_the_error_for_a_missing_format_lists_every_stored_one():
    with pytest.raises(
        InputError,
        match=r"NVIDIA GB300 .* 'int8'; supported: fp32, tf32, fp16, bf16, fp8, mxfp8, fp6, fp4, "
        r"nvfp4$",
    ):
        CLOUD.GB300.peak_flops("int8")
    with pytest.raises(InputError, match="'fp7'"):
        CLOUD.B200.peak_flops("fp7")


def test_h800_is_the_h100_sxm_with_a_slower_nvlink():
    h100, h800 = CLOUD.H100, CLOUD.H800
    assert h800.dense_flops == h100.dense_flops
    assert h800.memory == h100.memory
    assert h800.compute_units.count == h100.compute_units.count
    assert h800.power.tdp == h100.power.tdp
    assert h800.nvlink.bandwidth_per_direction < h100.nvlink.bandwidth_per_direction
    assert h800.nvlink.bandwidth == ureg.Quantity(400, "GB/s")


def test_h200_is_the_h100_sxm_with_more_and_faster_memory():
    h100, h200 = CLOUD.H100, CLOUD.H200
    assert h200.dense_flops == h100.dense_flops and h200.nvlink.bandwidth == h100.nvlink.bandwidth
    assert h200.memory.capacity == ureg.Quantity(141, "GB")
    assert h200.memory.bandwidth == ureg.Quantity(4.8, "TB/s")


def test_gb200_runs_above_b200_and_gb300_above_gb200_in_fp4():
    """GB200's GPUs run at up to 1,200 W, HGX B200's at 1,000 W: every tensor rate is higher
    (Blackwell technical brief); Blackwell Ultra has 1.5x Blackwell's dense NVFP4 (NVIDIA blog)."""
    for fmt in ("tf32", "bf16", "fp8", "mxfp8", "fp4", "nvfp4", "int8"):
        assert peak("GB200", fmt) > peak("B200", fmt), fmt
    assert peak("GB300", "nvfp4") == pytest.approx(1.5 * peak("GB200", "nvfp4"))
    assert peak("GB300", "bf16") == peak("GB200", "bf16")
    assert CLOUD.GB300.memory.capacity > CLOUD.GB200.memory.capacity > CLOUD.B200.memory.capacity
    for name in BLACKWELL:
        assert getattr(CLOUD, name).nvlink.bandwidth_per_direction == ureg.Quantity(900, "GB/s")


def test_superchip_entries_are_per_gpu_figures():
    """A GB200 superchip's 10 PFLOPS of sparse BF16 are two GPUs' 2.5 PFLOPS of dense each."""
    assert peak("GB200", "bf16") == 10e15 / 2 / 2
    assert peak("GB300", "fp4") == pytest.approx(1080e15 / 72)
    assert to_canonical(CLOUD.GB200.memory.bandwidth, "bandwidth") == pytest.approx(576e12 / 72)


def test_new_storage_widths_count_their_block_scales():
    assert BYTES_PER_ELEMENT["mxfp8"] == 1 + 1 / 32 == 1.03125  # E8M0 scale per 32 FP8 values
    assert BYTES_PER_ELEMENT["nvfp4"] == 0.5 + 1 / 16 == 0.5625  # E4M3 scale per 16 FP4 values
    assert check_precision("MXFP8") == "mxfp8" and check_precision("NvFp4") == "nvfp4"


def test_the_existing_precisions_keep_their_widths_and_order():
    assert list(BYTES_PER_ELEMENT.items())[:7] == [
        ("fp32", 4.0), ("tf32", 4.0), ("fp16", 2.0), ("bf16", 2.0), ("fp8", 1.0), ("int8", 1.0),
        ("int4", 0.5),
    ]


def test_fp6_and_fp4_are_peak_formats_not_training_precisions():
    assert check_compute_format("FP4") == "fp4" and "fp6" in COMPUTE_FORMATS
    for name in ("fp6", "fp4"):
        with pytest.raises(InputError, match=rf"unknown precision '{name}'; supported: .*nvfp4"):
            check_precision(name)
    with pytest.raises(InputError, match=r"unknown number format 'fp3'"):
        check_compute_format("fp3")


def test_a_scenario_in_mxfp8_or_nvfp4_reads_that_peak_and_width():
    from mlsysim import DataParallelScaleOutScenario

    job = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="mxfp8", node=Systems.Nodes.DGX_B200,
        nodes=2, mfu=0.4, training_tokens=Q_(1e12, "token"), per_device_batch=1,
    )
    assert job.precision == "mxfp8"
    params = Models.Language.Llama3_8B.parameter_count()
    assert Models.Language.Llama3_8B.gradient_bytes("mxfp8") == pytest.approx(params * 1.03125)
    fp8 = job.variant(precision="fp8").result
    mx = job.result
    # same peak as fp8 on B200 (the compute is the same), 1/32 more bytes on the wire
    assert mx.compute_time == fp8.compute_time
    assert mx.gradient_bytes.magnitude == pytest.approx(fp8.gradient_bytes.magnitude * 1.03125)
    assert mx.model_inputs.peak_flops == fp8.model_inputs.peak_flops == 4500e12
    nv = job.variant(precision="nvfp4").result
    assert nv.model_inputs.peak_flops == 9000e12
    assert nv.compute_time < fp8.compute_time
    with pytest.raises(InputError, match="'mxfp8'"):
        _ = job.variant(node=Systems.Nodes.DGX_H100).result


def test_a_users_accelerator_may_state_blackwell_formats_and_a_compute_unit_count(tmp_path):
    from mlsysim import ScenarioFileError, load_registry

    path = tmp_path / "lab.toml"
    path.write_text(
        '[accelerators.Lab.Chip]\nmemory.capacity = "96 GB"\nmemory.bandwidth = "4 TB/s"\n'
        'source = "our vendor sheet"\nnote = "per GPU, dense peaks"\n'
        '[accelerators.Lab.Chip.nvlink]\nname = "link"\nbandwidth = "800 GB/s"\n'
        'bandwidth_per_direction = "400 GB/s"\nsource = "vendor sheet"\nnote = "per direction 400"\n'
        '[accelerators.Lab.Chip.dense_flops]\nfp32 = "60 Tflop/s"\nfp16 = "1000 Tflop/s"\n'
        'NVFP4 = "4000 Tflop/s"\n'
        '[accelerators.Lab.Chip.compute_units]\nname = "streaming multiprocessors (SMs)"\n'
        'count = 100\nsource = "deviceQuery on our box"\nnote = "SMs enabled"\n'
    )
    try:
        load_registry(path)
        chip = Hardware.Lab.Chip
        assert chip.peak_flops("nvfp4") == ureg.Quantity(4000, "Tflop/s")
        assert chip.compute_units.count == 100
        path.write_text(path.read_text().replace('NVFP4 = "4000', 'fp3 = "4000'))
        with pytest.raises(ScenarioFileError, match=r"lab.toml:\d+: .*dense_flops.fp3: unknown number"):
            load_registry(path)
        path.write_text(path.read_text().replace('fp3 = "4000', 'nvfp4 = "4000').replace(
            "count = 100", "count = 0"))
        with pytest.raises(ScenarioFileError, match=r"lab.toml:\d+: .*compute_units.count"):
            load_registry(path)
    finally:
        reset_registry()


PREVIOUS = {
    # name: (capacity GB, bandwidth TB/s, nvlink per direction GB/s, TDP W, dense TFLOP/s)
    "H100": (80, 3.35, 450, 700, {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4,
                                  "fp8": 1978.9, "int8": 1978.9}),
    "A100": (80, 2.039, 300, 400, {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312,
                                   "int8": 624}),
    "A100_40GB": (40, 1.555, 300, 400, {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312,
                                        "int8": 624}),
    "V100": (32, 0.9, 150, 300, {"fp32": 15.7, "fp16": 125}),
    "B200": (180, 8, 900, 1000, {"fp32": 75, "tf32": 1100, "fp16": 2250, "bf16": 2250,
                                 "fp8": 4500, "int8": 4500}),
    "MI300X": (192, 5.3, 448, 750, {"fp32": 163.4, "tf32": 653.7, "fp16": 1307.4,
                                    "bf16": 1307.4, "fp8": 2614.9, "int8": 2614.9}),
}
"""The figures of the accelerators the nodes and scenarios used before this registry grew."""


@pytest.mark.parametrize("name", PREVIOUS)
def test_the_figures_existing_nodes_and_scenarios_read_are_unchanged(name):
    capacity, bandwidth, link, tdp, flops = PREVIOUS[name]
    gpu = getattr(CLOUD, name)
    assert gpu.memory.capacity == ureg.Quantity(capacity, "GB")
    assert gpu.memory.bandwidth == ureg.Quantity(bandwidth, "TB/s")
    assert gpu.nvlink.bandwidth_per_direction == ureg.Quantity(link, "GB/s")
    assert gpu.power.tdp == ureg.Quantity(tdp, "W")
    for fmt, rate in flops.items():
        assert gpu.peak_flops(fmt) == ureg.Quantity(rate, "Tflop/s"), fmt
    assert set(gpu.dense_flops) - set(flops) <= {"mxfp8", "fp6", "fp4", "nvfp4"}


NODES_BEFORE = ("DGX_H100", "DGX_A100", "DGX_B200", "HGX_B200", "DGX1_V100", "DGX2",
                "AWS_p4d_24xlarge", "AWS_p5_48xlarge")
"""The nodes the scenarios used before the registry grew (issue 32 added H800 and NVL72 nodes)."""


def test_every_node_is_built_on_an_accelerator_whose_figures_did_not_move():
    names = {getattr(CLOUD, n).name: n for n in PREVIOUS}
    for path, node in Systems.Nodes.walk():
        if path.rsplit(".", 1)[-1] in NODES_BEFORE:
            assert node.accelerator.name in names, node.name
    for name in NODES_BEFORE:
        assert getattr(Systems.Nodes, name).accelerator.name in names, name


def _table_row(key, gpu):
    """One row of the accelerator table of docs/registry.md, from the registry's figures."""

    def fig(q, unit):
        return f"{q.to(unit).magnitude:g}"

    def rate(fmt):
        return fig(gpu.peak_flops(fmt), "Tflop/s") if fmt in gpu.dense_flops else "-"

    units = gpu.compute_units
    count = "-" if units is None else f"{units.count} {'CUs' if 'CU' in units.name else 'SMs'}"
    cells = [
        f"`{key}`",
        f"{fig(gpu.memory.capacity, 'GB')} GB",
        f"{fig(gpu.memory.bandwidth, 'TB/s')} TB/s",
        f"{fig(gpu.nvlink.bandwidth_per_direction, 'GB/s')} GB/s", count,
        rate("fp32"), rate("tf32"), rate("bf16" if "bf16" in gpu.dense_flops else "fp16"),
        *(rate(f) for f in ("fp8", "mxfp8", "nvfp4")),
        f"{fig(gpu.power.tdp, 'W')} W",
    ]
    return "| " + " | ".join(cells) + " |"


def test_the_accelerator_table_of_the_docs_is_the_registrys():
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "registry.md").read_text(encoding="utf-8")
    for path, gpu in ACCELERATORS:
        assert _table_row(path.split(".")[-1], gpu) in text, path
