"""Prediction intervals of a result: normalised conformal bands from out-of-family residuals.

The band's arithmetic, below the validation code that scores the published cases
(:mod:`mlsysim.validation.intervals`): results and explain read their bands here, so
the dependency runs one way.

Method (docs/model.md, section 4.5):

1. **Out-of-family residuals.** Every published case of
   ``mlsysim/data/published_scaling.json`` is predicted by the model with its
   fitted constant (the host jitter) refitted *without the case's family*
   (:func:`mlsysim.validation.published.out_of_family`): the residual
   r_i = measured_i - predicted_i is how far the model is from a family it has
   not seen (leave-one-group-out cross-validation residuals, the CV+ /
   jackknife+ construction of Barber, Candes, Ramdas and Tibshirani 2021,
   "Predictive inference with the jackknife+", Annals of Statistics, applied
   to groups).
2. **Normalised by the layout's difficulty.** Each residual is divided by the
   difficulty of its layout,

       s = 1 + DIFFICULTY_LOSS e (1 - e) + DIFFICULTY_NODES log2(N)

   with e the predicted efficiency and N the number of nodes (normalised
   conformal prediction: Papadopoulos, Proedrou, Vovk and Gammerman 2002,
   "Inductive Confidence Machines for Regression"; Lei et al. 2018,
   "Distribution-Free Predictive Inference for Regression", JASA, section 5.2).
   e (1 - e) is how far a relative error in the model's cost terms moves its
   prediction: with e = C / (C + L) (C the useful compute, L the time lost to
   communication, synchronisation and the rest), an error of a fraction r in L
   moves e by r e (1 - e) to first order. So a job that is nearly all compute
   gets a narrower band than one that loses much, and one that is nearly all
   communication a narrower one again (its efficiency is small, and so are
   its errors in points), by as much as the held-out check earns. log2(N) stands for what crosses nodes and the model
   does not see (fabric placement, stragglers and input pipelines of other
   hosts); each doubling of the nodes adds the same. The 1 is the floor: the
   loss no term models (the host, the input pipeline, a framework's schedule)
   does not vanish where the model sees no loss, so the band's width does not
   go to zero as e goes to 1 (:func:`unmodelled_loss_floor`: how far below a
   prediction of 1 the band reaches). The two weights are chosen by the
   leave-one-family-out check alone (the lowest mean interval score, each
   family weighing alike, docs/model.md, section 4.5): on the 111 published
   cases it gives the loss 2 (s from 1 to 1.5: the band narrows little where
   the model sees little loss, because on families left out it has not earned
   more) and the nodes no weight.
3. **Conformal quantiles, a family the unit.** The level-L band of the scores
   z_i = r_i / s_i is [z_lo, z_hi] (:func:`conformal_band`): with the published
   cases, each family weighs alike and the finite-sample correction counts
   families (G + 1, not m + 1), because the next job is from a family the model
   has not seen; a user's runs are their own groups (the split-conformal order
   statistics). The efficiency interval of a layout of difficulty s is
   [e + z_lo s, e + z_hi s], clipped to [0.001, 1]. Every other field follows
   from the efficiency at the scenario's own inputs:

       speedup       = n e
       update_time   = U e / e'        (U, e: the point prediction)
       training_time = T e / e'
       cost          = C e / e'

   One device (n = 1) has efficiency 1 by definition: its interval is a point.

Where the scores come from, without this module depending on the validation code
(which runs the engine): a user's registered scores (:func:`register_scores`), else
the scores stored with the package for the assumptions the published cases were
scored under (``mlsysim/data/interval_scores.json``, the realistic preset; written by
``python -m mlsysim.validation.intervals``, and a test checks it equals a fresh
computation), else :func:`mlsysim.validation.intervals.ensure_scores` computes them
for any other assumptions (the command line and the page call it for you).

Your own residuals: ``mlsysim validate mine RUNS`` fits a cluster's constants to
its measured runs and registers their leave-one-out scores for the assumptions
it writes (:func:`register_scores`); results evaluated with those assumptions get
their band from them instead of the published cases.

Honesty check (:func:`mlsysim.validation.published.cross_validate`): each family
is left out of the fit *and* of the residuals; its measurements fall inside the
80% band in at least 80% of cases (``mlsysim validate published`` prints the figure;
docs/model.md, section 4.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import Assumptions

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from mlsysim.core.units import Quantity
    from mlsysim.engine.reports.view import ResultView


LOWEST_EFFICIENCY = 1e-3
"""The efficiency interval is clipped to [0.001, 1]."""

DIFFICULTY_LOSS = 2.0
"""Weight of e (1 - e) (e the predicted efficiency) in the difficulty
s = 1 + 2 e (1 - e) + 0 log2(N)."""
DIFFICULTY_NODES = 0.0
"""Weight of log2 of the number of nodes N in the difficulty. Both weights are those
:func:`mlsysim.validation.published.choose_difficulty_weights` picks on the published cases by
the leave-one-family-out check alone (each family left out of the residuals its band is built
from; the lowest interval score averaged over families, each weighing alike) (docs/model.md,
section 4.5). The weight 8 of issue 23, picked with the cases pooled, narrowed the band
threefold where the model sees no loss; with families as the unit the check earns 2."""
DIFFICULTY_FORMULA = " + ".join(
    ["1"]
    + [f"{w:g} {term}" for w, term in ((DIFFICULTY_LOSS, "e (1 - e)"), (DIFFICULTY_NODES, "log2(N)")) if w]
)
"""The difficulty in words, for explain and the validation report (a term of weight 0 left
out)."""


@dataclass(frozen=True)
class Scores:
    """Normalised residuals z = (measured - predicted) / s that intervals are built from.

    ``groups``: the family of each score, when the scores come in families (the published
    cases): the band then weighs every family alike (:func:`conformal_band`); None, every
    score its own group (a user's runs)."""

    values: np.ndarray
    source: str  # what they come from, in words
    groups: tuple[str, ...] | None = None


_REGISTERED: dict[Assumptions, Scores] = {}


def register_scores(
    assumptions: Assumptions,
    values: ArrayLike,
    source: str,
    groups: tuple[str, ...] | None = None,
) -> None:
    """Build the intervals of results under ``assumptions`` from ``values`` (normalised
    residuals of a user's own runs, or of the published cases with their families as
    ``groups``) instead of the stored ones."""
    z = np.asarray(values, dtype=float)
    if z.ndim != 1 or z.size < 2 or not np.all(np.isfinite(z)):
        raise InputError(
            f"interval scores: expected at least 2 finite numbers, got {z.size}", field="scores"
        )
    if groups is not None and len(groups) != z.size:
        raise InputError(
            f"interval scores: {len(groups)} groups for {z.size} scores", field="scores"
        )
    _REGISTERED[assumptions] = Scores(z, source, None if groups is None else tuple(groups))


def conformal_band(
    residuals: ArrayLike, level: float, groups: ArrayLike | None = None
) -> tuple[float, float]:
    """Split-conformal quantiles of ``residuals`` (measured - predicted) for a central ``level``.

    With m residuals sorted, the band is [r_(k_lo), r_(k_hi)] with
    k_lo = floor((m+1)(1-level)/2) and k_hi = ceil((m+1)(1+level)/2) (clamped to
    1..m): the finite-sample rule of split conformal prediction (Vovk, Gammerman
    and Shafer 2005, "Algorithmic Learning in a Random World"; Lei et al. 2018,
    "Distribution-Free Predictive Inference for Regression", JASA).

    ``groups`` (one label per residual): the residuals come in G groups (families of
    runs) and the band is for a member of a *new* group. The group, not the residual, is
    then the exchangeable unit: each group weighs 1 in all, shared equally by its members
    (the pooled-CDF construction of Dunn, Wasserman and Ramdas 2023, "Distribution-Free
    Prediction Sets for Two-Layer Hierarchical Models", JASA), and the finite-sample
    correction counts groups: the upper end is the smallest residual whose cumulative
    weight reaches (G+1)(1+level)/2, the lower end the same from below. With every
    residual its own group this is the rule above. A group of many well-predicted
    members no longer narrows the band for the next group, and with G = 20 families the
    band reaches the 95th percentile of the families' residuals on each side, where m =
    111 residuals read as independent would stop at the 91st.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected a number in (0, 1), got {level!r}")
    alpha = 1.0 - level
    if groups is None:
        r = np.sort(np.asarray(residuals, dtype=float))
        m = r.size
        k_lo = min(max(int(np.floor((m + 1) * alpha / 2.0)), 1), m)
        k_hi = min(max(int(np.ceil((m + 1) * (1.0 - alpha / 2.0))), 1), m)
        return float(r[k_lo - 1]), float(r[k_hi - 1])
    values = np.asarray(residuals, dtype=float)
    labels = np.asarray(groups)
    if labels.shape != values.shape:
        raise ValueError(f"groups: expected {values.size} labels, got {labels.size}")
    names, index, counts = np.unique(labels, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[index]  # each group weighs 1 in all
    reach = (names.size + 1) * (1.0 - alpha / 2.0)

    def upper(v: np.ndarray) -> float:
        order = np.argsort(v, kind="stable")
        cumulative = np.cumsum(weights[order])
        k = int(np.searchsorted(cumulative, reach - 1e-9))  # the first to reach it
        return float(v[order][min(k, v.size - 1)])

    return -upper(-values), upper(values)


def difficulty(
    efficiency: ArrayLike,
    nodes: ArrayLike,
    loss_weight: float = DIFFICULTY_LOSS,
    node_weight: float = DIFFICULTY_NODES,
) -> np.ndarray:
    """s = 1 + DIFFICULTY_LOSS e (1 - e) + DIFFICULTY_NODES log2(N), from the predicted
    efficiency e and the number of nodes N (floats or arrays; other weights for the
    check that picks them, :func:`mlsysim.validation.published.choose_difficulty_weights`)."""
    e = np.clip(np.asarray(efficiency, dtype=float), 0.0, 1.0)
    n = np.maximum(np.asarray(nodes, dtype=float), 1.0)
    return np.asarray(1.0 + loss_weight * e * (1.0 - e) + node_weight * np.log2(n), dtype=float)


@lru_cache(maxsize=256)
def assumptions_key(assumptions: Assumptions) -> str:
    """A stable name of a set of assumptions, for the stored scores (a hash of their fields;
    kept per set of assumptions: every interval asks for it).

    Fields that change only the whole run (``failure_rate``: no figure of the update)
    are left out: they leave the residuals as they are; so are an implementation's
    achieved rates at their default (the physics).
    """
    import hashlib
    import json

    whole_run = type(assumptions).WHOLE_RUN_FIELDS
    at_default = {
        k for k in type(assumptions).IMPLEMENTATION_FIELDS
        if getattr(assumptions, k) == type(assumptions).model_fields[k].default
    }
    fields = {
        k: str(v) for k, v in sorted(assumptions.fields().items()) if k not in whole_run and k not in at_default
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


@cache
def _stored() -> dict[str, Scores]:
    import json
    from importlib.resources import files

    path = files("mlsysim").joinpath("data/interval_scores.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        key: Scores(
            np.asarray(entry["scores"], dtype=float),
            entry["source"],
            tuple(entry["families"]) if "families" in entry else None,
        )
        for key, entry in data["scores"].items()
    }


def stored_scores(assumptions: Assumptions) -> Scores | None:
    """The scores stored with the package for ``assumptions``, or None."""
    return _stored().get(assumptions_key(assumptions))


def known_scores(assumptions: Assumptions) -> bool:
    """Whether intervals under ``assumptions`` can be given now (registered or stored scores)."""
    return assumptions in _REGISTERED or stored_scores(assumptions) is not None


def scores(assumptions: Assumptions) -> Scores:
    """The scores of ``assumptions``: a user's registered runs, else those stored with the package.

    For other assumptions, :func:`mlsysim.validation.intervals.ensure_scores` computes
    them from the published cases once (a second or two) and registers them.
    """
    found = _REGISTERED.get(assumptions) or stored_scores(assumptions)
    if found is None:
        raise InputError(
            "interval: no residuals are known for these assumptions yet; compute them from "
            "the published cases once with mlsysim.validation.intervals.ensure_scores(assumptions) "
            "(the command line and the page do it for you), or register your own runs' with "
            "mlsysim validate mine",
            field="assumptions",
        )
    return found


_LAYOUT_REGISTERED: dict[Assumptions, Scores] = {}


def register_layout_scores(assumptions: Assumptions, values: ArrayLike, source: str) -> None:
    """Build the intervals of parallel layouts under ``assumptions`` from ``values``: relative
    errors of the update time, T_measured / T_predicted - 1, of runs predicted out of family."""
    z = np.asarray(values, dtype=float)
    if z.ndim != 1 or z.size < 2 or not np.all(np.isfinite(z)):
        raise InputError(
            f"layout scores: expected at least 2 finite numbers, got {z.size}", field="scores"
        )
    _LAYOUT_REGISTERED[assumptions] = Scores(z, source)


@cache
def _stored_layout() -> dict[str, Scores]:
    import json
    from importlib.resources import files

    path = files("mlsysim").joinpath("data/interval_scores.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        key: Scores(np.asarray(entry["errors"], dtype=float), entry["source"])
        for key, entry in data.get("layout_scores", {}).items()
    }


def layout_scores(assumptions: Assumptions) -> Scores | None:
    """The held-out errors parallel layouts under ``assumptions`` get their interval from:
    registered, else stored with the package (the seed's and the realistic preset's), else None
    (:func:`mlsysim.validation.intervals.ensure_scores` computes them)."""
    return _LAYOUT_REGISTERED.get(assumptions) or _stored_layout().get(assumptions_key(assumptions))


def layout_band(assumptions: Assumptions, level: float = 0.8) -> tuple[float, float]:
    """(rho_lo, rho_hi): the ``level`` band of T_measured / T_predicted of a parallel layout, the
    split-conformal quantiles of the held-out errors of the published model-parallel runs (each
    run the unit: with six families, a family as the unit would make every 80% band the whole
    range; run as the unit, it covers 84% of the runs of each family left out)."""
    found = layout_scores(assumptions)
    if found is None:
        raise InputError(
            "interval: no model-parallel residuals are known for these assumptions yet; compute them "
            "with mlsysim.validation.intervals.ensure_scores(assumptions) (the command line and the page "
            "do it for you)",
            field="assumptions",
        )
    low, high = conformal_band(found.values, level)
    return 1.0 + low, 1.0 + high


def has_interval(result: ResultView) -> bool:
    """Whether ``result`` gets a prediction interval now: a parallel layout whose assumptions have
    model-parallel residuals, or a data-parallel result under non-seed assumptions with scores."""
    assumptions = cast("Assumptions | None", result.inputs.get("assumptions")) if result.inputs else None
    if assumptions is None:
        return False
    if result.figures.layout is not None:
        return layout_scores(assumptions) is not None
    return not assumptions.is_seed() and known_scores(assumptions)


def interval_source(result: ResultView) -> str:
    """What the interval of ``result`` is built from, in words."""
    assumptions = cast("Assumptions", result.inputs["assumptions"])
    if result.figures.layout is not None:
        found = layout_scores(assumptions)
        return "" if found is None else found.source
    return scores(assumptions).source


def residuals(assumptions: Assumptions) -> np.ndarray:
    """The normalised out-of-family residuals intervals under ``assumptions`` are built from."""
    return scores(assumptions).values


def score_band(assumptions: Assumptions, level: float = 0.8) -> tuple[float, float]:
    """(z_lo, z_hi): the conformal quantiles of the scores for a central ``level`` (each
    family weighing alike where the scores come in families, :func:`conformal_band`)."""
    found = scores(assumptions)
    return conformal_band(found.values, level, found.groups)


def unmodelled_loss_floor(assumptions: Assumptions, level: float = 0.8) -> float:
    """-z_lo: how far (fraction of efficiency) the ``level`` band reaches below a predicted
    efficiency of 1, where the model sees no loss at all (s = 1): the floor the band keeps
    for the loss no term models. Every band reaches at least this far below its prediction
    (s >= 1), before clipping at 0.001."""
    return -score_band(assumptions, level)[0]


def efficiency_band(
    assumptions: Assumptions, level: float = 0.8, efficiency: float = 1.0, nodes: float = 1.0
) -> tuple[float, float]:
    """(low, high) offsets added to a predicted ``efficiency`` of a layout over ``nodes`` nodes
    (before clipping to [0.001, 1])."""
    z_lo, z_hi = score_band(assumptions, level)
    s = float(difficulty(efficiency, nodes))
    return z_lo * s, z_hi * s


def efficiency_interval_of(
    assumptions: Assumptions,
    efficiency: ArrayLike,
    nodes: ArrayLike,
    level: float = 0.8,
    n_devices: ArrayLike | None = None,
    layout: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) efficiency arrays for many layouts (a sweep's rows, each over ``nodes``
    nodes): e + z s, clipped to [0.001, 1]; a point where ``n_devices`` is 1. Rows where
    ``layout`` is true are parallel layouts: [e / rho_hi, e / rho_lo] (:func:`layout_band`),
    clipped to [0.001, max(1, e)]."""
    e = np.asarray(efficiency, dtype=float)
    is_layout = np.zeros(e.shape, dtype=bool) if layout is None else np.asarray(layout, dtype=bool)
    low = high = e
    if not is_layout.all():
        z_lo, z_hi = score_band(assumptions, level)
        s = difficulty(e, nodes)
        low = np.clip(e + z_lo * s, LOWEST_EFFICIENCY, 1.0)
        high = np.clip(e + z_hi * s, LOWEST_EFFICIENCY, 1.0)
    if is_layout.any():
        rho_lo, rho_hi = layout_band(assumptions, level)
        top = np.maximum(1.0, e)
        low = np.where(is_layout, np.clip(e / rho_hi, LOWEST_EFFICIENCY, top), low)
        high = np.where(is_layout, np.clip(e / rho_lo, LOWEST_EFFICIENCY, top), high)
    if n_devices is not None:
        one = np.asarray(n_devices) == 1
        low, high = np.where(one, e, low), np.where(one, e, high)
    return low, high


def confidence_band(assumptions: Assumptions, confidence: float) -> float:
    """z such that efficiency >= e + z s holds with probability ``confidence`` (one-sided):
    the low end of the central band at level 2 confidence - 1 (``confidence`` in (0.5, 1))."""
    return score_band(assumptions, 2.0 * _checked_confidence(confidence) - 1.0)[0]


def _checked_confidence(confidence: object) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not (
        0.5 < confidence < 1
    ):
        raise InputError(
            f"confidence: expected a number in (0.5, 1), got {confidence!r}", field="confidence"
        )
    return float(confidence)


def slowdown_at_confidence(
    z: float,
    efficiency: ArrayLike,
    nodes: ArrayLike,
    n_devices: ArrayLike,
    layout: ArrayLike | None = None,
    rho: float = 1.0,
) -> np.ndarray:
    """e / e_low: the factor by which training time and cost may grow at the one-sided bound
    e_low = clip(e + z s, 0.001, 1) (``z`` from :func:`confidence_band`); 1 on one device.
    Rows where ``layout`` is true grow by ``rho``, the one-sided bound of T_measured /
    T_predicted of a parallel layout (:func:`layout_confidence`).

    Training time and cost are inversely proportional to the efficiency at a layout's own
    inputs (section 4.5 of docs/model.md), so the bound on them is the point value times this.
    """
    e = np.asarray(efficiency, dtype=float)
    low = np.clip(e + z * difficulty(e, nodes), LOWEST_EFFICIENCY, 1.0)
    grow = e / low
    if layout is not None:
        grow = np.where(np.asarray(layout, dtype=bool), max(rho, 1e-12), grow)
    return np.asarray(np.where(np.asarray(n_devices) == 1, 1.0, grow), dtype=float)


def layout_confidence(assumptions: Assumptions, confidence: float) -> float:
    """rho such that T_measured <= rho T_predicted holds with probability ``confidence`` for a
    parallel layout: the high end of the central band at level 2 confidence - 1."""
    return layout_band(assumptions, 2.0 * _checked_confidence(confidence) - 1.0)[1]


def interval_columns(
    assumptions: Assumptions,
    efficiency: ArrayLike,
    nodes: ArrayLike,
    n_devices: ArrayLike,
    values: dict[str, ArrayLike],
    level: float = 0.8,
    layout: ArrayLike | None = None,
) -> dict[str, np.ndarray]:
    """``<name>_low`` / ``<name>_high`` for each of ``values`` (point columns of a sweep, by
    name from the result fields that have an interval): the same interval :meth:`result.interval` gives,
    row by row (``layout``: the rows that are parallel layouts)."""
    e = np.asarray(efficiency, dtype=float)
    low, high = efficiency_interval_of(assumptions, e, nodes, level, n_devices, layout)
    out: dict[str, np.ndarray] = {}
    for name, value in values.items():
        v = np.asarray(value, dtype=float)
        if name == "efficiency":
            out[f"{name}_low"], out[f"{name}_high"] = low, high
        elif name == "speedup":
            n = np.asarray(n_devices, dtype=float)
            out[f"{name}_low"], out[f"{name}_high"] = n * low, n * high
        else:  # update time, training time, cost: inversely proportional to the efficiency
            out[f"{name}_low"], out[f"{name}_high"] = v * e / high, v * e / low
    return out


def _check(result: ResultView, name: str, level: object) -> Assumptions:
    # the checked input "assumptions" is an Assumptions (or absent)
    assumptions = (
        cast("Assumptions | None", result.inputs.get("assumptions")) if result.inputs else None
    )
    if assumptions is not None and result.figures.layout is not None:
        pass  # a parallel layout: the model-parallel runs' residuals (layout_band), seed included
    elif assumptions is None or assumptions.is_seed():
        raise InputError(
            "interval: the seed model has no prediction interval (it is a bound, not an "
            "estimate); evaluate with assumptions=Assumptions.realistic() (or other non-seed "
            "assumptions) to get one",
            field="assumptions",
        )
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"level: expected a number in (0, 1), got {level!r}", field="level")
    return assumptions


