"""``mlsysim.Scenarios``: the named scenarios, by attribute and by name."""

from __future__ import annotations

from collections.abc import Iterator

from mlsysim.core.exceptions import UnknownNameError
from mlsysim.core.suggest import known, unknown
from mlsysim.engine.scenario_definitions import training
from mlsysim.engine.scenario_types import DataParallelScaleOutScenario


class _ScenarioRegistry:
    """Named scenarios: ``Scenarios.Gpt2DataParallelOneNode``, ``Scenarios.get(name)``, ``list(Scenarios)``."""

    def __init__(self, scenarios: tuple[DataParallelScaleOutScenario, ...]) -> None:
        self._by_name = {s.name: s for s in scenarios}

    def __getattr__(self, name: str) -> DataParallelScaleOutScenario:
        try:
            return self.__dict__["_by_name"][name]
        except KeyError:
            raise AttributeError(
                f"no scenario named {name!r}; {known(name, self.names())}"
            ) from None

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self._by_name]

    def __iter__(self) -> Iterator[DataParallelScaleOutScenario]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        """The scenario names, in definition order."""
        return list(self._by_name)

    def get(self, name: str) -> DataParallelScaleOutScenario:
        """The scenario of that name (case-insensitive); :class:`UnknownNameError` lists the known ones."""
        if name in self._by_name:
            return self._by_name[name]
        for key, scenario in self._by_name.items():
            if key.lower() == name.lower():
                return scenario
        raise UnknownNameError(unknown(name, "scenario", self.names()))

    def __repr__(self) -> str:
        return f"Scenarios({', '.join(self.names())})"


Scenarios = _ScenarioRegistry(training.SCENARIOS)
