"""What the notes and the summary of a plan read of it: :class:`PlanView`.

:class:`~mlsysim.planning.plan.Plan` calls them (``notes()``, ``summary()``,
``str(plan)``), so they name what they read here, not the class: mypy checks
that a plan provides it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.table import SweepTable


class LimitsView(Protocol):
    """The members of a plan's :class:`~mlsysim.planning.plan.Constraints` that its summary and notes read."""

    @property
    def min_efficiency(self) -> float | None: ...
    @property
    def max_global_batch(self) -> int | None: ...
    @property
    def global_batch(self) -> int | None: ...

    def describe(self) -> str:
        """The limits in words."""
        ...


class PlanView(Protocol):
    """The members of a :class:`~mlsysim.planning.plan.Plan` that its summary and notes read."""

    @property
    def objective(self) -> str: ...
    @property
    def constraints(self) -> LimitsView: ...
    @property
    def pareto(self) -> SweepTable: ...
    @property
    def evaluated(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def best(self) -> TrainingScenario: ...
    @property
    def knee(self) -> TrainingScenario | None: ...
    @property
    def time_figure(self) -> str: ...
    @property
    def cost_figure(self) -> str: ...

    def why(self) -> str | None:
        """One sentence saying why the best beats the runner-up, or None."""
        ...
