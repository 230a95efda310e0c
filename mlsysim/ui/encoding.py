"""The UI's JSON encoding of library values, in one function, on top of :mod:`mlsysim.core.jsonio`.

A quantity is ``{"value": x, "unit": "<pint-parsable unit>"}`` (money included),
spelled by :func:`mlsysim.core.jsonio.encode`. What the UI adds: a figure that
is not known (NaN: the cost without a price, a sweep's unknown device memory)
is ``null`` rather than an error, numpy arrays become lists, a workload or
other registry entry is its name, and assumptions are a table of their fields.
"""

from __future__ import annotations

import math

from mlsysim.core.jsonio import SCHEMA_VERSION, JSONValue, encode

__all__ = ["SCHEMA_VERSION", "json_value"]


def json_value(value: object) -> JSONValue:
    """``value`` as plain JSON data (see the module docstring for the rules).

    >>> from mlsysim import Q_
    >>> json_value({"t": Q_(4650.0, "ms"), "eff": float("nan"), "n": (1, 2)})
    {'t': {'value': 4650.0, 'unit': 'millisecond'}, 'eff': None, 'n': [1, 2]}
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        magnitude = value.magnitude
        if isinstance(magnitude, float) and not math.isfinite(magnitude):
            return None
        return encode(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return json_value(value.tolist())
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    fields = getattr(value, "fields", None)
    if callable(fields) and hasattr(value, "is_seed"):  # Assumptions
        return json_value(fields())
    name = getattr(value, "name", None)
    if isinstance(name, str):  # a registry entry (workload, accelerator, fabric)
        return name
    return encode(value)
