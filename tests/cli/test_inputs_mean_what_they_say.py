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


def test_a_transformer_runs_fused_attention_by_default_and_explain_says_so(capsys):
    """Item 5: fused attention kernels unless flash_attention=0; explain prints the defaults in effect with
    their sources."""
    base = [*LLAMA_ON_ONE_H100, "--set", "recompute=none"]
    default = run_json(capsys, *base)
    unfused = run_json(capsys, *base, "--set", "flash_attention=0")
    fused = run_json(capsys, *base, "--set", "flash_attention=1")
    assert default["result"] == fused["result"]
    # 32 layers x 8192 tokens x 4096 = 2^30 bytes per unit: 34 units fused, 354 with the s x s matrices stored
    assert default["inputs"]["activation_memory"]["value"] == 34 * 2**30
    assert unfused["inputs"]["activation_memory"]["value"] == 354 * 2**30
    # a step from the operators: the unfused attention core is slower
    assert unfused["result"]["compute_time"]["value"] > 1.2 * default["result"]["compute_time"]["value"]
    code, out, err = run(capsys, "explain", *base)
    assert code == 0, err
    assert "Defaults in effect" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("flash_attention = 1"))
    assert "Dao et al. 2022" in line and "PyTorch 2.0" in line
    code, out, err = run(capsys, "explain", *base, "--set", "flash_attention=0")
    assert not any(x.strip().startswith("flash_attention = 1") for x in out.splitlines())


def test_the_seed_scenarios_keep_their_figures_under_the_new_defaults(capsys):
    """The three GPT-2 scenarios give a measured step and recompute selective: fused attention changes
    nothing of theirs (SPEC's figures, and the activations 34 L s b h)."""
    doc = run_json(capsys, "Gpt2DataParallelFourNodes10GbE")
    assert doc["result"]["update_time"]["value"] == pytest.approx(6461.66666666, rel=1e-9)
    assert doc["inputs"]["activation_memory"]["value"] == 34 * 48 * 1024 * 16 * 1600  # 34 L s b h
