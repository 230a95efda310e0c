"""What a plan says, and only that: the rules behind :meth:`mlsysim.Plan.summary`.

A plan's summary reads the plan's public attributes only (``objective``,
``constraints``, ``best``, ``pareto``, ``knee``, ``excluded``, and the axes of
``pareto``), and follows four rules:

* **Only the fields that matter.** A layout is named by the swept fields that
  change its result; a field whose every swept value gives the same result
  (``inter_bandwidth`` on one node, a ZeRO stage when memory is not short) is
  left out, and the summary says it makes no difference there. When some but
  not all values are equivalent they are listed (``zero_stage=1 or 2``).
* **Equal results are one answer.** Layouts of the Pareto front whose figures
  are equal are one group (one row of a table, its equivalent values listed).
* **A knee only where it is found.** With ``min_efficiency``, the knee is the
  largest layout above the bar; it is reported as a knee only when the next
  larger node count of the range falls below the bar. At the edge of the
  range the summary says the efficiency stays above the bar up to the largest
  layout searched, and that the range should be widened.
* **The runner-up in one sentence.** The best layout is compared with its
  neighbour on the Pareto front (the next faster layout when the objective is
  cost, the next cheaper one when it is time): what one gains and pays.

The *result* of a layout, for these rules, is the set of figures a plan
judges: devices, update time, training time, cost, efficiency, global batch
and whether it fits in memory (:data:`RESULT_FIGURES`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.engine.reports.headline import fmt_hours

if TYPE_CHECKING:
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.table import Axis, SweepTable
    from mlsysim.planning.view import PlanView

Key: TypeAlias = "tuple[object, ...]"
"""A result's figures as plain Python values, comparable with ``==`` (see :func:`result_key`)."""

RESULT_FIGURES = (
    "n_devices",
    "update_time",
    "training_time",
    "cost",
    "efficiency",
    "global_batch",
    "fits",
    "wall_clock_time",
    "total_cost",
)
"""The figures two layouts must share to count as the same result."""

SIZE_FIELDS = ("nodes", "devices_per_node")
"""Fields that set the device count (always part of the result)."""

KNEE_CHECK_MAX_LAYOUTS = 1_000_000
"""At most this many layouts are evaluated at the next node count to place the knee;
beyond, only the knee's own values of the other fields are tried."""

SIGNIFICANT = 12
"""Figures are compared at this many significant digits (rounding noise aside, exactly)."""


# -- formatting ------------------------------------------------------------------------------


def fmt_money(usd: float | None) -> str:
    """``1,234.50 USD``, or ``cost unknown`` when no price was given."""
    if usd is None or usd != usd:
        return "cost unknown"
    return f"{usd:,.2f} USD"


def fmt_value(value: object) -> str:
    """A swept value as ``--set`` spells it: ``400 Gbps``, ``Llama2_7B``, ``2``."""
    if hasattr(value, "magnitude"):
        return f"{value:~P}"
    if hasattr(value, "is_seed") and callable(value.is_seed):
        # only Assumptions have is_seed among swept values
        return "seed" if value.is_seed() else _preset(cast("Assumptions", value))
    return str(getattr(value, "name", value))


def _preset(assumptions: Assumptions) -> str:
    return "realistic" if assumptions == type(assumptions).realistic() else "custom"


def _time_and_cost(hours: float, usd: float | None) -> str:
    """``3.15 h for 100.65 USD``, or ``50.2 min (cost unknown)``."""
    if usd is None or usd != usd:
        return f"{fmt_hours(hours)} (cost unknown)"
    return f"{fmt_hours(hours)} for {fmt_money(usd)}"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _percent(part: float, whole: float) -> str:
    share = abs(part) / whole * 100 if whole else math.inf
    if share < 0.1:
        return "<0.1%"
    return f"{share:.1f}%" if share < 10 else f"{share:.0f}%"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


# -- results and equivalence -----------------------------------------------------------------


def _key(values: Sequence[object]) -> Key:
    out: list[object] = []
    for v in values:
        if isinstance(v, (float, np.floating)):
            v = float(v)
            out.append(None if v != v else float(f"{v:.{SIGNIFICANT}g}"))
        elif isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, np.integer)):
            out.append(int(v))
        else:
            out.append(v)
    return tuple(out)


