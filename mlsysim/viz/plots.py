"""Pictures of a sweep, a plan or one update, as matplotlib Figures saved to PNG or SVG.

* :func:`speedup_plot`: speedup against device count, with the ideal line;
* :func:`efficiency_plot`: efficiency against one axis, one line per value of another;
* :func:`pareto_plot`: training time against cost, the front and the chosen plan marked;
* :func:`breakdown_plot`: per layout, one update's time: compute, exposed
  communication and synchronisation stacked to the update time, the hidden
  (overlapped) communication drawn apart, hatched, inside the compute it hides under;
* :func:`timeline_plot`: one scenario's update, a row per pipeline stage: compute,
  tensor collectives, stage transfers, bubble, data-parallel reduction, optimizer
  step (:func:`mlsysim.engine.reports.timeline.timeline`, the figures explain prints).

Rules every plot follows, so that none can mislead:

* lines are told apart by colour, marker and line style together, and labelled
  at their right end, so two lines that coincide both stay visible (and the
  label says which);
* colour follows the swept value (a sequential map, light to dark as the value
  grows) when that value is a number, a qualitative palette when it is a name;
* value axes start at zero (efficiency, speedup, cost, time per update), so a
  4% difference looks like 4%; a log axis says so in its label;
* legends sit outside the data, to the right of the axes;
* the title names the scenario and any axis held at one value; every axis has its unit.

Each takes a :class:`~mlsysim.SweepTable` (or a :class:`~mlsysim.Plan`, or a
scenario) and writes ``path`` when given (the format from its suffix, written atomically).
Figures are built with ``matplotlib.figure.Figure`` directly, so no GUI
backend or global state is used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from mlsysim.core.exceptions import InputError, MissingDependencyError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.plan import Plan
    from mlsysim.planning.table import Axis, SweepTable

PathLike: TypeAlias = "str | os.PathLike[str]"
"""Where a plot is written (``.png`` or ``.svg``)."""

FORMATS = (".png", ".svg")
MAX_SERIES = 8
"""Lines beyond this many become one scatter of points, coloured by value."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), "-", "--")
COMPUTE, EXPOSED, SYNC = "#4c9a2a", "#c0392b", "#7d3c98"


def _figure(width: float = 8.5, height: float = 4.8) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("plots need matplotlib: pip install 'mlsysim[plot]'") from None
    return Figure(figsize=(width, height), dpi=120, layout="constrained")


def save(figure: Figure, path: PathLike) -> Path:
    """Write ``figure`` as PNG or SVG (by suffix), atomically."""
    from mlsysim.engine.io.files import atomic_writer

    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"plot file {str(target)!r}: expected a .png or .svg suffix", field="path")
    with atomic_writer(target, binary=True) as handle:
        figure.savefig(handle, format=suffix[1:])
    return target


def _finish(figure: Figure, path: PathLike | None) -> Figure:
    if path is not None:
        save(figure, path)
    return figure


def _name(table: SweepTable) -> str:
    return getattr(table.base, "name", None) or "scenario"


def _axis_label(table: SweepTable, column: str) -> str:
    unit = table.units.get(column)
    pretty = column.replace("_", " ")
    return f"{pretty} ({unit})" if unit else f"{pretty} (count)"


def _value_text(table: SweepTable, column: str, value: object) -> str:
    unit = table.units.get(column)
    if isinstance(value, (float, np.floating)):
        value = f"{value:g}"
    return f"{value} {unit}" if unit else f"{value}"


def _numeric_axes(table: SweepTable) -> list[str]:
    return [a.column for a in table.axes if a.magnitudes is not None]


def _fix_others(table: SweepTable, keep: set[str]) -> tuple[np.ndarray, list[str]]:
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


def _groups(table: SweepTable, axes: list[Axis]) -> list[tuple[str, np.ndarray]]:
    """Rows grouped by the values of ``axes`` (in axis order), with a label per group."""
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


def _colors(count: int, numeric: bool) -> list[ColorType]:
    """``count`` colours: light to dark along viridis for ordered values, tab10 for names."""
    from matplotlib import colormaps

    if numeric:
        cmap = colormaps["viridis"]
        if count == 1:
            return [cmap(0.35)]
        return [cmap(0.75 - 0.7 * k / (count - 1)) for k in range(count)]
    cmap = colormaps["tab10"]
    return [cmap(k % 10) for k in range(count)]


