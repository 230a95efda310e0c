"""The realistic preset against published measurements, with pass/fail thresholds (issue 23).

The issue's targets are ISSUE_TARGETS (judged on families left out); the limits the
tests enforce are those of ``mlsysim.validation.published`` (what the model reaches
honestly; docs/model.md says which targets are missed and why).
"""

import json
from importlib.resources import files

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Assumptions
from mlsysim.core.exceptions import InputError
from mlsysim.engine.reports.bands import conformal_band
from mlsysim.validation.published import (
    COVERAGE_WINDOW,
    FAMILIES,
    FAMILIES_NOT_BEATING_SEED,
    HELD_OUT_MEDIAN_LIMIT,
    MAX_LIMIT,
    MEAN_LIMIT,
    MEDIAN_LIMIT,
    NESTED_WIDTH_LIMIT,
    WIDTH_LIMIT,
    base_scenario_for,
    by_family,
    calibrated_step_time,
    cases_of,
    choose_difficulty_weights,
    compare,
    cross_validate,
    family_of,
    fit_host_jitter,
    host_jitter_check,
    in_sample_coverage,
    interval_score,
    load_cases,
    memory_bandwidth_of,
    nested_cross_validate,
    out_of_family,
    predict_all,
    scenario_for,
    summarize,
    summary,
)
from tests.validation.limits import ImprovementNote, hold

ISSUE_TARGETS = {"median": 0.040, "mean": 0.015, "coverage": (0.75, 0.85)}
"""Issue 23's targets on families left out (its width target, 14 points, was met by bands
that covered 77% of the families left out and 55% of families never seen); the coverage is
issue 40's: 75-85% of the families left out of everything their band is built from, whatever
width that takes."""


def within(coverage: float) -> bool:
    low, high = COVERAGE_WINDOW
    return low <= coverage <= high


@pytest.fixture(scope="module")
def seed():
    return compare()


@pytest.fixture(scope="module")
def realistic():
    return compare(Assumptions.realistic())


@pytest.fixture(scope="module")
def lofo():
    return cross_validate(Assumptions.realistic())


def test_realistic_preset_meets_the_thresholds(realistic):
    s = summarize(realistic)
    hold("in-sample median |error|", s.median_abs, MEDIAN_LIMIT)
    hold("in-sample worst |error|", s.max_abs, MAX_LIMIT, margin=0.003)  # held out: 20.6
    assert abs(s.mean) <= MEAN_LIMIT, f"mean error {s.mean:+.4f}"


def test_limits_are_the_issue_targets_or_documented_misses(lofo):
    """Each enforced limit is the issue's target, or (where missed) the figure reached
    (docs/model.md): a regression fails the test; an improvement passes it with a note
    (:class:`tests.validation.limits.ImprovementNote`), never a failure."""
    assert ISSUE_TARGETS["mean"] == MEAN_LIMIT
    assert ISSUE_TARGETS["coverage"] == COVERAGE_WINDOW
    assert ISSUE_TARGETS["median"] == HELD_OUT_MEDIAN_LIMIT or (
        lofo.summary.median_abs > ISSUE_TARGETS["median"]
    )
    hold("held-out median |error|", lofo.summary.median_abs, HELD_OUT_MEDIAN_LIMIT)
    assert MEDIAN_LIMIT <= 0.044 and MAX_LIMIT <= 0.217


def test_a_limit_fails_a_regression_and_notes_an_improvement():
    hold("a figure at its limit", 0.040, 0.040)
    with pytest.raises(AssertionError):
        hold("a figure above its limit", 0.041, 0.040)
    with pytest.warns(ImprovementNote):
        hold("a figure well below its limit", 0.030, 0.040)
    with pytest.raises(AssertionError):
        hold("a coverage below its floor", 0.79, 0.80, higher_is_better=True)
    with pytest.warns(ImprovementNote):
        hold("a coverage above its floor", 0.86, 0.80, higher_is_better=True, margin=0.05)


def test_realistic_preset_is_not_optimistic_on_average(realistic):
    """Issue 12's complaint: a mean error of +4.9 points before. Now within +-1.5."""
    assert abs(summarize(realistic).mean) <= 0.015


