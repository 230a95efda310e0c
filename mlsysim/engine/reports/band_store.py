"""The residuals prediction intervals are built from, as shipped with the package.

``mlsysim/data/interval_scores.json`` holds, for a few sets of assumptions, the scores of the
published runs predicted under them: the normalised out-of-family residuals of the
data-parallel cases (``scores``) and the held-out errors of the model-parallel runs
(``layout_scores``). A build step writes the file (``python -m mlsysim.validation.intervals``,
which runs the model over the published runs); a test checks it equals what that step
computes now, so a change of the model or the data that moves a score fails until the file
is written again. Nothing here runs the model or writes any state: a result's interval
reads the file (once per process) and the scores its own assumptions carry.

Which stored band a set of assumptions gets (:func:`nearest_band`):

1. scores the assumptions carry themselves (a user's runs,
   :meth:`~mlsysim.engine.inputs.assumptions.Assumptions.with_interval_scores`);
2. else the stored band of the same assumptions (the same :func:`assumptions_key`);
3. else the **nearest** stored band: the one whose assumptions differ from these in the
   fewest choices (fields compared as text; the whole-run fields, which change no figure of
   an update, left out); ties go to the wider band (its 80% width), then to the first
   stored. The source of the interval then says so: which band, how many choices differ
   and which.

No refit happens in the user's process: a band is always at hand, and an interval depends
on its result's inputs only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np

from mlsysim.engine.inputs.assumptions import Assumptions

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

STORE = "data/interval_scores.json"
"""The stored scores, relative to the package (written by ``python -m mlsysim.validation.intervals``)."""
KINDS = ("scores", "layout_scores")
"""The two sets of stored bands: data-parallel results' and parallel layouts'."""
VALUES = {"scores": "scores", "layout_scores": "errors"}
"""The name of each kind's numbers in the stored file."""
SHOWN_DIFFERENCES = 3
"""How many differing choices the note on a nearest band names (then "and N more")."""


@dataclass(frozen=True)
class Scores:
    """Normalised residuals z = (measured - predicted) / s that intervals are built from.

    ``groups``: the family of each score, when the scores come in families (the published
    cases): the band then weighs every family alike
    (:func:`mlsysim.engine.reports.bands.conformal_band`); None, every score its own group
    (a user's runs)."""

    values: np.ndarray
    source: str  # what they come from, in words
    groups: tuple[str, ...] | None = None


def conformal_band(
    residuals: ArrayLike, level: float, groups: ArrayLike | None = None
) -> tuple[float, float]:
    """Conformal band of ``residuals`` (measured - predicted) for a central ``level``.

    Without ``groups`` (every residual its own unit: a user's runs, the model-parallel runs):
    with m residuals sorted, the band is [r_(k_lo), r_(k_hi)] with
    k_lo = floor((m+1)(1-level)/2) and k_hi = ceil((m+1)(1+level)/2) (clamped to
    1..m): the finite-sample rule of split conformal prediction (Vovk, Gammerman
    and Shafer 2005, "Algorithmic Learning in a Random World"; Lei et al. 2018,
    "Distribution-Free Predictive Inference for Regression", JASA).

    ``groups`` (one label per residual): the residuals come in G groups (families of runs)
    and the band is for a member of a *new* group: :func:`family_band`.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected a number in (0, 1), got {level!r}")
    if groups is not None:
        return family_band(residuals, level, groups)
    alpha = 1.0 - level
    r = np.sort(np.asarray(residuals, dtype=float))
    m = r.size
    k_lo = min(max(int(np.floor((m + 1) * alpha / 2.0)), 1), m)
    k_hi = min(max(int(np.ceil((m + 1) * (1.0 - alpha / 2.0))), 1), m)
    return float(r[k_lo - 1]), float(r[k_hi - 1])


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest of ``values`` whose share of the total weight, counted from below, reaches
    ``q`` (the inverse of the weighted empirical distribution)."""
    order = np.argsort(values, kind="stable")
    share = np.cumsum(weights[order]) / float(np.sum(weights))
    return float(values[order][min(int(np.searchsorted(share, q - 1e-12)), values.size - 1)])


