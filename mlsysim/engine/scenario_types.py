"""Scenario types: validated, immutable bundles of inputs, evaluated by a solver.

The fields of :class:`DataParallelScaleOutScenario` are generated from the
field table (:mod:`mlsysim.engine.fields`): each input is checked once, at
construction (or, for the changed inputs only, in :meth:`variant`), and the
solver trusts the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, cast

import pydantic
from pydantic import WithJsonSchema

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import known
from mlsysim.core.units import Quantity
from mlsysim.core.validation import input_error
from mlsysim.engine.assumptions import Assumptions
from mlsysim.engine.fields import (
    DERIVED_FROM,
    FIELDS,
    MODEL_FIELDS,
    REQUIRED,
    InputField,
    Value,
    check_together,
    derived_numbers,
)
from mlsysim.engine.job import (
    DERIVABLE,
    NO_JOB,
    Job,
    normalize_given,
    plain_job,
    preset_name,
    resolve,
    wants_derivation,
    warn_measured,
)
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.models.types import Workload

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue


def _json_schema(f: InputField) -> dict[str, object]:
    """The JSON Schema of one input in the project's JSON encoding (see docs/json.md)."""
    if f.kind in ("count", "index"):
        schema: dict[str, object] = {"type": "integer", "minimum": 0 if f.kind == "index" else 1}
        if f.choices:
            schema["enum"] = list(f.choices)
    elif f.kind == "quantity":
        schema = {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
                    "required": ["value", "unit"],
                },
                {"type": "string", "description": "a value with units, e.g. '100 Gbps'"},
            ]
        }
    elif f.kind == "choice":
        schema = {"type": "string", "enum": list(f.choices)}
    elif f.kind == "workload":
        schema = {
            "anyOf": [
                {"type": "string", "description": "a workload registry name, e.g. 'GPT2'"},
                {"type": "object", "description": "a workload table"},
            ]
        }
    elif f.kind == "assumptions":
        schema = {
            "anyOf": [
                {"type": "string", "enum": ["seed", "realistic"]},
                {"type": "object", "description": "Assumptions fields, 'preset' names the base"},
            ]
        }
    elif f.kind == "number":
        schema = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    elif f.kind == "preset":
        schema = {"type": "string", "description": f"a {f.name} registry name"}
    else:
        schema = {"type": "string"}
    if f.optional:
        schema = {"anyOf": [schema, {"type": "null"}]}
    schema["description"] = f.label + (f" [{f.display_unit}]" if f.display_unit else "")
    return schema


def _pydantic_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}  # pydantic's (annotation, FieldInfo) pairs
    for f in FIELDS.values():
        annotation = Annotated[Any, WithJsonSchema(_json_schema(f))]
        if f.default is REQUIRED:
            spec = pydantic.Field(description=f.label)
        elif f.default is None or isinstance(f.default, (int, float, str)):
            spec = pydantic.Field(default=f.default, description=f.label)
        else:  # an object (the seed Assumptions): not a JSON default
            spec = pydantic.Field(default_factory=lambda d=f.default: d, description=f.label)
        fields[f.name] = (annotation, spec)
    return fields


_ScenarioFields: type[pydantic.BaseModel] = pydantic.create_model(
    "_ScenarioFields",
    __config__=pydantic.ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True),
    **_pydantic_fields(),
)


_DEFAULTS: dict[str, Value] = {
    f.name: None if f.required else cast(Value, f.default) for f in FIELDS.values()
}
"""Every input's default; None for a required one (reported missing unless given or derived)."""
_DEFAULT_NUMBERS: dict[str, float] = {
    name: FIELDS[name].to_model(value)
    for name, value in _DEFAULTS.items()
    if FIELDS[name].numeric and value is not None
}
_REQUIRED: tuple[str, ...] = tuple(f.name for f in FIELDS.values() if f.required)


