"""Four pictures of a sweep or a plan, as matplotlib Figures saved to PNG or SVG.

* :func:`speedup_plot`: speedup against device count, with the ideal line;
* :func:`efficiency_plot`: efficiency against one axis, one line per value of another;
* :func:`pareto_plot`: training time against cost, the front and the chosen plan marked;
* :func:`breakdown_plot`: per layout, a stacked bar of compute, exposed and hidden
  communication (and synchronisation) per update.

Each takes a :class:`~mlsysim.SweepTable` (or a :class:`~mlsysim.Plan`), names
the scenario in the title, puts units on both axes, and writes ``path`` when
given (the format from its suffix, written atomically). Figures are built with
``matplotlib.figure.Figure`` directly, so no GUI backend or global state is used.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from mlsysim.core.exceptions import InputError, MissingDependencyError

FORMATS = (".png", ".svg")
MAX_SERIES = 8
"""Lines beyond this many become one scatter of points, to stay readable."""


def _figure(width: float = 7.5, height: float = 4.8) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("plots need matplotlib: pip install 'mlsysim[plot]'") from None
    return Figure(figsize=(width, height), dpi=120, layout="constrained")


def save(figure: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``figure`` as PNG or SVG (by suffix), atomically."""
    from mlsysim.engine.files import atomic_writer

    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"plot file {str(target)!r}: expected a .png or .svg suffix", field="path")
    with atomic_writer(target, binary=True) as handle:
        figure.savefig(handle, format=suffix[1:])
    return target


def _finish(figure: Any, path: Any) -> Any:
    if path is not None:
        save(figure, path)
    return figure


def _name(table: Any) -> str:
    return getattr(table.base, "name", None) or "scenario"


def _axis_label(table: Any, column: str) -> str:
    unit = table.units.get(column)
    pretty = column.replace("_", " ")
    return f"{pretty} ({unit})" if unit else f"{pretty} (count)"


def _value_text(table: Any, column: str, value: Any) -> str:
    unit = table.units.get(column)
    if isinstance(value, (float, np.floating)):
        value = f"{value:g}"
    return f"{value} {unit}" if unit else f"{value}"


def _numeric_axes(table: Any) -> list[str]:
    return [a.column for a in table.axes if a.magnitudes is not None]


def _fix_others(table: Any, keep: set[str]) -> tuple[np.ndarray, list[str]]:
    """Rows where every axis not in ``keep`` is at its first value, and a note of those values."""
    mask = np.ones(len(table), dtype=bool)
    notes = []
    for position, axis in enumerate(table.axes):
        if axis.column in keep or len(axis) == 1:
            continue
        mask &= table.axis_indices(position) == 0
        first = table[axis.column][mask][0] if mask.any() else None
        notes.append(f"{axis.field}={_value_text(table, axis.column, first)}")
    return mask, notes


def speedup_plot(table: Any, path: Any = None) -> Any:
    """Speedup against the number of devices, with the ideal (linear) speedup.

    One line per value of the axes other than ``nodes`` and ``devices_per_node``
    (up to :data:`MAX_SERIES`; beyond that the layouts are drawn as points).
    """
    figure = _figure()
    ax = figure.add_subplot()
    n, speedup = table["n_devices"], table["speedup"]
    others = [a for a in table.axes if a.field not in ("nodes", "devices_per_node") and len(a) > 1]
    groups = _groups(table, others)
    if len(groups) > MAX_SERIES:
        ax.scatter(n, speedup, s=8, alpha=0.5, label="layouts")
    else:
        for label, rows in groups:
            order = rows[np.argsort(n[rows], kind="stable")]
            ax.plot(n[order], speedup[order], marker="o", markersize=3, label=label or "model")
    top = max(float(n.max()), 1.0)
    ax.plot([1, top], [1, top], linestyle="--", color="grey", label="ideal (speedup = devices)")
    ax.set_xlabel("devices, n = nodes x devices per node (count)")
    ax.set_ylabel("speedup over one device (x)")
    ax.set_title(f"{_name(table)}: speedup against device count")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(figure, path)


def _groups(table: Any, axes: list[Any]) -> list[tuple[str, np.ndarray]]:
    """Rows grouped by the values of ``axes``, with a legend label per group."""
    if not axes:
        return [("", np.arange(len(table)))]
    codes = np.stack([table.axis_indices(table.axes.index(a)) for a in axes], axis=1)
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    groups = []
    for g in range(len(keys)):
        rows = np.flatnonzero(inverse.reshape(-1) == g)
        label = ", ".join(
            f"{a.field}={_value_text(table, a.column, table[a.column][rows[0]])}" for a in axes
        )
        groups.append((label, rows))
    return groups


def _interval_band(ax: Any, table: Any, x: str, order: np.ndarray, color: str) -> None:
    """Shade the 80% prediction interval of a line whose assumptions are not the seed's.

    The band is the conformal one of :mod:`mlsysim.validation.intervals`
    (efficiency + the residual quantiles, clipped to [0.001, 1]); one device
    (n = 1) is exact.
    """
    if len(order) == 0:
        return
    assumptions = table.scenario(int(order[0])).assumptions
    if assumptions.is_seed():
        return
    from mlsysim.validation.intervals import LOWEST_EFFICIENCY, efficiency_band

    low, high = efficiency_band(assumptions, 0.8)
    e = table["efficiency"][order]
    one = table["n_devices"][order] == 1
    lower = np.where(one, e, np.clip(e + low, LOWEST_EFFICIENCY, 1.0))
    upper = np.where(one, e, np.clip(e + high, LOWEST_EFFICIENCY, 1.0))
    ax.fill_between(table[x][order], lower, upper, color=color, alpha=0.15, linewidth=0)