def result_key(scenario: TrainingScenario) -> Key:
    """The :data:`RESULT_FIGURES` of a scenario's result, comparable with ``==``."""
    r = scenario.result
    figures = {
        "n_devices": r.n_devices,
        "update_time": r.update_time.magnitude,
        "training_time": r.training_time.magnitude,
        "cost": math.nan if r.cost is None else r.cost,
        "efficiency": r.efficiency,
        "global_batch": r.global_batch,
        "fits": r.fits is not False,
        "wall_clock_time": math.nan
        if r.wall_clock_time is None
        else r.wall_clock_time.to("hour").magnitude,
        "total_cost": math.nan if r.total_cost is None else r.total_cost,
    }
    return _key([figures[f] for f in RESULT_FIGURES])


def row_key(table: SweepTable, i: int) -> Key:
    """The :data:`RESULT_FIGURES` of row ``i`` of a sweep table, comparable with ``==``."""
    return _key([table[f][i] for f in RESULT_FIGURES])


def equivalent_values(
    scenario: TrainingScenario, axes: Sequence[Axis]
) -> dict[str, tuple[Value, ...]]:
    """Per swept field, the values that give ``scenario`` the same result, in axis order.

    Each field is varied alone, the others held at the scenario's values;
    ``nodes`` and ``devices_per_node`` change the device count, so only the
    scenario's own value is equivalent. A value the scenario rejects (several
    nodes and no inter-node link) is not equivalent.
    """
    key = result_key(scenario)
    out: dict[str, tuple[Value, ...]] = {}
    for axis in axes:
        own = getattr(scenario, axis.field)
        if axis.field in SIZE_FIELDS or len(axis.values) == 1:
            out[axis.field] = (own,)
            continue
        same: list[Value] = []
        for value in axis.values:
            if value == own:
                same.append(value)
                continue
            try:
                other = scenario.variant(**{axis.field: value})
            except InputError:
                continue
            if result_key(other) == key:
                same.append(value)
        out[axis.field] = tuple(same)
    return out


@dataclass(frozen=True)
class Layout:
    """A layout named by what matters: the fields that change its result, and those that do not."""

    named: dict[str, tuple[Value, ...]]
    """Field -> the equivalent values (one, or several when only those give this result)."""
    free: tuple[str, ...]
    """Swept fields whose every value gives this result."""

    def describe(self) -> str:
        """``nodes=2, inter_bandwidth=400 Gbps``; ``zero_stage=1 or 2``; ``any layout`` if nothing matters."""
        parts = [f"{f}={_join([fmt_value(v) for v in vs])}" for f, vs in self.named.items()]
        return ", ".join(parts) or ("any layout" if self.free else "the scenario as given")

    def free_note(self) -> str:
        """`` (inter_bandwidth, zero_stage: no difference here)`` or an empty string."""
        if not self.free:
            return ""
        return f" ({', '.join(self.free)}: no difference here)"


def layout_of(scenario: TrainingScenario, axes: Sequence[Axis]) -> Layout:
    """Name ``scenario`` by the swept fields that change its result (:func:`equivalent_values`)."""
    named: dict[str, tuple[Value, ...]] = {}
    free: list[str] = []
    equivalent = equivalent_values(scenario, axes)
    for axis in axes:
        if len(axis.values) == 1:  # a constant of the search, not a choice
            continue
        same = equivalent[axis.field]
        if len(axis.values) > 1 and len(same) == len(axis.values):
            free.append(axis.field)
        else:
            named[axis.field] = same
    return Layout(named, tuple(free))


@dataclass(frozen=True)
class ResultGroup:
    """Rows of a table with equal results (:data:`RESULT_FIGURES`)."""

    rows: tuple[int, ...]
    """Row indices, in table order; the first is the group's representative."""
    values: dict[str, tuple[Value, ...]]
    """Per swept field, the distinct values among the rows, in axis order."""
    free: tuple[str, ...]
    """Swept fields (of several values) whose every value appears in the group."""
    fixed: tuple[str, ...] = ()
    """Axes of a single value (constants of the search, not named)."""

    def describe(self) -> str:
        """The group's layout, fields that make no difference left out."""
        parts = [
            f"{f}={_join([fmt_value(v) for v in vs])}"
            for f, vs in self.values.items()
            if f not in self.free and f not in self.fixed
        ]
        return ", ".join(parts) or "any layout"


