"""Scalar/array dispatch: Python's math on floats (fast), numpy on arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def is_array(*values: Any) -> bool:
    return any(type(v) is np.ndarray for v in values)


def maximum(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if is_array(a, b) else max(a, b)


def minimum(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if is_array(a, b) else min(a, b)


def ceil(a: Any) -> Any:
    return np.ceil(a) if is_array(a) else float(math.ceil(a))


def sqrt(a: Any) -> Any:
    return np.sqrt(a) if is_array(a) else math.sqrt(a)


def log(a: Any) -> Any:
    return np.log(a) if is_array(a) else math.log(a)


def log2(a: Any) -> Any:
    return np.log2(a) if is_array(a) else math.log2(a)


def where(condition: Any, a: Any, b: Any) -> Any:
    if is_array(condition, a, b):
        return np.where(condition, a, b)
    return a if condition else b
