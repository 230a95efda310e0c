"""The result of a data-parallel scale-out solve: an immutable, typed value.

Figures are held as floats in canonical units and turned into Quantities of
the documented unit when read (and cached), so a solve costs no more pint
work than the fields a caller actually reads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from mlsysim.core.units import unit, ureg

# name -> (unit the field is reported in, factor from the canonical SI value), or a plain type.
QUANTITY_FIELDS: dict[str, tuple[str, float]] = {
    "gradient_bytes": ("byte", 1.0),
    "intra_bytes": ("byte", 1.0),
    "inter_bytes": ("byte", 1.0),
    "intra_time": ("millisecond", 1e3),
    "inter_time": ("millisecond", 1e3),
    "communication_time": ("millisecond", 1e3),
    "exposed_communication_time": ("millisecond", 1e3),
    "hidden_communication_time": ("millisecond", 1e3),
    "synchronization_time": ("millisecond", 1e3),
    "compute_time": ("millisecond", 1e3),
    "update_time": ("millisecond", 1e3),
    "training_time": ("hour", 1.0 / 3600.0),
    "memory_per_device": ("byte", 1.0),
}
OPTIONAL_QUANTITY_FIELDS: dict[str, tuple[str, float]] = {
    "device_memory": ("byte", 1.0),
}
FLOAT_FIELDS = (
    "communication_overhead",
    "compute_share",
    "communication_share",
    "synchronization_share",
    "speedup",
    "efficiency",
)
INT_FIELDS = ("n_devices", "global_batch")
OTHER_FIELDS = (
    "cost",
    "fits",
    "algorithm",
    "intra_algorithm",
    "inter_algorithm",
    "bottleneck",
)

SEED_FIELDS = (
    "n_devices",
    "gradient_bytes",
    "intra_bytes",
    "inter_bytes",
    "intra_time",
    "inter_time",
    "communication_time",
    "compute_time",
    "update_time",
    "communication_overhead",
    "compute_share",
    "communication_share",
    "speedup",
    "efficiency",
    "global_batch",
    "training_time",
    "cost",
)
"""The result fields of SPEC section 4, in its order."""

FIELDS = (
    *SEED_FIELDS,
    "exposed_communication_time",
    "hidden_communication_time",
    "synchronization_time",
    "synchronization_share",
    "algorithm",
    "intra_algorithm",
    "inter_algorithm",
    "bottleneck",
    "memory_per_device",
    "device_memory",
    "fits",
    "constraint_trace",
)
"""Every result field: the seed's, then those of the opt-in model."""


def field_unit(name: str) -> str | None:
    """The unit a field is reported in (``"millisecond"``), ``"USD"`` for cost, or None."""
    if name in QUANTITY_FIELDS:
        return QUANTITY_FIELDS[name][0]
    if name in OPTIONAL_QUANTITY_FIELDS:
        return OPTIONAL_QUANTITY_FIELDS[name][0]
    if name == "cost":
        return "USD"
    return None


class DataParallelScaleOutResult:
    """Figures of one data-parallel layout (SPEC section 4 "Result fields and units").

    Physical fields are Quantities (bytes in ``byte``, times in ``millisecond``,
    ``training_time`` in ``hour``); ratios are floats; ``cost`` is a float in
    US dollars, or None when no node price was given. The opt-in model adds
    exposed/hidden communication, synchronisation, the algorithm per level,
    the bottleneck, memory per device and a ``constraint_trace`` of notes.

    ``inputs`` holds the inputs that produced it (for :meth:`explain`).
    """

    __slots__ = ("_values", "_cache", "_trace", "inputs")

    def __init__(
        self,
        values: Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        trace: Callable[[], tuple[str, ...]] | None = None,
    ) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_trace", trace)
        object.__setattr__(self, "inputs", MappingProxyType(dict(inputs or {})))

    @property
    def constraint_trace(self) -> tuple[str, ...]:
        """Short notes on what limits this layout and which choices applied (computed when first read)."""
        trace = self._cache.get("constraint_trace")
        if trace is None:
            trace = self._values.get("constraint_trace")
            if trace is None:
                trace = tuple(self._trace()) if self._trace is not None else ()
            self._cache["constraint_trace"] = trace
        return trace

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"{type(self).__name__} is immutable; use scenario.variant(...) to change inputs"
        )

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataParallelScaleOutResult):
            return NotImplemented
        mine = {k: v for k, v in self._values.items() if k != "constraint_trace"}
        theirs = {k: v for k, v in other._values.items() if k != "constraint_trace"}
        return mine == theirs

    def __hash__(self) -> int:
        return hash(
            tuple(sorted((k, v) for k, v in self._values.items() if k != "constraint_trace"))
        )

    def __repr__(self) -> str:
        v = self._values
        return (
            f"DataParallelScaleOutResult(n_devices={v['n_devices']}, "
            f"update_time={v['update_time'] * 1e3:.6g} ms, speedup={v['speedup']:.6g}, "
            f"efficiency={v['efficiency']:.6g}, training_time={v['training_time'] / 3600:.6g} h, "
            f"cost={v['cost']!r})"
        )

    def raw(self, name: str) -> Any:
        """A field's value as a float in canonical SI units (seconds, bytes), or as stored."""
        return self._values[name]

    def to_dict(self, *, seed_only: bool = False) -> dict[str, Any]:
        """Plain Python values: Quantities as ``{"value": float, "unit": "millisecond"}``."""
        out: dict[str, Any] = {}
        for name in SEED_FIELDS if seed_only else FIELDS:
            value = getattr(self, name)
            if hasattr(value, "magnitude"):
                out[name] = {"value": float(value.magnitude), "unit": field_unit(name)}
            elif isinstance(value, tuple):
                out[name] = list(value)
            else:
                out[name] = value
        return out

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), **{"allow_nan": False, **kwargs})

    def explain(self, format: str = "text") -> str:
        """The derivation of every figure, equation by equation with numbers and units.

        ``format`` is ``"text"`` or ``"markdown"``.
        """
        from mlsysim.engine.explain import explain_result

        return explain_result(self, format=format)


def _quantity_property(name: str, unit_name: str, factor: float, optional: bool) -> property:
    def get(self: DataParallelScaleOutResult) -> Any:
        cache = self._cache
        q = cache.get(name)
        if q is None:
            raw = self._values[name]
            if optional and (raw is None or raw != raw):
                return None
            q = cache[name] = ureg.Quantity(raw * factor, unit(unit_name))
        return q

    get.__name__ = name
    return property(get, doc=f"{name} as a Quantity in {unit_name}")


def _plain_property(name: str) -> property:
    def get(self: DataParallelScaleOutResult) -> Any:
        return self._values[name]

    get.__name__ = name
    return property(get)


for _name, (_unit, _factor) in QUANTITY_FIELDS.items():
    setattr(DataParallelScaleOutResult, _name, _quantity_property(_name, _unit, _factor, False))
for _name, (_unit, _factor) in OPTIONAL_QUANTITY_FIELDS.items():
    setattr(DataParallelScaleOutResult, _name, _quantity_property(_name, _unit, _factor, True))
for _name in (*FLOAT_FIELDS, *INT_FIELDS, *OTHER_FIELDS):
    setattr(DataParallelScaleOutResult, _name, _plain_property(_name))
del _name, _unit, _factor


def finite_or_none(value: float) -> float | None:
    """A float, or None for NaN (a figure that was not asked for)."""
    return None if value is None or math.isnan(value) else value
