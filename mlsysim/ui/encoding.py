"""The UI's JSON encoding of library values, in one function.

A quantity is ``{"value": x, "unit": "<pint-parsable unit>"}`` (money included),
NaN and infinities are ``null``, numpy scalars and arrays become plain numbers
and lists, a workload is its registry name, assumptions are a table of their
fields. When ``mlsysim.core.jsonio`` lands, :func:`json_value` becomes a call to it.
"""

from __future__ import annotations

import math
from typing import Any

SCHEMA_VERSION = 1
"""Top-level ``schema_version`` of every JSON answer of the UI's API."""


def json_value(value: Any) -> Any:
    """``value`` as plain JSON data (see the module docstring for the rules).

    >>> from mlsysim import Q_
    >>> json_value({"t": Q_(4650.0, "ms"), "eff": float("nan"), "n": (1, 2)})
    {'t': {'value': 4650.0, 'unit': 'millisecond'}, 'eff': None, 'n': [1, 2]}
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        return {"value": json_value(float(value.magnitude)), "unit": f"{value.units:D}"}
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
    return str(value)
