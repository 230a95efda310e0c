"""Scenario types: validated, immutable bundles of inputs, evaluated by a solver.

The fields of :class:`TrainingScenario` are generated from the
field table (:mod:`mlsysim.engine.inputs.fields`): each input is checked once, at
construction (or, for the changed inputs only, in :meth:`variant`), and the
solver trusts the result.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, TypeVar, cast

import pydantic
from pydantic import WithJsonSchema

from mlsysim.core.exceptions import MlsysimWarning, UnknownNameError
from mlsysim.core.suggest import setting
from mlsysim.core.units import Quantity
from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.inputs.checking import CheckedInputs, check_layer, checked_inputs
from mlsysim.engine.inputs.derivation import NO_JOB, Job
from mlsysim.engine.inputs.fields import FIELDS, GROUPS, MODEL_FIELDS, REQUIRED, InputField, Value
from mlsysim.engine.inputs.layers import overlay
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.models.types import Workload

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue


def _json_schema(f: InputField) -> dict[str, object]:
    """The JSON Schema of one input in the project's JSON encoding (see docs/json.md)."""
    schema = f.kinds.schema(f)
    if f.optional:
        schema = {"anyOf": [schema, {"type": "null"}]}
    schema["description"] = f.label + (f" [{f.display_unit}]" if f.display_unit else "")
    schema["x-group"] = GROUPS[f.group]
    return schema


def _pydantic_fields() -> dict[str, Any]:
    """pydantic's (annotation, FieldInfo) of each input: any value (pydantic never validates a
    scenario: checked_inputs does), with the field table's JSON Schema."""
    fields: dict[str, Any] = {}
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
    # defer_build: pydantic never validates a scenario (checked_inputs does, and _set_state
    # stores the values), so its core schema is built only if asked for (a JSON schema,
    # model_dump): ~10 ms less at the start of every command that builds a scenario
    __config__=pydantic.ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    ),
    **_pydantic_fields(),
)


def warn_measured(scenario: TrainingScenario, changes: Mapping[str, object]) -> None:
    """Warn when ``variant(workload=...)`` carries a measured step_time/training_time to another workload.

    A measured one-device profile belongs to the workload it was measured
    on; the figures derived from ``mfu`` or ``training_tokens`` are derived
    again instead, and need no warning.
    """
    new = changes.get("workload")
    if isinstance(new, str):
        try:
            from mlsysim.models.registry import Models

            new = Models.get(new.strip())
        except UnknownNameError:
            return  # the check reports it
    if not isinstance(new, Workload) or new == scenario.workload:
        return
    carried = [
        name
        for name in ("step_time", "training_time")
        if name not in changes
        and not scenario.job.derives(name)
        and getattr(scenario, name) is not None
    ]
    if carried:
        warnings.warn(
            MlsysimWarning(
                f"{' and '.join(carried)} measured for {scenario.workload.name} "
                f"{'are' if len(carried) > 1 else 'is'} carried unchanged to {new.name}; "
                f"give the figures measured for it, or derive them: {setting('step_time', None)} with mfu "
                f"and node (or accelerator), {setting('training_time', None)} with training_tokens"
            ),
            stacklevel=3,
        )