def result_nodes(result: ResultView) -> int:
    """The number of nodes N of a result's layout (its difficulty's second input)."""
    return result.n_devices // result.devices_per_node


def efficiency_interval(
    result: ResultView, level: float = 0.8
) -> tuple[float, float]:
    """(low, high) efficiency of ``result`` at a central ``level`` (floats)."""
    assumptions = _check(result, "efficiency", level)
    low, high = efficiency_interval_of(
        assumptions, result.efficiency, result_nodes(result), float(level), result.n_devices,
        result.figures.layout is not None,
    )
    return float(low), float(high)


def interval(
    result: ResultView, name: str, level: float = 0.8
) -> tuple[float, float] | tuple[Quantity, Quantity]:
    """The (low, high) central prediction interval of a result field.

    ``name``: ``efficiency``, ``speedup`` (floats), ``update_time``,
    ``training_time`` (Quantities) or ``cost`` (US dollars, a float; an error
    when no node price was given).
    """
    _check(result, name, level)
    e_low, e_high = efficiency_interval(result, level)
    e = float(result.efficiency)
    if name == "efficiency":
        return e_low, e_high
    if name == "speedup":
        n = result.n_devices
        return n * e_low, n * e_high
    value: Quantity | float | None = getattr(result, name)
    if value is None:
        raise InputError(f"interval: {name} is not known (give node_hour_rate)", field=name)
    return value * (e / e_high), value * (e / e_low)
