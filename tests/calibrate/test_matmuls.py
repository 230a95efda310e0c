"""Fitting matrix-product ceilings to a measured table (`mlsysim calibrate matmuls`), without torch."""

import json
import sys

import numpy as np
import pytest

from mlsysim import Hardware, InputError, ScenarioFileError
from mlsysim.calibrate.matmuls import MatmulRow, fit_matmul_ceilings, read_matmul_table
from mlsysim.calibrate.scenario_file import write_assumptions
from mlsysim.cli import main
from mlsysim.physics.matmul import matmul_efficiency

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHAPES = [
    (8192, 3 * 4096, 4096), (8192, 4096, 4096), (8192, 16384, 4096), (8192, 4096, 16384),
    (8192, 8192, 128), (2048, 2048, 2048), (1000, 1000, 1000), (4096, 50304, 4096),
]  # fmt: skip
PEAK = {"bf16": 989.4, "fp8": 1978.9, "fp8_rowwise": 1978.9}  # H100 SXM, TFLOP/s


def synthetic(ceilings, noise=()):
    """Rows an H100 with these ceilings would measure, each times (1 + noise[i]) (cycled)."""
    rows = []
    for fmt, c in ceilings.items():
        for i, (m, n, k) in enumerate(SHAPES):
            wobble = 1.0 + (noise[i % len(noise)] if noise else 0.0)
            rate = PEAK[fmt] * float(matmul_efficiency(float(m), float(n), float(k), c, 132.0)) * wobble
            rows.append(MatmulRow(m, n, k, fmt, rate))
    return rows


