"""Validators shared by every validated object (scenarios, workloads, assumptions).

Each ``check_*`` function takes a value and returns it normalised, or raises an
:class:`~mlsysim.core.exceptions.InputError` whose message says what was
received and what was expected; :func:`validated` turns pydantic's errors into
one :class:`InputError` that names the field. They are plain functions so the
solver, the scenario and the sweep run the same checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import TypeVar, cast

import pint
import pydantic
from pydantic_core import PydanticCustomError

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import known as suggest_known
from mlsysim.core.units import (
    Quantity,
    nonnegative_canonical,
    parse_quantity,
    positive_canonical,
)

T = TypeVar("T")


def describe(value: object) -> str:
    """A value as an error message names it: its repr and type, a Quantity as written, an integer
    too long to write out by its number of digits."""
    if isinstance(value, pint.Quantity):
        return f"{value:~P}"
    if isinstance(value, int) and value.bit_length() > _WRITTEN_BITS:
        return _long_int(value)
    return f"{value!r} ({type(value).__name__})"


_WRITTEN_BITS = 200
"""Integers up to this many bits are written out in messages; longer ones by their digit count
(Python refuses to write one of more than 4,300 digits)."""


def _long_int(value: int) -> str:
    """``"an integer of about 5,000 digits"``, without converting it to text."""
    sign = "a negative" if value < 0 else "an"
    return f"{sign} integer of about {round(value.bit_length() * math.log10(2)):,} digits"


MAX_INT = 10**15
"""Largest integer input (devices, nodes, batch, steps): far above any machine, far below float overflow."""


def check_positive_int(value: object) -> int:
    """A positive integer up to :data:`MAX_INT`: not a bool, a float, or a string."""
    if type(value) is int:
        if 0 < value <= MAX_INT:
            return value
    elif isinstance(value, Integral) and not isinstance(value, bool):
        value = int(value)
        if 0 < value <= MAX_INT:
            return value
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_INT:
        got = _long_int(value) if value.bit_length() > _WRITTEN_BITS else f"{value:.3g}"
        raise InputError(f"expected a positive integer up to 1e15, got {got}")
    raise InputError(f"expected a positive integer, got {describe(value)}")


def check_nonnegative_int(value: object) -> int:
    """An integer at or above zero: not a bool, a float, or a string."""
    if isinstance(value, Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    raise InputError(f"expected an integer at or above zero, got {describe(value)}")


def check_fraction(value: object, *, allow_zero: bool = False) -> float:
    """A plain number in (0, 1] (or [0, 1] with ``allow_zero``)."""
    if isinstance(value, Real) and not isinstance(value, bool):
        x = float(value)
        if (x >= 0.0 if allow_zero else x > 0.0) and x <= 1.0:
            return x
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    raise InputError(f"expected a number in {interval}, got {describe(value)}")


def check_nonnegative_float(value: object) -> float:
    """A plain finite number at or above zero."""
    if isinstance(value, Real) and not isinstance(value, bool):
        x = float(value)
        if 0.0 <= x < math.inf:
            return x
    raise InputError(f"expected a finite number at or above zero, got {describe(value)}")


def _quantity_check(kind: str, bound: Callable[[object, str], float]) -> Callable[[object], Quantity]:
    """Validator for a Quantity of ``kind`` within ``bound`` (which raises outside); text is read with
    :func:`~mlsysim.core.units.parse_quantity` (``"100 Gb/s"``). Returns the Quantity."""

    def check(value: object) -> Quantity:
        if isinstance(value, str):
            value = parse_quantity(value, kind)
        bound(value, kind)
        return cast(Quantity, value)  # the bound raised unless a pint Quantity

    return check


def check_positive_quantity(kind: str) -> Callable[[object], Quantity]:
    """Validator for a finite Quantity above zero of the given kind (text is parsed); returns the Quantity."""
    return _quantity_check(kind, positive_canonical)


def check_nonnegative_quantity(kind: str) -> Callable[[object], Quantity]:
    """Validator for a finite Quantity at or above zero of the given kind (text is parsed)."""
    return _quantity_check(kind, nonnegative_canonical)


def as_pydantic(check: Callable[[object], T]) -> Callable[[object], T]:
    """Wrap a ``check_*`` so pydantic keeps our :class:`InputError` (message and location)."""

    def validator(value: object) -> T:
        try:
            return check(value)
        except InputError as exc:
            raise PydanticCustomError("mlsysim", "{message}", {"message": str(exc), "error": exc}) from None

    validator.__name__ = getattr(check, "__name__", "check")
    return validator


def input_error(owner: str, errors: list[InputError]) -> InputError:
    """One :class:`InputError` of ``owner`` carrying every located error (the first leads; see ``errors()``)."""
    first = errors[0].at(owner=owner)
    first.others = tuple(e.at(owner=owner) for e in errors[1:])
    return first


def format_pydantic_error(
    owner: str, exc: pydantic.ValidationError, known: list[str]
) -> InputError:
    """One :class:`InputError` from pydantic's errors, located at the first field."""
    errors = []
    for err in exc.errors(include_url=False):
        loc = tuple(str(p) for p in err.get("loc", ()))
        kind = err.get("type")
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, InputError):
            errors.append(inner.at(*loc))
            continue
        if kind == "extra_forbidden":
            msg = f"unknown field; {suggest_known(loc[-1] if loc else '', known)}"
        elif kind == "missing":
            msg = "required field is missing"
        else:
            msg = f"{err['msg']}, got {describe(err.get('input'))}"
        errors.append(InputError(msg, loc=loc))
    return input_error(owner, errors)


M = TypeVar("M", bound="Validated")


class Validated(pydantic.BaseModel):
    """Base of the validated, frozen, keyword-constructed objects.

    Unknown fields are rejected, every value is checked at construction, and
    pydantic's errors become one :class:`InputError` naming the field.
    """

    model_config = pydantic.ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, validate_default=False
    )

    def __init__(self, **data: object) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise format_pydantic_error(
                type(self).__name__, exc, list(type(self).model_fields)
            ) from None

    def fields(self) -> dict[str, object]:
        """The declared fields and their values, as a new dict (no copies of the values)."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def variant(self: M, **changes: object) -> M:
        """A copy with some fields changed, validated exactly like a new construction."""
        data = self.fields()
        data.update(changes)
        return type(self)(**data)
