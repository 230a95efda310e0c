"""What a plan keeps of a design space, reduced block by block and merged across processes.

:class:`Partial` holds everything :func:`mlsysim.plan` answers, in memory
independent of the size of the space: per constraint how many layouts it
excluded, the best layout per objective, the knee, the Pareto front of
(training time, cost), the top k, and the reach of the space (for the
message when nothing is feasible). :func:`reduce_block` builds one from a
block of the grid; :func:`merge` combines two (associative and commutative,
so any split of the space across workers gives the same answer).

Tie rules (the same as the plan over a materialised table):

* best: lowest primary figure (cost, or training time), then the other
  figure, then sweep order (lowest grid index); an unknown cost counts as
  infinite;
* knee: most devices, then highest efficiency, then the best's order;
* Pareto front: every feasible layout that no feasible layout beats on both
  training time and cost (equal points all kept);
* top k: the first k layouts in the best's order.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from mlsysim.engine.results import result_fields
from mlsysim.planning.pareto import pareto_mask
from mlsysim.planning.space import Block, Space, SubBlock, figure, figures

if TYPE_CHECKING:
    from mlsysim.physics._array import Num

Key = tuple[float, ...]

LAYOUT_CALL_ROWS = 1 << 17
"""Layouts per ``evaluate`` call over parallel layouts (those that obey the rules, gathered across blocks):
enough to spread each call's fixed cost (the operators' kernels priced per distinct row)."""


@dataclass(frozen=True)
class Criteria:
    """A plan's objective and limits as plain numbers in the table's units (picklable, small)."""

    objective: str = "cost"
    deadline_hours: float | None = None
    budget: float | None = None
    min_efficiency: float | None = None
    max_global_batch: int | None = None
    global_batch: int | None = None
    """A layout must make exactly this many samples per update (b m d = B: a layout search's batch)."""
    top: int = 0
    # the whole run (docs/whole_run.md), in the table's units: tonnes CO2e, MWh, a fraction
    max_emissions: float | None = None
    max_energy: float | None = None
    min_goodput: float | None = None
    confidence_z: float | None = None
    """With a confidence: the score quantile z of the one-sided efficiency bound
    (:func:`mlsysim.engine.reports.bands.confidence_band`); deadline and budget then hold
    for the training time and cost at that bound."""
    confidence_rho: float | None = None
    """With a confidence: a parallel layout's one-sided bound on T_measured / T_predicted
    (:func:`mlsysim.engine.reports.bands.layout_confidence`), for the rows that are layouts."""
    layout_rules: bool = False
    """A space of parallel layouts: those that break a layout rule are excluded (``layout_valid``)."""
    time_figure: str = "training_time"
    """The time the objective, the deadline and the Pareto front use: ``training_time``, or
    ``wall_clock_time`` when the plan models failures (:func:`ranked_columns`)."""
    cost_figure: str = "cost"
    """The cost they use: ``cost`` (node-hours of the training time), or ``total_cost`` (the
    whole run's, over the wall clock and with the energy) when failures or energy are priced."""

    def constraint_names(self) -> tuple[str, ...]:
        """The constraints in force, memory first, in the order a plan reports them."""
        names = ["memory", "layout_rules"] if self.layout_rules else ["memory"]
        for name, limit in (
            ("deadline", self.deadline_hours),
            ("budget", self.budget),
            ("min_efficiency", self.min_efficiency),
            ("max_global_batch", self.max_global_batch),
            ("global_batch", self.global_batch),
            ("max_emissions", self.max_emissions),
            ("max_energy", self.max_energy),
            ("min_goodput", self.min_goodput),
        ):
            if limit is not None:
                names.append(name)
        return tuple(names)


@dataclass
class Reach:
    """What the space can reach among the layouts that fit in memory (for an infeasible plan)."""

    fits: int = 0
    fastest: float = math.inf
    cheapest: float = math.inf  # inf while no known cost
    best_efficiency: float = -math.inf
    smallest_global_batch: float = math.inf
    least_memory: float = math.inf

    def merged(self, other: Reach) -> Reach:
        return Reach(
            self.fits + other.fits,
            min(self.fastest, other.fastest),
            min(self.cheapest, other.cheapest),
            max(self.best_efficiency, other.best_efficiency),
            min(self.smallest_global_batch, other.smallest_global_batch),
            min(self.least_memory, other.least_memory),
        )


def _empty_front() -> dict[str, np.ndarray]:
    return {
        "time": np.empty(0),
        "cost": np.empty(0),
        "index": np.empty(0, dtype=np.int64),
    }


@dataclass
class Partial:
    """A plan's reduction of part of a space; :func:`merge` two of them for their union."""

    criteria: Criteria
    evaluated: int = 0
    feasible: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    best: Key | None = None  # (primary, secondary, grid index)
    knee: Key | None = None  # (-devices, -efficiency, primary, grid index)
    front: dict[str, np.ndarray] = field(default_factory=_empty_front)
    top: list[Key] = field(default_factory=list)  # sorted, at most criteria.top
    reach: Reach = field(default_factory=Reach)

    def __post_init__(self) -> None:
        for name in self.criteria.constraint_names():
            self.excluded.setdefault(name, 0)

    @property
    def best_index(self) -> int | None:
        return None if self.best is None else int(self.best[-1])

    @property
    def knee_index(self) -> int | None:
        return None if self.knee is None else int(self.knee[-1])

    def front_indices(self) -> np.ndarray:
        """Grid indices of the front, by training time, then cost, then sweep order."""
        f = self.front
        cost = np.where(np.isnan(f["cost"]), np.inf, f["cost"])
        return f["index"][np.lexsort((f["index"], cost, f["time"]))]

    def top_indices(self) -> list[int]:
        return [int(k[-1]) for k in self.top]


def merge(a: Partial, b: Partial) -> Partial:
    """The reduction of the union of two disjoint parts of a space."""
    out = Partial(a.criteria)
    out.evaluated = a.evaluated + b.evaluated
    out.feasible = a.feasible + b.feasible
    out.excluded = {k: a.excluded.get(k, 0) + b.excluded.get(k, 0) for k in a.excluded}
    out.best = _least(a.best, b.best)
    out.knee = _least(a.knee, b.knee)
    out.front = merge_fronts(a.front, b.front)
    out.top = sorted(a.top + b.top)[: a.criteria.top]
    out.reach = a.reach.merged(b.reach)
    return out


def merge_fronts(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The Pareto front of the union of two sets, from their two fronts."""
    both = {k: np.concatenate([a[k], b[k]]) for k in a}
    keep = pareto_mask(both["time"], both["cost"])
    return {k: v[keep] for k, v in both.items()}


def _least(a: Key | None, b: Key | None) -> Key | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


# -- one block --------------------------------------------------------------------------


def reduce_blocks(space: Space, criteria: Criteria, blocks: list[Block]) -> Partial:
    """The reduction of some blocks of ``space`` (what one worker task computes)."""
    state = Partial(criteria)
    if criteria.layout_rules:
        most = min(LAYOUT_CALL_ROWS, max((len(b) for b in blocks), default=1))  # no more than a block
        subs: Iterable[SubBlock] = space.layout_sub_blocks(blocks, most)
    else:
        subs = (sub for block in blocks for sub in space.sub_blocks(block))
    for sub in subs:
        reduce_sub_block(state, sub, space.shape, criteria)
    return state


def plan_columns(sub: SubBlock, criteria: Criteria, reach: bool) -> dict[str, np.ndarray]:
    """The table columns a plan needs for one sub-block, in the table's units.

    Conversions are those of the sweep table (``training_time`` in hours,
    ``fits`` True where the device memory is unknown), so a streamed plan
    compares exactly the numbers a materialised one does.
    """
    v = figures(sub)
    fields = result_fields()

    def in_table_units(name: str) -> np.ndarray:
        if name == "training_time":
            return np.multiply(figure(v, name), 1.0 / 3600.0)
        if name == "cost":
            return np.asarray(figure(v, name), dtype=float)
        return np.multiply(figure(v, name), fields[name].factor)  # as the sweep table

    time, cost = ranked_columns(criteria, in_table_units)
    out = {
        "training_time": time,  # the time and cost the plan ranks by (criteria.time_figure, ...)
        "cost": cost,
        "fits": np.asarray(figure(v, "fits")),  # True where the device memory is unknown
    }
    if criteria.layout_rules and sub.rows is None:  # rows of a sub-block obey the rules already
        out["layout_valid"] = np.asarray(figure(v, "layout_valid"))
    if criteria.min_efficiency is not None or reach:
        out["efficiency"] = np.asarray(figure(v, "efficiency"), dtype=float)
    if criteria.min_efficiency is not None:
        out["n_devices"] = np.asarray(figure(v, "n_devices")).astype(np.int64)
    if criteria.max_global_batch is not None or criteria.global_batch is not None or reach:
        out["global_batch"] = np.asarray(figure(v, "global_batch")).astype(np.int64)
    out["slowdown"] = np.asarray(confidence_slowdown(criteria, lambda name: figure(v, name), sub.inputs.nodes))
    if reach:
        out["memory_per_device"] = np.asarray(figure(v, "memory_per_device"), dtype=float)
    for name, limit in WHOLE_RUN_LIMITS.items():
        if getattr(criteria, name) is not None:
            column = result_fields()[limit.column]
            out[limit.column] = np.multiply(figure(v, limit.column), column.factor)
    return out


def ranked_columns(
    criteria: object, column: Callable[[str], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The time (hours) and cost (USD) a plan ranks and limits layouts by.

    ``criteria`` names them (``time_figure``, ``cost_figure``); ``column(name)``
    gives a column in the table's units. The whole run's figures stand where a
    layout models them and the failure-free ones elsewhere: a layout without
    failures takes its training time to train (``wall_clock_time`` is NaN there),
    and a layout with nothing of the whole run priced costs its node-hours.
    """
    time, cost = column("training_time"), column("cost")
    time_figure = getattr(criteria, "time_figure", "training_time")
    cost_figure = getattr(criteria, "cost_figure", "cost")
    if time_figure != "training_time":
        wall = column(time_figure)
        time = np.where(np.isnan(wall), time, wall)
    if cost_figure != "cost":
        whole = column(cost_figure)
        cost = np.where(np.isnan(whole), cost, whole)
    return time, cost


FIGURE_WORDS = {
    "training_time": "training time",
    "wall_clock_time": "wall-clock time",
    "cost": "cost",
    "total_cost": "whole-run cost",
}
"""How a plan names the figure it ranks by (its summary, its constraints, an infeasible plan)."""


class Limit(NamedTuple):
    """A plan constraint on a whole-run result column: ``column <= limit`` (or ``>=``)."""

    column: str
    at_most: bool


WHOLE_RUN_LIMITS: dict[str, Limit] = {
    "max_emissions": Limit("emissions", True),
    "max_energy": Limit("energy", True),
    "min_goodput": Limit("goodput", False),
}
"""The whole run's plan constraints; a layout without the figure (NaN: not modeled) breaks them."""


def confidence_slowdown(criteria: Criteria, figure: Callable[[str], Num], nodes: Num) -> Num:
    """With a confidence, the factor each layout's training time and cost may grow by at its bound
    (:func:`mlsysim.engine.reports.bands.slowdown_at_confidence`, from its efficiency, nodes, devices and
    whether it is a parallel layout: a tensor-parallel degree given); 1 without one."""
    if criteria.confidence_z is None and criteria.confidence_rho is None:
        return 1.0
    from mlsysim.engine.reports.bands import slowdown_at_confidence

    return slowdown_at_confidence(
        0.0 if criteria.confidence_z is None else criteria.confidence_z,
        figure("efficiency"),
        nodes,
        figure("n_devices"),
        np.isfinite(np.asarray(figure("tensor_ranks"), dtype=float)),
        1.0 if criteria.confidence_rho is None else criteria.confidence_rho,
    )


def limit_masks(criteria: Criteria, column: Callable[[str], np.ndarray], slowdown: Num) -> dict[str, np.ndarray]:
    """Which rows meet each limit in force (memory and the layout rules aside), from columns in the table's
    units (``column(name)``; ``training_time`` and ``cost``: the figures the plan ranks by, see
    :func:`ranked_columns`); deadline and budget at the confidence's ``slowdown``. A whole-run figure that
    is not modeled (NaN) meets no limit."""
    bounds: dict[str, tuple[str, float | None, Callable[[np.ndarray, float], np.ndarray]]] = {
        "deadline": ("training_time", criteria.deadline_hours, lambda x, b: x * slowdown <= b),
        "budget": ("cost", criteria.budget, lambda x, b: x * slowdown <= b),
        "min_efficiency": ("efficiency", criteria.min_efficiency, np.greater_equal),
        "max_global_batch": ("global_batch", criteria.max_global_batch, np.less_equal),
        "global_batch": ("global_batch", criteria.global_batch, np.equal),
        **{name: (limit.column, getattr(criteria, name), np.less_equal if limit.at_most else np.greater_equal)
           for name, limit in WHOLE_RUN_LIMITS.items()},
    }
    return {name: meets(column(field), bound) for name, (field, bound, meets) in bounds.items() if bound is not None}


def _count(mask: np.ndarray, size: int) -> int:
    """True entries of ``mask`` once broadcast to ``size`` entries (without broadcasting it)."""
    return int(np.count_nonzero(mask)) * (size // max(int(np.size(mask)), 1))


def reduce_sub_block(
    state: Partial, sub: SubBlock, grid_shape: tuple[int, ...], criteria: Criteria
) -> None:
    """Fold one sub-block into ``state``.

    The figures that rank layouts (training time, cost; devices and
    efficiency for the knee) often do not depend on every axis (the
    per-device batch changes only the global batch): those axes are folded
    first, so the ranking runs on *cells* (one per combination of the other
    axes) that hold at least one feasible layout, and only the few cells
    chosen are expanded back to their feasible layouts. Equal points share a
    cell, so the tie rules are unchanged.
    """
    shape, size = sub.shape, sub.size
    state.evaluated += sub.layouts
    if sub.rows is not None:  # the layouts that break a rule were left out: they count against it alone
        state.excluded["layout_rules"] += sub.layouts - size
        if size == 0:
            return
    need_reach = state.feasible == 0
    col = plan_columns(sub, criteria, need_reach)
    masks = {"memory": col["fits"]}
    if "layout_valid" in col:
        masks["layout_rules"] = col["layout_valid"]
    masks.update(limit_masks(criteria, col.__getitem__, col["slowdown"]))
    for name, mask in masks.items():
        state.excluded[name] += size - _count(mask, size)
    if need_reach:
        _fold_reach(state.reach, col, shape)
    combined = functools.reduce(np.logical_and, sorted(masks.values(), key=np.size))
    feasible = np.broadcast_to(combined, shape)
    count = _count(combined, size)
    if count == 0:
        return
    state.feasible += count
    ranking = ["training_time", "cost"]
    if criteria.min_efficiency is not None:
        ranking += ["n_devices", "efficiency"]
    cells = _Cells(feasible, [col[c] for c in ranking], sub, grid_shape)

    time, cost = cells.pick(col["training_time"]), cells.pick(col["cost"])
    known = np.where(np.isnan(cost), np.inf, cost)
    primary, secondary = (known, time) if criteria.objective == "cost" else (time, known)

    i = _first_min(primary, secondary)
    ties = np.flatnonzero((primary == primary[i]) & (secondary == secondary[i]))
    best = (float(primary[i]), float(secondary[i]), float(cells.expand(ties)[0].min()))
    state.best = _least(state.best, best)
    if criteria.min_efficiency is not None:
        devices = cells.pick(col["n_devices"]).astype(float)
        efficiency = cells.pick(col["efficiency"])
        i = _first_min(-devices, -efficiency, primary)
        ties = np.flatnonzero(
            (devices == devices[i]) & (efficiency == efficiency[i]) & (primary == primary[i])
        )
        knee = (
            -float(devices[i]),
            -float(efficiency[i]),
            float(primary[i]),
            float(cells.expand(ties)[0].min()),
        )
        state.knee = _least(state.knee, knee)
    _fold_front(state, cells, time, cost, known)
    if criteria.top:
        _fold_top(state, cells, primary, secondary, criteria.top)


class _Cells:
    """The feasible cells of a sub-block: its layouts with the axes the ranking ignores folded."""

    def __init__(
        self,
        feasible: np.ndarray,
        ranking: list[np.ndarray],
        sub: SubBlock,
        grid_shape: tuple[int, ...],
    ) -> None:
        shape = feasible.shape
        self.folded = tuple(
            d
            for d in range(len(shape))
            if shape[d] > 1 and all(np.ndim(r) == 0 or np.shape(r)[d] == 1 for r in ranking)
        )
        self.feasible, self.sub, self.grid_shape = feasible, sub, grid_shape
        self.mask = feasible.any(axis=self.folded, keepdims=True) if self.folded else feasible
        self.positions = np.flatnonzero(self.mask)

    def pick(self, column: np.ndarray) -> np.ndarray:
        """A column at each feasible cell, in grid order."""
        return np.broadcast_to(column, self.mask.shape)[self.mask]

    def expand(self, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid indices of the feasible layouts of some cells, and the cell of each (sorted by index)."""
        shape = self.feasible.shape
        if not self.folded:
            index = self.sub.grid_index(self.positions[chosen], self.grid_shape)
            return index, np.arange(len(chosen))
        local = np.unravel_index(self.positions[chosen], self.mask.shape)
        spans = np.meshgrid(*(np.arange(shape[d]) for d in self.folded), indexing="ij")
        replicas = [s.reshape(-1) for s in spans]
        coords = []
        for d in range(len(shape)):
            if d in self.folded:
                coords.append(replicas[self.folded.index(d)][None, :])
            else:
                coords.append(local[d][:, None])
        coords_b = np.broadcast_arrays(*coords)
        ok = self.feasible[tuple(coords_b)]
        owner = np.broadcast_to(np.arange(len(chosen))[:, None], ok.shape)[ok]
        flat = np.ravel_multi_index(tuple(c[ok] for c in coords_b), shape)
        index = self.sub.grid_index(flat, self.grid_shape)
        order = np.argsort(index, kind="stable")
        return index[order], owner[order]


def _first_min(*keys: np.ndarray) -> int:
    """Position of the least entry by ``keys`` in turn, the first one on ties (as a stable lexsort)."""
    first = keys[0]
    candidates = np.flatnonzero(first == first.min())
    for k in keys[1:]:
        if candidates.size == 1:
            break
        values = k[candidates]
        candidates = candidates[values == values.min()]
    return int(candidates[0])


def _fold_front(
    state: Partial, cells: _Cells, time: np.ndarray, cost: np.ndarray, known: np.ndarray
) -> None:
    """Merge the sub-block's candidate cells into the front, after a cheap box filter.

    A point slower than the cheapest layout and no cheaper, or dearer than
    the fastest layout and no faster, is dominated; only the rest are sorted.
    """
    f = state.front
    times = np.concatenate([f["time"], time])
    costs = np.concatenate([np.where(np.isnan(f["cost"]), np.inf, f["cost"]), known])
    fastest = times.min()
    fast_cost = costs[times == fastest].min()  # the fastest layout's cost
    cheapest = costs.min()
    if np.isinf(cheapest):  # no cost known: the front is the fastest layouts
        keep = time == fastest
    else:
        cheap_time = times[costs == cheapest].min()  # the cheapest layout's time
        keep = (known <= fast_cost) & (time <= cheap_time)
    chosen = np.flatnonzero(keep)
    if chosen.size == 0:
        return
    n_old = f["time"].size
    on_front = pareto_mask(
        np.concatenate([f["time"], time[chosen]]), np.concatenate([f["cost"], cost[chosen]])
    )
    old = {k: v[on_front[:n_old]] for k, v in f.items()}
    index, owner = cells.expand(chosen[on_front[n_old:]])
    cell = chosen[on_front[n_old:]][owner]
    state.front = {
        "time": np.concatenate([old["time"], time[cell]]),
        "cost": np.concatenate([old["cost"], cost[cell]]),
        "index": np.concatenate([old["index"], index]),
    }


def _fold_top(
    state: Partial, cells: _Cells, primary: np.ndarray, secondary: np.ndarray, k: int
) -> None:
    if primary.size > k:
        cut = np.partition(primary, k - 1)[k - 1]
        chosen = np.flatnonzero(primary <= cut)
    else:
        chosen = np.arange(primary.size)
    index, owner = cells.expand(chosen)
    cell = chosen[owner]
    order = np.lexsort((index, secondary[cell], primary[cell]))[:k]
    keys: list[Key] = [
        (float(primary[cell[i]]), float(secondary[cell[i]]), float(index[i])) for i in order
    ]
    state.top = sorted(state.top + keys)[:k]


def _fold_reach(reach: Reach, col: dict[str, np.ndarray], shape: tuple[int, ...]) -> None:
    fits = np.broadcast_to(col["fits"], shape)
    reach.least_memory = min(reach.least_memory, float(np.min(col["memory_per_device"])))
    if not fits.any():
        return
    reach.fits += int(np.count_nonzero(fits))

    def among(column: str) -> np.ndarray:
        return np.broadcast_to(col[column], shape)[fits]

    reach.fastest = min(reach.fastest, float(among("training_time").min()))
    cost = among("cost")
    known = cost[~np.isnan(cost)]
    if known.size:
        reach.cheapest = min(reach.cheapest, float(known.min()))
    reach.best_efficiency = max(reach.best_efficiency, float(among("efficiency").max()))
    reach.smallest_global_batch = min(
        reach.smallest_global_batch, float(among("global_batch").min())
    )


def describe_reach(reach: Reach, criteria: Criteria | None = None) -> list[str]:
    """What the space reaches, as the infeasible-plan message says it (by the plan's figures)."""
    time_word = FIGURE_WORDS[criteria.time_figure if criteria else "training_time"]
    cost_word = FIGURE_WORDS[criteria.cost_figure if criteria else "cost"]
    if reach.fits:
        out = [
            f"fastest {reach.fastest:.4g} h"
            if time_word == "training time"
            else f"shortest {time_word} {reach.fastest:.4g} h"
        ]
        if not math.isinf(reach.cheapest):
            out.append(
                f"cheapest {reach.cheapest:,.2f} USD"
                if cost_word == "cost"
                else f"cheapest {cost_word} {reach.cheapest:,.2f} USD"
            )
        out.append(f"best efficiency {reach.best_efficiency:.3g}")
        out.append(f"smallest global batch {int(reach.smallest_global_batch)}")
        return out
    if math.isinf(reach.least_memory):  # nothing was priced: every layout breaks a layout rule
        return ["no layout that obeys the layout rules"]
    return [f"least memory needed {reach.least_memory / 1e9:.4g} GB per device"]
