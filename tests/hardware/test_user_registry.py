"""Users' registry files: entries added or replaced, validated like the built-in data, errors
that name the file, the line and the field."""

import pytest

from mlsysim import Hardware, Models, ScenarioFileError, Systems, load_registry, ureg
from mlsysim.core.registry import CATALOG, reset_registry
from tests.registry_files import TINY_TRANSFORMER, write_registry

pytestmark = pytest.mark.usefixtures("fresh_registry")

L40S = """
[accelerators.Lab.L40S]
name = "NVIDIA L40S"
memory.capacity = "48 GB"
memory.bandwidth = "864 GB/s"
source = "NVIDIA L40S datasheet"
note = "PCIe card; its scale-up link is PCIe 4.0 x16"

[accelerators.Lab.L40S.nvlink]
name = "PCIe 4.0 x16"
bandwidth = "63 GB/s"
bandwidth_per_direction = "31.5 GB/s"
source = "PCI-SIG, PCI Express Base Specification 4.0"
note = "31.5 GB/s per direction"

[accelerators.Lab.L40S.dense_flops]
fp32 = "91.6 Tflop/s"
bf16 = "362 Tflop/s"

[nodes.LabBox]
name = "Lab 4x L40S"
accelerator = "L40S"
accelerators_per_node = 4
intra_fabric = "PCIe4_x16"
nics_per_node = 1
nic_fabric = "Ethernet_100G"
source = "our purchase order"
note = "4 cards on PCIe, one 100 GbE port"
"""


def test_a_users_file_adds_entries_that_refer_to_each_other_and_to_built_ins(tmp_path):
    added = load_registry(write_registry(tmp_path, L40S))
    assert added == ["accelerators.Lab.L40S", "nodes.LabBox"]
    box = Systems.Nodes.LabBox
    assert box.accelerator is Hardware.Lab.L40S and Hardware.get("l40s") is box.accelerator
    assert box.intra_node_bw == ureg.Quantity(31.5, "GB/s")  # derived from the accelerator's link
    assert box.intra_latency == Systems.Fabrics.PCIe4_x16.latency  # from the intra fabric
    assert box.nic_bandwidth == ureg.Quantity(100, "Gbps")  # from the NIC fabric
    assert box.accelerator.peak_flops("bf16") == ureg.Quantity(362, "Tflop/s")
    assert Hardware.Cloud.H100.memory.capacity == ureg.Quantity(80, "GB")  # built-ins stay


def test_an_entry_with_a_built_in_path_replaces_it_and_dependents_follow(tmp_path):
    load_registry(
        write_registry(
            tmp_path,
            """
            [accelerators.Cloud.H100]
            name = "H100, our clocks"
            memory.capacity = "80 GB"
            memory.bandwidth = "3 TB/s"
            source = "our measurement"
            note = "HBM bandwidth measured with a stream benchmark"

            [accelerators.Cloud.H100.nvlink]
            name = "NVLink 4"
            bandwidth = "900 GB/s"
            bandwidth_per_direction = "450 GB/s"
            source = "NVIDIA H100 datasheet"
            note = "per direction 450 GB/s"
            """,
        )
    )
    assert Hardware.Cloud.H100.memory.bandwidth == ureg.Quantity(3, "TB/s")
    assert Systems.Nodes.DGX_H100.accelerator.name == "H100, our clocks"
    origins = {(kind, path): origin for kind, path, _, origin in CATALOG.listing()}
    assert str(origins["accelerators", "Cloud.H100"]).endswith("my_cluster.toml:1")
    assert str(origins["nodes", "DGX_H100"]) == "built-in nodes.toml:11"
    reset_registry()
    assert Hardware.Cloud.H100.memory.bandwidth == ureg.Quantity(3.35, "TB/s")


