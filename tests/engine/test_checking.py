"""Checked inputs: the numbers kept beside them, and what a variant reuses from the older scenario."""

from __future__ import annotations

import gc
import math

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Scenarios, Systems
from mlsysim.engine.model.equations import NEUTRAL_INPUTS, Inputs, inputs_of
from mlsysim.solvers import DataParallelScaleOutModel

ONE = Scenarios.Gpt2DataParallelOneNode
FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


def _numbers(s: DataParallelScaleOutScenario) -> dict[str, float]:
    return dict(s._checked()[0])


def _same_numbers(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def test_the_numbers_hold_every_inputs_field_in_its_order():
    """Inputs is built from them by position, so the order is the contract."""
    order = list(NEUTRAL_INPUTS)
    cases = [
        ONE,
        FOUR,
        ONE.variant(nodes=4, inter_bandwidth=Q_(10, "Gbps")),
        ONE.variant(per_device_batch=8, nics_per_node=4, intra_latency=Q_(1, "us")),
        FOUR.variant(fabric="InfiniBand_NDR").variant(inter_latency=None),
        DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100,
            nodes=2, mfu=0.4, training_tokens=Q_(1e10, "token"), per_device_batch=1,
        ).variant(step_time=Q_(2, "s"), mfu=None),
    ]
    for s in cases:
        assert list(_numbers(s)) == order
        x = inputs_of(s._checked()[0])
        assert x == Inputs(**s._checked()[0])  # by position as by name


def test_a_variant_that_leaves_the_derivation_alone_keeps_its_job_and_derived_values():
    v = ONE.variant(nodes=4, inter_bandwidth=Q_(10, "Gbps"))
    assert v.job is ONE.job  # kept, not derived again
    assert v.activation_memory is ONE.activation_memory
    fresh = DataParallelScaleOutScenario(**{**ONE.given, "nodes": 4, "inter_bandwidth": Q_(10, "Gbps")})
    assert v == fresh and v.job == fresh.job
    assert _same_numbers(_numbers(v), _numbers(fresh))
    assert v.result.figures == fresh.result.figures


def test_a_variant_that_changes_what_the_derivation_reads_derives_again():
    v = ONE.variant(per_device_batch=8)
    assert v.job is not ONE.job
    assert v.activation_memory == ONE.activation_memory / 2
    recompute = ONE.variant(recompute="full")
    assert recompute.job.origins["activation_memory"] == "recompute=full"
    assert recompute.activation_memory < ONE.activation_memory


def test_a_variant_giving_what_an_older_preset_filled_takes_it_from_the_preset():
    on_ndr = FOUR.variant(fabric="InfiniBand_NDR")
    assert "inter_latency" in on_ndr.job.origins
    v = on_ndr.variant(inter_latency=Q_(7, "us"))
    assert "inter_latency" not in v.job.origins and v.inter_latency == Q_(7, "us")
    assert v.job.origins["inter_bandwidth"].startswith("fabric InfiniBand_NDR")


def test_a_result_reads_its_model_inputs_without_the_scenario_name():
    r = ONE.variant(nodes=2, inter_bandwidth=Q_(100, "Gbps")).result
    assert "name" not in r.inputs and "description" not in r.inputs
    assert dict(r.inputs) == ONE.variant(nodes=2, inter_bandwidth=Q_(100, "Gbps")).inputs()
    solved = DataParallelScaleOutModel().solve(
        ONE.workload, "fp16", ONE.step_time, ONE.training_time, 16, 8, 2,
        ONE.intra_bandwidth, Q_(100, "Gbps"), 1, ONE.node_hour_rate,
    )
    assert solved.inputs.keys() == r.inputs.keys()


def test_variant_result_leaves_no_reference_cycle_behind():
    """A scenario keeps its result beside its inputs; the result holds the inputs: no cycle,
    so each variant is freed at once, not by the garbage collector."""
    ONE.variant(nodes=2, inter_bandwidth=Q_(100, "Gbps")).result  # noqa: B018 - warm the caches
    gc.collect()
    gc.disable()
    try:
        for nodes in range(2, 12):
            ONE.variant(nodes=nodes, inter_bandwidth=Q_(100, "Gbps")).result  # noqa: B018
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_evaluate_fills_the_figures_by_position_in_their_order():
    """evaluate builds Figures by position: each figure checked against its own definition."""
    r = FOUR.variant(assumptions="realistic").result
    f = r.figures
    x = r.model_inputs
    assert f.n_devices == x.devices_per_node * x.nodes
    assert f.gradient_bytes == x.gradient_bytes
    assert f.communication_time == f.intra_time + f.inter_time + f.first_bucket_time
    assert f.efficiency == f.speedup / f.n_devices
    assert f.global_batch == x.per_device_batch * f.n_devices * x.accumulation_steps
    assert f.training_time == x.training_time / f.speedup
    assert f.cost == f.training_time / 3600.0 * x.nodes * x.node_hour_rate
    assert f.device_memory is x.device_memory or math.isnan(f.device_memory)
    assert isinstance(f.buckets, tuple) and f.intra_cost.rate == x.intra_bandwidth * r.choices.intra_efficiency
    assert f.extra_time == f.optimizer_time + f.interference_time + f.bucket_copy_time
    assert f.update_time == f.compute_time + f.exposed_communication_time + f.synchronization_time + f.extra_time
    assert f.layout is None and f.layout_valid is True and math.isnan(f.job_mtbf)
