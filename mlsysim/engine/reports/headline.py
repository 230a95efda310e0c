"""The answer of a result in one line, as ``run`` prints it first and ``explain`` heads its derivation.

Apart from :mod:`mlsysim.engine.reports.explain` so that ``mlsysim run`` prints it without
loading the derivation's steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlsysim.core.formatting import fmt_time
from mlsysim.engine.reports.whole_run_steps import whole_run_headline

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView

__all__ = ["fmt_hours", "headline"]


def fmt_hours(hours: float) -> str:
    """A training time for people: ``2.80 h``, ``3.1 min``, ``4.2 days``."""
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    if hours >= 1:
        return f"{hours:.2f} h"
    if hours * 60 >= 1:
        return f"{hours * 60:.1f} min"
    return f"{hours * 3600:.1f} s"


def headline(result: ResultView) -> str:
    """The answer in one line: devices, efficiency, update time, training time, cost, bottleneck.

    ``32 devices (4 nodes x 8): efficiency 27.9%, update time 6.46 s, training time on
    32 devices 2.80 h, cost 358.98 USD; bottleneck: inter-node link``
    """
    i = result.inputs or {}
    n = result.n_devices
    nodes = i.get("nodes")
    layout = f" ({nodes} node{'s' if nodes != 1 else ''} x {i['devices_per_node']})" if i else ""
    seconds = float(result.figures.update_time)
    update = f"{seconds:.2f} s" if seconds >= 1 else fmt_time(seconds)
    hours = float(result.figures.training_time) / 3600
    short = " (less than one update: see the notes)" if hours * 3600 < seconds else ""
    cost = "no price given" if result.cost is None else f"{result.cost:,.2f} USD"
    fits = "" if result.fits in (None, True) else "; does NOT fit in device memory"
    return (
        f"{n} device{'s' if n != 1 else ''}{layout}: efficiency {result.efficiency:.1%}, "
        f"update time {update}, training time on {n} device{'s' if n != 1 else ''} "
        f"{fmt_hours(hours)}{short}, cost {cost}; bottleneck: {result.bottleneck}{fits}"
        + whole_run_headline(result)
    )
