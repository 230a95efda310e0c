"""``mlsysim.plan``: the best layout of a sweep under deadline, budget, efficiency and memory.

The plan evaluates the sweep, keeps the layouts that fit in device memory and
meet every constraint given, and answers three questions:

* ``best``: the cheapest (``objective="cost"``) or fastest (``"time"``)
  feasible layout, ties broken by the other figure, then by sweep order;
* ``pareto``: the feasible layouts no other feasible layout beats on both
  training time and cost, sorted by training time;
* ``knee`` (with ``min_efficiency``): the largest feasible layout (most
  devices; ties to the higher efficiency), i.e. how far the job scales before
  communication pulls efficiency under the bar.

When nothing is feasible, :class:`~mlsysim.core.exceptions.InfeasiblePlanError`
says how many layouts each constraint excluded and what the sweep can reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlsysim.core.exceptions import InfeasiblePlanError, InputError
from mlsysim.core.units import Quantity, to_canonical
from mlsysim.core.validation import check_fraction, check_positive_int, check_positive_quantity
from mlsysim.planning.pareto import pareto_mask
from mlsysim.planning.sweep import DEFAULT_CHUNK_ROWS, Progress, sweep
from mlsysim.planning.table import SweepTable

OBJECTIVES = ("cost", "time")


@dataclass(frozen=True)
class Constraints:
    """Limits a layout must meet; None means no limit."""

    deadline: Any = None  # a time: training_time must be at most this
    budget: Any = None  # money: cost must be at most this
    min_efficiency: float | None = None
    max_global_batch: int | None = None

    @classmethod
    def checked(cls, **limits: Any) -> Constraints:
        """Constraints with each limit validated (naming the bad one)."""
        checks = {
            "deadline": check_positive_quantity("time"),
            "budget": check_positive_quantity("money"),
            "min_efficiency": check_fraction,
            "max_global_batch": check_positive_int,
        }
        out = {}
        for name, value in limits.items():
            if value is None:
                out[name] = None
                continue
            try:
                out[name] = checks[name](value)
            except InputError as exc:
                raise InputError(f"plan {name}: {exc}", field=name) from None
        return cls(**out)

    def masks(self, table: SweepTable) -> dict[str, np.ndarray]:
        """For each active constraint (and memory), which rows meet it."""
        masks = {"memory": table["fits"]}
        if self.deadline is not None:
            hours = to_canonical(self.deadline, "time") / 3600.0
            masks["deadline"] = table["training_time"] <= hours
        if self.budget is not None:
            masks["budget"] = table["cost"] <= to_canonical(self.budget, "money")
        if self.min_efficiency is not None:
            masks["min_efficiency"] = table["efficiency"] >= self.min_efficiency
        if self.max_global_batch is not None:
            masks["max_global_batch"] = table["global_batch"] <= self.max_global_batch
        return masks

    def describe(self) -> str:
        parts = []
        if self.deadline is not None:
            parts.append(f"training time <= {_q(self.deadline)}")
        if self.budget is not None:
            parts.append(f"cost <= {_q(self.budget)}")
        if self.min_efficiency is not None:
            parts.append(f"efficiency >= {self.min_efficiency:g}")
        if self.max_global_batch is not None:
            parts.append(f"global batch <= {self.max_global_batch}")
        parts.append("fits in device memory (when known)")
        return ", ".join(parts)


@dataclass(frozen=True)
class Plan:
    """The outcome of :func:`plan`; ``str(plan)`` is its :meth:`summary`."""

    objective: str
    constraints: Constraints
    table: SweepTable
    """Every layout of the sweep."""
    feasible: np.ndarray
    """Boolean mask over ``table``: the layouts that meet every constraint."""
    excluded: dict[str, int]
    """Per constraint, how many layouts break it (a layout can break several)."""
    best_row: int
    pareto: SweepTable
    """Feasible layouts non-dominated in (training time, cost), by training time."""
    knee_row: int | None = None
    _scenarios: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def best(self) -> Any:
        """The winning layout as a scenario (``best.result`` equals its row of the table)."""
        return self._scenario(self.best_row)

    @property
    def knee(self) -> Any:
        """The largest feasible layout, when ``min_efficiency`` is given; else None."""
        return None if self.knee_row is None else self._scenario(self.knee_row)

    def _scenario(self, row: int) -> Any:
        if row not in self._scenarios:
            self._scenarios[row] = self.table.scenario(row)
        return self._scenarios[row]

    def summary(self) -> str:
        """Best, runner-up, knee, front, search and constraints (:mod:`mlsysim.planning.summary`)."""
        from mlsysim.planning.summary import plan_summary

        return plan_summary(self)

    def __str__(self) -> str:
        return self.summary()


def plan(
    scenario: Any,
    *,
    objective: str = "cost",
    deadline: Quantity | None = None,
    budget: Quantity | None = None,
    min_efficiency: float | None = None,
    max_global_batch: int | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    **axes: Any,
) -> Plan:
    """Search the sweep of ``axes`` (see :func:`mlsysim.sweep`) for the best layout.

    ``objective`` is ``"cost"`` (needs ``node_hour_rate``) or ``"time"``;
    ``deadline`` (a time) bounds the training time, ``budget`` (money) the
    cost, ``min_efficiency`` the scaling efficiency from below and
    ``max_global_batch`` the global batch. Layouts that do not fit in a known
    ``device_memory`` are always excluded.

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
    )
    table = sweep(scenario, chunk_rows=chunk_rows, progress=progress, **axes)
    _require_cost(table, objective, constraints)
    masks = constraints.masks(table)
    feasible = np.logical_and.reduce(list(masks.values()))
    excluded = {name: int((~mask).sum()) for name, mask in masks.items()}
    rows = np.flatnonzero(feasible)
    if rows.size == 0:
        raise InfeasiblePlanError(
            _infeasible_message(table, constraints, excluded), table=table, excluded=excluded
        )
    time, cost = table["training_time"], table["cost"]
    known_cost = np.where(np.isnan(cost), np.inf, cost)
    primary, secondary = (known_cost, time) if objective == "cost" else (time, known_cost)
    best = int(rows[np.lexsort((secondary[rows], primary[rows]))[0]])
    front = rows[pareto_mask(time[rows], cost[rows])]
    front = front[np.lexsort((known_cost[front], time[front]))]
    knee = None
    if constraints.min_efficiency is not None:
        n, eff = table["n_devices"], table["efficiency"]
        knee = int(rows[np.lexsort((primary[rows], -eff[rows], -n[rows]))[0]])
    return Plan(
        objective=objective,
        constraints=constraints,
        table=table,
        feasible=feasible,
        excluded=excluded,
        best_row=best,
        pareto=table.take(front),
        knee_row=knee,
    )


