"""The matmul timing script on the CPU (smoke mode), its table fed to `mlsysim calibrate matmuls`."""

import json
import math
import os
import subprocess
import sys
from importlib.util import find_spec

import pytest

from mlsysim.cli import main

if find_spec("torch") is None and os.environ.get("MLSYSIM_REQUIRE_TORCH") == "1":
    pytest.fail("torch is required here (MLSYSIM_REQUIRE_TORCH=1): pip install torch==2.13.0", pytrace=False)
torch = pytest.importorskip(
    "torch", reason="needs torch: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
)


def script(*argv):
    return subprocess.run(
        [sys.executable, "-m", "mlsysim.calibrate.matmul_script", *map(str, argv)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_smoke_table_is_fitted_end_to_end(tmp_path, capsys):
    table = tmp_path / "table.json"
    # an accelerator the registry gives no SM count (H200): the CPU's tiny products then carry no wave
    # quantisation, which on a 148-SM part would read them as a sliver of one wave (a ceiling above 1)
    done = script("--device", "cpu", "--smoke", "--out", table, "--accelerator", "H200")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote 4 rows (cpu) to {table}"
    data = json.loads(table.read_text())
    assert data["accelerator"] == "H200" and data["device"] == "cpu" and data["torch"] == torch.__version__
    assert [(r["M"], r["N"], r["K"], r["format"]) for r in data["rows"]] == [
        (256, 256, 256, "fp32"), (384, 256, 256, "fp32"), (256, 384, 128, "fp32"), (512, 512, 512, "fp32"),
    ]  # fmt: skip
    for row in data["rows"]:
        assert row["tflops"] == pytest.approx(2 * row["M"] * row["N"] * row["K"] / row["seconds"] / 1e12)
        assert math.isfinite(row["tflops"]) and row["tflops"] > 0
    assert "a check of the pipeline" in data["notes"][0]
    scenario = tmp_path / "mine.toml"
    code = main(["calibrate", "matmuls", str(table), "--json", "--write-scenario", str(scenario)])
    out, err = capsys.readouterr()
    assert code == 0, err
    fit = json.loads(out)
    fp32 = fit["formats"]["fp32"]
    assert fp32["rows"] == 4 and 0 < fp32["ceiling"] <= 1 and fp32["loo_median_error"] >= 0
    assert fit["assumptions"] == {"matmul_ceiling": fp32["ceiling"]}
    assert f"matmul_ceiling = {fp32['ceiling']!r}" in scenario.read_text()


def test_csv_output_and_bad_arguments(tmp_path, capsys):
    table = tmp_path / "table.csv"
    done = script("--device", "cpu", "--smoke", "--out", table, "--repeats", "1", "--warmup", "0")
    assert done.returncode == 0, done.stderr
    lines = table.read_text().splitlines()
    assert lines[0] == "M,N,K,format,tflops,seconds,accelerator" and len(lines) == 5
    code = main(["calibrate", "matmuls", str(table), "--accelerator", "H200"])
    out, _ = capsys.readouterr()
    assert code == 0 and "fp32" in out and "4 row(s)" in out
    bad = script("--device", "cpu", "--out", tmp_path / "t.txt")
    assert bad.returncode == 2 and "--out: expected a .json or .csv file" in bad.stderr
    bad = script("--device", "cpu", "--smoke", "--out", table, "--formats", "fp64")
    assert bad.returncode == 2 and "--formats: expected some of fp32, fp16, bf16, fp8, fp8_rowwise, got fp64" in bad.stderr
    if not torch.cuda.is_available():
        bad = script("--out", table)
        assert bad.returncode == 1 and "no CUDA GPU is visible" in bad.stderr
