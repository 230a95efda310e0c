"""Real torch.distributed runs: 2 gloo processes on this machine, tiny sizes, few steps.

These pin the structure of the output and that every figure is positive and
finite; the accuracy of the prediction is reported in docs/calibration.md,
not asserted here (it depends on what else the machine is doing).
"""

import json
import math
import os
from importlib.util import find_spec

import pytest

from mlsysim.cli import main

if find_spec("torch") is None and os.environ.get("MLSYSIM_REQUIRE_TORCH") == "1":
    pytest.fail("torch is required here (MLSYSIM_REQUIRE_TORCH=1): pip install torch==2.13.0", pytrace=False)
torch = pytest.importorskip(
    "torch", reason="needs torch: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def positive(value):
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_calibrate_torch_two_processes_gives_a_fit(capsys, tmp_path):
    scenario = tmp_path / "here.toml"
    code, out, err = run(
        capsys,
        "calibrate", "torch", "--nproc", "2", "-b", "1KiB", "-e", "16MiB", "-f", "4",
        "--warmup", "1", "--iters", "3", "--json",
        "--write-scenario", str(scenario), "--link", "intra",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["ranks"] == 2 and data["collective"] == "all_reduce"
    assert [p["size"]["value"] for p in data["points"]] == [1024.0 * 4**k for k in range(8)]
    for point in data["points"]:
        assert positive(point["measured"]["value"]) and positive(point["fitted"]["value"])
    assert positive(data["bus_bandwidth"]["value"])
    assert data["latency"]["value"] >= 0
    assert (
        "gloo" in data["source"]
        and "1 thread(s) each" in data["source"]
        or "thread" in data["source"]
    )
    assert "intra_bandwidth" in scenario.read_text()


def test_calibrate_step_times_a_small_gpt(capsys):
    code, out, err = run(
        capsys, "calibrate", "step", "--model", "gpt", "--batch", "2", "--layers", "1",
        "--width", "32", "--heads", "2", "--seq-len", "16", "--vocab", "64",
        "--steps", "3", "--warmup", "1", "--threads", "1", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["parameters"] == 2 * 64 * 32 + 16 * 32 + 12_704 + 2 * 32
    assert positive(data["step_time"]["value"]) and data["threads"] == 1


def test_validate_ddp_two_processes(capsys):
    code, out, err = run(
        capsys, "validate", "ddp", "--nproc", "2", "--model", "mlp", "--layers", "2",
        "--width", "512", "--batch", "8", "--steps", "4", "--warmup", "1", "--iters", "10",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    for key in ("predicted_update_time", "measured_update_time", "step_time"):
        assert data[key]["unit"] == "millisecond" and positive(data[key]["value"])
    assert math.isfinite(data["relative_error"])
    assert data["relative_error"] == pytest.approx(
        data["predicted_update_time"]["value"] / data["measured_update_time"]["value"] - 1
    )
    assert positive(data["measured_speedup"]) and positive(data["predicted_speedup"])
    assert data["predicted_speedup"] <= 2
    assert data["nproc"] == 2 and data["backend"] == "gloo"
    assert data["parameters"] == 2 * (512 * 512 + 512) + 512 * 10 + 10
    assert data["gradient_bytes"]["value"] == 4 * data["parameters"]
    assert data["allreduce_fit"]["ranks"] == 2
    terms = data["terms_ms"]
    assert list(terms) == ["one device step", "DDP's hooks", "copies, wait and communication"]
    assert sum(t["measured"] for t in terms.values()) == pytest.approx(data["measured_update_time"]["value"])
    assert sum(t["predicted"] for t in terms.values()) == pytest.approx(data["predicted_update_time"]["value"])
    assert data["step_time_cv"] >= 0


def test_validate_ddp_repeats_report_the_spread(capsys):
    code, out, err = run(
        capsys, "validate", "ddp", "--nproc", "2", "--model", "mlp", "--layers", "2",
        "--width", "512", "--batch", "8", "--steps", "4", "--warmup", "1", "--iters", "10",
        "--repeats", "2", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    errors = data["relative_errors"]
    assert data["repeats"] == 2 and len(errors) == 2
    assert min(errors) <= data["median_relative_error"] <= max(errors)
    assert data["median_relative_error"] == pytest.approx(sum(errors) / 2)
    code, _, err = run(capsys, "validate", "ddp", "--repeats", "0")
    assert code == 2 and "repeats" in err