def checked_inputs(
    data: Mapping[str, object],
    owner: str,
    base: Mapping[str, Value] | None = None,
    base_numbers: Mapping[str, float] | None = None,
) -> tuple[dict[str, Value], dict[str, float], Job]:
    """Every input checked once: ``data`` over ``base`` (already checked) or the defaults.

    Presets and derivations (:func:`mlsysim.engine.job.resolve`) then fill
    the inputs they supply; the :class:`~mlsysim.engine.job.Job` returned
    last says which and from what.

    Returns the checked values and the model numbers of the numeric inputs that
    are given (canonical SI floats; an input not given keeps its neutral value
    in :class:`~mlsysim.engine.equations.Inputs`). Unknown names, missing required
    inputs and bad values are reported together, located at their fields; then
    the cross-field rules run.
    """
    errors: list[InputError] = []
    link = data.get("inter_bandwidth")
    if link is not None and type(link) is not Quantity:  # perhaps a fabric (moved to ``fabric``)
        try:
            data = normalize_given(data)
        except InputError as exc:
            raise exc.at(owner=owner) from None
    if base is None:
        values, numbers = dict(_DEFAULTS), dict(_DEFAULT_NUMBERS)
    else:
        values, numbers = dict(base), dict(base_numbers or {})
    for name, value in data.items():
        f = FIELDS.get(name)
        if f is None:
            errors.append(
                InputError(f"unknown field; {known(name, FIELDS)}", loc=(name,))
            )
            continue
        try:
            checked, number = f.normalize(value)
        except InputError as exc:
            errors.append(exc)
            continue
        values[name] = checked
        if number is not None:
            numbers[name] = number
        elif name in numbers:
            del numbers[name]
    missing = [name for name in _REQUIRED if values[name] is None]
    if missing:
        errors += [_missing(name) for name in missing if name not in DERIVABLE]
    if errors:
        errors.sort(key=lambda e: _ORDER.get(e.loc[0] if e.loc else "", 0))
        raise input_error(owner, errors)
    job = plain_job(values)
    if wants_derivation(values):
        try:
            job = resolve(values)
            for name in job.origins:
                values[name], number = FIELDS[name].normalize(values[name])
                if number is not None:
                    numbers[name] = number
        except InputError as exc:
            raise exc.at(owner=owner) from None
    still_missing = [_missing(name) for name in missing if values.get(name) is None]
    if still_missing:  # nothing derived them
        raise input_error(owner, still_missing)
    try:
        check_together(values)
    except InputError as exc:
        raise exc.at(owner=owner) from None
    if base is None or any(name in data for name in DERIVED_FROM):
        numbers.update(derived_numbers(values))
    return values, numbers, job


_MISSING_HINTS = {
    "step_time": "; or give mfu with node= or accelerator= to derive it from FLOPs",
    "training_time": "; or give training_tokens or training_samples to derive it",
    "devices_per_node": "; or give node= (e.g. DGX_H100)",
    "intra_bandwidth": "; or give node= (e.g. DGX_H100)",
}


def _missing(name: str) -> InputError:
    return InputError("required field is missing" + _MISSING_HINTS.get(name, ""), loc=(name,))


_ORDER = {name: i for i, name in enumerate(FIELDS)}


