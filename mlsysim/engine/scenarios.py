"""``mlsysim.Scenarios``: the named scenarios, by attribute and by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import UnknownNameError
from mlsysim.core.suggest import known, unknown
from mlsysim.engine.scenario_definitions import Declared, training

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario


class _ScenarioRegistry:
    """Named scenarios: ``Scenarios.Gpt2DataParallelOneNode``, ``Scenarios.get(name)``, ``list(Scenarios)``.

    Each is built on first use; :meth:`names` and :meth:`description` need none built.
    """

    def __init__(self, declared: Declared) -> None:
        self._declared = declared

    def __getattr__(self, name: str) -> TrainingScenario:
        declared = self.__dict__["_declared"]
        if name in declared.definitions:
            return declared.build(name)
        raise AttributeError(f"no scenario named {name!r}; {known(name, self.names())}")

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.names()]

    def __iter__(self) -> Iterator[TrainingScenario]:
        return (self._declared.build(name) for name in self.names())

    def __len__(self) -> int:
        return len(self._declared.definitions)

    def __contains__(self, name: object) -> bool:
        return name in self._declared.definitions

    def names(self) -> list[str]:
        """The scenario names, in definition order."""
        return self._declared.names()

    def description(self, name: str) -> str:
        """What a named scenario is, without building it."""
        return self._declared.description(self._key(name))

    def _key(self, name: str) -> str:
        if name in self._declared.definitions:
            return name
        for key in self.names():
            if key.lower() == name.lower():
                return key
        raise UnknownNameError(unknown(name, "scenario", self.names()))

    def get(self, name: str) -> TrainingScenario:
        """The scenario of that name (case-insensitive); :class:`UnknownNameError` lists the known ones."""
        return self._declared.build(self._key(name))

    def __repr__(self) -> str:
        return f"Scenarios({', '.join(self.names())})"


Scenarios = _ScenarioRegistry(training.SCENARIOS)
