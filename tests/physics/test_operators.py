"""The operator model: FLOPs that add up, shapes that cost what tiles and waves say, formats."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.kernels.device import device_kernels
from mlsysim.physics.matmul import (
    K_OVERHEAD,
    TILE_M,
    TILE_N,
    matmul_efficiency,
    tile_quantization,
    wave_quantization,
)
from mlsysim.physics.operators import mlp_width, operator_times
from mlsysim.physics.records import records_from

GPT3 = {"parameters": 175e9, "layers": 96.0, "hidden": 12288.0, "heads": 96.0, "seq_len": 2048.0, "vocab": 51200.0}
A100 = {
    "matmul_peak": 312e12, "matmul_ceiling": 0.6, "attention_peak": 312e12, "attention_ceiling": 0.6,
    "memory_bandwidth": 2.0e12, "compute_units": 108.0,
}


A100_KERNELS = device_kernels("A100", "bf16").constants


def _priced(price, **values):
    """``price`` (:func:`operator_times` or its distinct-row form) of flat values, the stage's layers apart,
    with the A100's measured kernels."""
    here = values.pop("layers_here", float("nan"))
    return price(*records_from(peak_flops=values["matmul_peak"], kernels=A100_KERNELS, **values), here)


def _ops(**given):
    return _priced(operator_times, **{**GPT3, **A100, "micro_batch": 1.0, **given})


def test_the_products_flops_are_the_models_six_n_s():
    """Without ffn_hidden the MLP width is what N leaves: the linear layers and the output layer
    execute 6 N s FLOPs per sample (Kaplan et al. 2020), for any tensor split summed over its ranks."""
    ops = _ops()
    assert ops.matmul_flops == pytest.approx(6.0 * GPT3["parameters"] * GPT3["seq_len"], rel=1e-12)
    assert _ops(tensor_parallel=8.0).matmul_flops * 8 == pytest.approx(ops.matmul_flops, rel=1e-12)
    h = GPT3["hidden"]
    assert mlp_width(175e9, 96.0, h, 96.0, 96.0, 51200.0) == pytest.approx(
        ((175e9 - 51200 * h) / 96 - 4 * h * h) / (2 * h)
    )


def test_full_recomputation_reruns_the_layers_forward():
    extra = _ops(recompute="full").matmul_flops - _ops().matmul_flops
    assert extra == pytest.approx(2.0 * (175e9 - 51200 * 12288) * 2048, rel=1e-12)
    assert _ops(recompute="selective").attention_time > _ops().attention_time
    assert _ops(recompute="selective").matmul_time == _ops().matmul_time


def test_fused_attention_runs_the_causal_half_and_a_longer_backward():
    fused = _ops(flash_attention=True)
    counted = 4.0 * 2048**2 * 12288 * 96  # forward Q K^T and attention x V, every layer
    assert fused.attention_flops == pytest.approx(0.5 * counted * 3.5, rel=1e-12)
    assert _ops().attention_flops == pytest.approx(3.0 * counted, rel=1e-12)


def test_a_stage_holds_its_layers_share():
    whole = _ops()
    stage = _ops(layers_here=12.0)
    for name in ("matmul_time", "attention_time", "memory_time", "matmul_flops"):
        assert getattr(stage, name) == pytest.approx(getattr(whole, name) / 8.0, rel=1e-12), name


@given(
    m=st.integers(1, 40_000), n=st.integers(1, 40_000), k=st.integers(1, 40_000),
    ceiling=st.floats(0.05, 1.0), units=st.sampled_from([math.nan, 108.0, 132.0]),
)
def test_an_efficiency_is_never_above_its_ceiling(m, n, k, ceiling, units):
    e = matmul_efficiency(float(m), float(n), float(k), ceiling, units)
    assert 0.0 < e <= ceiling
    assert 0.0 < tile_quantization(float(m), float(n)) <= 1.0
    assert 0.0 < wave_quantization(float(m), float(n), units) <= 1.0


def test_whole_tiles_and_full_waves_leave_only_the_k_loop_overhead():
    m, n = TILE_M * 108, TILE_N * 4  # 432 tiles = 4 waves of 108 SMs
    assert matmul_efficiency(m, n, 4096.0, 0.8, 108.0) == pytest.approx(0.8 * 4096 / (4096 + K_OVERHEAD))
    # one tile more starts a fifth wave that is nearly empty
    assert wave_quantization(m + 1, n, 108.0) < 0.81