def group_results(table: SweepTable) -> list[ResultGroup]:
    """Rows of ``table`` grouped by equal results, in order of first appearance."""
    order: dict[Key, list[int]] = {}
    for i in range(len(table)):
        order.setdefault(row_key(table, i), []).append(i)
    groups = []
    indices = [table.axis_indices(position) for position in range(len(table.axes))]
    for rows in order.values():
        values: dict[str, tuple[Value, ...]] = {}
        free = []
        for position, axis in enumerate(table.axes):
            seen = sorted({int(indices[position][i]) for i in rows})
            values[axis.field] = tuple(axis.values[j] for j in seen)
            if len(axis.values) > 1 and len(seen) == len(axis.values):
                free.append(axis.field)
        fixed = tuple(a.field for a in table.axes if len(a.values) == 1)
        groups.append(ResultGroup(tuple(rows), values, tuple(free), fixed))
    return groups


# -- the knee --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knee:
    """Where efficiency falls under the bar, or why no knee was found in the range."""

    kind: str
    """``"found"``: the next larger node count falls below the bar; ``"edge"``: the
    largest node count searched is still above it; ``"other"``: larger layouts
    stay above the bar but break another constraint."""
    layout: TrainingScenario
    """The largest feasible layout above the bar (``plan.knee``)."""
    next_nodes: int | None = None
    """The next larger node count of the range (None at the edge)."""
    next_efficiency: float | None = None
    """The best efficiency any layout reaches at ``next_nodes``."""


def knee_of(plan: PlanView) -> Knee | None:
    """Classify ``plan.knee`` (None without ``min_efficiency`` or without a ``nodes`` axis).

    The bar is crossed inside the range when no layout at the next larger node
    count (any values of the other swept fields) reaches ``min_efficiency``.
    """
    from mlsysim.planning.sweep import sweep_table

    knee = plan.knee
    bar = plan.constraints.min_efficiency
    axes = {a.field: a for a in plan.pareto.axes}
    if knee is None or bar is None or "nodes" not in axes:
        return None
    nodes = cast("tuple[int, ...]", axes["nodes"].values)  # a checked nodes axis holds ints
    larger = sorted(n for n in nodes if n > knee.nodes)
    if not larger:
        return Knee("edge", knee)
    others = {f: a.values for f, a in axes.items() if f != "nodes"}
    if math.prod(len(v) for v in others.values()) > KNEE_CHECK_MAX_LAYOUTS:
        others = {}  # too many combinations to check: the knee's own values only
    try:
        table = sweep_table(knee.variant(nodes=larger[0]), others, columns=("efficiency",))
    except InputError:
        return Knee("other", knee, larger[0], None)
    efficiency = float(np.max(table["efficiency"]))
    kind = "found" if efficiency < bar else "other"
    return Knee(kind, knee, larger[0], efficiency)


# -- the summary -----------------------------------------------------------------------------


def _figures(scenario: TrainingScenario, plan: PlanView | None = None) -> str:
    r = scenario.result
    whole_time = plan is not None and plan.time_figure != "training_time"
    figures = (
        f"{r.n_devices} devices, {fmt_hours(r.training_time.magnitude)}"
        f"{' failure-free' if whole_time else ''}, "
        f"{fmt_money(r.cost)}, efficiency {r.efficiency:.3f}"
    )
    if plan is None or (plan.time_figure, plan.cost_figure) == ("training_time", "cost"):
        return figures
    time, cost = _ranked_of(plan, scenario)
    words = []
    if plan.time_figure != "training_time" and r.wall_clock_time is not None:
        goodput = f", goodput {r.goodput:.3g}" if r.goodput is not None else ""
        words.append(f"wall clock {fmt_hours(time)}{goodput}")
    if plan.cost_figure != "cost" and r.total_cost is not None:
        words.append(f"whole-run cost {fmt_money(cost)}")
    return figures + (f"; {', '.join(words)}" if words else "")


def _ranked_of(plan: PlanView, scenario: TrainingScenario) -> tuple[float, float | None]:
    """The time (hours) and cost a plan ranked ``scenario`` by (:attr:`mlsysim.Plan.time_figure`)."""
    r = scenario.result
    time, cost = r.training_time.magnitude, r.cost
    if plan.time_figure == "wall_clock_time" and r.wall_clock_time is not None:
        time = r.wall_clock_time.to("hour").magnitude
    if plan.cost_figure == "total_cost" and r.total_cost is not None:
        cost = r.total_cost
    return time, cost


