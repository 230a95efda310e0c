"""``FIELD=VALUE`` texts applied to a scenario: the command line's ``--set``.

Each value is read by its field's entry in the field table
(:meth:`mlsysim.engine.inputs.fields.InputField.from_text`), the same reader that
scenario files use, so both accept the same spellings and report the same
errors. ``assumptions.FIELD=VALUE`` changes one modeling choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import Assumptions, assumption_from_text
from mlsysim.engine.inputs.fields import Value, field

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario


def coerce_field(name: str, value: object) -> Value:
    """The checked value of scenario field ``name`` given as text (or a file's scalar)."""
    f = field(name)
    if isinstance(value, str):
        return f.from_text(value)
    return f.validate(value)


def parse_assignment(text: str) -> tuple[str, str]:
    """Split ``FIELD=VALUE``; :class:`InputError` when there is no ``=``."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise InputError(f"--set expects FIELD=VALUE, got {text!r}")
    return name, value.strip()


def apply_overrides(
    scenario: DataParallelScaleOutScenario, assignments: Sequence[str]
) -> DataParallelScaleOutScenario:
    """``scenario.variant(...)`` with ``FIELD=VALUE`` texts; ``assumptions.FIELD=VALUE`` sets one choice.

    A named scenario that is changed is renamed (``"Name [nodes=4]"``), so
    tables, JSON and plot titles do not pass it off as the named one.
    """
    if not assignments:
        return scenario
    changes: dict[str, object] = {}
    assumption_changes: dict[str, object] = {}
    errors: list[InputError] = []
    for text in assignments:
        name, value = parse_assignment(text)
        try:
            if name.startswith("assumptions."):
                sub = name.split(".", 1)[1]
                try:
                    assumption_changes[sub] = assumption_from_text(sub, value)
                except InputError as exc:
                    raise exc.at("assumptions") from None
            else:
                changes[name] = coerce_field(name, value)
        except InputError as exc:
            errors.append(exc.with_input(value))
    if errors:  # every value that cannot be read, each at its field
        first = errors[0]
        first.others = tuple(errors[1:])
        raise first
    if assumption_changes:
        base = cast(Assumptions, changes.get("assumptions", scenario.assumptions))
        try:
            changes["assumptions"] = base.variant(**assumption_changes)
        except InputError as exc:
            raise exc.at("assumptions") from None
    if scenario.name and "name" not in changes:
        changes["name"] = f"{scenario.name} [{', '.join(a.strip() for a in assignments)}]"
    return scenario.variant(**changes)


def scenario_from_assignments(assignments: Sequence[str]) -> DataParallelScaleOutScenario:
    """A new scenario from ``FIELD=VALUE`` texts alone (``mlsysim run --set ...`` without a name);
    ``assumptions.FIELD=VALUE`` changes one choice of the assumptions given (the seed's by default)."""
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario

    data: dict[str, object] = {}
    assumption_changes: dict[str, object] = {}
    for text in assignments:
        name, value = parse_assignment(text)
        if name.startswith("assumptions."):
            sub = name.split(".", 1)[1]
            try:
                assumption_changes[sub] = assumption_from_text(sub, value)
            except InputError as exc:
                raise exc.at("assumptions").with_input(value) from None
            continue
        data[name] = coerce_field(name, value)
    if assumption_changes:
        base = cast(Assumptions, data.get("assumptions", Assumptions()))
        try:
            data["assumptions"] = base.variant(**assumption_changes)
        except InputError as exc:
            raise exc.at("assumptions") from None
    return DataParallelScaleOutScenario(**data)