def _hashable(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


_S = TypeVar("_S", bound="TrainingScenario")


class _Private(TypedDict):
    """What a scenario keeps beside its inputs (pydantic's private store, set by ``_set_state``)."""

    _numbers: dict[str, float]
    _job: Job
    _given: dict[str, Value]
    _result: DataParallelScaleOutResult | None


class TrainingScenario(_ScenarioFields):
    """A training job of ``workload`` on ``nodes`` nodes: its data, ZeRO/FSDP, tensor, pipeline, expert and
    context parallelism, from a one-device profile or from the hardware and the model's shape.

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
    The table of every input is :data:`mlsysim.engine.inputs.fields.FIELDS`.

    A job from the hardware and the model (:mod:`mlsysim.engine.inputs.presets`, :mod:`mlsysim.engine.inputs.derivation`):
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
    >>> isinstance(case, TrainingScenario)
    True
    """

    if TYPE_CHECKING:  # the fields are generated from the field table

        def __getattr__(self, name: str) -> Any: ...

    _numbers: dict[str, float] = pydantic.PrivateAttr(default_factory=dict)
    _job: Job = pydantic.PrivateAttr(default=NO_JOB)
    _given: dict[str, Value] = pydantic.PrivateAttr(default_factory=dict)
    _result: DataParallelScaleOutResult | None = pydantic.PrivateAttr(default=None)

    def __init__(self, **data: object) -> None:
        self._set_state(*checked_inputs(data, type(self).__name__))

    @classmethod
    def from_layers(cls: type[_S], *layers: Mapping[str, object]) -> _S:
        """A scenario from layers of inputs, oldest first, folded by the precedence rule.

        ``from_layers(a, b)`` is ``TrainingScenario(**a).variant(**b)``
        without building the first scenario (whose layer alone may be incomplete):
        later words win (:mod:`mlsysim.engine.inputs.layers`).
        """
        given: dict[str, object] = {}
        for layer in layers:
            given = overlay(given, check_layer(layer, cls.__name__)).given
        return cls(**given)

    def _set_state(
        self,
        values: dict[str, Value],
        numbers: dict[str, float],
        job: Job,
        given: dict[str, Value],
    ) -> None:
        """Store checked inputs as pydantic's ``model_construct`` does, without its per-field loop.

        ``values`` holds every field (checked by :func:`checked_inputs`); the
        names in ``given`` become ``model_fields_set``. About 1 us instead of
        pydantic's ~15 us for ~40 fields, which dominated ``variant``.
        """
        setattr_ = object.__setattr__
        setattr_(self, "__dict__", values)
        setattr_(self, "__pydantic_fields_set__", set(given))
        setattr_(self, "__pydantic_extra__", None)
        private: _Private = {"_numbers": numbers, "_job": job, "_given": given, "_result": None}
        setattr_(self, "__pydantic_private__", private)

    def _private(self) -> _Private:
        """What this scenario keeps beside its inputs, read from pydantic's private store directly:
        ``self._job`` goes through pydantic's ``__getattr__`` (~1 us a read, on the path of every variant)."""
        return cast(_Private, self.__pydantic_private__)

    def _checked(self) -> tuple[dict[str, float], Job]:
        """The model numbers and the :class:`Job` kept beside the inputs."""
        private = self._private()
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

    @property
    def given(self) -> Mapping[str, Value]:
        """The inputs as given, every layer (construction, each ``variant``) folded by the
        precedence rule: what a later ``variant`` lays its changes over."""
        return MappingProxyType(self._private()["_given"])

    def fields(self) -> dict[str, Value]:
        """Every input and its value, as a new dict (no copies of the values)."""
        held = self.__dict__  # the checked values (_set_state); faster than getattr per field
        return {name: held[name] for name in FIELDS}

    def variant(self: _S, **changes: object) -> _S:
        """A copy with some inputs changed; only those are checked (the rest already were).

        The changes are the newest layer: they win over what this scenario was
        given, and a preset among them (``fabric=``, ``node=``) replaces what
        this scenario said for the inputs it fills (:mod:`mlsysim.engine.inputs.layers`).
        """
        if "workload" in changes:
            warn_measured(self, changes)
        return self._layered(changes)

    def _layered(self: _S, changes: Mapping[str, object], *, rules: bool = True) -> _S:
        private = self._private()
        older = CheckedInputs(self.__dict__, private["_numbers"], private["_job"], private["_given"])
        checked = checked_inputs(changes, type(self).__name__, older=older, rules=rules)
        copy = type(self).__new__(type(self))
        copy._set_state(*checked)
        return copy

    def inputs(self) -> dict[str, Value]:
        """The solver's inputs (every field but ``name`` and ``description``)."""
        held = self.__dict__
        return {name: held[name] for name in MODEL_FIELDS}

    @property
    def result(self) -> DataParallelScaleOutResult:
        """Evaluate this scenario through :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`.

        Evaluated once, on first read, then kept (as ``functools.cached_property``
        would, without its lock) beside the inputs, not among them: the result
        holds the input values themselves (it copies its model inputs only when
        they are read), and keeping it in their dict would make a reference cycle
        that only the garbage collector frees.
        """
        private = self._private()
        result = private["_result"]
        if result is None:
            from mlsysim.engine.solvers.data_parallel import solve_checked

            result = private["_result"] = solve_checked(
                self.__dict__, private["_numbers"], private["_job"]
            )
        return result

    def explain(self, format: str = "text") -> str:
        """The derivation of this scenario's result (see :meth:`DataParallelScaleOutResult.explain`)."""
        from mlsysim.engine.reports.explain import explain_result

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
        from mlsysim.models.registry import registry_name

        inputs: dict[str, JSONValue] = {}
        for name, value in self.inputs().items():
            if name == "workload":
                workload = cast(Workload, value)
                inputs[name] = registry_name(workload) or workload.name
            elif name == "assumptions":
                inputs[name] = encode(cast(Assumptions, value).fields())
            elif value is not None and FIELDS[name].kinds.name == "preset":
                inputs[name] = FIELDS[name].kinds.text(FIELDS[name], value)
            else:
                inputs[name] = encode(value)
        return {
            "scenario": self.name,
            "description": self.description,
            "inputs": inputs,
            "derived": dict(self.job.origins),
        }

    def __eq__(self, other: object) -> bool:
        """Equal inputs (given, filled or derived alike); how they were layered does not count."""
        if not isinstance(other, TrainingScenario):
            return NotImplemented
        return type(self) is type(other) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(_hashable(v) for v in self.fields().values()))

    def __repr__(self) -> str:
        label = f"{self.name!r}" if self.name else "unnamed"
        return f"<{type(self).__name__} {label}: {self.workload.name}, {self.nodes} x {self.devices_per_node} devices>"


class DataParallelScaleOutScenario(TrainingScenario):
    """The seed's scenario, by its seed name: a :class:`TrainingScenario`, exactly (the same inputs, checks and
    figures; the seed's three GPT-2 scenarios are of this class). The seed gave it a data-parallel job of
    ``workload`` on ``nodes`` nodes from a one-device profile; every input of :class:`TrainingScenario`
    (layouts, the hardware and the model's shape) is open to it too."""
