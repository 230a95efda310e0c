"""``plan(confidence=...)``: deadline and budget met with a probability (issue 23)."""

import numpy as np
import pytest

from mlsysim import Q_, Assumptions, Scenarios, plan
from mlsysim.core.exceptions import InfeasiblePlanError, InputError
from mlsysim.engine.reports.bands import confidence_band, slowdown_at_confidence

BASE = Scenarios.Gpt2DataParallelOneNode.variant(
    assumptions=Assumptions.realistic(), nics_per_node=8
)
AXES = {"nodes": list(range(1, 17)), "inter_bandwidth": [Q_(100, "Gbps"), Q_(400, "Gbps")]}


def _plan(**limits):
    return plan(BASE, objective="cost", workers=1, **limits, **AXES)


def test_confidence_keeps_only_layouts_whose_bound_meets_the_deadline():
    deadline = Q_(1.1, "hour")
    plain = _plan(deadline=deadline)
    sure = _plan(deadline=deadline, confidence=0.8)
    assert sure.feasible_count < plain.feasible_count
    table = sure.table
    z = confidence_band(BASE.assumptions, 0.8)
    slow = slowdown_at_confidence(z, table["efficiency"], table["nodes"], table["n_devices"])
    expected = (table["training_time"] * slow <= 1.1) & table["fits"]
    assert np.array_equal(sure.feasible, expected)  # the table's masks
    assert sure.feasible_count == int(expected.sum())  # the streamed reduction agrees
    best = sure.best.result
    low, _ = best.interval("efficiency", 2 * 0.8 - 1)
    assert best.training_time.to("hour").magnitude * best.efficiency / low <= 1.1 + 1e-12


def test_higher_confidence_never_admits_more_layouts():
    def count(confidence):
        try:
            return _plan(budget=Q_(115, "USD"), confidence=confidence).feasible_count
        except InfeasiblePlanError:
            return 0

    counts = [count(c) for c in (0.55, 0.7, 0.8, 0.9, 0.99)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_slowdown_is_one_on_one_device_and_at_least_one_elsewhere():
    z = confidence_band(Assumptions.realistic(), 0.8)
    assert z < 0
    slow = slowdown_at_confidence(z, [1.0, 0.9, 0.5], [1, 1, 8], [1, 8, 64])
    assert slow[0] == 1.0 and np.all(slow[1:] > 1.0) and slow[2] > slow[1]


@pytest.mark.parametrize("value", [0.5, 1.0, 1.2, "0.8", True])
def test_bad_confidence_is_refused(value):
    with pytest.raises(InputError, match="confidence"):
        _plan(deadline=Q_(2, "hour"), confidence=value)


def test_the_seed_has_no_confidence_and_assumptions_cannot_be_swept():
    with pytest.raises(InputError, match="seed model"):
        plan(Scenarios.Gpt2DataParallelOneNode, deadline=Q_(2, "hour"), confidence=0.8, nodes=[1, 2])
    with pytest.raises(InputError, match="sweep"):
        plan(
            BASE, deadline=Q_(2, "hour"), confidence=0.8, nodes=[1, 2],
            assumptions=[Assumptions.realistic(), Assumptions.realistic().variant(overlap=False)],
        )


def test_cli_confidence_is_described_in_the_constraints(capsys):
    from mlsysim.cli import main

    code = main([
        "plan", "Gpt2DataParallelOneNode", "--set", "assumptions=realistic",
        "--set", "nics_per_node=8", "--axis", "nodes=1..16",
        "--axis", "inter_bandwidth=100 Gbps,400 Gbps", "--deadline", "1.15 hour",
        "--confidence", "0.8",
    ])
    out = capsys.readouterr().out
    assert code == 0 and "training time <= 1.15 h with 80% confidence" in out