def test_realistic_preset_beats_the_seed_on_median_max_and_bias(seed, realistic):
    s, r = summarize(seed), summarize(realistic)
    assert r.median_abs < s.median_abs and r.max_abs < s.max_abs and abs(r.mean) < abs(s.mean)


def test_seed_model_figures_on_the_79_cases(seed):
    """The seed's own errors: median 6.1 points, worst 30, optimistic by 2.2 on average."""
    s = summarize(seed)
    assert 0.055 < s.median_abs < 0.07 and 0.25 < s.max_abs < 0.35 and s.mean > 0.02
    assert summary(seed) == (pytest.approx(s.median_abs), pytest.approx(s.max_abs))


def test_every_case_is_predicted_in_the_unit_interval(seed, realistic):
    for c in [*seed, *realistic]:
        assert 0 < c.predicted <= 1.0


def test_leave_one_family_out_errors_and_coverage(lofo):
    s = lofo.summary
    assert s.count == len(load_cases())
    hold("held-out median |error|", s.median_abs, HELD_OUT_MEDIAN_LIMIT)
    hold("held-out worst |error|", s.max_abs, MAX_LIMIT)
    assert abs(s.mean) <= MEAN_LIMIT
    # 75-85% of the families left out, whatever width that takes (issue 40); inside the window
    # the width is the figure that narrows
    assert within(lofo.coverage), f"held-out 80% coverage {lofo.coverage:.2f}"
    assert within(lofo.family_coverage), f"average family {lofo.family_coverage:.2f}"
    hold("held-out median width", lofo.median_width, WIDTH_LIMIT)
    assert len(lofo.jitters) == len({c.family for c in load_cases()})
    assert np.all(lofo.lows <= [c.predicted for c in lofo.comparisons])


def test_the_band_keeps_a_floor_where_the_model_sees_no_loss():
    """Issue 29: the band's width does not go to zero as the predicted efficiency goes to 1
    (the loss no term models); every band reaches at least the floor below its prediction."""
    from mlsysim.engine.reports.bands import efficiency_interval_of, unmodelled_loss_floor

    a = Assumptions.realistic()
    floor = unmodelled_loss_floor(a)
    assert 0.075 < floor < 0.09  # reached: 8.2 points
    e = np.array([0.3, 0.5, 0.8, 0.9, 0.97, 0.995, 1.0])
    low, high = efficiency_interval_of(a, e, np.full(e.size, 8.0))
    assert np.all(e - low >= floor - 1e-12)
    assert high[-1] - low[-1] == pytest.approx(floor)


def test_the_host_jitter_helps_on_families_left_out():
    """Issue 29: the fitted host jitter stays in the preset only because it lowers the
    held-out median error (each family predicted with the jitter refitted without it)
    against the preset without it: 4.32 against 5.25 points (docs/model.md, section 3)."""
    check = host_jitter_check()
    assert check.helps
    assert check.with_it.median_abs == pytest.approx(0.0432, abs=5e-4)
    assert check.without_it.median_abs == pytest.approx(0.0525, abs=5e-4)
    assert abs(check.with_it.mean) < abs(check.without_it.mean)


def test_held_out_families_beat_the_seed_except_the_documented_ones(seed, lofo):
    """Issue 23: the preset's held-out median error below the seed's for every family of
    more than one case; the families that miss are named (a new miss fails the test)."""
    seed_families, held = by_family(seed), by_family(lofo.comparisons)
    missing = {
        name
        for name, s in seed_families.items()
        if s.count > 1 and held[name].median_abs >= s.median_abs
    }
    assert missing <= FAMILIES_NOT_BEATING_SEED, missing


def test_out_of_family_predictions_never_see_their_family():
    """Refitting without a family, then predicting it, equals out_of_family's prediction."""
    a = Assumptions.realistic()
    oof = out_of_family(a)
    cases = load_cases()
    family = cases[0].family
    train = [c for c in cases if c.family != family]
    test = [c for c in cases if c.family == family]
    fitted = a.variant(host_jitter=Q_(fit_host_jitter(a, train), "s"))
    held = np.asarray([c.family == family for c in cases])
    assert np.allclose(oof.predicted[held], predict_all(fitted, test), rtol=1e-12)
    assert out_of_family(a.variant(host_jitter=Q_(5, "ms"))).jitters == {}  # nothing fitted