def write_csv(path, rows, accelerator=""):
    lines = ["M,N,K,format,tflops,accelerator"]
    lines += [f"{r.m},{r.n},{r.k},{r.format},{r.tflops!r},{accelerator}" for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_table_made_from_known_ceilings_gives_them_back_with_no_error():
    fit = fit_matmul_ceilings(synthetic({"bf16": 0.71, "fp8": 0.58}), "H100")
    assert fit.formats["bf16"].ceiling == 0.71 and fit.formats["fp8"].ceiling == 0.58
    for f in fit.formats.values():
        assert len(f.rows) == 8 and f.loo_median_error == pytest.approx(0.0, abs=1e-12)
        assert np.allclose(f.predicted, [r.tflops for r in f.rows], rtol=1e-3)
    assert fit.compute_units == 132.0 and fit.architecture == "Hopper"
    assert fit.assumptions() == {"matmul_ceiling": 0.58, "attention_ceiling": 0.71}


def test_noisy_rows_give_the_median_and_its_leave_one_out_error():
    noise = (0.04, -0.04, 0.02, -0.02, 0.0, 0.06, -0.06, 0.01)
    fit = fit_matmul_ceilings(synthetic({"bf16": 0.7}, noise), "H100").formats["bf16"]
    estimates = 0.7 * (1.0 + np.asarray(noise))
    assert fit.ceiling == pytest.approx(float(np.median(estimates)), rel=1e-4)  # 0.7 * 1.005
    assert fit.ceiling == 0.7035
    held = [np.median(np.delete(estimates, i)) / estimates[i] - 1 for i in range(8)]
    assert fit.loo_median_error == pytest.approx(float(np.median(np.abs(held))), rel=1e-9)
    assert fit.loo_median_error == pytest.approx(0.0345, abs=5e-4)
    # one slow row (a cold clock) does not drag the median
    rows = list(synthetic({"bf16": 0.7}))
    rows[0] = MatmulRow(rows[0].m, rows[0].n, rows[0].k, "bf16", rows[0].tflops / 3)
    assert fit_matmul_ceilings(rows, "H100").formats["bf16"].ceiling == 0.7


def test_the_shape_factor_is_the_operator_models():
    # 1000^3: partial tiles (1000*1000 / (1024*1024)), 4*8 = 32 tiles on 132 SMs, K / (K + 128)
    row = MatmulRow(1000, 1000, 1000, "bf16", 100.0)
    fit = fit_matmul_ceilings([row], "H100").formats["bf16"]
    shape = (1e6 / (1024 * 1024)) * (32 / 132) * (1000 / 1128)
    assert fit.ceiling == pytest.approx(100.0 / (989.4 * shape), rel=1e-3)
    assert fit.loo_median_error is None and fit.held_out is None  # one row: nothing left to predict it


def test_which_format_the_linear_layers_run_in():
    assert fit_matmul_ceilings(synthetic({"bf16": 0.7}), "H100").assumptions() == {"matmul_ceiling": 0.7}
    both = fit_matmul_ceilings(synthetic({"bf16": 0.7, "fp8": 0.6, "fp8_rowwise": 0.5}), "H100")
    with pytest.raises(InputError, match="--matmul-format: the table measures bf16, fp8, fp8_rowwise"):
        both.assumptions()
    assert both.assumptions("FP8-rowwise") == {"matmul_ceiling": 0.5, "attention_ceiling": 0.7}
    assert both.assumptions("bf16") == {"matmul_ceiling": 0.7}
    with pytest.raises(InputError, match="no mxfp8 rows"):
        both.assumptions("mxfp8")


def test_a_ceiling_above_the_peak_is_refused():
    rows = [MatmulRow(8192, 8192, 8192, "bf16", 1500.0)]
    with pytest.raises(InputError, match=r"format: the bf16 rows imply a ceiling of 1\.59, above NVIDIA H100 SXM5 80GB's bf16 peak of 989\.4"):
        fit_matmul_ceilings(rows, "H100")
    with pytest.raises(InputError, match="accelerator: "):
        fit_matmul_ceilings(rows, "H1000")
    with pytest.raises(InputError, match="has no nvfp4 peak"):
        fit_matmul_ceilings([MatmulRow(8192, 8192, 8192, "nvfp4", 100.0)], "H100")


def test_reads_csv_and_json(tmp_path):
    rows = synthetic({"bf16": 0.7})[:3]
    table = read_matmul_table(write_csv(tmp_path / "t.csv", rows, "H100"))
    assert table.accelerator == "H100" and [r.line for r in table.rows] == [2, 3, 4]
    assert [(r.m, r.n, r.k, r.format) for r in table.rows] == [(r.m, r.n, r.k, "bf16") for r in rows]
    doc = {"accelerator": "A100", "rows": [{"M": 64, "n": "32", "K": 16.0, "format": "BF16", "tflops": 1.5}]}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    table = read_matmul_table(tmp_path / "t.json")
    assert table.accelerator == "A100" and table.rows == (MatmulRow(64, 32, 16, "bf16", 1.5),)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("M,N,K,format\n1,2,3,bf16\n", "t.csv:2: tflops: missing; every row gives M, N, K, format, tflops"),
        ("M,N,K,format,tflops\n1,2,0,bf16,3\n", "t.csv:2: K: expected a positive whole number, got '0'"),
        ("M,N,K,format,tflops\n1,2.5,3,bf16,3\n", "t.csv:2: N: expected a positive whole number, got '2.5'"),
        ("M,N,K,format,tflops\n1,2,3,int4,3\n", "t.csv:2: format: expected one of fp32, tf32"),
        ("M,N,K,format,tflops\n1,2,3,bf16,-3\n", "t.csv:2: tflops: expected a measured rate in TFLOP/s above zero, got '-3'"),
        ("M,N,K,format,tflops\n1,2,3,bf16,nan\n", "tflops: expected a measured rate"),
        ("M,N,K,format,tflops\n1,2,3,bf16,3,9\n", "t.csv:2: more cells than columns"),
        ("M,N,K,format,tflops,accelerator\n1,2,3,bf16,3,H100\n1,2,3,bf16,3,A100\n",
         "t.csv:3: accelerator: expected one accelerator for the whole table, got 'H100' and 'A100'"),
        ("M,N,K,format,tflops\n", "t.csv: no rows"),
    ],
)  # fmt: skip
def test_bad_tables_name_the_line_and_column(tmp_path, capsys, text, needle):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ScenarioFileError) as info:
        read_matmul_table(path)
    assert needle in str(info.value)
    code, out, err = run(capsys, "calibrate", "matmuls", path, "--accelerator", "H100")
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err and "Traceback" not in err


@pytest.mark.parametrize(
    "body, needle",
    [
        ("[1, 2]", "t.json: rows[0]: expected an object (a row), got 1"),
        ('{"rows": [{"M": 1, "N": 2, "K": true, "format": "bf16", "tflops": 1}]}', "rows[0].K: expected a positive"),
        ('{"rows": 3}', 'expected a list of rows or {"rows": [...]}'),
        ("{", "t.json:1: JSON syntax error"),
        ('{"accelerator": 5, "rows": [{"M": 1, "N": 2, "K": 3, "format": "bf16", "tflops": 1}]}',
         "accelerator: expected a registry name (text), got 5"),
    ],
)  # fmt: skip
def test_bad_json_tables(tmp_path, body, needle):
    path = tmp_path / "t.json"
    path.write_text(body)
    with pytest.raises(ScenarioFileError) as info:
        read_matmul_table(path)
    assert needle in str(info.value)