def _ranked(plan: PlanView, table: SweepTable) -> tuple[np.ndarray, np.ndarray]:
    """The time and cost columns a plan ranked the rows of ``table`` by."""
    from mlsysim.planning.reduce import ranked_columns

    return ranked_columns(plan.constraints, lambda name: np.asarray(table[name], dtype=float))


def _by(plan: PlanView) -> str:
    """What a plan ranks by, said after its goal: empty for the failure-free figures."""
    from mlsysim.planning.reduce import FIGURE_WORDS

    figure = plan.time_figure if plan.objective == "time" else plan.cost_figure
    if figure in ("training_time", "cost"):
        return ""
    reason = "failures modeled" if plan.time_figure != "training_time" else "energy priced"
    return f" by {FIGURE_WORDS[figure]} ({reason})"


def _runner_up(plan: PlanView, groups: list[ResultGroup], best_layout: Layout) -> str | None:
    """The best against its neighbour on the front, in one sentence."""
    front = plan.pareto
    best = plan.best
    key = result_key(best)
    at = next((g for g, group in enumerate(groups) if row_key(front, group.rows[0]) == key), None)
    if at is None:
        return None
    step = -1 if plan.objective == "cost" else 1  # the front runs from fast to cheap
    if not 0 <= at + step < len(groups):
        return None
    other = groups[at + step]
    i = other.rows[0]
    b_time, b_cost = _ranked_of(plan, best)
    times, costs = _ranked(plan, front)
    o_time, o_cost = float(times[i]), float(costs[i])
    name = best_layout.describe()
    other_name = other.describe()
    if plan.objective == "cost" and b_cost is not None:
        return (
            f"{name} is {_percent(o_cost - b_cost, o_cost)} cheaper than {other_name} "
            f"({fmt_money(o_cost)}), which finishes {_percent(b_time - o_time, b_time)} sooner "
            f"({fmt_hours(o_time)})."
        )
    saved = _percent(o_time - b_time, o_time)
    if b_cost is None or o_cost != o_cost:
        return f"{name} finishes {saved} sooner than {other_name} ({fmt_hours(o_time)})."
    cost_note = (
        "which costs the same"
        if o_cost == b_cost
        else f"which costs {_percent(b_cost - o_cost, b_cost)} less ({fmt_money(o_cost)})"
    )
    return f"{name} finishes {saved} sooner than {other_name} ({fmt_hours(o_time)}), {cost_note}."


def _knee_line(plan: PlanView) -> str | None:
    knee = knee_of(plan)
    if knee is None:
        return None
    bar = f"{plan.constraints.min_efficiency:g}"
    layout = layout_of(knee.layout, plan.pareto.axes).describe()
    figures = (
        f"{knee.layout.result.n_devices} devices, efficiency {knee.layout.result.efficiency:.3f}"
    )
    if knee.kind == "edge":
        top = knee.layout.nodes
        return (
            f"Knee: not in the range. Efficiency stays >= {bar} up to the largest layout "
            f"searched ({layout}: {figures}); widen the range (nodes beyond {top}) to find "
            "where it falls below."
        )
    if knee.kind == "found":
        return (
            f"Knee: {layout} ({figures}); at nodes={knee.next_nodes} efficiency is at most "
            f"{knee.next_efficiency:.3f}, under {bar}."
        )
    reach = (
        "" if knee.next_efficiency is None else f" reaches efficiency {knee.next_efficiency:.3f}"
    )
    return (
        f"Knee: not in the range. The largest feasible layout is {layout} ({figures}); "
        f"nodes={knee.next_nodes}{reach} but breaks another constraint."
    )


def _search_line(plan: PlanView) -> str:
    front = plan.pareto
    size = math.prod(len(a) for a in front.axes)
    axes = " x ".join(_axis_text(a) for a in front.axes) or "the scenario alone"
    name = getattr(front.base, "name", None) or "unnamed scenario"
    goal = "cheapest" if plan.objective == "cost" else "fastest"
    return f"Plan for {name!r}: the {goal}{_by(plan)} of {_plural(size, 'layout')} ({axes})"


LISTED = 8
"""Most whole numbers an axis lists in the plan's header before it shortens the list."""