def test_models_can_be_added_as_transformers_with_their_shape(tmp_path):
    load_registry(write_registry(tmp_path, TINY_TRANSFORMER))
    tiny = Models.get("Tiny")
    assert type(tiny).__name__ == "TransformerWorkload"
    assert tiny.name == "Tiny" and tiny.layers == 12  # the name defaults to the key


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("[gpus.X]\nname = 'x'\n", ":1: gpus:", "unknown kind of registry entry"),
        ("[accelerators.H100x]\nname = 'x'\n", ":1: accelerators.H100x:", "an entry is a table"),
        (
            "[fabrics.Slow]\nname = 'x'\nbandwidth = '10 GB'\nlatency = '1 us'\nsource = 'x'\nnote = 'y'\n",
            ":3: fabrics.Slow.bandwidth:",
            "expected a bandwidth",
        ),
        (
            "[fabrics.Slow]\nbandwidth = '10 Gbps'\nlatency = '1 us'\nsource = 'x'\n",
            ":1: fabrics.Slow.note:",
            "required field is missing",
        ),
        (
            "[fabrics.Slow]\nbandwidth = '10 Gbps'\nlatency = '1 us'\nsource = 'x'\nnote = 'y'\ncolour = 'red'\n",
            ":6: fabrics.Slow.colour:",
            "unknown field",
        ),
        (
            "[fabrics.Slow]\nbandwidth = '10 bogons'\nlatency = '1 us'\nsource = 'x'\nnote = 'y'\n",
            ":2: fabrics.Slow.bandwidth:",
            "unknown unit 'bogons'",
        ),
        (
            "[nodes.Box]\naccelerator = 'Z9000'\naccelerators_per_node = 4\nnics_per_node = 1\n"
            "nic_fabric = 'Ethernet_100G'\nsource = 'x'\nnote = 'y'\n",
            ":2: nodes.Box.accelerator:",
            "unknown accelerators entry 'Z9000'",
        ),
        (
            "[nodes.Box]\naccelerator = 'H100'\naccelerators_per_node = 0\nnics_per_node = 1\n"
            "nic_fabric = 'Ethernet_100G'\nsource = 'x'\nnote = 'y'\n",
            ":3: nodes.Box.accelerators_per_node:",
            "expected a positive integer",
        ),
        (
            "[models.Language.X]\nkind = 'rnn'\nparameters = '1e9 param'\nsource = 'x'\nnote = 'y'\n",
            ":2: models.Language.X.kind:",
            "expected one of workload, transformer",
        ),
        ("[accelerators.Edge.H100]\nname = 'x'\n", ":1: accelerators.Edge.H100:", "already taken"),
        ("[fabrics.Slow\n", ":1:", "TOML syntax error"),
        ("[fabrics.my-link]\nname = 'x'\n", ":1: fabrics.my-link:", "Python identifier"),
    ],
)
def test_mistakes_name_the_file_the_line_and_the_field(tmp_path, text, where, message):
    path = write_registry(tmp_path, text, "bad.toml")
    with pytest.raises(ScenarioFileError) as info:
        load_registry(path)
    text = str(info.value)
    assert text.startswith(f"{path}{where}"), text
    assert message in text and "\n" not in text


def test_a_bad_file_leaves_the_registries_as_they_were(tmp_path):
    good = write_registry(tmp_path, L40S)
    load_registry(good)
    bad = write_registry(
        tmp_path,
        "[fabrics.Ethernet_10G]\nbandwidth = '1 GB'\nlatency = '1 us'\nsource = 'x'\nnote = 'y'\n",
        "bad.toml",
    )
    with pytest.raises(ScenarioFileError):
        load_registry(bad)
    assert Systems.Fabrics.Ethernet_10G.bandwidth == ureg.Quantity(10, "Gbps")
    assert Systems.Nodes.LabBox.accelerators_per_node == 4


def test_an_unreadable_file_is_named(tmp_path):
    with pytest.raises(ScenarioFileError, match=r"missing\.toml: cannot read the registry file"):
        load_registry(tmp_path / "missing.toml")


def test_the_registries_read_no_file_until_used():
    import subprocess
    import sys

    code = (
        "import mlsysim, sys; from mlsysim.core.registry import CATALOG; "
        "assert CATALOG._raw is None; mlsysim.Systems.Nodes.DGX_H100; "
        "assert CATALOG._raw is not None; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