def test_writes_the_ceilings_into_a_scenario_that_then_prices_its_step_with_them(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text(
        'workload = "Llama2_7B"\nnode = "DGX_H100"\nnodes = 1\nper_device_batch = 4\n'
        'precision = "bf16"\ntraining_time = "1 hour"\nassumptions = "realistic"\n'
    )
    from mlsysim.engine.io.files import load_scenario

    fitted = load_scenario(path)
    from mlsysim.physics.matmul import fitted_ceiling

    stored = fitted_ceiling("Hopper", "bf16")
    assert fitted.job.origins["step_time"].startswith(
        f"operators (bf16 matrix products, ceiling {stored:.3g} in training on Hopper")
    assert write_assumptions(path, {"matmul_ceiling": 0.6}) == {"matmul_ceiling": 0.6}
    data = tomllib.loads(path.read_text())
    assert data["assumptions"] == {"preset": "realistic", "matmul_ceiling": 0.6}
    measured = load_scenario(path)
    assert measured.job.origins["step_time"] == "operators (bf16 matrix products, ceiling 0.6 assumed; measured kernels)"
    assert measured.assumptions.intra_efficiency == fitted.assumptions.intra_efficiency  # preset kept
    assert measured.result.compute_time > fitted.result.compute_time


def test_the_ceilings_go_into_the_table_that_holds_the_inputs(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[job]\nworkload = "Llama2_7B"\n[job.assumptions]\noverlap = true\n')
    write_assumptions(path, {"matmul_ceiling": 0.55, "attention_ceiling": 0.7})
    assert tomllib.loads(path.read_text()) == {
        "job": {
            "workload": "Llama2_7B",
            "assumptions": {"overlap": True, "matmul_ceiling": 0.55, "attention_ceiling": 0.7},
        }
    }


def test_cli_prints_the_fit_and_a_toml_snippet(tmp_path, capsys):
    table = write_csv(tmp_path / "t.csv", synthetic({"bf16": 0.71, "fp8": 0.58}, (0.02, -0.02)))
    code, out, err = run(capsys, "calibrate", "matmuls", table, "--accelerator", "H100")
    assert code == 0 and err == ""
    assert "NVIDIA H100 SXM5 80GB (Hopper, compute units 132)" in out
    assert "bf16         ceiling 0.71 of 989.4 TFLOP/s, 8 row(s), leave-one-row-out median error 4.0%" in out
    assert "fp8          ceiling 0.58 of 1979 TFLOP/s, 8 row(s), leave-one-row-out median error 4.0%" in out
    assert out.endswith("[assumptions]\nmatmul_ceiling = 0.58\nattention_ceiling = 0.71\n")
    assert len([line for line in out.splitlines() if line.startswith(("bf16 ", "fp8 "))]) == 16


def test_cli_json_and_write_scenario(tmp_path, capsys):
    table = write_csv(tmp_path / "t.csv", synthetic({"bf16": 0.7}), "H100")
    scenario = tmp_path / "my.toml"
    code, out, err = run(capsys, "calibrate", "matmuls", table, "--json", "--write-scenario", scenario)
    assert code == 0, err
    data = json.loads(out)
    assert data["kind"] == "matmul_calibration" and data["linear_format"] == "bf16"
    assert data["formats"]["bf16"]["ceiling"] == 0.7 and data["formats"]["bf16"]["rows"] == 8
    assert data["written"] == {"file": str(scenario), "matmul_ceiling": 0.7}
    point = data["formats"]["bf16"]["points"][0]
    assert point["held_out_tflops"] == pytest.approx(point["measured_tflops"], rel=1e-3)
    assert tomllib.loads(scenario.read_text()) == {"assumptions": {"matmul_ceiling": 0.7}}
    code, out, _ = run(capsys, "calibrate", "matmuls", table, "--write-scenario", scenario)
    assert code == 0 and "wrote matmul_ceiling = 0.7 to" in out


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--accelerator", "A100"], "--accelerator: the table names 'H100', got 'A100'"),
        (["--matmul-format", "fp8"], "--matmul-format: the table has no fp8 rows; measured: bf16"),
        (["--matmul-format", "int3"], "unknown matmul_format 'int3'"),
        (["--write-scenario", "x.yaml"], "--write-scenario"),
    ],
)
def test_cli_mistakes_are_one_line(tmp_path, capsys, extra, needle):
    table = write_csv(tmp_path / "t.csv", synthetic({"bf16": 0.7}), "H100")
    code, out, err = run(capsys, "calibrate", "matmuls", table, *extra)
    assert code == 2 and err.startswith("mlsysim: error: ") and err.count("\n") == 1 and needle in err
    nameless = write_csv(tmp_path / "n.csv", synthetic({"bf16": 0.7}))
    code, _, err = run(capsys, "calibrate", "matmuls", nameless)
    assert code == 2 and "--accelerator: the table names no accelerator" in err


def test_the_registry_peaks_used_here_are_the_h100s():
    assert {f: Hardware.Cloud.H100.peak_flops(f).magnitude for f in ("bf16", "fp8")} == {"bf16": 989.4, "fp8": 1978.9}