def _axis_text(axis: Axis) -> str:
    """An axis in the plan's header: evenly spaced whole numbers as ``--axis`` writes them
    (``1..64``, ``2..10:2``), other whole numbers listed (``1, 2, 4, 5, 8, 10``), other
    values joined by ``/``.

    >>> from mlsysim.planning.table import Axis
    >>> [_axis_text(Axis("nodes", "nodes", tuple(v))) for v in (range(1, 65), range(2, 11, 2), [1, 2, 4, 5, 8, 10])]
    ['nodes 1..64', 'nodes 2..10:2', 'nodes 1, 2, 4, 5, 8, 10']
    """
    values, n = axis.values, len(axis.values)
    whole = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if n > 4 and len(whole) == n:
        step = whole[1] - whole[0]
        if step > 0 and all(b - a == step for a, b in zip(whole, whole[1:], strict=False)):
            return f"{axis.field} {whole[0]}..{whole[-1]}" + (f":{step}" if step != 1 else "")
        if n <= LISTED:
            return f"{axis.field} {', '.join(map(str, whole))}"
        return f"{axis.field} {', '.join(map(str, whole[:3]))}, ..., {whole[-1]} ({n} values)"
    if n > 4:
        return f"{axis.field} {n} values"
    return f"{axis.field} {'/'.join(fmt_value(v) for v in values)}"


def _constraint_line(plan: PlanView) -> str:
    excluded = getattr(plan, "excluded", None) or {}
    drop = ", ".join(f"{n:,} break {k.replace('_', ' ')}" for k, n in excluded.items() if n)
    count = getattr(plan, "feasible_count", None)  # a streamed plan keeps the count, not the mask
    line = f"Constraints: {plan.constraints.describe()}"
    if count is not None:
        line += f"; {_plural(count, 'layout')} {'meets' if count == 1 else 'meet'} them"
    return line + (f" ({drop})" if drop else "")


def _front_line(groups: list[ResultGroup], front: SweepTable, plan: PlanView) -> str:
    from mlsysim.planning.reduce import FIGURE_WORDS

    n = len(front)
    if n == 0:
        return "Pareto front: empty"
    axes = f"{FIGURE_WORDS[plan.time_figure]} against {FIGURE_WORDS[plan.cost_figure]}"
    times, costs = _ranked(plan, front)
    first, last = groups[0].rows[0], groups[-1].rows[0]
    if len(groups) == 1:
        one = _time_and_cost(float(times[first]), float(costs[first]))
        return f"Pareto front ({axes}): {_plural(n, 'layout')}, one result: {one}"
    distinct = f"{len(groups)} distinct result{'s' if len(groups) != 1 else ''}"
    span = (
        f"{n:,} layouts, {distinct}" if n != len(groups) else f"{n:,} layout{'s' if n != 1 else ''}"
    )
    ends = (
        f"from {_time_and_cost(float(times[first]), float(costs[first]))}"
        f" to {_time_and_cost(float(times[last]), float(costs[last]))}"
    )
    return f"Pareto front ({axes}): {span}, {ends}"


def plan_summary(plan: PlanView) -> str:
    """The summary of a plan: best, runner-up, knee, front, then the search and its constraints."""
    groups = group_results(plan.pareto)
    best = layout_of(plan.best, plan.pareto.axes)
    lines = []
    if getattr(plan, "partial", False):
        lines.append(
            f"PARTIAL: interrupted after {plan.evaluated:,} of {plan.size:,} layouts; "
            "the answers below are the best found so far"
        )
    lines.append(f"Best: {best.describe()} -> {_figures(plan.best, plan)}{best.free_note()}")
    runner = _runner_up(plan, groups, best)
    if runner:
        lines.append(f"Runner-up: {runner}")
    why = plan.why() if hasattr(plan, "why") else None
    if why:
        lines.append(f"Why: {why}")
    knee = _knee_line(plan)
    if knee:
        lines.append(knee)
    lines.append(_front_line(groups, plan.pareto, plan))
    lines.append(_search_line(plan))
    lines.append(_constraint_line(plan))
    return "\n".join(lines)


__all__ = [
    "RESULT_FIGURES",
    "Knee",
    "Layout",
    "ResultGroup",
    "equivalent_values",
    "fmt_money",
    "fmt_value",
    "group_results",
    "knee_of",
    "layout_of",
    "plan_summary",
    "result_key",
    "row_key",
]
