"""The project's one JSON encoding, shared by every command and by Python.

* A quantity is ``{"value": x, "unit": "<unit>"}`` with the unit spelled the
  way the unit registry parses it back (``"millisecond"``,
  ``"gigabyte / second"``, ``"USD"``); money is a quantity of ``USD``.
* Documents carry ``"schema_version"`` at the top (:func:`document`).
* Output is strict JSON: NaN and infinities are errors, never ``NaN`` or
  ``Infinity`` in the text.

>>> from mlsysim import Q_
>>> encode(Q_(450, "GB/s"))
{'value': 450.0, 'unit': 'gigabyte / second'}
>>> encode(12.5, unit="USD")
{'value': 12.5, 'unit': 'USD'}
>>> decode_quantity({"value": 1.5, "unit": "hour"})
<Quantity(1.5, 'hour')>
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import TypeAlias

import pint

from mlsysim.core.exceptions import InputError

JSONValue: TypeAlias = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]
"""A value of a JSON document, as :func:`json.loads` returns it."""

SCHEMA_VERSION = 1
"""Version of the JSON documents' layout; raised when a field changes meaning or moves."""


def unit_text(units: object) -> str:
    """The one spelling of a unit: the long names pint parses back (``"gigabyte / second"``)."""
    return format(units, "D")


def encode(value: object, *, unit: str | None = None) -> JSONValue:
    """A JSON-ready value: quantities (and figures with a ``unit``) as ``{"value", "unit"}``.

    ``unit`` says the unit of a plain number (``cost`` in ``"USD"``) or the unit
    a quantity is reported in. Tuples become lists, enums their names, and
    mappings are encoded value by value.
    """
    if isinstance(value, pint.Quantity):
        q = value if unit is None else value.to(unit)
        return {"value": finite(float(q.magnitude)), "unit": unit_text(q.units)}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, Enum):
        return value.name.lower()
    if isinstance(value, int):
        return value if unit is None else {"value": float(value), "unit": unit}
    if isinstance(value, float):
        return finite(value) if unit is None else {"value": finite(value), "unit": unit}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return encode(value.item(), unit=unit)
    raise TypeError(f"no JSON encoding for {type(value).__name__}")


def finite(x: float) -> float:
    """``x``, or an error for NaN and infinities (strict JSON has no place for them)."""
    if math.isnan(x) or math.isinf(x):
        raise InputError(f"the figure {x!r} is not finite; check the inputs for extreme values")
    return x


def decode_quantity(data: Mapping[str, JSONValue]) -> pint.Quantity:
    """The Quantity of ``{"value": x, "unit": u}``."""
    from mlsysim.core.units import ureg

    try:
        # a value that is no number raises TypeError or ValueError, reported below
        return ureg.Quantity(float(data["value"]), str(data["unit"]))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, pint.errors.PintError) as exc:
        raise InputError(f"expected {{'value': number, 'unit': text}}, got {data!r} ({exc})") from None


def document(kind: str, body: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """A top-level JSON document: ``{"schema_version": 1, "kind": kind, ...body}``."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **body}


def dumps(data: JSONValue, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text (``allow_nan=False``) of an encoded value; ``indent`` and ``sort_keys`` as
    :func:`json.dumps`."""
    return json.dumps(data, allow_nan=False, indent=indent, sort_keys=sort_keys)
