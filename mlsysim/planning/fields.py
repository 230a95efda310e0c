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

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pydantic

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import to_canonical


@dataclass(frozen=True)
class NumericField:
    """A scenario field that enters ``Inputs.<attr>`` as a number (or a numpy array)."""

    attr: str
    kind: str | None  # a unit kind of :func:`to_canonical`, or None for an integer
    missing: float | None = None  # the Inputs value when the field is None

    def canonical(self, value: Any) -> float:
        """The Inputs value of one validated field value."""
        if value is None:
            if self.missing is None:
                raise InputError(f"{self.attr}: a value is required")
            return self.missing
        if self.kind is None:
            return value
        return to_canonical(value, self.kind)


NUMERIC_FIELDS: dict[str, NumericField] = {
    "step_time": NumericField("step_time", "time"),
    "training_time": NumericField("training_time", "time"),
    "per_device_batch": NumericField("per_device_batch", None),
    "devices_per_node": NumericField("devices_per_node", None),
    "nodes": NumericField("nodes", None),
    "intra_bandwidth": NumericField("intra_bandwidth", "bandwidth"),
    "inter_bandwidth": NumericField("inter_bandwidth", "bandwidth", math.inf),
    "accumulation_steps": NumericField("accumulation_steps", None),
    "node_hour_rate": NumericField("node_hour_rate", "money_rate", math.nan),
    "nics_per_node": NumericField("nics", None, 1.0),
    "intra_latency": NumericField("intra_latency", "time", 0.0),
    "inter_latency": NumericField("inter_latency", "time", 0.0),
    "activation_memory": NumericField("activation_bytes", "data", 0.0),
    "device_memory": NumericField("device_memory", "data", math.nan),
}
"""Scenario field -> how it enters ``Inputs`` (as the solver converts it)."""

CATEGORICAL_FIELDS = ("workload", "precision", "assumptions", "zero_stage")
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
