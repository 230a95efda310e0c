"""Intervals from the stored bands only: the nearest stored band for new assumptions, with a note,
and nothing of the validation code in the user's process (issue 39, item 3)."""

import subprocess
import sys
import textwrap

import pytest

from mlsysim import Assumptions, Scenarios
from mlsysim.core.units import Q_
from mlsysim.engine.reports.band_store import (
    assumption_texts,
    conformal_band,
    differences,
    nearest_band,
    stored_bands,
)
from mlsysim.engine.reports.bands import interval_source, layout_scores, scores

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


def _band(name: str, kind: str = "scores"):
    return next(b for b in stored_bands(kind) if b.name == name)


def test_stored_assumptions_get_their_own_band_without_a_note():
    for kind in ("scores", "layout_scores"):
        for name, preset in (("seed", Assumptions()), ("realistic", Assumptions.realistic())):
            found = nearest_band(preset, kind)
            assert found.source == _band(name, kind).scores.source
            assert (found.values == _band(name, kind).scores.values).all()


def test_new_assumptions_get_the_nearest_band_and_say_which():
    near_realistic = Assumptions.realistic().variant(inter_efficiency=0.61)
    found = scores(near_realistic)
    assert (found.values == _band("realistic").scores.values).all()
    assert found.source.startswith(
        "the realistic preset's band, the nearest stored (1 choice differs: inter_efficiency 0.61 against 0.9)"
    )
    near_seed = Assumptions(overlap=True)
    assert (scores(near_seed).values == _band("seed").scores.values).all()
    assert "the seed preset's band" in layout_scores(near_seed).source
    r = FOUR.variant(assumptions=near_realistic).result
    assert "inter_efficiency 0.61 against 0.9" in interval_source(r)
    assert "inter_efficiency 0.61 against 0.9" in FOUR.variant(assumptions=near_realistic).explain()


def test_a_tie_goes_to_the_wider_band():
    seed, realistic = _band("seed"), _band("realistic")
    apart = differences(seed.fields, realistic)
    assert len(apart) >= 2
    # half the choices from the realistic preset, half from the seed: as near to both
    half = {n: getattr(Assumptions.realistic(), n) for n in apart[: len(apart) // 2]}
    between = Assumptions(**half)
    texts = assumption_texts(between)
    if len(differences(texts, seed)) != len(differences(texts, realistic)):
        between = Assumptions(**{n: getattr(Assumptions.realistic(), n) for n in apart[: len(apart) // 2 + 1]})
        texts = assumption_texts(between)
    assert len(differences(texts, seed)) == len(differences(texts, realistic))

    def width(band):
        low, high = conformal_band(band.scores.values, 0.8, band.scores.groups)
        return high - low

    wider = max((seed, realistic), key=width)
    assert width(seed) != width(realistic)
    assert (scores(between).values == wider.scores.values).all()
    assert f"the {wider.name} preset's band" in scores(between).source


def test_the_whole_run_fields_do_not_count_as_a_difference():
    other = Assumptions.realistic().variant(failure_rate=Q_(1e-4, "failures/device/hour"))
    assert scores(other).source == _band("realistic").scores.source


def test_intervals_for_new_assumptions_need_nothing_of_the_validation_code():
    """In a fresh process: result.interval, explain and a plan with a confidence under assumptions
    no band is stored for import nothing of mlsysim.validation (no refit in the user's process)."""
    script = textwrap.dedent(
        """
        import sys
        from mlsysim import Assumptions, Q_, Scenarios, plan
        new = Assumptions.realistic().variant(straggler_cv=0.0437, inter_efficiency=0.77)
        four = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(assumptions=new)
        low, high = four.result.interval("efficiency")
        assert 0 < low <= four.result.efficiency <= high <= 1, (low, high)
        assert "80% interval" in four.explain()
        plan(four, deadline=Q_(30, "day"), confidence=0.9, nodes=[1, 2, 4])
        print(sorted(m for m in sys.modules if m.startswith("mlsysim.validation")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", ["scores", "layout_scores"])
def test_every_stored_band_names_its_assumptions_fields(kind):
    fields = set(assumption_texts(Assumptions()))
    for band in stored_bands(kind):
        assert set(band.fields) == fields, band.name