def family_band(residuals: ArrayLike, level: float, groups: ArrayLike) -> tuple[float, float]:
    """The ``level`` band of a member of a *new* group, from residuals that come in G groups.

    The group, not the residual, is the exchangeable unit: each group weighs 1 in all, shared
    equally by its members (the pooled-CDF construction of Dunn, Wasserman and Ramdas 2023,
    "Distribution-Free Prediction Sets for Two-Layer Hierarchical Models", JASA). The band is
    one conformal quantile of a two-sided score, so the finite-sample correction rounds once,
    not once per side:

    1. its shape, from the pooled distribution: the centre c (weighted median) and the reach
       below b = c - q((1 - L)/2) and above a = q((1 + L)/2) - c (:func:`weighted_quantile`;
       a side with no reach takes the other's, and with none the scores are distances from c);
    2. each residual's score t_i = max((c - r_i) / b, (r_i - c) / a): how many shapes out it
       lies, on its own side (the two-sided score of conformalized quantile regression,
       Romano, Patterson and Candes 2019, NeurIPS, with each side in units of its own reach);
    3. t* the smallest score whose cumulative group weight reaches (G + 1) L (the
       split-conformal rule with G + 1 groups: Dunn et al.); the band is [c - t* b, c + t* a]
       (the largest score when G + 1 groups ask more than the G at hand).

    Rounding each side to the next group on its own, as the band of issue 29 did, asks
    (G + 1)(1 + L)/2 groups on each side: with 19 families an 80% band held 88% of the
    families left out (docs/model.md, section 4.5). One rounding holds 82% (81% of the
    average family).
    """
    values = np.asarray(residuals, dtype=float)
    labels = np.asarray(groups)
    if labels.shape != values.shape:
        raise ValueError(f"groups: expected {values.size} labels, got {labels.size}")
    names, index, counts = np.unique(labels, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[index]  # each group weighs 1 in all
    tail = (1.0 - level) / 2.0
    centre = weighted_quantile(values, weights, 0.5)
    below = centre - weighted_quantile(values, weights, tail)
    above = weighted_quantile(values, weights, 1.0 - tail) - centre
    if below <= 0.0 or above <= 0.0:  # a side without reach takes the other's; none: distances
        below = above = max(below, above) if max(below, above) > 0.0 else 1.0
    score = np.maximum((centre - values) / below, (values - centre) / above)
    t = weighted_quantile(score, weights, (names.size + 1) * level / names.size)
    return centre - t * below, centre + t * above


@dataclass(frozen=True)
class StoredBand:
    """One set of stored scores and the assumptions they were computed under.

    ``name``: the preset's name (``realistic``); ``fields``: its assumptions, each field as
    text (:func:`assumption_texts`)."""

    key: str
    name: str
    fields: dict[str, str]
    scores: Scores


def assumption_texts(assumptions: Assumptions) -> dict[str, str]:
    """The fields of ``assumptions`` as text, sorted by name, the whole-run fields
    (``failure_rate``: no figure of an update) left out: what a stored band is keyed on and
    how near two sets of assumptions are."""
    whole_run = type(assumptions).WHOLE_RUN_FIELDS
    return {k: str(v) for k, v in sorted(assumptions.fields().items()) if k not in whole_run}


@lru_cache(maxsize=256)
def assumptions_key(assumptions: Assumptions) -> str:
    """A stable name of a set of assumptions, for the stored scores (a hash of their fields;
    kept per set of assumptions: every interval asks for it).

    Fields that change only the whole run (``failure_rate``) are left out: they leave the
    residuals as they are; so are an implementation's achieved rates at their default (the
    physics), so a new such field leaves the existing keys as they are.
    """
    kind = type(assumptions)
    at_default = {
        k for k in kind.IMPLEMENTATION_FIELDS if getattr(assumptions, k) == kind.model_fields[k].default
    }
    fields = {k: v for k, v in assumption_texts(assumptions).items() if k not in at_default}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


@cache
def stored_bands(kind: str) -> tuple[StoredBand, ...]:
    """The stored bands of ``kind`` (one of :data:`KINDS`), in the file's order (read once)."""
    data = json.loads(files("mlsysim").joinpath(STORE).read_text(encoding="utf-8"))
    return tuple(
        StoredBand(
            key,
            entry["assumptions"],
            dict(entry["fields"]),
            Scores(
                np.asarray(entry[VALUES[kind]], dtype=float),
                entry["source"],
                tuple(entry["families"]) if kind == "scores" else None,  # layouts: each run a unit
            ),
        )
        for key, entry in data[kind].items()
    )


def differences(texts: dict[str, str], band: StoredBand) -> list[str]:
    """The choices (field names) in which ``texts`` differ from ``band``'s assumptions."""
    names = sorted(set(texts) | set(band.fields))
    return [n for n in names if texts.get(n) != band.fields.get(n)]


def _width(scores: Scores) -> float:
    low, high = conformal_band(scores.values, 0.8, scores.groups)
    return high - low


@lru_cache(maxsize=256)
def nearest_band(assumptions: Assumptions, kind: str) -> Scores:
    """The scores intervals of ``kind`` under ``assumptions`` are built from (the rule of the
    module's docstring): their own, else the stored band of the same assumptions, else the
    nearest stored band, its source saying which and how far."""
    own = assumptions.interval_scores if kind == "scores" else (
        assumptions.layout_interval_scores if kind == "layout_scores" else None)
    if own is not None:
        return Scores(np.asarray(own[0], dtype=float), own[1])
    bands = stored_bands(kind)
    key = assumptions_key(assumptions)
    for band in bands:
        if band.key == key:
            return band.scores
    texts = assumption_texts(assumptions)
    apart = [differences(texts, band) for band in bands]
    order = sorted(range(len(bands)), key=lambda i: (len(apart[i]), -_width(bands[i].scores), i))
    best, differ = bands[order[0]], apart[order[0]]
    return Scores(best.scores.values, f"{note(best, differ, texts)}; {best.scores.source}", best.scores.groups)


def note(band: StoredBand, differ: list[str], texts: dict[str, str]) -> str:
    """The note on an interval built from the nearest stored band: which band, and in which
    choices the result's assumptions differ from it."""
    shown = [f"{n} {texts.get(n, '-')} against {band.fields.get(n, '-')}" for n in differ[:SHOWN_DIFFERENCES]]
    more = len(differ) - len(shown)
    listed = "; ".join(shown) + (f"; and {more} more" if more else "")
    count = "1 choice differs" if len(differ) == 1 else f"{len(differ)} choices differ"
    return f"the {band.name} preset's band, the nearest stored ({count}: {listed})"