def test_in_sample_coverage_of_the_80_percent_band():
    coverage, width = in_sample_coverage(Assumptions.realistic())
    assert within(coverage)  # reached: 83%
    hold("in-sample median width", width, WIDTH_LIMIT)


def test_the_preset_host_jitter_is_the_fitted_value():
    """REALISTIC_HOST_JITTER is fit_host_jitter() on the published cases rounded to 0.1 ms."""
    preset = Assumptions.realistic()
    fitted = fit_host_jitter(preset)
    assert preset.host_jitter.to("ms").magnitude == pytest.approx(fitted * 1e3, abs=0.06)


def test_fit_host_jitter_zeroes_the_mean_error_of_the_cases_it_applies_to():
    from mlsysim.physics.synchronization import INPUT_PIPELINE_JITTER

    a = Assumptions.realistic()
    jitter = fit_host_jitter(a)
    errors = [
        c.error
        for c in compare(a.variant(host_jitter=Q_(jitter, "s")))
        if INPUT_PIPELINE_JITTER[family_of(c.case.id).input_pipeline] > 0
    ]
    assert abs(np.mean(errors)) < 1e-6


def test_calibrated_step_time_reproduces_every_baseline():
    a = Assumptions.realistic()
    cases = load_cases()
    steps = calibrated_step_time(cases, a)
    for case, step in zip(cases, steps, strict=True):
        base = base_scenario_for(case, a, step_time=float(step)).result
        per_micro_step = base.update_time.to("s").magnitude / case.raw["accumulation_base"]
        assert per_micro_step == pytest.approx(case.raw["t1_s"], rel=1e-9)


def test_seed_with_a_one_gpu_baseline_uses_the_measured_step_time():
    cases = [c for c in load_cases() if c.raw["base"] == "1gpu"]
    assert np.array_equal(
        calibrated_step_time(cases, Assumptions()), [c.raw["t1_s"] for c in cases]
    )


@pytest.mark.parametrize(
    "assumptions", [Assumptions(), Assumptions.realistic()], ids=["seed", "realistic"]
)
def test_vectorized_prediction_equals_the_scenario_results(assumptions):
    """predict_all (numpy, all cases at once) = A t1 / update_time of each case's own scenario."""
    cases = load_cases()
    steps = calibrated_step_time(cases, assumptions)
    predicted = predict_all(assumptions, cases)
    for case, step, p in zip(cases, steps, predicted, strict=True):
        result = scenario_for(case, step_time=float(step), assumptions=assumptions).result
        u = result.update_time.to("s").magnitude
        expected = case.raw["accumulation_scaled"] * case.raw["t1_s"] / u
        assert p == pytest.approx(expected, rel=1e-12)


def test_the_issue_set_is_the_shared_61_cases():
    issue = cases_of("issue")
    assert len(issue) == 61 and len(cases_of("all")) == len(load_cases())
    assert all(c.raw.get("added") in (None, "2026-12-01") for c in issue)
    with pytest.raises(InputError, match="subset"):
        cases_of("mine")


def test_the_host_jitter_is_fitted_on_the_cases_it_applies_to():
    """Cases whose inputs are not prepared on the host (device, synthetic) do not move it."""
    from mlsysim.physics.synchronization import INPUT_PIPELINE_JITTER

    a = Assumptions.realistic()
    cases = load_cases()
    touched = [c for c in cases if INPUT_PIPELINE_JITTER[family_of(c.id).input_pipeline] > 0]
    untouched = [c for c in cases if c not in touched]
    assert untouched and len(touched) < len(cases)
    assert fit_host_jitter(a, cases) == fit_host_jitter(a, touched)
    assert fit_host_jitter(a, untouched) == 0.0


