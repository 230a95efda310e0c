"""The plan summary's rules: only the fields that matter, ties grouped, a knee only where found."""

import warnings

import pytest

from mlsysim import Q_, Assumptions, Hardware, Models, Scenarios, Workload, plan
from mlsysim.engine.reports.headline import fmt_hours
from mlsysim.planning.summary import (
    group_results,
    knee_of,
    layout_of,
    result_key,
    row_key,
)

ONE = Scenarios.Gpt2DataParallelOneNode
BW = [Q_(10, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")]


def _without_layers(scenario, parameters):
    """The scenario on a workload that states no layers: its ZeRO stages keep the data-parallel
    rule (the per-layer model needs layers), where stages 0, 1 and 2 cost the same time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the measured step time is carried over on purpose
        return scenario.variant(workload=Workload(name="flat", parameters=Q_(parameters, "param")))


FLAT = _without_layers(ONE, 1.5e9)


@pytest.fixture(scope="module")
def zero_plan():
    return plan(
        FLAT, nodes=range(1, 17), inter_bandwidth=BW, zero_stage=[0, 1, 2], min_efficiency=0.5
    )


def test_best_on_one_node_does_not_name_the_fabric(zero_plan):
    assert zero_plan.best.nodes == 1
    layout = layout_of(zero_plan.best, zero_plan.pareto.axes)
    assert list(layout.named) == ["nodes"]
    assert set(layout.free) == {"inter_bandwidth", "zero_stage"}
    best_line = zero_plan.summary().splitlines()[0]
    assert best_line.startswith("Best: nodes=1 -> 8 devices")
    assert "inter_bandwidth=" not in best_line and "zero_stage=" not in best_line
    assert "(inter_bandwidth, zero_stage: no difference here)" in best_line


def test_layouts_with_equal_results_are_one_group(zero_plan):
    front = zero_plan.pareto
    groups = group_results(front)
    assert sum(len(g.rows) for g in groups) == len(front)
    keys = [row_key(front, g.rows[0]) for g in groups]
    assert len(set(keys)) == len(groups)  # one group per distinct result
    for g in groups:
        assert {row_key(front, i) for i in g.rows} == {row_key(front, g.rows[0])}
        assert "zero_stage" in g.free  # ZeRO 0, 1, 2 give the same time and cost here
        assert "zero_stage" not in g.describe()
    assert f"{len(front)} layouts, {len(groups)} distinct results" in zero_plan.summary()


def test_only_the_equivalent_values_are_listed_when_some_differ():
    """Llama-2 7B on 80 GB: stage 0 does not fit, stages 1 and 2 give the same result, 3 is slower."""
    base = _without_layers(ONE, Models.Language.Llama2_7B.parameter_count()).variant(
        device_memory=Hardware.Cloud.H100,
        per_device_batch=1,
        activation_memory=Q_(1, "GiB"),  # the training state decides
    )
    p = plan(base, objective="time", zero_stage=[0, 1, 2, 3], nodes=[1])
    layout = layout_of(p.best, p.pareto.axes)
    assert layout.named["zero_stage"] == (1, 2)
    assert "zero_stage=1 or 2" in p.summary().splitlines()[0]
    results = {z: result_key(base.variant(zero_stage=z)) for z in (0, 1, 2, 3)}
    assert results[1] == results[2] != results[3] and results[0] != results[1]


def test_knee_at_the_edge_of_the_range_is_reported_as_such(zero_plan):
    knee = knee_of(zero_plan)
    assert knee.kind == "edge" and knee.layout.nodes == 16
    line = next(x for x in zero_plan.summary().splitlines() if x.startswith("Knee"))
    assert line.startswith("Knee: not in the range.")
    assert "widen the range (nodes beyond 16)" in line


def test_knee_inside_the_range_is_where_every_layout_falls_under_the_bar():
    base = ONE.variant(workload=Models.Language.Llama2_7B, assumptions=Assumptions.realistic())
    bw = [Q_(25, "Gbps"), Q_(100, "Gbps")]
    p = plan(base, nodes=range(1, 17), inter_bandwidth=bw, min_efficiency=0.7)
    knee = knee_of(p)
    assert knee.kind == "found"
    assert knee.layout.result.efficiency >= 0.7
    beyond = [base.variant(nodes=knee.next_nodes, inter_bandwidth=b).result.efficiency for b in bw]
    assert max(beyond) == pytest.approx(knee.next_efficiency) and max(beyond) < 0.7
    assert f"at nodes={knee.next_nodes} efficiency is at most" in p.summary()


def test_knee_held_back_by_another_constraint_is_not_called_a_knee():
    p = plan(
        ONE,
        objective="time",
        nodes=range(1, 9),
        inter_bandwidth=BW,
        min_efficiency=0.8,
        budget=Q_(105, "USD"),
    )
    knee = knee_of(p)
    assert knee.kind == "other" and knee.next_efficiency >= 0.8
    assert "breaks another constraint" in p.summary()


def test_no_knee_line_without_an_efficiency_bar():
    p = plan(ONE, nodes=[1, 2, 4], inter_bandwidth=BW)
    assert knee_of(p) is None
    assert "Knee" not in p.summary()


def test_runner_up_sentence_compares_with_the_next_faster_layout_on_the_front(zero_plan):
    best = zero_plan.best.result
    front = zero_plan.pareto
    groups = group_results(front)
    neighbour = groups[-2].rows[0]  # the front runs from fast to cheap; the best is last
    cost = float(front["cost"][neighbour])
    cheaper = (cost - best.cost) / cost * 100
    sooner = (
        (best.training_time.magnitude - float(front["training_time"][neighbour]))
        / (best.training_time.magnitude)
        * 100
    )
    line = next(x for x in zero_plan.summary().splitlines() if x.startswith("Runner-up"))
    assert line == (
        f"Runner-up: nodes=1 is {cheaper:.1f}% cheaper than nodes=2, inter_bandwidth=400 Gbps "
        f"({cost:,.2f} USD), which finishes {sooner:.0f}% sooner "
        f"({fmt_hours(float(front['training_time'][neighbour]))})."
    )


@pytest.mark.parametrize(
    "hours, text", [(0.05, "3.0 min"), (2.8045, "2.80 h"), (100.0, "4.2 days"), (0.0001, "0.4 s")]
)
def test_durations_read_in_the_unit_a_person_would_use(hours, text):
    assert fmt_hours(hours) == text


def test_an_axis_of_one_value_is_a_constant_not_a_choice():
    p = plan(ONE, nodes=[1, 2, 4], inter_bandwidth=[Q_(100, "Gbps")], accumulation_steps=[1, 2])
    best_line = p.summary().splitlines()[0]
    assert "inter_bandwidth" not in best_line
    assert all("inter_bandwidth" not in g.describe() for g in group_results(p.pareto))


def test_without_a_price_the_front_says_cost_unknown():
    p = plan(ONE.variant(node_hour_rate=None), objective="time", nodes=[1, 2], inter_bandwidth=BW)
    assert "(cost unknown)" in p.summary() and "cost unknown" in p.summary().splitlines()[0]