def _series(
    ax: Axes,
    xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    labels: Sequence[str],
    values: np.ndarray | None,
) -> None:
    """Lines that stay visible when they coincide: colour, marker, style, and an end label each.

    ``values`` (one number per line, or None for names) orders the colours:
    light for the smallest value, dark for the largest.
    """
    palette = _colors(len(xs), values is not None)
    ranks = np.argsort(np.argsort(values, kind="stable")) if values is not None else range(len(xs))
    colors = [palette[int(r)] for r in ranks]
    for k, (x, y, label) in enumerate(zip(xs, ys, labels, strict=True)):
        every = max(1, len(x) // 12)
        ax.plot(
            x,
            y,
            color=colors[k],
            marker=MARKERS[k % len(MARKERS)],
            markersize=5,
            markevery=(k % every, every),
            markerfacecolor="white" if k % 2 else colors[k],
            linestyle=LINESTYLES[k % len(LINESTYLES)],
            linewidth=1.8,
            label=label or "model",
            zorder=3 + k,
        )
    _end_labels(ax, xs, ys, labels, colors)


def _end_labels(
    ax: Axes,
    xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    labels: Sequence[str],
    colors: Sequence[ColorType],
) -> None:
    """Each line's label just right of its last point, spread apart where the ends coincide."""
    from matplotlib.transforms import ScaledTranslation

    if len(xs) < 2 or not all(len(x) for x in xs):
        return
    low, high = ax.get_ylim()
    gap = 0.06 * (high - low)
    ends = sorted((float(y[-1]), k) for k, y in enumerate(ys))
    slots: list[float] = []
    for y, _ in ends:
        slots.append(y if not slots else max(y, slots[-1] + gap))
    overflow = max(0.0, slots[-1] - (high - 0.03 * (high - low)))
    right = ax.transData + ScaledTranslation(10 / 72, 0, ax.figure.dpi_scale_trans)
    for (y, k), slot in zip(ends, slots, strict=True):
        x = float(xs[k][-1])
        ax.annotate(
            _short_label(labels[k]),
            xy=(x, y),
            xytext=(x, slot - overflow),
            textcoords=right,
            va="center",
            ha="left",
            fontsize="small",
            color=colors[k],
            annotation_clip=False,
            arrowprops=None
            if slot - overflow == y
            else {"arrowstyle": "-", "color": colors[k], "lw": 0.6, "shrinkA": 0, "shrinkB": 2},
        )


def _short_label(label: str) -> str:
    """``inter_bandwidth=400 Gbps`` -> ``400 Gbps`` (the legend gives the field)."""
    return ", ".join(part.split("=", 1)[-1] for part in label.split(", ")) or "model"


def _legend(ax: Axes, columns: int = 3) -> None:
    """The legend under the plot, outside the data (end labels use the right margin)."""
    handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=max(1, min(columns, len(labels))),
        fontsize="small",
        frameon=False,
    )


def _line_values(
    table: SweepTable, axes: list[Axis], groups: list[tuple[str, np.ndarray]]
) -> np.ndarray | None:
    """The number each line stands for (one numeric axis), to order its colour; else None."""
    if len(axes) != 1 or axes[0].magnitudes is None:
        return None
    column = table[axes[0].column]
    return np.array([float(column[rows[0]]) for _, rows in groups])


def _series_axes(table: SweepTable, exclude: Sequence[str]) -> list[Axis]:
    return [a for a in table.axes if a.field not in exclude and len(a) > 1]


