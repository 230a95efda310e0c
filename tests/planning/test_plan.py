"""mlsysim.plan against a brute-force search over the scalar solve."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Hardware, InfeasiblePlanError, InputError, Models, Scenarios, plan
from mlsysim.planning.pareto import pareto_mask
from tests.planning.conftest import brute_force

ONE = Scenarios.Gpt2DataParallelOneNode
FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
AXES = {
    "nodes": [1, 2, 4, 8, 16],
    "inter_bandwidth": [Q_(25, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")],
    "accumulation_steps": [1, 4],
}


def _meets(r, deadline_h=None, budget=None, min_eff=None, max_batch=None):
    return (
        (r.fits is not False)
        and (deadline_h is None or r.training_time.magnitude <= deadline_h)
        and (budget is None or r.cost <= budget)
        and (min_eff is None or r.efficiency >= min_eff)
        and (max_batch is None or r.global_batch <= max_batch)
    )


def _brute(base, axes, objective, **limits):
    scenarios = brute_force(base, axes)
    results = [s.result for s in scenarios]
    ok = [i for i, r in enumerate(results) if _meets(r, **limits)]
    key = (
        (lambda i: (results[i].cost, results[i].training_time.magnitude, i))
        if objective == "cost"
        else (lambda i: (results[i].training_time.magnitude, results[i].cost, i))
    )
    best = min(ok, key=key) if ok else None
    front = [
        i
        for i in ok
        if not any(
            results[j].training_time <= results[i].training_time
            and results[j].cost <= results[i].cost
            and (
                results[j].training_time < results[i].training_time
                or results[j].cost < results[i].cost
            )
            for j in ok
        )
    ]
    return scenarios, results, ok, best, front


@pytest.mark.parametrize(
    "objective, limits",
    [
        ("cost", {}),
        ("time", {}),
        ("cost", {"deadline_h": 1.0}),
        ("time", {"budget": 110.0, "min_eff": 0.7}),
        ("cost", {"deadline_h": 2.0, "max_batch": 2048, "min_eff": 0.5}),
    ],
)
def test_best_and_front_equal_brute_force(objective, limits):
    scenarios, results, ok, best, front = _brute(ONE, AXES, objective, **limits)
    p = plan(
        ONE,
        objective=objective,
        deadline=None if "deadline_h" not in limits else Q_(limits["deadline_h"], "hour"),
        budget=None if "budget" not in limits else Q_(limits["budget"], "USD"),
        min_efficiency=limits.get("min_eff"),
        max_global_batch=limits.get("max_batch"),
        **AXES,
    )
    assert p.best == scenarios[best]
    assert p.best.result == results[best]
    assert np.flatnonzero(p.feasible).tolist() == ok
    assert sorted(p.pareto.grid_index(i) for i in range(len(p.pareto))) == sorted(front)
    times = p.pareto["training_time"]
    assert (np.diff(times) >= 0).all()
    for i in range(len(p.pareto)):
        r = p.pareto.scenario(i).result
        assert _meets(r, **limits)
    assert "Best:" in str(p) and "Pareto front" in p.summary()


def test_knee_is_the_largest_layout_above_the_efficiency_bar():
    p = plan(ONE, objective="cost", min_efficiency=0.8, **AXES)
    scenarios, results, ok, _, _ = _brute(ONE, AXES, "cost", min_eff=0.8)
    largest = max(results[i].n_devices for i in ok)
    assert p.knee.result.n_devices == largest
    assert p.knee.result.efficiency >= 0.8
    best_eff = max(results[i].efficiency for i in ok if results[i].n_devices == largest)
    assert p.knee.result.efficiency == best_eff
    assert "Knee" in str(p)
    assert plan(ONE, **AXES).knee is None


def test_layouts_that_do_not_fit_in_memory_are_dropped():
    base = FOUR.variant(
        workload=Models.Language.Llama2_7B,
        device_memory=Hardware.Cloud.H100,
        per_device_batch=1,
        recompute="full",  # 1 GiB of activations: the training state decides
    )
    axes = {"zero_stage": [0, 1, 2, 3], "nodes": [1, 2, 4], "inter_bandwidth": [Q_(400, "Gbps")]}
    p = plan(base, objective="time", **axes)
    results = [s.result for s in brute_force(base, axes)]
    assert [r.fits for r in results] == p.table["fits"].tolist()
    assert p.excluded["memory"] == sum(not r.fits for r in results) > 0
    assert p.best.result.fits is True
    assert all(p.pareto.scenario(i).result.fits for i in range(len(p.pareto)))


def test_nothing_feasible_is_an_error_that_says_why():
    with pytest.raises(
        InfeasiblePlanError, match=r"no layout meets.*30 break deadline.*fastest"
    ) as info:
        plan(ONE, deadline=Q_(1, "minute"), **AXES)
    assert info.value.excluded["deadline"] == 30 and len(info.value.table) == 30
    big = FOUR.variant(workload=Models.Language.Llama2_70B, device_memory=Q_(40, "GB"))
    with pytest.raises(InfeasiblePlanError, match="least memory needed"):
        plan(big, nodes=[1, 2])


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"objective": "speed"}, "objective"),
        ({"deadline": Q_(5, "USD")}, "deadline"),
        ({"budget": Q_(2, "day")}, "budget"),
        ({"min_efficiency": 1.5}, "min_efficiency"),
        ({"max_global_batch": 0}, "max_global_batch"),
    ],
)
def test_bad_plan_arguments_name_themselves(kwargs, needle):
    with pytest.raises(InputError, match=needle):
        plan(ONE, nodes=[1], **kwargs)


def test_cost_objective_needs_a_price():
    with pytest.raises(InputError, match="node_hour_rate") as caught:
        plan(ONE.variant(node_hour_rate=None), nodes=[1])
    assert "(e.g. node_hour_rate=Q_(32, 'USD/hour')) or use objective='time'" in str(caught.value)
    p = plan(ONE.variant(node_hour_rate=None), objective="time", accumulation_steps=[1, 2])
    assert p.best.accumulation_steps == 2 and len(p.pareto) == 1  # less communication per sample


points = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(points)
def test_pareto_mask_equals_the_quadratic_definition(pts):
    t = np.array([p[0] for p in pts], dtype=float)
    c = np.array([p[1] for p in pts], dtype=float)
    expected = [
        not any(
            t[j] <= t[i] and c[j] <= c[i] and (t[j] < t[i] or c[j] < c[i]) for j in range(len(pts))
        )
        for i in range(len(pts))
    ]
    assert pareto_mask(t, c).tolist() == expected


def test_pareto_without_costs_keeps_the_fastest():
    t = np.array([3.0, 1.0, 1.0, 2.0])
    assert pareto_mask(t, np.full(4, np.nan)).tolist() == [False, True, True, False]


def test_plan_order_ties_go_to_the_first_layout_in_sweep_order():
    p = plan(ONE, objective="time", per_device_batch=[16, 32])  # same times and costs
    assert p.best.per_device_batch == 16
    assert list(itertools.islice(p.pareto["per_device_batch"], 2)) == [16, 32]


def test_plan_top_takes_slices_of_rows():
    found = plan(ONE.variant(inter_bandwidth=Q_(100, "Gbps")), nodes=[1, 2, 4, 8], top=4)
    first = found.top[:3]
    assert len(first) == 3 and first["nodes"].tolist() == found.top["nodes"][:3].tolist()
    assert first.row(0) == found.top.row(0) and first.scenario(2) == found.top.scenario(2)
    assert found.top[::-1]["nodes"].tolist() == found.top["nodes"][::-1].tolist()
    assert len(found.top[10:]) == 0
    with pytest.raises(KeyError, match=r"table.row\(i\)"):
        found.top[0]
