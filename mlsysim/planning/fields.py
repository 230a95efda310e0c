"""How each scenario field enters :class:`mlsysim.engine.model.Inputs` and :class:`Choices`.

The sweep validates every axis value with the scenario's own validator (the
pydantic annotation of the field), then needs the value in canonical SI units
for :func:`~mlsysim.engine.model.evaluate`. Numeric fields become broadcast
arrays; categorical fields (workload, precision, assumptions, zero_stage)
select one ``evaluate`` call per combination of their values.

The conversions mirror :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`
(an omitted optional field takes the neutral value of :class:`Inputs`:
``inter_bandwidth`` inf, ``node_hour_rate`` nan, one NIC, zero latency and
activation memory, unknown device memory), and ``tests/planning`` checks the
sweep against the scalar solve row by row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pydantic

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import to_canonical
from mlsysim.engine.model import Inputs
from mlsysim.engine.solvers.data_parallel import OPTIONAL_INPUTS


@dataclass(frozen=True)
class NumericField:
    """A scenario field that enters ``Inputs.<attr>`` as a number (or a numpy array)."""

    attr: str
    convert: Callable[[Any], float]  # a validated field value -> its canonical number
    missing: float | None = None  # the Inputs value when the field is None

    def canonical(self, value: Any) -> float:
        """The Inputs value of one validated field value."""
        if value is None:
            if self.missing is None:
                raise InputError(f"{self.attr}: a value is required")
            return self.missing
        return self.convert(value)


def _neutral(attr: str) -> float:
    """The :class:`Inputs` default of an attribute: the value of an omitted optional field."""
    return next(f.default for f in dataclasses.fields(Inputs) if f.name == attr)


def _unchanged(value: Any) -> Any:
    return value


NUMERIC_FIELDS: dict[str, NumericField] = {
    "step_time": NumericField("step_time", lambda v: to_canonical(v, "time")),
    "training_time": NumericField("training_time", lambda v: to_canonical(v, "time")),
    "per_device_batch": NumericField("per_device_batch", _unchanged),
    "devices_per_node": NumericField("devices_per_node", _unchanged),
    "nodes": NumericField("nodes", _unchanged),
    "intra_bandwidth": NumericField("intra_bandwidth", lambda v: to_canonical(v, "bandwidth")),
    "accumulation_steps": NumericField("accumulation_steps", _unchanged),
    **{
        field: NumericField(attr, convert, _neutral(attr))
        for field, (attr, convert) in OPTIONAL_INPUTS.items()
    },
}
"""Scenario field -> how it enters ``Inputs``: the optional ones exactly as the solver converts them."""

CATEGORICAL_FIELDS = (
    "workload",
    "precision",
    "assumptions",
    "zero_stage",
    "gradient_precision",
    "optimizer",
    "inter_transport",
)
"""Fields that change ``gradient_bytes``/``parameters`` or the :class:`Choices`: one evaluate call per value."""

NOT_SWEPT = ("name", "description")


def sweepable_fields(scenario_type: type) -> tuple[str, ...]:
    """The fields of ``scenario_type`` that a sweep can vary, in declaration order."""
    known = set(NUMERIC_FIELDS) | set(CATEGORICAL_FIELDS)
    return tuple(f for f in scenario_type.model_fields if f in known)


def unsupported_fields(scenario: Any) -> list[str]:
    """Fields the sweep does not know that hold a non-default value in ``scenario``.

    A field added to the scenario later reproduces the seed at its default
    (SPEC section 6), so ignoring it there is exact; anything else must be
    taught to :data:`NUMERIC_FIELDS` first.
    """
    known = set(NUMERIC_FIELDS) | set(CATEGORICAL_FIELDS) | set(NOT_SWEPT)
    fields = type(scenario).model_fields
    return [f for f in fields if f not in known and getattr(scenario, f) != fields[f].default]


@cache
def _adapter(scenario_type: type, field: str) -> pydantic.TypeAdapter:
    return pydantic.TypeAdapter(scenario_type.model_fields[field].rebuild_annotation())


def field_validator(scenario_type: type, field: str) -> Callable[[Any], Any]:
    """The scenario's own check of one field, raising :class:`InputError` naming the field."""
    adapter = _adapter(scenario_type, field)
    owner = scenario_type.__name__

    def check(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except pydantic.ValidationError as exc:
            message = "; ".join(e["msg"] for e in exc.errors(include_url=False))
            raise InputError(f"{owner}.{field}: {message}", field=field) from None

    return check
