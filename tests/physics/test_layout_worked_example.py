"""docs/parallelism.md's worked examples, recomputed by hand term by term: Llama-3 70B on 64 DGX H100
nodes (512 GPUs, global batch 512 sequences of 8,192 tokens, sequence parallelism, fused attention,
u = 0.73, the model FLOPs utilisation of one device's step: nothing added to the model FLOPs). First the
layout the search picks (t = 4, p = 1, d = 128, ZeRO-3, m = 4; the search itself:
tests/planning/test_layouts.py), then a pipeline layout (t = 8, p = 4, d = 16, ZeRO-1, m = 32)."""

import pytest

from mlsysim.physics.layout import layout_figures
from mlsysim.physics.records import records_from

N, L, H, A, S, V = 70.6e9, 80, 8192, 64, 8192, 128256
U, PEAK, HBM, NVLINK, NIC = 0.73, 989.4e12, 3.35e12, 450e9, 50e9
LLAMA = dict(parameters=N, layers=L, hidden=H, heads=A, seq_len=S, vocab=V)
DGX_H100 = dict(devices_per_node=8, peak_flops=PEAK, math_efficiency=U, memory_bandwidth=HBM,
                intra_bandwidth=NVLINK, nic_bandwidth=NIC, nics_per_node=8)
F = 6 * N * S + 12 * L * H * S * S  # model FLOPs of one sequence


def figures(**layout):
    return layout_figures(*records_from(**LLAMA, **DGX_H100, devices=512, micro_batch=1, sequence_parallel=True,
                          flash_attention=True, **layout))


def zero3_by_hand():
    t, m, d = 4, 4, 128
    psi = N / t
    stored = 34 * S * H / t
    t_c = F / (t * U * PEAK)
    t_tp = L * 4 * (2 * S * H) * (2 * 3 / 4) / NVLINK
    c = (2 * psi / L) * (d - 1) / d / (8 * NIC * 2 / 8)  # 2 ranks of the group per node: 2 of 8 NICs
    t_f = t_c / L / 3
    assert c < t_f and 2 * c < 2 * t_f  # prefetch hides every layer but the ends
    return {
        "compute_time": m * t_c,
        "tensor_time": m * t_tp,
        "bubble_time": 0.0,
        "pipeline_time": 0.0,
        "sharding_time": m * 3 * c,
        "data_time": 0.0,
        "optimizer_time": psi / d * 28 / HBM,
        "state_bytes": 16 * psi / d,
        "buffer_bytes": 2 * 4 * psi / L,
        "activation_bytes": L * stored,
    }


def pipeline_by_hand():
    t, p, d, m = 8, 4, 16, 32
    psi = N / (t * p)
    stored = S * H * 34 / t
    t_c = F / (t * p * U * PEAK)
    msg = 2 * S * H
    t_tp = (L / p) * 4 * msg * (2 * 7 / 8) / NVLINK
    return {
        "compute_time": m * t_c,
        "tensor_time": m * t_tp,
        "bubble_time": (p - 1) * (t_c + t_tp),
        "pipeline_time": 2 * (m + p - 1) * (msg / t) / NIC,
        "sharding_time": 0.0,
        "data_time": 2 * psi * (d - 1) / d / NIC,  # the all-gather after the step; the scatter is hidden
        "optimizer_time": psi / d * 28 / HBM,
        "state_bytes": 2 * psi + 2 * psi + 12 * psi / d,
        "buffer_bytes": 0.0,
        "activation_bytes": (L / p) * p * stored,
    }


CASES = {
    "zero3": (dict(tensor_parallel=4, pipeline_parallel=1, micro_batches=4, zero_stage=3), zero3_by_hand),
    "pipeline": (dict(tensor_parallel=8, pipeline_parallel=4, micro_batches=32, zero_stage=1), pipeline_by_hand),
}

# the figures the page prints
PRINTED = {
    "zero3": {"compute_time": 5.535, "tensor_time": 0.5727, "sharding_time": 0.05254, "optimizer_time": 0.001153,
              "state_bytes": 2.206e9, "buffer_bytes": 1.765e9, "activation_bytes": 45.63e9,
              "update_time": 6.162, "mfu": 0.6558},
    "pipeline": {"compute_time": 5.535, "tensor_time": 1.336, "bubble_time": 0.6442, "pipeline_time": 0.02349,
                 "data_time": 0.08273, "optimizer_time": 0.001153, "state_bytes": 10.48e9,
                 "activation_bytes": 22.82e9, "update_time": 7.623, "mfu": 0.5301},
}


@pytest.mark.parametrize("case", CASES)
def test_every_term_equals_its_hand_derivation(case):
    layout, by_hand = CASES[case]
    f = figures(**layout)
    for name, value in by_hand().items():
        assert getattr(f, name) == pytest.approx(value, rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("case", CASES)
def test_the_printed_figures_are_the_hand_figures(case):
    hand = CASES[case][1]()
    update = sum(v for k, v in hand.items() if k.endswith("_time"))
    hand = {**hand, "update_time": update, "mfu": 512 * F / (update * 512 * PEAK)}
    for name, printed in PRINTED[case].items():
        assert hand[name] == pytest.approx(printed, rel=1e-3), name
    f = figures(**CASES[case][0])
    assert f.update_time == pytest.approx(update, rel=1e-12)
    assert f.memory_bytes < 80e9