class DataParallelScaleOutScenario(_ScenarioFields):
    """A data-parallel job of ``workload`` on ``nodes`` nodes, from a one-device profile.

    Construct with keyword inputs; every input is checked here, and a bad one
    raises an :class:`~mlsysim.core.exceptions.InputError` (a ``ValueError``)
    naming the field. ``variant(**changes)`` returns a checked copy;
    ``result`` evaluates it through
    :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`.

    Seed inputs: ``workload``, ``precision`` (default fp16), ``step_time`` and
    ``training_time`` (one device), ``per_device_batch``, ``devices_per_node``,
    ``nodes`` (default 1), ``intra_bandwidth`` (per direction),
    ``inter_bandwidth`` (required when nodes > 1), ``accumulation_steps``
    (default 1), ``node_hour_rate`` (optional).

    Opt-in inputs (defaults keep the seed's results): ``nics_per_node``
    (None = one inter-node link of inter_bandwidth), ``intra_latency`` and
    ``inter_latency`` (per-step startup alpha, default none = 0 s),
    ``assumptions`` (:class:`mlsysim.Assumptions`), ``device_memory`` (a size
    or an accelerator entry), ``zero_stage`` (0-3), ``activation_memory``.
    The table of every input is :data:`mlsysim.engine.fields.FIELDS`.

    A job from the hardware and the model (:mod:`mlsysim.engine.job`):
    ``node``, ``fabric`` and ``accelerator`` presets fill the inputs they
    describe (an input given explicitly wins); ``mfu`` derives ``step_time``
    from the workload's FLOPs and the accelerator's peak, ``training_tokens``
    or ``training_samples`` derive ``training_time``, and ``activation_memory``
    is derived from the workload's shape (``recompute``: none, selective,
    full). ``job.origins`` says what came from where; ``variant`` derives
    the derived inputs again.

    >>> from mlsysim import Scenarios
    >>> case = Scenarios.Gpt2DataParallelOneNode
    >>> type(case.result).__name__
    'DataParallelScaleOutResult'
    """

    if TYPE_CHECKING:  # the fields are generated from the field table

        def __getattr__(self, name: str) -> Any: ...

    _numbers: dict[str, float] = pydantic.PrivateAttr(default_factory=dict)
    _job: Job = pydantic.PrivateAttr(default=NO_JOB)

    def __init__(self, **data: object) -> None:
        values, numbers, job = checked_inputs(data, type(self).__name__)
        self._set_state(values, numbers, job, {name for name in data if name in FIELDS})

    def _set_state(
        self, values: dict[str, Value], numbers: dict[str, float], job: Job, given: set[str]
    ) -> None:
        """Store checked inputs as pydantic's ``model_construct`` does, without its per-field loop.

        ``values`` holds every field (checked by :func:`checked_inputs`); ``given``
        becomes ``model_fields_set``. About 1 us instead of pydantic's ~15 us for
        ~40 fields, which dominated ``variant``.
        """
        setattr_ = object.__setattr__
        setattr_(self, "__dict__", values)
        setattr_(self, "__pydantic_fields_set__", given)
        setattr_(self, "__pydantic_extra__", None)
        setattr_(self, "__pydantic_private__", {"_numbers": numbers, "_job": job})

    def _checked(self) -> tuple[dict[str, float], Job]:
        """The model numbers and the :class:`Job` kept beside the inputs.

        Read from pydantic's private store directly: ``self._job`` goes through
        pydantic's ``__getattr__`` (~1 us a read, on the path of every variant).
        """
        private = cast("dict[str, Any]", self.__pydantic_private__)
        return private["_numbers"], private["_job"]

    @property
    def job(self) -> Job:
        """What this scenario derived from its presets and the model, and from what (``job.origins``)."""
        return self._checked()[1]

    @property
    def flops_per_sample(self) -> Quantity | None:
        """Training FLOPs of one sample (a Quantity in flop), or None when the workload does not tell."""
        from mlsysim.core.units import quantity

        f = self.job.flops_per_sample
        return None if f != f else quantity(f, "flop")

    def fields(self) -> dict[str, Value]:
        """Every input and its value, as a new dict (no copies of the values)."""
        held = self.__dict__  # the checked values (_set_state); faster than getattr per field
        return {name: held[name] for name in FIELDS}

    def variant(self, **changes: object) -> DataParallelScaleOutScenario:
        """A copy with some inputs changed; only those are checked (the rest already were)."""
        base, (base_numbers, job) = self.fields(), self._checked()
        if job.origins:  # derived inputs are derived again from the changed ones
            base_numbers = dict(base_numbers)
            for name in job.origins:
                if name not in changes:
                    base[name] = _DEFAULTS.get(name)
                    base_numbers.pop(name, None)
        if "workload" in changes:
            warn_measured(self, changes)
        values, numbers, job = checked_inputs(
            changes, type(self).__name__, base=base, base_numbers=base_numbers
        )
        copy = type(self).__new__(type(self))
        copy._set_state(values, numbers, job, self.model_fields_set | changes.keys())
        return copy

    def inputs(self) -> dict[str, Value]:
        """The solver's inputs (every field but ``name`` and ``description``)."""
        held = self.__dict__
        return {name: held[name] for name in MODEL_FIELDS}

    @property
    def result(self) -> DataParallelScaleOutResult:
        """Evaluate this scenario through :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`.

        Evaluated once, on first read, then kept (as ``functools.cached_property``
        would, without its lock).
        """
        held = self.__dict__
        result = held.get("result")
        if result is None:
            from mlsysim.engine.solvers.data_parallel import solve_checked

            result = held["result"] = solve_checked(self.inputs(), *self._checked())
        return cast(DataParallelScaleOutResult, result)

    def explain(self, format: str = "text") -> str:
        """The derivation of this scenario's result (see :meth:`DataParallelScaleOutResult.explain`)."""
        from mlsysim.engine.explain import explain_result

        return explain_result(
            self.result, format=format, title=self.name, description=self.description
        )

    def to_dict(self) -> dict[str, JSONValue]:
        """The scenario in the project's JSON encoding: ``{"scenario": name, "inputs": {...}, "derived": {...}}``.

        ``derived`` maps each input a preset or a derivation supplied to where it came from.

        Quantities are ``{"value", "unit"}``, the workload its registry name (or
        its figures), the assumptions their fields.
        """
        from mlsysim.core.jsonio import encode
        from mlsysim.engine.files import registry_name

        inputs: dict[str, JSONValue] = {}
        for name, value in self.inputs().items():
            if name == "workload":
                workload = cast(Workload, value)
                inputs[name] = registry_name(workload) or workload.name
            elif name == "assumptions":
                inputs[name] = encode(cast(Assumptions, value).fields())
            elif value is not None and FIELDS[name].kind == "preset":
                inputs[name] = preset_name(name, value)
            else:
                inputs[name] = encode(value)
        return {
            "scenario": self.name,
            "description": self.description,
            "inputs": inputs,
            "derived": dict(self.job.origins),
        }

    def __repr__(self) -> str:
        label = f"{self.name!r}" if self.name else "unnamed"
        return f"<DataParallelScaleOutScenario {label}: {self.workload.name}, {self.nodes} x {self.devices_per_node} devices>"
