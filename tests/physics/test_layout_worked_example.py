"""docs/parallelism.md's worked example, recomputed by hand term by term: Llama-3 70B on 64 DGX H100
nodes, t = 8, p = 4, d = 16, ZeRO-1, sequence parallelism, one 8,192-token sequence per micro-batch,
32 micro-batches per update (global batch 512 sequences), u = 0.73."""

import pytest

from mlsysim.physics.layout import layout_figures

N, L, H, A, S, V = 70.6e9, 80, 8192, 64, 8192, 128256
T, P, D, M, U = 8, 4, 16, 32, 0.73
PEAK, HBM, NVLINK, NIC = 989.4e12, 3.35e12, 450e9, 50e9


@pytest.fixture(scope="module")
def figures():
    return layout_figures(
        parameters=N, layers=L, hidden=H, heads=A, seq_len=S, vocab=V, devices=512, devices_per_node=8,
        peak_flops=PEAK, math_efficiency=U, memory_bandwidth=HBM, intra_bandwidth=NVLINK, nic_bandwidth=NIC,
        nics_per_node=8, tensor_parallel=T, pipeline_parallel=P, micro_batch=1, micro_batches=M, zero_stage=1,
        sequence_parallel=True, flash_attention=True,
    )


def by_hand():
    flops = 6 * N * S + 12 * L * H * S * S  # model FLOPs of one sequence
    matmul = flops / (T * P * U * PEAK)  # one micro-batch on one device
    stored = S * H * 34 / T  # bytes one layer stores (sequence parallel, no attention matrices)
    elementwise = (L / P) * 4 * stored / HBM
    t_c = matmul + elementwise
    msg = 2 * S * H  # one tensor-parallel all-reduce
    t_tp = (L / P) * 4 * msg * (2 * 7 / 8) / NVLINK
    p2p = 2 * (M + P - 1) * (msg / T) / NIC
    psi = N / (T * P)
    gather = 2 * psi * (D - 1) / D / NIC  # ZeRO-1 all-gather of the updated parameters (its scatter is hidden)
    optimizer = psi / D * 28 / HBM
    return {
        "compute_time": M * t_c,
        "tensor_time": M * t_tp,
        "bubble_time": (P - 1) * (t_c + t_tp),
        "pipeline_time": p2p,
        "data_time": gather,
        "optimizer_time": optimizer,
        "state_bytes": 2 * psi + 2 * psi + 12 * psi / D,
        "activation_bytes": (L / P) * P * stored,
    }


# the figures the page prints (seconds, bytes)
PRINTED = {
    "compute_time": 5.753,
    "tensor_time": 1.336,
    "bubble_time": 0.6646,
    "pipeline_time": 0.02349,
    "data_time": 0.08273,
    "optimizer_time": 0.001153,
    "state_bytes": 10.48e9,
    "activation_bytes": 22.82e9,
}


def test_every_term_equals_its_hand_derivation(figures):
    for name, value in by_hand().items():
        assert getattr(figures, name) == pytest.approx(value, rel=1e-12), name
    assert figures.sharding_time == 0


def test_the_printed_figures_are_the_hand_figures():
    for name, value in by_hand().items():
        assert value == pytest.approx(PRINTED[name], rel=1e-3), name


def test_update_and_mfu(figures):
    terms = by_hand()
    update = sum(v for k, v in terms.items() if k.endswith("_time"))
    assert figures.update_time == pytest.approx(update, rel=1e-12)
    assert update == pytest.approx(7.861, rel=1e-3)
    assert figures.bubble_fraction == 3 / 32
    assert figures.mfu == pytest.approx(512 * (6 * N * S + 12 * L * H * S * S) / (update * 512 * PEAK))
    assert figures.mfu == pytest.approx(0.514, abs=5e-4)
    assert figures.memory_bytes < 80e9