def speedup_plot(table: SweepTable, path: PathLike | None = None) -> Figure:
    """Speedup against the number of devices, with the ideal (linear) speedup.

    One line per value of the axes other than ``nodes`` and ``devices_per_node``
    (up to :data:`MAX_SERIES`; beyond that the layouts are drawn as points
    coloured by the first such axis).
    """
    figure = _figure()
    ax = figure.add_subplot()
    n, speedup = table["n_devices"], table["speedup"]
    others = _series_axes(table, ("nodes", "devices_per_node"))
    groups = _groups(table, others)
    top = max(float(n.max()), 1.0)
    ax.plot([0, top], [0, top], linestyle=(0, (4, 3)), color="grey", label="ideal: speedup = n")
    if len(groups) > MAX_SERIES:
        _scatter_by_value(ax, figure, table, others[0], n, speedup)
    else:
        ax.set_xlim(0, top * 1.02)
        ax.set_ylim(0, top * 1.05)
        xs, ys, labels = [], [], []
        for label, rows in groups:
            order = rows[np.argsort(n[rows], kind="stable")]
            xs.append(n[order])
            ys.append(speedup[order])
            labels.append(label)
        _series(ax, xs, ys, labels, _line_values(table, others, groups))
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("devices, n = nodes x devices per node (count)")
    ax.set_ylabel("speedup over one device (x)")
    ax.set_title(f"{_name(table)}: speedup against device count")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _finish(figure, path)


def _scatter_by_value(
    ax: Axes, figure: Figure, table: SweepTable, axis: Axis, x: np.ndarray, y: np.ndarray
) -> None:
    """Points coloured by ``axis``: a legend entry per value, or a colour bar for many numbers."""
    from matplotlib.colors import ListedColormap

    position = table.axes.index(axis)
    codes = table.axis_indices(position)
    numeric = axis.magnitudes is not None
    if numeric and len(axis) > MAX_SERIES:
        from matplotlib import colormaps

        cmap = ListedColormap(colormaps["viridis"](np.linspace(0.75, 0.05, 256)))
        from matplotlib.colors import LogNorm

        values = table[axis.column].astype(float)
        low, high = np.nanmin(values), np.nanmax(values)
        wide = low > 0 and high / low > 10  # values spread over decades: a log colour scale
        norm = LogNorm(low, high) if wide else None
        points = ax.scatter(x, y, c=values, cmap=cmap, norm=norm, s=10, alpha=0.85)
        bar = figure.colorbar(points, ax=ax, pad=0.01)
        bar.set_label(_axis_label(table, axis.column) + (", log scale" if wide else ""))
        return
    order = (
        np.argsort(axis.magnitudes, kind="stable")
        if axis.magnitudes is not None
        else np.arange(len(axis))
    )
    colors = _colors(len(axis), numeric)
    for rank, j in enumerate(order):
        rows = codes == j
        if not rows.any():
            continue
        value = _value_text(table, axis.column, table[axis.column][np.flatnonzero(rows)[0]])
        ax.scatter(
            x[rows], y[rows], s=12, alpha=0.85, color=colors[rank], label=f"{axis.field}={value}"
        )


def _interval_band(
    ax: Axes, table: SweepTable, x: str, order: np.ndarray, color: ColorType
) -> None:
    """Shade the 80% prediction interval of a line whose assumptions are not the seed's.

    The band is the normalised conformal one of :mod:`mlsysim.engine.reports.bands`
    (efficiency + the score quantiles x the row's difficulty, clipped to [0.001, 1]);
    one device (n = 1) is exact.
    """
    if len(order) == 0:
        return
    assumptions = table.scenario(int(order[0])).assumptions
    if assumptions.is_seed():
        return
    from mlsysim.engine.reports.bands import efficiency_interval_of

    lower, upper = efficiency_interval_of(
        assumptions, table["efficiency"][order], table.nodes()[order], 0.8, table["n_devices"][order]
    )
    ax.fill_between(table[x][order], lower, upper, color=color, alpha=0.15, linewidth=0)


