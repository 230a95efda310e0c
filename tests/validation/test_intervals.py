"""result.interval: normalised conformal intervals from out-of-family residuals (issues 12, 23)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Assumptions, Scenarios
from mlsysim.core.exceptions import InputError
from mlsysim.engine.reports.band_store import assumptions_key, stored_bands
from mlsysim.engine.reports.bands import (
    DIFFICULTY_LOSS,
    DIFFICULTY_NODES,
    difficulty,
    efficiency_band,
    result_nodes,
    scores,
)
from mlsysim.engine.results import INTERVAL_FIELDS
from mlsysim.validation.intervals import published_scores, stored_document
from mlsysim.validation.published import nodes_of_cases, out_of_family

REAL = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
    assumptions=Assumptions.realistic(), nics_per_node=8, node_hour_rate=Q_(30, "USD/hour")
)


def test_the_seed_has_no_interval_and_says_which_preset_has_one():
    with pytest.raises(InputError, match=r"Assumptions\.realistic\(\)"):
        Scenarios.Gpt2DataParallelOneNode.result.interval("efficiency")


def test_bad_name_and_level():
    with pytest.raises(InputError, match="efficiency"):
        REAL.result.interval("compute_time")
    for level in (0, 1, 1.5, "0.8", True):
        with pytest.raises(InputError, match="level"):
            REAL.result.interval("efficiency", level)


def test_every_field_brackets_its_point_value():
    r = REAL.result
    for name in INTERVAL_FIELDS:
        low, high = r.interval(name)
        point = getattr(r, name)
        assert low <= point <= high, name
    low, high = r.interval("update_time")
    assert low.units == r.update_time.units


def test_fields_follow_the_efficiency_interval():
    r = REAL.result
    e_low, e_high = r.interval("efficiency")
    s_low, s_high = r.interval("speedup")
    assert (s_low, s_high) == pytest.approx((r.n_devices * e_low, r.n_devices * e_high))
    u_low, u_high = r.interval("update_time")
    assert u_low.magnitude == pytest.approx(r.update_time.magnitude * r.efficiency / e_high)
    assert u_high.magnitude == pytest.approx(r.update_time.magnitude * r.efficiency / e_low)
    c_low, c_high = r.interval("cost")
    assert c_low == pytest.approx(r.cost * r.efficiency / e_high)


def test_wider_level_gives_a_wider_band():
    a = Assumptions.realistic()
    low50, high50 = efficiency_band(a, 0.5)
    low90, high90 = efficiency_band(a, 0.9)
    assert low90 <= low50 < 0 < high50 <= high90


def test_one_device_is_a_point_and_missing_cost_is_an_error():
    one = Scenarios.Gpt2DataParallelOneNode.variant(
        assumptions=Assumptions.realistic(), devices_per_node=1
    )
    assert one.result.interval("efficiency") == (1.0, 1.0)
    no_price = REAL.variant(node_hour_rate=None)
    with pytest.raises(InputError, match="node_hour_rate"):
        no_price.result.interval("cost")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 64), st.floats(0.05, 0.95))
def test_interval_stays_in_the_unit_range(nodes, level):
    r = REAL.variant(nodes=nodes).result
    low, high = r.interval("efficiency", level)
    assert 0 < low <= high <= 1.0
    if level >= 0.5:  # the residuals straddle zero: a central band of half or more holds the point
        assert low <= r.efficiency <= high
    assert math.isfinite(r.interval("update_time", level)[1].magnitude)


def test_scores_are_out_of_family_residuals_over_the_difficulty():
    a = Assumptions.realistic()
    oof = out_of_family(a)
    e = oof.predicted
    s = 1 + DIFFICULTY_LOSS * e * (1 - e) + DIFFICULTY_NODES * np.log2(nodes_of_cases())
    assert np.allclose(published_scores(a).values, oof.residuals / s, rtol=1e-12)


def test_the_band_follows_the_layout():
    """A job that is nearly all compute gets a narrower band than one the network dominates."""
    compute_bound = Scenarios.Gpt2DataParallelOneNode.variant(assumptions=Assumptions.realistic())
    network_bound = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
        assumptions=Assumptions.realistic()
    )
    assert compute_bound.result.communication_share < 0.05 < 0.5
    assert network_bound.result.communication_share > 0.5

    def width(r):
        low, high = r.interval("efficiency")
        return high - low

    assert width(compute_bound.result) < width(network_bound.result)


@settings(max_examples=20, deadline=None)
@given(st.floats(0.01, 1.0), st.floats(0.01, 1.0), st.integers(1, 4096), st.integers(1, 4096))
def test_band_width_follows_the_sensitivity_of_the_prediction_and_the_nodes(e1, e2, n1, n2):
    """s = 1 + w_loss e (1 - e) + w_nodes log2(N): where a relative error in the costs moves the
    efficiency more (e (1 - e) larger) or over more nodes, a band no narrower."""
    preset = Assumptions.realistic()
    (n_lo, n_hi) = sorted((n1, n2))
    e_calm, e_touchy = sorted((e1, e2), key=lambda e: e * (1 - e))
    narrow = efficiency_band(preset, 0.8, efficiency=e_calm, nodes=n_lo)
    wide = efficiency_band(preset, 0.8, efficiency=e_touchy, nodes=n_hi)
    assert narrow[1] - narrow[0] <= wide[1] - wide[0] + 1e-15
    assert difficulty(1.0, 1) == 1.0 == difficulty(0.0, 1)
    assert difficulty(e1, n_hi) == pytest.approx(
        1 + DIFFICULTY_LOSS * e1 * (1 - e1) + DIFFICULTY_NODES * math.log2(n_hi)
    )


def test_a_users_scores_replace_the_published_ones_for_that_object_only():
    plain = Assumptions.realistic().variant(inter_efficiency=0.61)
    before = REAL.variant(assumptions=plain).result.interval("efficiency")
    mine = plain.with_interval_scores([-0.01, 0.0, 0.01, 0.02], "test runs")
    r = REAL.variant(assumptions=mine).result
    low, high = r.interval("efficiency")
    s = float(difficulty(r.efficiency, result_nodes(r)))
    assert result_nodes(r) == r.inputs["nodes"]
    assert (low, high) == pytest.approx((r.efficiency - 0.01 * s, r.efficiency + 0.02 * s))
    assert scores(mine).source == "test runs"
    # no state outside the object: the same choices without the scores, and a variant, are as before
    assert REAL.variant(assumptions=plain).result.interval("efficiency") == before
    assert mine.variant().interval_scores is None and mine != plain
    for bad in ([0.1], [0.0, float("nan")], "0.1 0.2", [True, False]):
        with pytest.raises(InputError, match="scores"):
            plain.with_interval_scores(bad, "bad runs")


def test_the_stored_scores_equal_a_fresh_computation():
    """mlsysim/data/interval_scores.json is what ``python -m mlsysim.validation.intervals`` writes
    now: a change of the model, the data or a preset that moves a score fails here until the
    build step is run again."""
    import json
    from importlib.resources import files

    stored = json.loads(files("mlsysim").joinpath("data/interval_scores.json").read_text())
    fresh = stored_document()
    assert stored.keys() == fresh.keys()
    for kind, values in (("scores", "scores"), ("layout_scores", "errors")):
        assert stored[kind].keys() == fresh[kind].keys(), kind
        for key, entry in fresh[kind].items():
            old = stored[kind][key]
            assert {k: v for k, v in old.items() if k != values} == {
                k: v for k, v in entry.items() if k != values
            }, (kind, key)
            np.testing.assert_allclose(old[values], entry[values], rtol=1e-12, atol=1e-15)
    for preset in (Assumptions(), Assumptions.realistic()):
        assert assumptions_key(preset) in stored["scores"]
        assert assumptions_key(preset) in stored["layout_scores"]
    assert [b.name for b in stored_bands("scores")] == ["seed", "realistic"]