def efficiency_plot(
    table: Any, x: str | None = None, series: str | None = None, path: Any = None
) -> Any:
    """Efficiency against axis ``x`` (default: the first numeric axis), one line per ``series`` value.

    ``series`` defaults to the next axis; any other axis is held at its first
    value, as the title says.
    """
    numeric = _numeric_axes(table)
    if x is None:
        if not numeric:
            raise InputError("efficiency_plot needs a numeric axis (e.g. nodes) to put on x")
        x = numeric[0]
    columns = [a.column for a in table.axes]
    if x not in columns:
        raise InputError(f"efficiency_plot: {x!r} is not an axis; axes: {', '.join(columns)}")
    if series is None:
        series = next((c for c in columns if c != x), None)
    keep = {x} | ({series} if series else set())
    mask, notes = _fix_others(table, keep)
    figure = _figure()
    ax = figure.add_subplot()
    axis = [a for a in table.axes if a.column == series]
    for label, rows in _groups(table, axis):
        rows = rows[mask[rows]]
        order = rows[np.argsort(table[x][rows], kind="stable")]
        (line,) = ax.plot(
            table[x][order],
            table["efficiency"][order],
            marker="o",
            markersize=3,
            label=label or "model",
        )
        _interval_band(ax, table, x, order, line.get_color())
    ax.set_xlabel(_axis_label(table, x))
    ax.set_ylabel("scaling efficiency, speedup / devices (fraction)")
    ax.set_ylim(0, 1.05)
    title = f"{_name(table)}: efficiency against {x.replace('_', ' ')}"
    if notes:
        title += f"\n({', '.join(notes)})"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(figure, path)


def pareto_plot(plan: Any, path: Any = None) -> Any:
    """Training time against cost for every layout, the Pareto front, the chosen plan and the knee."""
    table = plan.table
    time, cost = table["training_time"], table["cost"]
    figure = _figure()
    ax = figure.add_subplot()
    ok = plan.feasible
    ax.scatter(time[~ok], cost[~ok], s=8, color="lightgrey", label="breaks a constraint")
    ax.scatter(time[ok], cost[ok], s=10, color="tab:blue", alpha=0.6, label="feasible")
    front = plan.pareto
    ax.plot(
        front["training_time"],
        front["cost"],
        color="tab:orange",
        marker="o",
        markersize=4,
        label="Pareto front",
    )
    ax.scatter(
        [time[plan.best_row]],
        [cost[plan.best_row]],
        marker="*",
        s=250,
        color="tab:red",
        zorder=5,
        label=f"plan (best {plan.objective})",
    )
    if plan.knee_row is not None:
        ax.scatter(
            [time[plan.knee_row]],
            [cost[plan.knee_row]],
            marker="D",
            s=60,
            facecolors="none",
            edgecolors="black",
            zorder=5,
            label="knee",
        )
    ax.set_xscale("log")
    ax.set_xlabel("training time (hour, log scale)")
    ax.set_ylabel("cost (USD)")
    ax.set_title(f"{_name(table)}: training time against cost")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize="small")
    return _finish(figure, path)


def breakdown_plot(table: Any, path: Any = None, max_bars: int = 24) -> Any:
    """Per layout, a stacked bar of one update: compute, exposed and hidden communication.

    Hidden communication runs under the backward pass (it is drawn hatched,
    on top, and does not add to the update time); synchronisation is shown
    when present. At most ``max_bars`` rows, evenly spaced over the table.
    """
    rows = np.unique(np.linspace(0, len(table) - 1, min(len(table), max_bars)).round().astype(int))
    compute = table["compute_time"][rows]
    exposed = table["exposed_communication_time"][rows]
    hidden = table["hidden_communication_time"][rows]
    sync = table["synchronization_time"][rows]
    labels = [_row_label(table, int(i)) for i in rows]
    figure = _figure(max(7.5, 0.45 * len(rows) + 3), 5.2)
    ax = figure.add_subplot()
    where = np.arange(len(rows))
    ax.bar(where, compute, label="compute", color="tab:green")
    ax.bar(where, exposed, bottom=compute, label="exposed communication", color="tab:red")
    bottom = compute + exposed
    if sync.any():
        ax.bar(where, sync, bottom=bottom, label="synchronization", color="tab:purple")
        bottom = bottom + sync
    ax.bar(
        where,
        hidden,
        bottom=bottom,
        label="hidden communication (overlapped)",
        color="white",
        edgecolor="tab:red",
        hatch="//",
    )
    ax.set_xticks(where, labels, rotation=45, ha="right", fontsize="small")
    ax.set_ylabel("time per update (millisecond)")
    ax.set_xlabel("layout (swept values)")
    ax.set_title(f"{_name(table)}: where an update's time goes")
    ax.legend(fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    return _finish(figure, path)


def _row_label(table: Any, i: int) -> str:
    parts = []
    for axis in table.axes:
        if len(axis) > 1 or len(table.axes) == 1:
            parts.append(f"{axis.field}={_value_text(table, axis.column, table[axis.column][i])}")
    return ", ".join(parts) or "scenario"