def test_packaged_data_stands_alone():
    packaged = json.loads(files("mlsysim.data").joinpath("published_scaling.json").read_text())
    assert len(load_cases()) == len(packaged["cases"]) == 111
    added = [c for c in packaged["cases"] if c.get("added") == "2026-12-01"]
    assert len(added) == 18 and all(c["source"] for c in added)
    for prefix, count in (("DLE-MX-", 6), ("DLE-PT-BART-", 12)):
        found = [c for c in packaged["cases"] if c["id"].startswith(prefix)]
        assert len(found) == count and all(c["source"] and c["stated"] for c in found)


def test_cases_carry_sources_families_and_platforms():
    for case in load_cases():
        # a measured efficiency may pass 1 by run-to-run noise: BART BF16 on 20 nodes, 1.020;
        # PaddlePaddle ResNet-50 AMP on 8 GPUs, 1.030
        assert case.source and 0 < case.measured_eff <= 1.031
        assert "stated" in case.raw
        assert case.family
        assert memory_bandwidth_of(case.id) > 0
    assert len({f.name for f in FAMILIES}) >= 10


def test_conformal_band_order_statistics():
    r = np.arange(1.0, 44.0)  # 43 residuals 1..43
    assert conformal_band(r, 0.8) == (4.0, 40.0)
    assert conformal_band(r, 0.5) == (11.0, 33.0)
    with pytest.raises(ValueError):
        conformal_band(r, 1.0)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-64, 64), st.integers(0, 7)), min_size=2, max_size=60),
    st.floats(0.05, 0.95),
    st.sampled_from([0.25, 0.5, 2.0, 8.0]),
    st.integers(-64, 64),
)
def test_the_family_band_holds_its_share_of_the_families(rows, level, scale, shift):
    """The band holds at least (G + 1) L of the G families' weight (all of it where that is
    more than G), holds the pooled median, and moves with the residuals' units and origin
    (residuals in 64ths, scales of powers of two: exact in binary, so ties stay ties)."""
    r = np.asarray([v / 64 for v, _ in rows])
    shift = shift / 64
    groups = [str(g) for _, g in rows]
    low, high = conformal_band(r, level, groups)
    names, index, counts = np.unique(groups, return_inverse=True, return_counts=True)
    inside = float(np.sum((1.0 / counts[index])[(r >= low - 1e-12) & (r <= high + 1e-12)]))
    assert inside >= min((names.size + 1) * level, names.size) - 1e-9
    order = np.argsort(r, kind="stable")
    median = r[order][np.searchsorted(np.cumsum((1.0 / counts[index])[order]) / names.size, 0.5 - 1e-12)]
    assert low <= median <= high
    moved = conformal_band(scale * r + shift, level, groups)
    assert moved == (pytest.approx(scale * low + shift, abs=1e-9), pytest.approx(scale * high + shift, abs=1e-9))


def test_conformal_band_weighs_each_group_alike():
    """Forty well-predicted members of one family do not narrow the band of the next family:
    with families as the unit, 4 families (G + 1 = 5) reach their extreme residuals."""
    r = np.array([0.0] * 40 + [-0.1, 0.05, 0.08])
    groups = ["big"] * 40 + ["a", "b", "c"]
    assert conformal_band(r, 0.8) == (0.0, 0.0)  # 43 residuals read as independent
    assert conformal_band(r, 0.8, groups) == (-0.1, 0.08)  # 4 families: G + 1 = 5
    # six families, one of five members (0, ..., 4, weight 0.2 each), five of one (5, ..., 9):
    # the pooled median is 6, the 25th and 75th percentiles 5 and 8 (the shape: 1 below, 2
    # above); the scores (6 - r) / 1 below and (r - 6) / 2 above are 6, 5, 4, 3, 2, 1, 0, 0.5,
    # 1, 1.5; the first to reach (6 + 1) 0.5 = 3.5 families' weight is 1: [6 - 1, 6 + 2]
    assert conformal_band(np.arange(10.0), 0.5, ["x"] * 5 + list("abcde")) == (5.0, 8.0)
    with pytest.raises(ValueError):
        conformal_band(r, 0.8, groups[:-1])


