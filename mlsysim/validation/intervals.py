"""Prediction intervals of a result: conformal bands from the published validation residuals.

Method (split conformal prediction; Vovk, Gammerman and Shafer 2005,
"Algorithmic Learning in a Random World"; Lei et al. 2018, "Distribution-Free
Predictive Inference for Regression", JASA):

1. Predict every published case of ``mlsysim/data/published_scaling.json``
   under the scenario's own assumptions; the residuals are
   r_i = measured_i - predicted_i (fractions of efficiency).
2. The level-L band is [r_(k_lo), r_(k_hi)], the order statistics
   k_lo = floor((m+1)(1-L)/2), k_hi = ceil((m+1)(1+L)/2) of the m residuals
   (:func:`mlsysim.validation.published.conformal_band`).
3. The efficiency interval is [e + r_(k_lo), e + r_(k_hi)], clipped to
   [0.001, 1]. Every other field is a decreasing or increasing function of the
   efficiency at the scenario's own inputs, so its interval follows:

       speedup       = n e
       update_time   = U e / e'        (U, e: the point prediction)
       training_time = T e / e'
       cost          = C e / e'

   One device (n = 1) has efficiency 1 by definition: its interval is a point.

The residuals are additive in points of efficiency, so the band's width does
not depend on the layout; it says how far the model has been from published
measurements of layouts like the published ones (8 to 1,024 GPUs, one to 64
nodes, NVLink and InfiniBand or PCIe and Ethernet). Far from those, read it
as a lower bound on the uncertainty.

Honesty check: with ``cross_validate`` every family of cases is left out in
turn, the one fitted constant (host jitter) is refitted and the band is built
from the other families only; the held-out cases fall inside the 80% band in
81% of cases (docs/model.md).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.engine.assumptions import Assumptions
from mlsysim.engine.results import INTERVAL_FIELDS

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.engine.results import DataParallelScaleOutResult


LOWEST_EFFICIENCY = 1e-3
"""The efficiency interval is clipped to [0.001, 1]."""


@cache
def residuals(assumptions: Assumptions) -> np.ndarray:
    """measured - predicted efficiency of every published case under ``assumptions`` (cached)."""
    from mlsysim.validation.published import compare

    return np.asarray([-c.error for c in compare(assumptions)], dtype=float)


def efficiency_band(assumptions: Assumptions, level: float = 0.8) -> tuple[float, float]:
    """(low, high) offsets added to a predicted efficiency for a central ``level`` interval."""
    from mlsysim.validation.published import conformal_band

    return conformal_band(residuals(assumptions), level)


def _check(result: DataParallelScaleOutResult, name: str, level: object) -> Assumptions:
    # the checked input "assumptions" is an Assumptions (or absent)
    assumptions = (
        cast("Assumptions | None", result.inputs.get("assumptions")) if result.inputs else None
    )
    if assumptions is None or assumptions.is_seed():
        raise InputError(
            "interval: the seed model has no prediction interval (it is a bound, not an "
            "estimate); evaluate with assumptions=Assumptions.realistic() (or other non-seed "
            "assumptions) to get one",
            field="assumptions",
        )
    if name not in INTERVAL_FIELDS:
        raise InputError(
            f"interval: expected one of {', '.join(INTERVAL_FIELDS)}, got {name!r}", field="name"
        )
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"level: expected a number in (0, 1), got {level!r}", field="level")
    return assumptions


def efficiency_interval(
    result: DataParallelScaleOutResult, level: float = 0.8
) -> tuple[float, float]:
    """(low, high) efficiency of ``result`` at a central ``level`` (floats)."""
    assumptions = _check(result, "efficiency", level)
    e = float(result.efficiency)
    if result.n_devices == 1:
        return e, e
    low, high = efficiency_band(assumptions, float(level))
    return (
        float(np.clip(e + low, LOWEST_EFFICIENCY, 1.0)),
        float(np.clip(e + high, LOWEST_EFFICIENCY, 1.0)),
    )


def interval(
    result: DataParallelScaleOutResult, name: str, level: float = 0.8
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
