"""The matrix-product kernel API: measured points, the power limit, the shipped fit, its bounds and refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Q_
from mlsysim.kernels.matmul import (
    MatmulFit,
    accelerator_entry,
    format_figures,
    grouped_matmul,
    matmul,
    matmul_params,
    shipped_fit,
)
from mlsysim.kernels.tables import build_table, tables
from mlsysim.physics.matmul import MATMUL_FORMATS
from mlsysim.validation.kernels_matmul import FIT_FILE, fit_matmul_constants


def _us(estimate) -> float:
    return float(estimate.time.to("us").magnitude)


@pytest.mark.parametrize(
    ("accelerator", "shape", "fmt", "measured_us", "within"),
    [
        ("H100", (4096, 4096, 4096), "bf16", 176.2, 0.08),  # OpenXLA's H100 table (fit)
        ("H100", (256, 256, 256), "bf16", 4.99, 0.25),  # the same table's smallest product: the floor
        ("H800", (4096, 7168, 2048), "fp8_blockwise", 102.96, 0.10),  # DeepGEMM's README (fit)
        ("B200", (4096, 4096, 4096), "fp8", 49.71, 0.10),  # OpenXLA's B200 table (held out)
        ("B200", (4096, 4096, 4096), "bf16", 97.0, 0.15),  # the same, bf16 (held out)
        ("GB300", (16384, 16384, 16384), "fp8", 2658.6, 0.05),  # Azure's GB300 cuBLASLt, 3308.5 TFLOP/s (fit)
        ("GB300", (16384, 16384, 16384), "nvfp4", 1018.0, 0.05),  # the same, NVFP4 at 8640.3 TFLOP/s (fit)
        ("GB300", (8192, 8192, 8192), "fp16", 640.2, 0.05),  # tritonbench aten_matmul on GB300 (held out)
        ("GB300", (8192, 8192, 1024), "fp16", 78.7, 0.20),  # the same at a short reduction (held out)
        ("H200", (1280, 4096, 12032), "fp8", 87.0, 0.15),  # MAMF's H200 best fp8 shape, 1453.4 TFLOP/s (fit)
    ],
)
def test_measured_products_within_their_error(accelerator, shape, fmt, measured_us, within):
    assert _us(matmul(accelerator, *shape, format=fmt)) == pytest.approx(measured_us, rel=within)


def test_an_h100_held_at_500_w_runs_a_large_product_slower_than_at_its_700_w_tdp():
    full = matmul("H100", 8192, 8192, 8192)
    held = matmul("H100", 8192, 8192, 8192, power_limit=Q_(500, "W"))
    # FBGEMM's H100 at 500 W (pull request #2546): 8192^3 bf16 in 1.879 ms
    assert _us(held) == pytest.approx(1879.0, rel=0.10)
    assert 1.15 < _us(held) / _us(full) < 1.45
    assert held.bound == full.bound == "compute"


def test_a_tiny_product_is_bound_by_the_launch_and_a_skinny_one_by_memory():
    assert matmul("H100", 128, 128, 128).bound == "launch"
    assert matmul("B200", 1, 6144, 4096).bound == "memory"


def test_fp16_is_priced_at_the_bf16_ceiling_and_a_batch_as_a_grouped_product():
    assert _us(matmul("H100", 2048, 2048, 2048, format="fp16")) == pytest.approx(_us(matmul("H100", 2048, 2048, 2048)))
    batched = matmul("H800", 512, 4096, 7168, batch=4, format="fp8_blockwise")
    grouped = grouped_matmul("H800", [512, 512, 512, 512], 4096, 7168, format="fp8_blockwise")
    assert _us(grouped) == pytest.approx(_us(batched))
    assert "4 groups" in grouped.what


def test_shapes_may_be_arrays_one_estimate_each():
    sizes = [64, 256, 1024, 4096]
    estimate = matmul("H100", np.array(sizes), 4096, 4096)
    times = estimate.time.to("us").magnitude
    assert times.shape == (4,) and np.all(np.diff(times) > 0)
    one_by_one = [matmul("H100", m, 4096, 4096) for m in sizes]
    assert list(estimate.bound) == [e.bound for e in one_by_one]
    assert times == pytest.approx([_us(e) for e in one_by_one])


def test_the_gb200_is_held_to_its_own_measured_best_not_the_b200s():
    fit = shipped_fit()
    gb200, b200 = accelerator_entry("GB200"), accelerator_entry("B200")
    assert fit.ceiling(gb200, "bf16") < fit.ceiling(b200, "bf16")
    assert fit.ceiling(gb200, "bf16") <= fit.device_best[gb200.name]["bf16"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: matmul("H100", 1024, 1024, 1024, format="tf32"), "no matmul table measures tf32 on Hopper"),
        (lambda: matmul("GB300", 1024, 1024, 1024, format="mxfp8"), "no matmul table measures mxfp8 on Blackwell Ultra"),
        (lambda: matmul("H100", 1024, 1024, 1024, format="nvfp4"), "nvfp4"),
        (lambda: matmul("H100", 1024, 1024, 1024, format="fp64"), "unknown matmul_format 'fp64'"),
        (lambda: matmul(accelerator_entry("H200").model_copy(update={"compute_units": None}), 1024, 1024, 1024),
         "no SM count"),
        (lambda: matmul("H100", 0, 1024, 1024), "m: expected whole numbers of at least 1, got 0"),
        (lambda: matmul("H100", 1024, 10.5, 1024), "n: expected whole numbers"),
        (lambda: matmul("H100", 1024, 1024, True), "k: expected whole numbers"),
        (lambda: matmul("H100", 1024, 1024, 1024, power_limit=Q_(800, "W")), "above NVIDIA H100 SXM5 80GB's 700 W TDP"),
        (lambda: matmul("H100", 1024, 1024, 1024, power_limit=500), "power_limit"),
        (lambda: grouped_matmul("H800", [0, 0], 4096, 7168), "tokens: expected a sequence"),
        (lambda: matmul("H1000", 1024, 1024, 1024), "H1000"),
    ],
)
def test_what_no_table_covers_or_no_input_means_is_refused_with_a_line_naming_it(call, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_the_gb300_ceilings_rest_on_its_own_tables_and_stay_below_the_gb200s_in_bf16():
    fit = shipped_fit()
    gb300 = accelerator_entry("GB300")
    assert gb300.architecture == "Blackwell Ultra" and gb300.compute_units.count == 160
    # MAMF's B300 row, 1769.0 TFLOP/s against the GB300's 2,500 dense bf16: the bound of the ceiling
    assert fit.ceiling(gb300, "bf16") == pytest.approx(1769.0 / 2500.0, abs=1e-4)
    assert fit.ceiling(gb300, "bf16") < fit.ceiling(accelerator_entry("GB200"), "bf16")
    assert fit.ceiling(gb300, "fp16") == fit.ceiling(gb300, "bf16")


def test_the_refusal_of_an_uncovered_format_says_how_to_supply_a_table():
    with pytest.raises(InputError, match="mlsysim calibrate kernels FILE"):
        matmul("H100", 1024, 1024, 1024, format="tf32")


def test_no_ceiling_above_the_best_measured_kernel_on_its_tensor_cores():
    fit = shipped_fit()
    best: dict[tuple[str, str], float] = {}
    for table in tables(kind="matmul", split="fit"):
        device = accelerator_entry(table.accelerator)
        default = table.columns.get("power_limit")
        for i in range(len(table)):
            if default is not None:
                continue  # rows below the default power limit bound nothing
            tensor, peak, _, _ = format_figures(device, str(table.columns["format"][i]))
            flops = 2.0 * table.columns["m"][i] * table.columns["n"][i] * table.columns["k"][i]
            flops *= table.columns["batch"][i] if "batch" in table.columns else 1.0
            efficiency = flops / (table.time[i] * peak)
            for key in ((device.architecture or "", tensor), (device.name, tensor)):
                best[key] = max(best.get(key, 0.0), efficiency)
    for architecture, formats in fit.ceilings.items():
        for fmt, value in formats.items():
            assert value <= best[(architecture, MATMUL_FORMATS[fmt])] + 1e-4, (architecture, fmt)
    for device, formats in fit.device_best.items():
        for tensor, value in formats.items():
            assert value <= best[(device, tensor)] + 1e-4, (device, tensor)


def test_the_shipped_fit_is_what_a_fresh_fit_on_the_shipped_tables_gives():
    fresh = fit_matmul_constants(tables(kind="matmul", split="fit")).to_json()
    assert json.loads(json.dumps(fresh)) == json.loads(FIT_FILE.read_text(encoding="utf-8"))
    assert MatmulFit.from_json(fresh) == shipped_fit()


def test_held_out_tables_are_never_fitted_on():
    held_out = list(tables(kind="matmul", split="holdout"))
    assert held_out
    with pytest.raises(InputError, match="no matmul table of split 'fit'"):
        fit_matmul_constants(held_out)
    assert not any(t.name in shipped_fit().provenance["fitted_on"] for t in held_out)


def test_a_users_table_refits_the_ceiling_of_its_gpu_and_keeps_the_shared_constants():
    base = shipped_fit()
    shapes = [(s, s, s) for s in (2048, 4096, 8192)]
    rows = []
    for m, n, k in shapes:  # a GPU whose kernels reach two thirds of the shipped rate
        rows.append([m, n, k, "bf16", 1.5 * _us(matmul("H100", m, n, k))])
    table = build_table(name="mine.csv", kind="matmul", split="fit", accelerator="H100",
                        source={f: "x" for f in ("title", "url", "date", "hardware", "software", "notes")},
                        columns=["m", "n", "k", "format", "time"], rows=rows, units={"time": "us"})
    mine = fit_matmul_constants([table], base=base)
    assert mine.structure == base.structure
    assert mine.ceilings["Hopper"]["bf16"] == pytest.approx(base.ceilings["Hopper"]["bf16"] / 1.5, rel=0.05)
    assert mine.ceilings["Blackwell"] == base.ceilings["Blackwell"]
    assert _us(matmul("H100", 4096, 4096, 4096, fit=mine)) == pytest.approx(1.5 * _us(matmul("H100", 4096, 4096, 4096)),
                                                                          rel=0.05)


def test_matmul_params_carry_the_registry_figures():
    params = matmul_params("B200", "nvfp4")
    assert params.peak == pytest.approx(9000e12)
    assert params.compute_units == 148
    assert params.in_bytes == pytest.approx(0.5 + 1 / 16)
    assert params.sustained == 1.0