def test_arrays_equal_each_scalar():
    b = np.array([1.0, 2.0, 4.0])
    many = _ops(micro_batch=b, tensor_parallel=np.array([1.0, 2.0, 8.0]))
    for i, (bb, t) in enumerate(((1.0, 1.0), (2.0, 2.0), (4.0, 8.0))):
        one = _ops(micro_batch=bb, tensor_parallel=t)
        for name in one._fields:
            assert np.broadcast_to(getattr(many, name), b.shape)[i] == pytest.approx(getattr(one, name), rel=1e-12)


def _llama70b(matmul_format: str) -> DataParallelScaleOutScenario:
    return DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, node=Systems.Nodes.DGX_H100, nodes=4, precision="bf16",
        per_device_batch=1, accumulation_steps=8, tensor_parallel=8, sequence_parallel=1, flash_attention=1,
        zero_stage=1, training_tokens=Q_(1e12, "token"), matmul_format=matmul_format,
    )


def test_fp8_compute_of_llama3_70b_at_t8_is_between_half_and_most_of_bf16s():
    """Issue 31: FP8 speeds up only the linear layers' products and adds cast traffic: 0.55-0.85 of BF16."""
    bf16, fp8 = _llama70b("bf16").result, _llama70b("fp8").result
    ratio = fp8.compute_time / bf16.compute_time
    assert 0.55 <= float(ratio) <= 0.85
    ops = fp8.figures.layout.terms.compute.operators
    assert ops.cast_time > 0 and bf16.figures.layout.terms.compute.operators.cast_time == 0
    # row scales: applied in the kernel's epilogue, measured as fast as tensorwise (never faster)
    assert _llama70b("fp8_rowwise").result.compute_time >= fp8.compute_time


def test_the_step_of_a_job_without_step_time_or_mfu_is_the_operators_sum():
    s = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=1, precision="bf16",
        per_device_batch=2, training_tokens=Q_(1e9, "token"),
    )
    from mlsysim.physics.matmul import fitted_ceiling

    stored = fitted_ceiling("Hopper", "bf16")
    best = device_kernels("H100", "bf16").matmul_ceiling
    assert s.job.matmul_ceiling == pytest.approx(stored, rel=1e-12)
    assert s.job.origins["step_time"] == (
        f"operators (bf16 matrix products, ceiling {stored:.3g} in training on Hopper: {stored / best:.3g} of the "
        "best measured kernel; measured kernels)")
    assert s.step_time.to("s").magnitude == pytest.approx(float(s.job.operators.total), rel=1e-12)
    # the seed's path is untouched: a given mfu still prices it from FLOPs
    assert s.variant(mfu=0.5).job.origins["step_time"] == "mfu"


def test_pricing_the_distinct_rows_gives_every_rows_numbers_bit_for_bit():
    """A search's rows repeat (t, b, the stage's layers, ep): priced once per distinct row and spread back,
    the classes equal those of every row priced, exactly (the same element-wise arithmetic)."""
    from mlsysim.physics.operators import Experts, operator_times_by_distinct_rows

    rng = np.random.default_rng(7)
    n = 4000
    rows = dict(
        tensor_parallel=rng.choice([1.0, 2.0, 4.0, 8.0], n), micro_batch=rng.choice([1.0, 2.0], n),
        layers_here=rng.choice([12.0, 24.0, 96.0], n), context_parallel=rng.choice([1.0, 2.0], n),
    )
    experts = Experts(share=0.9, experts=64.0, top_k=4.0, width=2048.0, parallel=rng.choice([1.0, 8.0, 16.0], n),
                      tensor=rng.choice([1.0, 2.0], n), ceiling=0.4)
    arguments = {**GPT3, **A100, **rows, "moe": experts, "recompute": "selective", "flash_attention": True,
                 "kv_heads": 8.0, "ffn_hidden": 49152.0, "gated_mlp": 1.0}
    every = _priced(operator_times, **arguments)
    distinct = _priced(operator_times_by_distinct_rows, **arguments)
    for a, b in zip(every, distinct, strict=True):
        assert np.array_equal(np.broadcast_to(a, (n,)), np.broadcast_to(b, (n,)))
