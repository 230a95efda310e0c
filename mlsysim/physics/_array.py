"""Scalar/array dispatch: Python's math on floats (fast), numpy on arrays."""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import numpy as np

Array: TypeAlias = "np.ndarray[Any, Any]"
"""A numpy array of figures or codes, one per layout of a sweep."""

Num: TypeAlias = "float | Array"
"""A figure of one layout (a float) or of many (a numpy array broadcast with the others)."""

_ndarray = np.ndarray


def is_array(*values: object) -> bool:
    for v in values:  # noqa: SIM110 - a plain loop; any() over a generator costs more here
        if type(v) is _ndarray:
            return True
    return False


def maximum(a: Num, b: Num) -> Num:
    return np.maximum(a, b) if type(a) is _ndarray or type(b) is _ndarray else max(a, b)


def minimum(a: Num, b: Num) -> Num:
    return np.minimum(a, b) if type(a) is _ndarray or type(b) is _ndarray else min(a, b)


def ceil(a: Num) -> Num:
    return np.ceil(a) if type(a) is _ndarray else float(math.ceil(a))


def sqrt(a: Num) -> Num:
    return np.sqrt(a) if type(a) is _ndarray else math.sqrt(a)


def log(a: Num) -> Num:
    return np.log(a) if type(a) is _ndarray else math.log(a)


def log2(a: Num) -> Num:
    return np.log2(a) if type(a) is _ndarray else math.log2(a)


def where(condition: Num, a: Num, b: Num) -> Num:
    if type(condition) is _ndarray or type(a) is _ndarray or type(b) is _ndarray:
        return np.where(condition, a, b)
    return a if condition else b


def plain(value: Num) -> Num:
    """A numpy result as the caller's kind: a 0-d array as a float (an int for integer codes), an array as it is."""
    array = np.asarray(value)
    if array.ndim:
        return array
    return int(array) if array.dtype.kind in "iu" else float(array)
