"""``mlsysim.plan``: the best layout of a sweep under deadline, budget, efficiency and memory.

The plan walks the sweep's grid block by block, keeps the layouts that fit in
device memory and meet every constraint given, and answers three questions:

* ``best``: the cheapest (``objective="cost"``) or fastest (``"time"``)
  feasible layout, ties broken by the other figure, then by sweep order (by
  the wall clock and the whole run's cost where failures are modeled);
* ``pareto``: the feasible layouts no other feasible layout beats on both
  training time and cost, sorted by training time;
* ``knee`` (with ``min_efficiency``): the largest feasible layout (most
  devices; ties to the higher efficiency), i.e. how far the job scales before
  communication pulls efficiency under the bar.

Nothing proportional to the size of the space is kept (see
:mod:`mlsysim.planning.reduce`): each block computes the few columns the
constraints need and is folded into a running reduction, so a plan over a
billion layouts runs in bounded memory, on every core (``workers``) or on a
Dask cluster (``scheduler``). ``plan.table`` (every layout) is rebuilt on
demand for spaces that fit in memory.

When nothing is feasible, :class:`~mlsysim.core.exceptions.InfeasiblePlanError`
says how many layouts each constraint excluded and what the sweep can reach.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np

from mlsysim.core.exceptions import InfeasiblePlanError, InputError
from mlsysim.core.suggest import option, setting
from mlsysim.core.units import Quantity, to_canonical
from mlsysim.core.validation import check_fraction, check_positive_int, check_positive_quantity
from mlsysim.planning.reduce import (
    FIGURE_WORDS,
    Criteria,
    Partial,
    confidence_slowdown,
    describe_reach,
    limit_masks,
    ranked_columns,
)
from mlsysim.planning.run import Outcome, run
from mlsysim.planning.space import Space
from mlsysim.planning.sweep import (
    MAX_STREAM_LAYOUTS,
    MAX_SWEEP_LAYOUTS,
    Progress,
    check_size,
    declared_size,
    prepare_space,
    sweep_table,
    take_rows,
)
from mlsysim.planning.table import Axis, SweepTable

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.run import Scheduler

OBJECTIVES = ("cost", "time")

T = TypeVar("T")

PLAN_CHUNK_ROWS = 1 << 18
"""Layouts per block of a plan (one block's columns stay well under 100 MB)."""

LAYOUT_CHUNK_ROWS = 1 << 22
"""Layouts per block of a plan over parallel layouts: a block holds the indices of the layouts that obey the
rules (at most 8 bytes each), which are evaluated :data:`~mlsysim.planning.reduce.LAYOUT_CALL_ROWS` at a time;
larger blocks derive each group's inputs fewer times."""

PARALLEL_MIN_LAYOUTS = 4_000_000
"""With ``workers=None``, smaller plans run in this process (starting processes costs ~1 s)."""

INFEASIBLE_TABLE_LAYOUTS = 1_000_000
"""An infeasible plan this small carries its whole table in the error, for a closer look."""


@dataclass(frozen=True)
class Constraints:
    """Limits a layout must meet; None means no limit."""

    deadline: Quantity | None = None  # a time: training_time must be at most this
    budget: Quantity | None = None  # money: cost must be at most this
    min_efficiency: float | None = None
    max_global_batch: int | None = None
    global_batch: int | None = None  # samples per update: a layout must make exactly this many (b m d)
    max_emissions: Quantity | None = None  # a mass of CO2e: emissions must be at most this
    max_energy: Quantity | None = None  # an energy: energy must be at most this
    min_goodput: float | None = None
    confidence: float | None = None  # deadline and budget met with this probability
    confidence_z: float | None = None  # its score quantile (set by :func:`plan`)
    confidence_rho: float | None = None  # a parallel layout's bound on T_measured / T_predicted
    time_figure: str = "training_time"  # what the deadline bounds: or wall_clock_time (set by plan)
    cost_figure: str = "cost"  # what the budget bounds: or total_cost (set by :func:`plan`)

    @classmethod
    def checked(cls, **limits: object) -> Constraints:
        """Constraints with each limit validated (naming the bad one)."""

        def checked(name: str, check: Callable[[object], T]) -> T | None:
            value = limits.get(name)
            if value is None:
                return None
            try:
                return check(value)
            except InputError as exc:
                raise InputError(f"plan {name}: {exc}", field=name) from None

        return cls(
            deadline=checked("deadline", check_positive_quantity("time")),
            budget=checked("budget", check_positive_quantity("money")),
            min_efficiency=checked("min_efficiency", check_fraction),
            max_global_batch=checked("max_global_batch", check_positive_int),
            global_batch=checked("global_batch", check_positive_int),
            max_emissions=checked("max_emissions", check_positive_quantity("mass")),
            max_energy=checked("max_energy", check_positive_quantity("energy")),
            min_goodput=checked("min_goodput", check_fraction),
        )

    def masks(self, table: SweepTable) -> dict[str, np.ndarray]:
        """For each active constraint (and memory), which rows meet it: the streamed reduction's masks
        (:func:`~mlsysim.planning.reduce.limit_masks`) over the materialised table."""
        criteria = self.criteria("time")
        masks = {"memory": table["fits"]}
        if is_layout_space(table.base, table.axes):  # parallel layouts: those that break a layout rule
            masks["layout_rules"] = table["layout_valid"]
        time, cost = ranked_columns(self, lambda name: np.asarray(table[name], dtype=float))
        ranked = {"training_time": time, "cost": cost}

        def column(name: str) -> np.ndarray:
            return ranked[name] if name in ranked else table[name]

        slowdown = confidence_slowdown(criteria, column, table.nodes())
        masks.update(limit_masks(criteria, column, slowdown))
        return masks

    def criteria(self, objective: str, top: int = 0) -> Criteria:
        """The limits as plain numbers in the table's units, for the streamed reduction."""
        return Criteria(
            objective=objective,
            deadline_hours=None
            if self.deadline is None
            else to_canonical(self.deadline, "time") / 3600.0,
            budget=None if self.budget is None else to_canonical(self.budget, "money"),
            min_efficiency=self.min_efficiency,
            max_global_batch=self.max_global_batch,
            global_batch=self.global_batch,
            top=top,
            max_emissions=None
            if self.max_emissions is None
            else to_canonical(self.max_emissions, "mass") / 1000.0,  # tonnes, as the table
            max_energy=None
            if self.max_energy is None
            else to_canonical(self.max_energy, "energy") / 3.6e9,  # MWh, as the table
            min_goodput=self.min_goodput,
            confidence_z=self.confidence_z,
            confidence_rho=self.confidence_rho,
            time_figure=self.time_figure,
            cost_figure=self.cost_figure,
        )

    def describe(self) -> str:
        sure = "" if self.confidence is None else f" with {self.confidence:.0%} confidence"
        limits = (
            (self.deadline, f"{FIGURE_WORDS[self.time_figure]} <= {{}}{sure}"),
            (self.budget, f"{FIGURE_WORDS[self.cost_figure]} <= {{}}{sure}"),
            (self.min_efficiency, "efficiency >= {}"),
            (self.max_global_batch, "global batch <= {}"),
            (self.global_batch, "global batch = {}"),
            (self.max_emissions, "emissions <= {} CO2e"),
            (self.max_energy, "energy <= {}"),
            (self.min_goodput, "goodput >= {}"),
        )
        parts = [text.format(_value(limit)) for limit, text in limits if limit is not None]
        return ", ".join([*parts, "fits in device memory (when known)"])


@dataclass(frozen=True)
class Plan:
    """The outcome of :func:`plan`; ``str(plan)`` is its :meth:`summary`."""

    objective: str
    constraints: Constraints
    space: Space
    """The scenario and axes searched."""
    excluded: dict[str, int]
    """Per constraint, how many layouts break it (a layout can break several)."""
    best_row: int
    """Row of the best layout in the sweep (its index in ``itertools.product`` order)."""
    pareto: SweepTable
    """Feasible layouts non-dominated in (training time, cost), by training time."""
    knee_row: int | None = None
    top: SweepTable | None = None
    """With ``top=k``: the k best feasible layouts, best first (the best's order)."""
    feasible_count: int = 0
    """How many layouts meet every constraint."""
    evaluated: int = 0
    """How many layouts were evaluated (all of them unless ``partial``)."""
    partial: bool = False
    """True when the search was interrupted: the answers cover the layouts evaluated so far."""
    peak_rss: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    """Peak resident memory (bytes) of this process and of each worker that took part."""
    runner_row: int | None = None
    """Over parallel layouts: the second best layout by the objective (for :meth:`why`), else None."""
    _picked: SweepTable | None = field(default=None, repr=False, compare=False)
    _scenarios: dict[int, TrainingScenario] = field(
        default_factory=dict, repr=False, compare=False
    )
    _cache: dict[str, SweepTable | np.ndarray] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def size(self) -> int:
        """Number of layouts in the sweep."""
        return self.space.size

    @property
    def time_figure(self) -> str:
        """The time the objective, the deadline and the front use: ``"training_time"``, or
        ``"wall_clock_time"`` when failures are modeled (the failure-free time where a layout has none)."""
        return self.constraints.time_figure

    @property
    def cost_figure(self) -> str:
        """The cost they use: ``"cost"``, or ``"total_cost"`` (the whole run's: node-hours over
        the wall clock plus the energy) when failures or energy are priced."""
        return self.constraints.cost_figure

    @property
    def table(self) -> SweepTable:
        """Every layout of the sweep, evaluated again on first use (spaces that fit in memory)."""
        if "table" not in self._cache:
            self._cache["table"] = sweep_table(
                self.space.base, self.space.axis_values(), max_layouts=MAX_SWEEP_LAYOUTS
            )
        return cast("SweepTable", self._cache["table"])  # stored under this key just above

    @property
    def feasible(self) -> np.ndarray:
        """Boolean mask over ``table``: the layouts that meet every constraint."""
        if "feasible" not in self._cache:
            masks = self.constraints.masks(self.table)
            self._cache["feasible"] = np.logical_and.reduce(list(masks.values()))
        return cast("np.ndarray", self._cache["feasible"])  # stored under this key just above

    @property
    def best(self) -> TrainingScenario:
        """The winning layout as a scenario (``best.result`` equals its row of the table)."""
        return self._scenario(self.best_row)

    @property
    def knee(self) -> TrainingScenario | None:
        """The largest feasible layout, when ``min_efficiency`` is given; else None."""
        return None if self.knee_row is None else self._scenario(self.knee_row)

    @property
    def runner_up(self) -> TrainingScenario | None:
        """Over parallel layouts: the second best layout by the objective; else None."""
        return None if self.runner_row is None else self._scenario(self.runner_row)

    def why(self) -> str | None:
        """Over parallel layouts: one sentence saying why the best beats the runner-up
        (:func:`mlsysim.planning.layouts.why_better`, from the terms of their updates); else None."""
        runner = self.runner_up
        if runner is None:
            return None
        best, other = self.best.result.figures, runner.result.figures
        if best.layout is None or other.layout is None:
            return None
        if float(best.update_time) == float(other.update_time):
            return None
        from mlsysim.planning.layouts import axes_of, why_better

        note = ""
        scale = float(best.global_batch) / float(other.global_batch)
        if scale != 1.0:  # compare the time of the same samples: the runner-up's terms for the best's batch
            note = (
                f" (the runner-up's update of {float(other.global_batch):,.0f} samples scaled to the best's "
                f"{float(best.global_batch):,.0f})"
            )
        if float(other.layout.update_time) * scale <= float(best.layout.update_time):
            return None  # not faster for the same samples: it wins on another count (the optimizer steps)
        sentence = why_better(
            axes_of(best.layout), best.layout, axes_of(other.layout), other.layout,
            float(best.layout.records.cluster.devices_per_node), other_scale=scale,
        )
        return sentence[:-1] + note + "." if note else sentence

    def _scenario(self, row: int) -> TrainingScenario:
        if row not in self._scenarios:
            self._scenarios[row] = self._rows().scenario(self._position(row))
        return self._scenarios[row]

    def _rows(self) -> SweepTable:
        assert self._picked is not None
        return self._picked

    def _position(self, row: int) -> int:
        rows = self._rows()._rows
        assert rows is not None
        return int(np.searchsorted(rows, row))

    def notes(self) -> list[str]:
        """The warnings ``mlsysim run`` gives a layout, for the best layout and the Pareto
        front, once per kind, and the constraint to add (:func:`mlsysim.planning.notes.plan_notes`)."""
        from mlsysim.planning.notes import plan_notes

        return plan_notes(self)

    def summary(self) -> str:
        """Best, runner-up, knee, front, search and constraints (:mod:`mlsysim.planning.summary`)."""
        from mlsysim.planning.summary import plan_summary

        return plan_summary(self)

    def __str__(self) -> str:
        return self.summary()


class PlanInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`plan`: the workers are stopped; ``plan`` holds the best found so far.

    ``plan`` is a :class:`Plan` with ``partial=True``, or None when no
    feasible layout had been found yet.
    """

    def __init__(self, plan: Plan | None, evaluated: int, size: int) -> None:
        super().__init__(f"plan interrupted after {evaluated:,} of {size:,} layouts")
        self.plan = plan
        self.evaluated = evaluated
        self.size = size


def plan(
    scenario: TrainingScenario,
    *,
    objective: str = "cost",
    deadline: Quantity | None = None,
    budget: Quantity | None = None,
    min_efficiency: float | None = None,
    max_global_batch: int | None = None,
    global_batch: int | None = None,
    max_emissions: Quantity | None = None,
    max_energy: Quantity | None = None,
    min_goodput: float | None = None,
    confidence: float | None = None,
    top: int = 0,
    workers: int | None = None,
    scheduler: Scheduler | None = None,
    max_layouts: int = MAX_STREAM_LAYOUTS,
    chunk_rows: int | None = None,
    progress: Progress | None = None,
    **axes: Iterable[object],
) -> Plan:
    """Search the sweep of ``axes`` (see :func:`mlsysim.sweep`) for the best layout.

    ``objective`` is ``"cost"`` (needs ``node_hour_rate``) or ``"time"``;
    ``deadline`` (a time) bounds the training time, ``budget`` (money) the
    cost, ``min_efficiency`` the scaling efficiency from below and
    ``max_global_batch`` the global batch, ``global_batch`` fixes it (a layout
    must make exactly that many samples per update, b m d = B: a layout
    search's batch); ``max_emissions`` (a mass of CO2e),
    ``max_energy`` and ``min_goodput`` bound the whole run's figures
    (docs/whole_run.md: a layout without them, with no device power or no
    failure inputs, breaks them). With ``confidence`` (in (0.5, 1), e.g.
    0.8) the deadline and budget must hold at the one-sided bound of the prediction
    interval (:mod:`mlsysim.engine.reports.bands`): a layout is kept only when its
    training time and cost would still meet them were its efficiency as low as
    it is with probability 1 - confidence (non-seed assumptions, the same for
    every layout). Where the space models failures, the objective, the
    deadline and the Pareto front use the wall-clock time and the whole run's
    cost (``total_cost``), not the failure-free figures; with energy priced, the
    cost is the whole run's (``plan.time_figure``, ``plan.cost_figure`` say which;
    docs/planning.md). Layouts that do not fit in a known
    ``device_memory`` are always excluded. ``top=k`` also keeps the k best
    layouts (``plan.top``).

    Over parallel layouts (a layout input given or swept: docs/planning.md) the
    layout rules are applied first, to the axes they read (devices, t, cp, p,
    v, ep, etp, m), before anything is priced; only the layouts they keep are
    evaluated, a layout that breaks one counts against ``layout_rules`` alone.

    The space is streamed in blocks of ``chunk_rows`` layouts (default
    :data:`PLAN_CHUNK_ROWS`, :data:`LAYOUT_CHUNK_ROWS` over parallel layouts)
    and never held in memory. ``workers=N`` spreads the blocks over N processes (default:
    every core for spaces of at least :data:`PARALLEL_MIN_LAYOUTS`, else this
    process); ``scheduler="tcp://host:8786"`` (or a
    ``dask.distributed.Client``) runs them on a Dask cluster (``pip install
    "mlsysim[dask]"``). A space of more than ``max_layouts`` layouts is
    refused up front with an estimate of its run time. Ctrl-C stops the
    workers and raises :class:`PlanInterrupted` carrying the best so far.

    >>> from mlsysim import Scenarios, Q_, plan
    >>> p = plan(Scenarios.Gpt2DataParallelOneNode, objective="time",
    ...          nodes=[1, 2, 4, 8], inter_bandwidth=[Q_(100, "Gbps"), Q_(400, "Gbps")],
    ...          budget=Q_(150, "USD"), min_efficiency=0.8)
    >>> p.best.nodes, f"{p.best.inter_bandwidth:~P}", round(p.best.result.cost, 2)
    (8, '400 Gbps', 107.21)
    >>> len(p.pareto), p.knee.nodes
    (5, 8)
    """
    if objective not in OBJECTIVES:
        raise InputError(
            f"plan objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}",
            field="objective",
        )
    constraints = Constraints.checked(
        deadline=deadline,
        budget=budget,
        min_efficiency=min_efficiency,
        max_global_batch=max_global_batch,
        global_batch=global_batch,
        max_emissions=max_emissions,
        max_energy=max_energy,
        min_goodput=min_goodput,
    )
    if confidence is not None:
        constraints = _with_confidence(constraints, scenario, axes, confidence)
    top = _count_option("top", top, minimum=0)
    if chunk_rows is not None:
        chunk_rows = _count_option("chunk_rows", chunk_rows, minimum=1)
    max_layouts = _count_option("max_layouts", max_layouts, minimum=1)
    if workers is not None:
        workers = _count_option("workers", workers, minimum=1)
    check_size(declared_size(axes), max_layouts, what="plan", workers=workers or _cores())
    space = prepare_space(scenario, axes)
    time_figure, cost_figure = _whole_run_figures(space)
    constraints = replace(constraints, time_figure=time_figure, cost_figure=cost_figure)
    n_workers = workers or (_cores() if space.size >= PARALLEL_MIN_LAYOUTS else 1)
    check_size(space.size, max_layouts, what="plan", workers=n_workers)
    _require_cost(space, objective, constraints)
    layouts = _layout_space(space)
    # over parallel layouts the reduction keeps the two best, for the runner-up's sentence
    criteria = replace(
        constraints.criteria(objective, max(top, 2) if layouts else top), layout_rules=layouts
    )
    outcome = run(
        space,
        criteria,
        chunk_rows=chunk_rows or (LAYOUT_CHUNK_ROWS if layouts else PLAN_CHUNK_ROWS),
        workers=n_workers,
        scheduler=scheduler,
        progress=progress,
    )
    state = outcome.partial
    if not outcome.complete:
        found = _build(space, objective, constraints, outcome, top) if state.best else None
        raise PlanInterrupted(found, state.evaluated, space.size)
    if state.best is None:
        table = (
            sweep_table(scenario, space.axis_values())
            if space.size <= INFEASIBLE_TABLE_LAYOUTS
            else None
        )
        raise InfeasiblePlanError(
            _infeasible_message(space, constraints, state), table=table, excluded=state.excluded
        )
    return _build(space, objective, constraints, outcome, top)


def _build(space: Space, objective: str, constraints: Constraints, outcome: Outcome, asked_top: int) -> Plan:
    """The plan of a reduction: the rows it names, evaluated again with every column."""
    state = outcome.partial
    front = state.front_indices()
    wanted = [state.best_index, state.knee_index, *front.tolist(), *state.top_indices()]
    rows = np.unique(np.asarray([r for r in wanted if r is not None], dtype=np.int64))
    picked = take_rows(space, rows)
    top = picked.take(np.searchsorted(rows, state.top_indices()[:asked_top])) if asked_top else None
    ranked = state.top_indices()
    runner = ranked[1] if state.criteria.layout_rules and len(ranked) > 1 else None
    best = state.best_index
    assert best is not None
    return Plan(
        objective=objective,
        constraints=constraints,
        space=space,
        excluded=dict(state.excluded),
        best_row=best,
        pareto=picked.take(np.searchsorted(rows, front)),
        knee_row=state.knee_index,
        top=top,
        feasible_count=state.feasible,
        evaluated=state.evaluated,
        partial=not outcome.complete,
        peak_rss=dict(outcome.peak_rss),
        runner_row=runner,
        _picked=picked,
    )


def _with_confidence(
    constraints: Constraints,
    scenario: TrainingScenario,
    axes: Mapping[str, Iterable[object]],
    confidence: float,
) -> Constraints:
    """The constraints with the score quantile of ``confidence`` under the scenario's assumptions."""
    from dataclasses import replace

    from mlsysim.engine.reports.bands import confidence_band, layout_confidence

    if "assumptions" in axes or any(name.startswith("assumptions.") for name in axes):
        raise InputError(
            "plan confidence: the interval belongs to one set of assumptions; do not sweep "
            "the assumptions with a confidence",
            field="confidence",
        )
    from mlsysim.engine.inputs.rules import LAYOUT_FIELDS

    given = scenario.fields()
    layouts = any(name in LAYOUT_FIELDS for name in axes) or any(given.get(f) is not None for f in LAYOUT_FIELDS)
    if scenario.assumptions.is_seed() and not layouts:
        raise InputError(
            "plan confidence: the seed model has no prediction interval (it is a bound); give "
            f"non-seed assumptions, e.g. {setting('assumptions', 'realistic')}",
            field="confidence",
        )
    z = None if scenario.assumptions.is_seed() else confidence_band(scenario.assumptions, confidence)
    rho = layout_confidence(scenario.assumptions, confidence)
    return replace(constraints, confidence=float(confidence), confidence_z=z, confidence_rho=rho)


def _whole_run_figures(space: Space) -> tuple[str, str]:
    """The figures a plan ranks by: the whole run's where the space models it (docs/planning.md).

    With failures modeled (a failure rate, the scenario's or the assumptions', with
    ``checkpoint_bandwidth`` and ``restart_time``) the time is ``wall_clock_time``
    and the cost ``total_cost``; with energy priced (``energy_price`` and
    ``device_power``) the cost is ``total_cost``. A swept input counts as given
    when any of its values is.
    """
    swept = {a.field: a.values for a in space.axes}

    def given(inputs: Mapping[str, object], name: str) -> bool:
        if name in swept:
            return any(v is not None for v in swept[name])
        value = inputs.get(name)
        return isinstance(value, int | float | np.ndarray) and bool(np.any(value == value))

    assumed = [space.base.assumptions, *swept.get("assumptions", ())]
    default_rate = any(getattr(a, "failure_rate", 0.0) for a in assumed if a is not None)
    failures = energy = False
    for inputs in space.group_inputs():
        rate = given(inputs, "failure_rate") or default_rate
        failures |= rate and given(inputs, "checkpoint_bandwidth") and given(inputs, "restart_time")
        energy |= given(inputs, "energy_price") and given(inputs, "device_power")
    return (
        "wall_clock_time" if failures else "training_time",
        "total_cost" if failures or energy else "cost",
    )


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _count_option(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(
            f"plan {name}: expected an integer >= {minimum}, got {value!r}", field=name
        )
    return int(value)


def _require_cost(space: Space, objective: str, constraints: Constraints) -> None:
    """Cost is unknown exactly where no node-hour rate is known: check that before any work."""
    if objective != "cost" and constraints.budget is None:
        return
    axis = next((a for a in space.axes if a.field == "node_hour_rate"), None)
    if axis is not None:
        unknown = any(rate is None for rate in axis.values)
    else:  # the price may come with a node preset: look at every group's inputs
        unknown = any(math.isnan(g["node_hour_rate"]) for g in space.group_inputs())
    if unknown:
        need = "objective 'cost'" if objective == "cost" else "a budget"
        instead = f"use {option('objective', 'time')}" if objective == "cost" else "leave the budget out"
        raise InputError(
            f"plan: {need} needs a price for every layout; give node_hour_rate "
            f"(e.g. {setting('node_hour_rate', '32', 'USD/hour')}) or {instead}",
            field="node_hour_rate",
        )


def _infeasible_message(space: Space, constraints: Constraints, state: Partial) -> str:
    parts = [f"{n} break {k}" for k, n in state.excluded.items() if n]
    reach = describe_reach(state.reach, state.criteria)
    return (
        f"no layout meets the constraints ({constraints.describe()}): of {space.size} layouts, "
        f"{'; '.join(parts)}. The sweep reaches: {', '.join(reach)}. "
        "Relax a constraint or widen the axes."
    )


def _value(value: object) -> str:
    """A limit as :meth:`Constraints.describe` writes it: a quantity in its short units, a number in %g."""
    if isinstance(value, Quantity):
        return f"{value:~P}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _layout_space(space: Space) -> bool:
    return is_layout_space(space.base, space.axes)


def is_layout_space(base: TrainingScenario, axes: Iterable[Axis]) -> bool:
    """Whether a sweep holds parallel layouts (a layout input given, or on an axis): its layouts obey rules."""
    from mlsysim.engine.inputs.rules import LAYOUT_FIELDS

    given = base.fields()
    return any(a.field in LAYOUT_FIELDS for a in axes) or any(given.get(f) is not None for f in LAYOUT_FIELDS)
