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
   moves e by r e (1 - e) to first order. log2(N) stands for what crosses
   nodes and the model does not see (fabric placement, stragglers and input
   pipelines of other hosts). The 1 is the floor: the loss no term models (the
   host, the input pipeline, a framework's schedule) does not vanish where the
   model sees no loss, so the band's width does not go to zero as e goes to 1
   (:func:`unmodelled_loss_floor`: how far below a prediction of 1 the band
   reaches). The two weights are chosen by the leave-one-family-out check alone
   (the lowest mean interval score, each family weighing alike, docs/model.md,
   section 4.5): with the band of step 3 on the 111 published cases it gives
   neither a weight, s = 1: one band for every layout, the narrowing by the
   layout not earned on families left out.
3. **One conformal quantile, a family the unit.** The level-L band of the scores
   z_i = r_i / s_i is [z_lo, z_hi] (:func:`conformal_band`): with the published
   cases, each family weighs alike and the finite-sample correction counts
   families (G + 1, not m + 1), because the next job is from a family the model
   has not seen, and the band is one quantile of a two-sided score, rounded to
   the next family once (:func:`mlsysim.engine.reports.band_store.family_band`);
   a user's runs are their own groups (the split-conformal order statistics).
   The efficiency interval of a layout of difficulty s is
   [e + z_lo s, e + z_hi s], clipped to [0.001, 1]. Every other field follows
   from the efficiency at the scenario's own inputs:

       speedup       = n e
       update_time   = U e / e'        (U, e: the point prediction)
       training_time = T e / e'
       cost          = C e / e'

   One device (n = 1) has efficiency 1 by definition: its interval is a point.

Where the scores come from, without this module depending on the validation code
(which runs the engine): the scores a set of assumptions carries (a user's runs,
:meth:`~mlsysim.engine.inputs.assumptions.Assumptions.with_interval_scores`), else the
band stored with the package for the same assumptions (``mlsysim/data/interval_scores.json``:
the seed's and the realistic preset's; written by the build step ``python -m
mlsysim.validation.intervals``, and a test checks it equals a fresh computation), else the
nearest stored band, with a note in the interval's source saying which
(:mod:`mlsysim.engine.reports.band_store`). Nothing is computed in the user's process, and
no state outside a result's inputs moves its interval.

Your own residuals: ``mlsysim validate mine RUNS`` fits a cluster's constants to
its measured runs and writes their leave-one-out scores beside the assumptions it
writes; loaded (``mlsysim.validation.mine.load_assumptions``), the assumptions carry
them, and results evaluated with those assumptions get their band from them instead
of the published cases.

Honesty check (:func:`mlsysim.validation.published.nested_cross_validate`): each
family is left out of everything its band is built from (the jitter's fit behind every
residual, the pick of the weights, the band); its measurements fall inside the 80% band
in 75-85% of cases (``mlsysim validate published --cv`` prints the figure; docs/model.md,
section 4.5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.reports.band_store import Scores, conformal_band, nearest_band

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import ArrayLike

    from mlsysim.core.units import Quantity
    from mlsysim.engine.reports.view import ResultView


LOWEST_EFFICIENCY = 1e-3
"""The efficiency interval is clipped to [0.001, 1]."""

DIFFICULTY_LOSS = 0.0
"""Weight of e (1 - e) (e the predicted efficiency) in the difficulty
s = 1 + 0 e (1 - e) + 0 log2(N): s = 1, one band for every layout."""
DIFFICULTY_NODES = 0.0
"""Weight of log2 of the number of nodes N in the difficulty. Both weights are those
:func:`mlsysim.validation.published.choose_difficulty_weights` picks on the published cases by
the leave-one-family-out check alone (each family left out of the residuals its band is built
from; the lowest interval score averaged over families, each weighing alike) (docs/model.md,
section 4.5). The weight 8 of issue 23, picked with the cases pooled, narrowed the band
threefold where the model sees no loss; with families as the unit and each side rounded to the
next family (issue 29) the check earned 2; with the band's one rounding (issue 40,
:func:`mlsysim.engine.reports.band_store.family_band`) it earns none: s = 1 scores 22.5 points
against 22.8 for 2, and the pick without each family in turn is 1 for 16 of the 20."""
DIFFICULTY_FORMULA = " + ".join(
    ["1"]
    + [f"{w:g} {term}" for w, term in ((DIFFICULTY_LOSS, "e (1 - e)"), (DIFFICULTY_NODES, "log2(N)")) if w]
)
"""The difficulty in words, for explain and the validation report (a term of weight 0 left
out)."""


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


def scores(assumptions: Assumptions) -> Scores:
    """The scores data-parallel results under ``assumptions`` get their interval from: their
    own (a user's runs), else the band stored for them, else the nearest stored band, its
    source saying which (:func:`mlsysim.engine.reports.band_store.nearest_band`)."""
    return nearest_band(assumptions, "scores")


def layout_scores(assumptions: Assumptions) -> Scores:
    """The held-out errors parallel layouts under ``assumptions`` get their interval from: the
    band stored for them (the seed's and the realistic preset's), else the nearest stored one."""
    return nearest_band(assumptions, "layout_scores")


def layout_band(assumptions: Assumptions, level: float = 0.8) -> tuple[float, float]:
    """(rho_lo, rho_hi): the ``level`` band of T_measured / T_predicted of a parallel layout, the
    split-conformal quantiles of the held-out errors of the published model-parallel runs (each
    run the unit: with six families, a family as the unit would make every 80% band the whole
    range; run as the unit, it covers 84% of the runs of each family left out)."""
    low, high = conformal_band(layout_scores(assumptions).values, level)
    return 1.0 + low, 1.0 + high


def has_interval(result: ResultView) -> bool:
    """Whether ``result`` gets a prediction interval: a parallel layout (any assumptions), or a
    data-parallel result under non-seed assumptions (the seed's is a bound)."""
    assumptions = cast("Assumptions | None", result.inputs.get("assumptions")) if result.inputs else None
    if assumptions is None:
        return False
    return result.figures.layout is not None or not assumptions.is_seed()


def interval_source(result: ResultView) -> str:
    """What the interval of ``result`` is built from, in words."""
    assumptions = cast("Assumptions", result.inputs["assumptions"])
    if result.figures.layout is not None:
        return layout_scores(assumptions).source
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
    values: Mapping[str, ArrayLike],
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
