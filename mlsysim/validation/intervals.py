"""The build step of the prediction intervals: score the published runs, write the stored bands.

The band's arithmetic lives in :mod:`mlsysim.engine.reports.bands` and the stored bands are
read by :mod:`mlsysim.engine.reports.band_store` (results, explain and the planner read them
there, and nothing there runs the model); this module computes what they are built from, which
needs the engine itself:

* :func:`published_scores`: the out-of-family residuals of the published data-parallel cases
  over their difficulty, for any assumptions (a second or two);
* :func:`model_parallel_scores`: the held-out errors of the published model-parallel runs;
* ``python -m mlsysim.validation.intervals`` writes both, for each of :data:`STORED_PRESETS`,
  to ``mlsysim/data/interval_scores.json`` (with each preset's fields, by which the nearest
  stored band of other assumptions is found); ``tests/validation/test_intervals.py`` checks
  the stored file equals what this step computes now.

Run it after a change of the model, the published data or a preset.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.reports.band_store import STORE, Scores, assumption_texts, assumptions_key
from mlsysim.engine.reports.bands import difficulty


@cache
def published_scores(assumptions: Assumptions) -> Scores:
    """Out-of-family residuals of the published cases over their difficulty (cached)."""
    from mlsysim.validation.published import nodes_of_cases, out_of_family

    oof = out_of_family(assumptions)
    s = difficulty(oof.predicted, nodes_of_cases(oof.cases))
    how = "host jitter refitted without each family" if oof.jitters else "nothing fitted"
    families = tuple(c.family for c in oof.cases)
    return Scores(
        oof.residuals / s,
        f"{len(oof.cases)} published cases in {len(set(families))} families, each predicted "
        f"without its family ({how}; every family weighs alike)",
        families,
    )


def model_parallel_scores(assumptions: Assumptions) -> Scores:
    """The held-out errors of the published model-parallel runs under ``assumptions`` (cached)."""
    from mlsysim.validation.parallel import layout_scores as run_scores

    return run_scores(assumptions)


STORED_PRESETS: dict[str, Callable[[], Assumptions]] = {"seed": Assumptions, "realistic": Assumptions.realistic}
"""The assumptions whose scores are stored with the package, for both kinds of band. The seed's
data-parallel band serves only other assumptions nearer the seed than the realistic preset
(the seed's own data-parallel result is a bound, without an interval)."""

PATH = Path(__file__).parents[1] / STORE


def _stored(compute: Callable[[Assumptions], Scores], values: str) -> dict[str, object]:
    """Each preset's scores under the key of its assumptions, as the stored file holds them."""
    out: dict[str, object] = {}
    for name, make in STORED_PRESETS.items():
        assumptions = make()
        found = compute(assumptions)
        out[assumptions_key(assumptions)] = {
            "assumptions": name,
            "fields": assumption_texts(assumptions),
            "source": found.source,
            values: [float(z) for z in found.values],
            "families": list(found.groups or ()),
        }
    return out


def stored_document() -> dict[str, object]:
    """The content of ``mlsysim/data/interval_scores.json``, computed now."""
    return {
        "what": "normalised out-of-family residuals of the published cases (mlsysim.engine.reports.bands), "
        "and held-out errors of the published model-parallel runs, per set of assumptions",
        "written_by": "python -m mlsysim.validation.intervals",
        "nearest": "assumptions with no band here get the one whose fields differ in the fewest choices, "
        "ties to the wider 80% band (mlsysim.engine.reports.band_store)",
        "scores": _stored(published_scores, "scores"),
        "layout_scores": _stored(model_parallel_scores, "errors"),
    }


def main() -> int:
    """Write the stored scores (after a change of the model, the data or a preset)."""
    PATH.write_text(json.dumps(stored_document(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
