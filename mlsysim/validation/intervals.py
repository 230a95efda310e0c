"""Scores of the published cases for the prediction intervals, computed by running the model.

The band's arithmetic lives in :mod:`mlsysim.engine.reports.bands` (results and explain read
it there); this module computes what it is built from, the out-of-family residuals of
the published cases over their difficulty, which needs the engine itself:

* :func:`published_scores` computes them for any assumptions (a second or two);
* :func:`ensure_scores` registers them for assumptions the package stores none for
  (the command line and the page call it before they print an interval);
* ``python -m mlsysim.validation.intervals`` writes the scores stored with the package
  (``mlsysim/data/interval_scores.json``: the realistic preset), so a result under
  those assumptions gets its interval at once; ``tests/validation/test_intervals.py``
  checks the stored scores equal a fresh computation.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.reports.bands import _REGISTERED as _registered
from mlsysim.engine.reports.bands import (
    Scores,
    assumptions_key,
    difficulty,
    layout_scores,
    register_layout_scores,
    register_scores,
    stored_scores,
)


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


def ensure_scores(assumptions: Assumptions) -> None:
    """Make intervals under ``assumptions`` available: a user's registered scores or the
    package's stored ones are kept; otherwise the published cases are scored and registered
    (the data-parallel cases for non-seed assumptions, the model-parallel runs for any)."""
    if layout_scores(assumptions) is None:
        found = model_parallel_scores(assumptions)
        register_layout_scores(assumptions, found.values, found.source)
    if assumptions.is_seed() or assumptions in _registered or stored_scores(assumptions):
        return
    found = published_scores(assumptions)
    register_scores(assumptions, found.values, found.source, found.groups)


def model_parallel_scores(assumptions: Assumptions) -> Scores:
    """The held-out errors of the published model-parallel runs under ``assumptions`` (cached)."""
    from mlsysim.validation.parallel import layout_scores as run_scores

    return run_scores(assumptions)


STORED_PRESETS = {"realistic": Assumptions.realistic}
"""The assumptions whose published scores are stored with the package."""

STORED_LAYOUT_PRESETS = {"seed": Assumptions, "realistic": Assumptions.realistic}
"""The assumptions whose model-parallel runs' held-out errors are stored with the package."""

STORE = Path(__file__).parents[1] / "data" / "interval_scores.json"


def _stored(
    presets: dict[str, Callable[[], Assumptions]], compute: Callable[[Assumptions], Scores], values: str
) -> dict[str, object]:
    """Each preset's scores under the key of its assumptions, as the stored file holds them."""
    out: dict[str, object] = {}
    for name, make in presets.items():
        assumptions = make()
        found = compute(assumptions)
        out[assumptions_key(assumptions)] = {
            "assumptions": name,
            "source": found.source,
            values: [float(z) for z in found.values],
            "families": list(found.groups or ()),
        }
    return out


def stored_document() -> dict[str, object]:
    """The content of ``mlsysim/data/interval_scores.json``, computed now."""
    return {
        "what": "normalised out-of-family residuals of the published cases (mlsysim.engine.reports.bands)",
        "written_by": "python -m mlsysim.validation.intervals",
        "scores": _stored(STORED_PRESETS, published_scores, "scores"),
        "layout_scores": _stored(STORED_LAYOUT_PRESETS, model_parallel_scores, "errors"),
    }


def main() -> int:
    """Write the stored scores (after a change of the model, the data or the preset)."""
    STORE.write_text(json.dumps(stored_document(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {STORE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
