"""``FIELD=VALUE`` texts applied to a scenario: the command line's ``--set``.

Each value is read by its field's entry in the field table
(:meth:`mlsysim.engine.inputs.fields.InputField.from_text`), the same reader that
scenario files use, so both accept the same spellings and report the same
errors. ``assumptions.FIELD=VALUE`` changes one modeling choice;
``workload.FIELD=VALUE`` one figure of the workload (``workload.seq_len=4096``:
the length a job trains at), checked as the workload checks it
(:func:`vary_workload`; scenario files and sweep axes take the same keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast, get_args

from mlsysim.core.exceptions import InputError
from mlsysim.core.formatting import fmt_given
from mlsysim.core.suggest import known
from mlsysim.engine.inputs.assumptions import Assumptions, assumption_from_text
from mlsysim.engine.inputs.fields import NONE_WORDS, Value, field
from mlsysim.engine.inputs.workload_figures import SHAPE_EXAMPLES

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.models.types import Workload


WORKLOAD_PREFIX = "workload."
"""The prefix of a workload's own field on ``--set``, in a file or on a sweep axis."""


def workload_value(workload: Workload, name: str, value: object) -> object:
    """The value of the workload field ``name`` typed as text (or a file's scalar), read by the field's type:
    a count as an integer, a switch as a boolean word, a parameter count or size with or without its unit,
    ``none`` to clear an optional figure."""
    from mlsysim.core.text import parse_bool, parse_int
    from mlsysim.core.units import parse_quantity

    info = type(workload).model_fields.get(name)
    if info is None:
        raise InputError(
            f"{workload.name} has no field {name!r}; {known(name, type(workload).model_fields)}",
            loc=("workload", name),
        )
    if not isinstance(value, str):
        return value
    text = value.strip()
    kinds = set(get_args(info.annotation)) or {info.annotation}
    try:
        if info.default is None and text.lower() in NONE_WORDS:
            return None
        if int in kinds:
            return parse_int(text)
        if bool in kinds:
            return parse_bool(text)
        if any(getattr(k, "__name__", "") == "Quantity" for k in kinds):
            try:
                return float(text)  # a bare count of parameters
            except ValueError:
                return parse_quantity(text)
    except InputError as exc:
        raise exc.at("workload", name) from None
    return text


def vary_workload(workload: Workload, changes: Mapping[str, object]) -> Workload:
    """``workload`` with some of its own fields changed (values as :func:`workload_value` reads them), checked
    as a new workload is; its name says what changed (``"Mixtral 8x22B [seq_len=4096]"``)."""
    values = {name: workload_value(workload, name, value) for name, value in changes.items()}
    if "name" not in values:
        root, said = _changed_name(workload.name)
        said.update((name, fmt_given(value)) for name, value in values.items())
        values["name"] = f"{root} [{', '.join(f'{k}={v}' for k, v in said.items())}]"
    try:
        return workload.variant(**values)
    except InputError as exc:
        raise exc.at("workload", *(exc.loc or ((exc.field,) if exc.field else ()))) from None


def _changed_name(name: str) -> tuple[str, dict[str, str]]:
    """``"Mixtral 8x22B [seq_len=4096]"`` -> ``("Mixtral 8x22B", {"seq_len": "4096"})``: a name
    :func:`vary_workload` gave, so a later change replaces the figure it names instead of adding a second."""
    root, bracket, rest = name.partition(" [")
    pairs = [part.partition("=") for part in rest.removesuffix("]").split(", ")] if bracket else []
    if not bracket or not rest.endswith("]") or any(not sep for _, sep, _ in pairs):
        return name, {}
    return root, {key: value for key, _, value in pairs}


def split_workload_changes(data: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """``(the other inputs, the workload's own fields)`` of inputs where ``workload.FIELD`` keys change one
    figure of the workload."""
    rest: dict[str, object] = {}
    changes: dict[str, object] = {}
    for name, value in data.items():
        if name.startswith(WORKLOAD_PREFIX):
            changes[name.removeprefix(WORKLOAD_PREFIX)] = value
        else:
            rest[name] = value
    return rest, changes


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
    scenario: TrainingScenario, assignments: Sequence[str]
) -> TrainingScenario:
    """``scenario.variant(...)`` with ``FIELD=VALUE`` texts; ``assumptions.FIELD=VALUE`` sets one choice.

    A named scenario that is changed is renamed (``"Name [nodes=4]"``), so
    tables, JSON and plot titles do not pass it off as the named one.
    """
    if not assignments:
        return scenario
    changes: dict[str, object] = {}
    assumption_changes: dict[str, object] = {}
    workload_changes: dict[str, object] = {}
    errors: list[InputError] = []
    for text in assignments:
        name, value = parse_assignment(text)
        try:
            if name.startswith(WORKLOAD_PREFIX):
                workload_changes[name.removeprefix(WORKLOAD_PREFIX)] = value
            elif name.startswith("assumptions."):
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
    if workload_changes:
        changes["workload"] = vary_workload(cast("Workload", changes.get("workload", scenario.workload)),
                                            workload_changes)
    if scenario.name and "name" not in changes:
        changes["name"] = f"{scenario.name} [{', '.join(a.strip() for a in assignments)}]"
    return scenario.variant(**changes)


def scenario_from_assignments(assignments: Sequence[str]) -> TrainingScenario:
    """A new scenario from ``FIELD=VALUE`` texts alone (``mlsysim run --set ...`` without a name);
    ``assumptions.FIELD=VALUE`` changes one choice of the assumptions given (the seed's by default)."""
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario

    data: dict[str, object] = {}
    assumption_changes: dict[str, object] = {}
    workload_changes: dict[str, object] = {}
    for text in assignments:
        name, value = parse_assignment(text)
        if name.startswith(WORKLOAD_PREFIX):
            workload_changes[name.removeprefix(WORKLOAD_PREFIX)] = value
            continue
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
    if workload_changes:
        data["workload"] = vary_workload(_workload_to_vary(data.get("workload")), workload_changes)
    return DataParallelScaleOutScenario(**data)


def _workload_to_vary(workload: object) -> Workload:
    """The workload ``workload.FIELD`` changes: the one given (``workload=NAME``), else an error saying so."""
    if workload is None:
        name = next(iter(SHAPE_EXAMPLES))
        raise InputError(
            f"{WORKLOAD_PREFIX}FIELD changes one figure of the workload: give the workload too "
            f"(--set workload=Llama3_8B --set {WORKLOAD_PREFIX}{name}=...)",
            loc=("workload",),
        )
    return cast("Workload", workload)
