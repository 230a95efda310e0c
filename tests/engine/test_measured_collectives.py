"""``Assumptions.collectives``: a parallel layout's collectives by the measured size curves (issue 38), off by
default. The scenario's collective is the kernel API's; a link given by hand means what it says; sweeps equal
solves; explain names the curve and its constants' source."""

import pytest

import mlsysim
from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models, Systems
from mlsysim.kernels.collectives import collective
from mlsysim.physics.tensor_parallel import tp_allreduce_time
from tests.planning.conftest import assert_table_matches_scalar

MEASURED = Assumptions(collectives="measured")
BASE = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=8,
    fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=32, tensor_parallel=8,
    pipeline_parallel=4, zero_stage=1, training_samples=Q_(4096, "sample"), optimizer="adam", assumptions=MEASURED,
)
MESSAGE = 2.0 * 1 * 8192 * 8192  # M = 2 b s h of Llama-3 70B, one sequence of 8,192 tokens


def terms(scenario):
    return scenario.result.figures.layout.terms


def test_off_by_default_every_collective_is_alpha_beta():
    q = terms(BASE.variant(assumptions=Assumptions()))
    assert not any(bool(x) for x in (q.tensor.measured, q.pipeline.measured, q.data.measured_scatter))
    assert float(q.tensor.collective_time) == pytest.approx(tp_allreduce_time(MESSAGE, 8, 450e9, 1e-6), rel=1e-12)


def test_the_tensor_all_reduce_is_the_kernel_apis_on_the_node():
    q = terms(BASE)
    assert q.tensor.measured and q.pipeline.measured and q.data.measured_scatter
    kernel = collective("all_reduce", Q_(MESSAGE, "B"), 8, node="DGX_H100")
    assert float(q.tensor.collective_time) == pytest.approx(kernel.time.to("s").magnitude, rel=1e-12)
    assert "nvls" in kernel.what  # NVLink SHARP: the fastest on 8 H100s at 134 MB
    assert float(q.tensor.collective_time) > tp_allreduce_time(MESSAGE, 8, 450e9, 1e-6) * 1.1


def test_a_bandwidth_given_by_hand_is_priced_at_that_rate():
    given = BASE.variant(intra_bandwidth=Q_(300, "GB/s"))
    q = terms(given)
    assert not q.tensor.measured and q.pipeline.measured  # the NVLink given; the NICs still the fabric's
    assert float(q.tensor.collective_time) == pytest.approx(tp_allreduce_time(MESSAGE, 8, 300e9, 1e-6), rel=1e-12)
    assert given.result.update_time != BASE.result.update_time
    nics = terms(BASE.variant(inter_bandwidth=Q_(200, "Gbps")))
    assert nics.tensor.measured and not nics.pipeline.measured


def test_an_efficiency_assumption_is_a_given_rate_too():
    q = terms(BASE.variant(assumptions=MEASURED.variant(intra_efficiency=0.8)))
    assert not q.tensor.measured
    assert float(q.tensor.collective_time) == pytest.approx(tp_allreduce_time(MESSAGE, 8, 360e9, 1e-6), rel=1e-12)


def test_a_sweep_equals_the_scalar_solve_row_by_row():
    axes = {"intra_bandwidth": [Q_(450, "GB/s"), Q_(300, "GB/s")], "tensor_parallel": [2, 8],
            "pipeline_parallel": [1, 4], "sequence_parallel": [0, 1]}
    table = mlsysim.sweep(BASE, **axes)
    assert_table_matches_scalar(table, BASE, axes)


def test_explain_prints_the_curves_and_their_source():
    text = BASE.explain()
    assert "the measured curve of Hopper NVLink, infiniband" in text and "kernel_fits/collectives.json" in text
    assert "a_0 + a h + max(V_up / (e_up B_up), V_out / (e_out B_out)) / (x / (x + x_h))^g" in text


def test_a_node_no_table_covers_keeps_the_links():
    gb300 = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.GB300_NVL72, nodes=18,
        per_device_batch=1, accumulation_steps=8, tensor_parallel=8, training_samples=Q_(4096, "sample"),
        assumptions=MEASURED)
    q = terms(gb300)
    assert gb300.result.figures.layout.records.rates.kernels.collectives is None and not q.tensor.measured
