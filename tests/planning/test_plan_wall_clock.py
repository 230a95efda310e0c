"""A plan under failures ranks and limits by the whole run (issue 30, item 1).

Llama-3 70B at t = 8, p = 4, ZeRO-1 (docs/parallelism.md) with failures at 2e-4
per device-hour, an 8-hour restart and 2 GB/s of checkpoint bandwidth per node,
over 8/32/128/512 nodes. Failure-free, 512 nodes train in 4.0 days; with the
failures their wall clock is 2,881 days (goodput 0.0014), while 128 nodes take
84.5 days, the shortest. Before, the plan picked 512 nodes by the failure-free
time, and kept them under a 100-day deadline.
"""

import numpy as np
import pytest

from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models, Systems, plan, sweep
from mlsysim.planning.plan import InfeasiblePlanError

NODES = [8, 32, 128, 512]
LLAMA_70B = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=64,
    fabric=Systems.Fabrics.InfiniBand_NDR, intra_latency=Q_(0, "us"), inter_latency=Q_(0, "us"),
    per_device_batch=1, accumulation_steps=32, zero_stage=1, tensor_parallel=8, pipeline_parallel=4,
    sequence_parallel=1, step_time=Q_(0.1798 * 32, "s"), training_time=Q_(2.9e5, "hour"),
    optimizer="adam", memory_bandwidth=Q_(3.35, "TB/s"), assumptions=Assumptions(overlap=True),
    failure_rate=Q_(2e-4, "failures/device/hour"), restart_time=Q_(8, "hour"),
    checkpoint_bandwidth=Q_(2, "GB/s"),
)  # fmt: skip
PRICED = LLAMA_70B.variant(node_hour_rate=Q_(32, "USD/hour"))


def _days(table, column):
    return dict(zip(table["nodes"].tolist(), (np.asarray(table[column]) / 24).tolist(), strict=True))


def test_the_example_figures():
    table = sweep(LLAMA_70B, nodes=NODES)
    training, wall = _days(table, "training_time"), _days(table, "wall_clock_time")
    assert training[512] == pytest.approx(4.02, abs=0.01)  # the fastest without failures
    assert wall[512] == pytest.approx(2881, rel=1e-3)  # goodput 0.0014
    assert wall[128] == pytest.approx(84.5, rel=1e-3)  # the shortest wall clock
    assert min(wall, key=wall.get) == 128


def test_the_fastest_plan_under_failures_is_the_shortest_wall_clock():
    p = plan(LLAMA_70B, objective="time", nodes=NODES)
    assert p.best.nodes == 128  # before: 512 (4.0 days failure-free, 2,881 days of wall clock)
    assert p.time_figure == "wall_clock_time" and p.cost_figure == "total_cost"
    assert p.best.result.wall_clock_time.to("day").magnitude == pytest.approx(84.5, rel=1e-3)
    summary = p.summary()
    assert "the fastest by wall-clock time (failures modeled)" in summary
    assert "wall clock 84.5 days" in summary


def test_a_deadline_under_failures_bounds_the_wall_clock():
    p = plan(LLAMA_70B, objective="time", nodes=NODES, deadline=Q_(100, "day"))
    assert p.best.nodes == 128  # before: 512 nodes, whose wall clock is 2,881 days
    assert p.best.result.wall_clock_time.to("day").magnitude <= 100
    assert p.excluded["deadline"] == 2  # 8 nodes (290 days) and 512 (2,881 days)
    assert "wall-clock time <= 100 d" in p.constraints.describe()


def test_an_infeasible_plan_under_failures_says_the_best_wall_clock_reached():
    with pytest.raises(InfeasiblePlanError) as info:
        plan(LLAMA_70B, objective="time", nodes=NODES, deadline=Q_(50, "day"))
    assert "wall-clock time <= 50 d" in str(info.value)
    assert "shortest wall-clock time 2028 h" in str(info.value)  # 84.5 days, at 128 nodes


def test_the_cheapest_plan_and_a_budget_use_the_whole_run_cost():
    table = sweep(PRICED, nodes=NODES)
    total = dict(zip(NODES, np.asarray(table["total_cost"]).tolist(), strict=True))
    p = plan(PRICED, objective="cost", nodes=NODES)
    assert p.best.nodes == min(total, key=total.get) == 8
    assert p.best.result.total_cost == pytest.approx(total[8])  # 1.78 M USD (cost: 1.57 M)
    assert "whole-run cost" in p.summary()
    budget = (total[8] + total[32]) / 2  # 8 nodes fit, 32 do not (their node-hours alone would)
    assert np.asarray(table["cost"])[1] < budget < total[32]
    limited = plan(PRICED, objective="time", nodes=NODES, budget=Q_(budget, "USD"))
    assert limited.best.nodes == 8 and limited.excluded["budget"] == 3
    with pytest.raises(InfeasiblePlanError, match="cheapest whole-run cost 1,780,6"):
        plan(PRICED, objective="time", nodes=NODES, budget=Q_(1e6, "USD"))


def test_a_price_of_energy_without_failures_makes_the_cost_the_whole_run_s():
    base = LLAMA_70B.variant(
        failure_rate=None, restart_time=None, checkpoint_bandwidth=None,
        node_hour_rate=Q_(32, "USD/hour"), device_power=Q_(700, "W"),
        energy_price=Q_(0.08, "USD/kWh"),
    )  # fmt: skip
    p = plan(base, objective="cost", nodes=NODES)
    assert (p.time_figure, p.cost_figure) == ("training_time", "total_cost")
    r = p.best.result
    assert r.total_cost == pytest.approx(r.cost + r.energy_cost)


def test_without_the_whole_run_a_plan_keeps_the_failure_free_figures():
    base = LLAMA_70B.variant(failure_rate=None, restart_time=None, checkpoint_bandwidth=None)
    p = plan(base, objective="time", nodes=NODES)
    assert (p.time_figure, p.cost_figure) == ("training_time", "cost")
    assert p.best.nodes == 512 and "by wall-clock" not in p.summary()
