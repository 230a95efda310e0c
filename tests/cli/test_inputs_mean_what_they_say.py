"""Issue 40, "Every input means what it says", typed on the command line as a user types it."""

import json

import pytest

from mlsysim.cli import main

LLAMA_ON_ONE_H100 = [
    "--set", "workload=Llama3_8B",
    "--set", "node=DGX_H100",
    "--set", "devices_per_node=1",
    "--set", "per_device_batch=1",
    "--set", "training_tokens=1e9 token",
]  # fmt: skip


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, "run", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("layout", [[], ["--set", "tensor_parallel=1"]], ids=["data-parallel", "layout"])
def test_a_published_mfu_comes_back_out_of_one_device(capsys, recompute, layout):
    """A published MFU typed as mfu: one device achieves it, whatever the recompute mode (it is inside
    a measured MFU), in the data-parallel model and in a layout alike."""
    doc = run_json(capsys, *LLAMA_ON_ONE_H100, "--set", "mfu=0.4", "--set", f"recompute={recompute}", *layout)
    assert doc["result"]["achieved_mfu"] == pytest.approx(0.4, rel=1e-12)
    # T1 = b F / (P u) = 5.0024e14 / (989.4e12 x 0.4) = 1.264 s: nothing added to the model FLOPs
    assert doc["result"]["compute_time"]["value"] == pytest.approx(1264.007671989327, rel=1e-12)


def test_explain_says_what_mfu_is(capsys):
    code, out, err = run(capsys, "explain", *LLAMA_ON_ONE_H100, "--set", "mfu=0.4")
    assert code == 0, err
    assert "T1 = b F / (P u)" in out
    assert "model FLOPs utilisation" in out and "matmul_ceiling" in out