def efficiency_plot(
    table: SweepTable,
    x: str | None = None,
    series: str | None = None,
    path: PathLike | None = None,
) -> Figure:
    """Efficiency against axis ``x`` (default: the first numeric axis), one line per ``series`` value.

    ``series`` defaults to the next axis; any other axis is held at its first
    value, as the title says. Lines are coloured by the series value.
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
    ax.set_ylim(0, 1.05)
    axis = [a for a in table.axes if a.column == series]
    xs, ys, labels, orders = [], [], [], []
    for label, rows in _groups(table, axis):
        rows = rows[mask[rows]]
        order = rows[np.argsort(table[x][rows], kind="stable")]
        xs.append(table[x][order])
        ys.append(table["efficiency"][order])
        labels.append(label)
        orders.append(order)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=(0, (4, 3)))
    _series(ax, xs, ys, labels, _line_values(table, axis, _groups(table, axis)))
    for order, line in zip(orders, ax.lines[-len(orders) :] if orders else [], strict=True):
        _interval_band(ax, table, x, order, line.get_color())
    ax.set_xlabel(_axis_label(table, x))
    ax.set_ylabel("scaling efficiency = speedup / n (fraction)")
    title = f"{_name(table)}: efficiency against {x.replace('_', ' ')}"
    if notes:
        title += f"\n({', '.join(notes)})"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _finish(figure, path)


PARETO_PLOT_MAX_POINTS = 200_000
"""A plan over more layouts draws its front, plan and knee only (every layout would be a blur)."""


def pareto_plot(plan: Plan, path: PathLike | None = None) -> Figure:
    """Training time against cost: every layout coloured by a swept value, the front, the plan, the knee.

    Cost starts at zero, so the vertical distance between layouts is their
    true difference in cost. Points are coloured by the first swept field
    other than ``nodes`` (by ``nodes`` when it is the only one). The knee is
    marked only when the efficiency bar is crossed inside the range; at the
    edge of the range the marker says "largest layout searched". Plans over
    more than :data:`PARETO_PLOT_MAX_POINTS` layouts draw their front only.
    """
    from mlsysim.planning.reduce import FIGURE_WORDS, ranked_columns
    from mlsysim.planning.summary import knee_of

    def ranked(rows: SweepTable) -> tuple[np.ndarray, np.ndarray]:
        """The time and cost the plan ranked by (the whole run's where it models failures)."""
        return ranked_columns(plan.constraints, lambda c: np.asarray(rows[c], dtype=float))

    time_words = FIGURE_WORDS[plan.constraints.time_figure]
    cost_words = FIGURE_WORDS[plan.constraints.cost_figure]
    size = getattr(plan, "size", None)
    if size is not None and size <= PARETO_PLOT_MAX_POINTS and not getattr(plan, "partial", False):
        table, ok = plan.table, plan.feasible  # every layout, evaluated again
    else:  # a large or interrupted plan: its front only
        table, ok = plan.pareto, np.ones(len(plan.pareto), dtype=bool)
    time, cost = ranked(table)
    figure = _figure(9.0, 5.0)
    ax = figure.add_subplot()
    if not ok.all():
        ax.scatter(
            time[~ok], cost[~ok], s=8, color="#d0d0d0", label="breaks a constraint", zorder=1
        )
    swept = _series_axes(table, ("nodes",)) or _series_axes(table, ())
    if swept:
        _scatter_by_value(ax, figure, table.take(ok), swept[0], time[ok], cost[ok])
    else:
        ax.scatter(time[ok], cost[ok], s=10, color="tab:blue", label="meets the constraints")
    front_time, front_cost = ranked(plan.pareto)
    ax.plot(
        front_time,
        front_cost,
        color="black",
        linewidth=1.0,
        label="Pareto front",
        zorder=4,
    )
    _mark(ax, plan.best, plan, marker="*", size=260, face="tab:red", edge=0.6, zorder=6,
          label=f"plan: best {plan.objective}")
    knee = knee_of(plan)
    if knee is not None:
        label = "knee" if knee.kind == "found" else "largest feasible layout (no knee in range)"
        _mark(ax, knee.layout, plan, marker="D", size=70, face="none", edge=1.2, zorder=5, label=label)
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(bottom=0, top=float(np.nanmax(cost)) * 1.08 if np.isfinite(cost).any() else None)
    ax.set_xlabel(f"{time_words} (hour, log scale)")
    ax.set_ylabel(f"{cost_words} (USD, from zero)")
    ax.set_title(f"{_name(table)}: {time_words} against {cost_words}")
    ax.grid(True, alpha=0.3, which="both")
    _legend(ax)
    return _finish(figure, path)


def _mark(
    ax: Axes, scenario: TrainingScenario, plan: Plan, *, marker: str, size: float, face: str, edge: float,
    zorder: int, label: str,
) -> None:
    """Mark a layout at its (time, cost) as the plan ranked it: a ``marker`` of area ``size`` filled with
    ``face``, edged in black ``edge`` points wide."""
    r = scenario.result
    time, cost = r.training_time.magnitude, r.cost
    if plan.constraints.time_figure == "wall_clock_time" and r.wall_clock_time is not None:
        time = r.wall_clock_time.to("hour").magnitude
    if plan.constraints.cost_figure == "total_cost" and r.total_cost is not None:
        cost = r.total_cost
    ax.scatter([time], [np.nan if cost is None else cost], marker=marker, s=size, facecolors=face,
               edgecolors="black", linewidths=edge, zorder=zorder, label=label)


def breakdown_plot(table: SweepTable, path: PathLike | None = None, max_bars: int = 24) -> Figure:
    """Per layout, one update: compute, exposed communication and synchronisation, stacked.

    The stacked parts add up to the update time (the bar's height; its value
    is printed above). Communication hidden under the backward pass adds
    nothing, so it is not stacked: it is drawn apart, as a hatched outline
    inside the top of the compute it runs under. At most ``max_bars`` rows,
    evenly spaced over the table.
    """
    rows = np.unique(np.linspace(0, len(table) - 1, min(len(table), max_bars)).round().astype(int))
    compute = table["compute_time"][rows]
    exposed = table["exposed_communication_time"][rows]
    hidden = table["hidden_communication_time"][rows]
    sync = table["synchronization_time"][rows]
    extra = (
        table["optimizer_time"][rows]
        + table["interference_time"][rows]
        + table["bucket_copy_time"][rows]
    )
    update = table["update_time"][rows]
    labels, xlabel = _bar_labels(table, rows)
    figure = _figure(max(8.5, 0.55 * len(rows) + 4), 5.2)
    ax = figure.add_subplot()
    where = np.arange(len(rows))
    ax.bar(where, compute, width=0.7, label="compute", color=COMPUTE)
    ax.bar(where, exposed, width=0.7, bottom=compute, label="exposed communication", color=EXPOSED)
    if sync.any():
        ax.bar(
            where,
            sync,
            width=0.7,
            bottom=compute + exposed,
            label="synchronization (stragglers, overhead)",
            color=SYNC,
        )
    if extra.any():
        ax.bar(
            where,
            extra,
            width=0.7,
            bottom=compute + exposed + sync,
            label="optimizer step, interference, bucket copies",
            color="tab:purple",
        )
    if hidden.any():
        ax.bar(
            where,
            hidden,
            width=0.42,
            bottom=compute - hidden,
            label="hidden communication\n(under the backward pass;\nnot added to the update)",
            fill=False,
            edgecolor=EXPOSED,
            hatch="///",
            linewidth=1.0,
        )
    ax.set_ylim(0, float(update.max()) * 1.12)
    for x, total in zip(where, update, strict=True):
        ax.annotate(
            f"{total:,.0f}",
            (x, total),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize="x-small",
        )
    ax.set_xticks(where, labels, fontsize="small")
    ax.set_ylabel("time per update (millisecond)")
    ax.set_xlabel(xlabel)
    ax.set_title(f"{_name(table)}: where an update's time goes (bar = update time)")
    _legend(ax)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return _finish(figure, path)


def _bar_labels(table: SweepTable, rows: np.ndarray) -> tuple[list[str], str]:
    """Tick labels of the swept values only (one line per axis), and the axis label naming them."""
    axes = [a for a in table.axes if len(a) > 1] or list(table.axes[:1])
    labels = []
    for i in rows:
        parts = []
        for axis in axes:
            value = table[axis.column][int(i)]
            parts.append(f"{value:g}" if isinstance(value, (float, np.floating)) else str(value))
        labels.append("\n".join(parts) or "scenario")
    names = [f"{a.field} ({a.unit})" if a.unit else a.field for a in axes]
    return labels, " / ".join(names) if names else "layout"


def _row_label(table: SweepTable, i: int) -> str:
    parts = []
    for axis in table.axes:
        if len(axis) > 1 or len(table.axes) == 1:
            parts.append(f"{axis.field}={_value_text(table, axis.column, table[axis.column][i])}")
    return ", ".join(parts) or "scenario"


KIND_COLORS: dict[str, str] = {
    "compute": COMPUTE,
    "matmul": "#166534",
    "attention": "#65a30d",
    "cast": "#a3e635",
    "elementwise": "#86efac",
    "tensor": "#2563eb",
    "context": "#4f46e5",
    "experts": "#9333ea",
    "pipeline": "#0891b2",
    "sharding": "#d97706",
    "data": EXPOSED,
    "overhead": "#a16207",
    "optimizer": "#db2777",
    "synchronization": SYNC,
    "idle": "#e5e7eb",
}
"""The colour of each kind of :data:`~mlsysim.engine.reports.timeline.KINDS` (the page's
``KIND_COLORS`` in ``app.js`` are the same): a new kind needs one here and there (tests check both)."""


def timeline_plot(
    scenario: TrainingScenario, path: PathLike | None = None, max_rows: int = 16
) -> Figure:
    """One update of ``scenario``, a horizontal bar per pipeline stage, a colour per kind of work.

    The segments are :func:`mlsysim.engine.reports.timeline.timeline`'s: each row
    tiles the update time, idle time (the pipeline's bubble) in light grey;
    communication hidden under the compute is drawn hatched over it, adding
    nothing. At most ``max_rows`` stages (the first, the last, evenly between).
    """
    from mlsysim.engine.reports.timeline import KINDS, timeline

    line = timeline(scenario.result, max_rows=max_rows)
    scale, unit = (1.0, "second") if line.update_time >= 2.0 else (1e3, "millisecond")
    rows = list(reversed(line.rows))  # the first stage on top
    figure = _figure(10.0, min(2.2 + 0.42 * len(rows), 10.0))
    ax = figure.add_subplot()
    used: list[str] = []
    many = max(len(r.segments) for r in rows) > 200
    for y, row in enumerate(rows):
        for kind in KINDS:
            chosen = [s for s in row.segments if s.kind == kind]
            if not chosen:
                continue
            if kind not in used:
                used.append(kind)
            colors = [FORWARD if s.label.startswith("forward") else KIND_COLORS[kind] for s in chosen]
            ax.broken_barh(
                [(s.start * scale, s.duration * scale) for s in chosen], (y - 0.38, 0.76), facecolors=colors,
                edgecolors="white" if not many else colors, linewidth=0.4,
            )
        hidden = [(s.start * scale, s.duration * scale) for s in row.hidden]
        if hidden:
            ax.broken_barh(hidden, (y - 0.38, 0.3), facecolors="none", edgecolors=EXPOSED, hatch="///",
                           linewidth=0.8)
    forwards = any(s.label.startswith("forward") for r in rows for s in r.segments)
    handles = _timeline_legend(used, any(r.hidden for r in rows), forwards)
    ax.set_yticks(range(len(rows)), [r.label for r in rows], fontsize="small")
    ax.set_xlim(0, line.update_time * scale)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(f"time in the update ({unit})")
    shown = "" if len(rows) == line.stages else f" ({len(rows)} of {line.stages} stages shown)"
    name = scenario.name or "scenario"
    if " [" in name:  # a named scenario with --set changes: say what runs instead
        name = f"{scenario.workload.name}, {scenario.result.n_devices} devices"
    ax.set_title(f"{name}{_layout_words(scenario)}: one update, {line.update_time * scale:,.4g} "
                 f"{'ms' if scale > 1 else 's'}{shown}", fontsize="medium")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return _finish(figure, path)


def _layout_words(scenario: TrainingScenario) -> str:
    """`` (t=8 p=4 v=2 d=16, m=8)`` for a parallel layout, ``""`` on the data-parallel model."""
    r = scenario.result
    f = r.figures
    if f.layout is None:
        return ""
    a = f.layout.records.layout
    v = int(float(a.pipeline_chunks))
    return (f" (t={r.tensor_ranks} p={r.pipeline_stages}{f' v={v}' if v > 1 else ''} d={r.data_parallel},"
            f" m={int(float(a.micro_batches))})")


FORWARD = "#9fd18b"
"""Compute of a forward pass: a lighter shade of :data:`COMPUTE` (backward passes)."""


def _timeline_legend(kinds: list[str], hidden: bool, forwards: bool) -> list[object]:
    from matplotlib.patches import Patch

    from mlsysim.engine.reports.timeline import KINDS

    words = {**KINDS, "compute": "compute: backward (forward lighter)"} if forwards else KINDS
    handles: list[object] = [Patch(facecolor=KIND_COLORS[k], label=words[k]) for k in kinds]
    if hidden:
        handles.append(Patch(facecolor="none", edgecolor=EXPOSED, hatch="///",
                             label="hidden under the backward\n(not added to the update)"))
    return handles