def _require_cost(table: SweepTable, objective: str, constraints: Constraints) -> None:
    if objective != "cost" and constraints.budget is None:
        return
    if np.isnan(table["cost"]).any():
        need = "objective 'cost'" if objective == "cost" else "a budget"
        raise InputError(
            f"plan: {need} needs a price for every layout; give node_hour_rate "
            "(e.g. node_hour_rate=Q_(32, 'USD/hour')) or use objective='time'",
            field="node_hour_rate",
        )


def _infeasible_message(table: SweepTable, constraints: Constraints, excluded: dict) -> str:
    fits = table["fits"]
    parts = [f"{n} break {k}" for k, n in excluded.items() if n]
    reach = []
    if fits.any():
        reach.append(f"fastest {table['training_time'][fits].min():.4g} h")
        cost = table["cost"][fits]
        if not np.isnan(cost).all():
            reach.append(f"cheapest {np.nanmin(cost):,.2f} USD")
        reach.append(f"best efficiency {table['efficiency'][fits].max():.3g}")
        reach.append(f"smallest global batch {table['global_batch'][fits].min()}")
    else:
        reach.append(
            f"least memory needed {table['memory_per_device'].min() / 1e9:.4g} GB per device"
        )
    return (
        f"no layout meets the constraints ({constraints.describe()}): of {len(table)} layouts, "
        f"{'; '.join(parts)}. The sweep reaches: {', '.join(reach)}. "
        "Relax a constraint or widen the axes."
    )


def describe_row(table: SweepTable, i: int) -> str:
    """``nodes=4, inter_bandwidth=100 Gbps -> 32 devices, 1.23 h, 157.40 USD, efficiency 0.83``."""
    inputs = ", ".join(f"{k}={_value(v)}" for k, v in table.axis_values(i).items())
    row = table.row(i)
    text = f"{row['n_devices']} devices, {_figures(row)}, efficiency {row['efficiency']:.3g}"
    return f"{inputs} -> {text}" if inputs else text


def _figures(row: dict[str, Any]) -> str:
    cost = row.get("cost")
    money = "cost unknown" if cost is None else f"{cost:,.2f} USD"
    return f"{row['training_time']:.4g} h / {money}"


def _value(value: Any) -> str:
    if isinstance(value, Quantity):
        return _q(value)
    return str(getattr(value, "name", value))


def _q(q: Any) -> str:
    return f"{q:~P}"
