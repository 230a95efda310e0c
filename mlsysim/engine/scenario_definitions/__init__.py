"""Where the named scenarios are defined: each by its name and description, built on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario

Builder = Callable[[str, str], "TrainingScenario"]


class Definition(NamedTuple):
    """A named scenario before it is built: its name, description and the function that builds it."""

    name: str
    description: str
    build: Builder


def named(name: str, description: str) -> Callable[[Builder], Definition]:
    """Declare a scenario: ``@named("Name", "what it is")`` over ``def build(name, description)``."""

    def declare(build: Builder) -> Definition:
        return Definition(name, description, build)

    return declare


class Declared:
    """Scenario definitions, each built once, on first use."""

    def __init__(self, *definitions: Definition) -> None:
        self.definitions = {d.name: d for d in definitions}
        self._built: dict[str, TrainingScenario] = {}

    def names(self) -> list[str]:
        return list(self.definitions)

    def description(self, name: str) -> str:
        return self.definitions[name].description

    def build(self, name: str) -> TrainingScenario:
        built = self._built.get(name)
        if built is None:
            d = self.definitions[name]
            built = self._built[name] = d.build(d.name, d.description)
        return built