def test_interval_score_is_the_width_plus_the_scaled_miss():
    low, high = np.array([0.8, 0.8, 0.8]), np.array([0.9, 0.9, 0.9])
    measured = np.array([0.85, 0.75, 0.95])  # inside, 0.05 below, 0.05 above
    got = interval_score(low, high, measured, 0.8)  # 2 / (1 - 0.8) = 10 per point outside
    assert got == pytest.approx([0.1, 0.1 + 10 * 0.05, 0.1 + 10 * 0.05])


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 0.5), st.floats(-1.0, 2.0), st.floats(0.0, 0.5))
def test_interval_score_prefers_a_band_that_holds_the_measurement(low, width, y, extra):
    """Widening a band that misses by more than the widening costs lowers its score; a band
    that already holds the measurement only pays for more width."""
    lo, hi, m = np.array([low]), np.array([low + width]), np.array([y])
    base = interval_score(lo, hi, m, 0.8)[0]
    wider = interval_score(lo - extra, hi + extra, m, 0.8)[0]
    if lo[0] <= y <= hi[0]:
        assert wider == pytest.approx(base + 2 * extra)
    else:
        assert wider <= base + 2 * extra + 1e-12


def test_the_difficulty_weights_are_those_the_held_out_check_picks():
    """bands' weights are the grid pair of lowest held-out interval score (each family
    weighing alike); picked again without each family (nested), the bands still cover 75-85%
    of the families left out."""
    from mlsysim.engine.reports.bands import DIFFICULTY_LOSS, DIFFICULTY_NODES

    choice = choose_difficulty_weights(Assumptions.realistic())
    assert choice.chosen == (DIFFICULTY_LOSS, DIFFICULTY_NODES)
    coverage, width, score = choice.grid[choice.chosen]
    assert score == min(s for _, _, s in choice.grid.values())
    lofo = cross_validate(Assumptions.realistic())
    assert (coverage, width) == (pytest.approx(lofo.coverage), pytest.approx(lofo.median_width))
    assert within(coverage)
    hold("held-out median width", width, WIDTH_LIMIT)
    assert within(choice.nested_coverage)
    hold("nested median width", choice.nested_width, NESTED_WIDTH_LIMIT)
    # with the band's one rounding, no normalisation earns its place on families left out:
    # the previous pick, 1 + 2 e (1 - e), scores 0.3 points worse
    assert choice.chosen == (0.0, 0.0)
    assert choice.grid[(2.0, 0.0)][2] > score + 0.002
    assert set(choice.nested_choices) == {c.family for c in load_cases()}


def test_the_band_holds_on_families_left_out_of_everything_it_is_built_from():
    """Issue 40: each family F left out of the jitter's fit behind every residual of its band,
    of the pick of the band's weights and of the band itself; the 80% band covers 75-85% of
    F's cases, by case and for the average family (reached: 82%, 81% at 14.8 points; before,
    with each side of the band rounded to the next family, 90% and 89% at 18.2 points)."""
    nested = nested_cross_validate(Assumptions.realistic())
    assert within(nested.coverage), f"nested 80% coverage {nested.coverage:.3f}"
    assert within(nested.family_coverage), f"average family {nested.family_coverage:.3f}"
    hold("fully nested median width", nested.median_width, NESTED_WIDTH_LIMIT)
    assert set(nested.choices) == {c.family for c in load_cases()}
    assert np.all(nested.lows <= nested.highs)


def test_each_case_is_predicted_by_the_scenario_printed_beside_it():
    """One path: ``validate published --json`` prints each case's scenario; its result gives the
    reported efficiency (accumulation_scaled x t1_s / update_time), seed and realistic."""
    import json

    from click.testing import CliRunner

    from mlsysim.cli.app import app
    from mlsysim.engine.io.files import scenario_from_dict

    out = CliRunner().invoke(app, ["validate", "published", "--json"])
    assert out.exit_code == 0, out.output
    cases = json.loads(out.output)["cases"]
    assert len(cases) == 111
    for row in cases:
        for preset in ("seed", "realistic"):
            printed = row[f"{preset}_scenario"]
            result = scenario_from_dict(printed["scenario"]).result
            efficiency = printed["accumulation_scaled"] * printed["t1_s"] / result.update_time.to("s").magnitude
            assert efficiency == pytest.approx(row[f"{preset}_efficiency"], rel=1e-9), (row["id"], preset)
