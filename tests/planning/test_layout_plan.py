"""Sweeps and plans over parallel layouts run the scalar solve's equations; broken layouts are dropped."""

import itertools
import math

import pytest

import mlsysim
from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models, Systems
from mlsysim.core.exceptions import InputError
from tests.planning.conftest import assert_table_matches_scalar, variant_of_row

BASE = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=64,
    fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=32, mfu=0.45,
    training_tokens=Q_(1e12, "token"), optimizer="adam", memory_bandwidth=Q_(3.35, "TB/s"),
    device_memory=Q_(80, "GB"), node_hour_rate=Q_(98, "USD/hour"), assumptions=Assumptions(overlap=True),
    tensor_parallel=2, zero_stage=3, sequence_parallel=1,
)


def test_a_sweep_over_layouts_equals_the_scalar_solve_row_by_row():
    axes = {"tensor_parallel": [1, 2, 8], "pipeline_parallel": [1, 4], "sequence_parallel": [0, 1],
            "zero_stage": [1, 3]}
    table = mlsysim.sweep(BASE, **axes)
    assert_table_matches_scalar(table, BASE, axes)


def test_a_plan_over_t_and_p_is_the_best_of_a_brute_force_and_drops_broken_layouts():
    axes = {"tensor_parallel": [1, 2, 4, 8, 3], "pipeline_parallel": [1, 2, 4, 5, 128, 64]}
    p = mlsysim.plan(BASE, objective="time", **axes)
    # t = 3 breaks the heads rule (64 heads), p = 5 the devices (512), p = 128 the layers (80);
    # p = 64 with m = 32 micro-batches is legal (fill and drain dominate)
    feasible, broken = [], 0
    for t, pp in itertools.product(*axes.values()):
        try:
            scenario = variant_of_row(BASE, {"tensor_parallel": t, "pipeline_parallel": pp})
            r = scenario.result
        except InputError:
            broken += 1
            continue
        if r.fits is not False:
            feasible.append((r.training_time.magnitude, scenario))
    assert broken == 14 and p.excluded["layout_rules"] == broken
    assert int(p.feasible.sum()) == p.feasible_count == len(feasible)  # the materialised mask agrees
    feasible.sort(key=lambda item: item[0])
    assert p.best.result.training_time.magnitude == pytest.approx(feasible[0][0], rel=1e-12)
    assert p.runner_up.result.training_time.magnitude == pytest.approx(feasible[1][0], rel=1e-12)
    why = p.why()
    assert why is not None and why.startswith("t=") and "s per update" in why
    assert "Why: " in str(p)


def test_a_plan_without_layout_inputs_reads_as_before():
    seed = BASE.variant(tensor_parallel=None, sequence_parallel=None, zero_stage=0, device_memory=Q_(2, "TB"))
    p = mlsysim.plan(seed, objective="time", nodes=[32, 64])
    assert "layout_rules" not in p.excluded and p.why() is None and p.top is None
    assert math.isnan(p.best.result.figures.bubble_time)


def test_a_sweep_of_layouts_with_a_step_from_flops_equals_the_scalar_solve():
    """Recomputation, fused attention and uneven stages enter a sweep as the scalar solve."""
    job = BASE.variant(mfu=0.5, recompute="full", tensor_parallel=8, pipeline_parallel=4)
    axes = {"mfu": [0.4, 0.6], "flash_attention": [0, 1], "pipeline_parallel": [4, 8],
            "first_stage_layers": [None, 9]}
    table = mlsysim.sweep(job, **axes)
    assert_table_matches_scalar(table, job, axes)


def test_a_measured_step_time_on_an_axis_wins_over_mfu_in_a_layout_sweep():
    job = BASE.variant(mfu=0.5, tensor_parallel=8, pipeline_parallel=4)
    axes = {"step_time": [Q_(40, "s"), Q_(60, "s")], "nodes": [32, 64]}
    table = mlsysim.sweep(job, **axes)
    assert_table_matches_scalar(table, job, axes)
    slow = job.variant(step_time=Q_(60, "s")).result
    assert slow.compute_time.to("s").magnitude == pytest.approx(60 * 32 / 32, rel=1e-12)  # m T1 / (t p)
