"""The one unit registry of the project, and fast conversion to SI floats.

Every physical input and output at the public boundary is a pint Quantity of
:data:`ureg`. Inside, the model computes on plain floats in canonical units
(seconds, bytes, bytes per second, US dollars), obtained with
:func:`to_canonical`, which caches the conversion factor per unit so that a
conversion costs a dictionary look-up and a multiplication instead of pint's
unit parsing and graph search.
"""

from __future__ import annotations

import math
from importlib.resources import files
from numbers import Real
from typing import TYPE_CHECKING, Any, TypeAlias

import pint

from mlsysim.core.exceptions import UnitsError


def _definitions() -> list[str]:
    """pint's default definitions, with information as a dimension of its own.

    pint defines ``bit = []`` (dimensionless), which would let a plain number
    pass for a data size and ``1/s`` for a bandwidth. Here ``bit`` is the base
    unit of ``[information]``, and ``bps`` means bit per second (pint aliases
    it to baud, which prints as "Bd").
    """
    root = files("pint")
    text = root.joinpath("default_en.txt").read_text(encoding="utf-8")
    text = text.replace(
        "@import constants_en.txt", root.joinpath("constants_en.txt").read_text(encoding="utf-8")
    )
    patched = text.replace("\nbit = []\n", "\nbit = [information]\n").replace(
        "baud = bit / second = Bd = bps",
        "baud = bit / second = Bd\nbps = bit / second\n"
        "kbps = 1e3 * bps\nMbps = 1e6 * bps\nGbps = 1e9 * bps\nTbps = 1e12 * bps",
    )
    if patched.count("[information]") != 1 or "\nbps = bit / second" not in patched:
        raise RuntimeError(
            "pint's default definitions changed: cannot make information a dimension"
        )
    return patched.splitlines()


ureg: pint.UnitRegistry = pint.UnitRegistry(None, cache_folder=None)
ureg.load_definitions(_definitions())
ureg.define("param = [parameter_count] = _ = params = parameter = parameters")
ureg.define("flop = [floating_point_operation] = _ = flops = FLOP")
ureg.define("USD = [currency] = _ = dollar = dollars = usd")
ureg.define("token = [token] = _ = tokens")
ureg.define("sample = [sample] = _ = samples")
ureg.formatter.default_format = "~P"

Q_ = ureg.Quantity
if TYPE_CHECKING:
    Quantity: TypeAlias = pint.Quantity
else:
    Quantity = ureg.Quantity
    """A number with units (pint). Build one with ``Q_(450, "GB/s")`` or ``Q_("450 GB/s")``."""

# Canonical unit of each physical kind the model uses: (unit, description for errors).
KINDS: dict[str, tuple[Any, str]] = {
    "time": (ureg.second, "a time (e.g. Q_(1.8, 's'))"),
    "data": (ureg.byte, "a data size (e.g. Q_(3, 'GB'))"),
    "bandwidth": (
        ureg.byte / ureg.second,
        "a bandwidth in bytes or bits per time (e.g. Q_(450, 'GB/s') or Q_(10, 'Gbps'))",
    ),
    "money": (ureg.USD, "an amount of money (e.g. Q_(5000, 'USD'))"),
    "money_rate": (ureg.USD / ureg.hour, "a price per time (e.g. Q_(32, 'USD/hour'))"),
    "count": (ureg.param, "a parameter count (e.g. Q_(7e9, 'param'))"),
    "compute_rate": (ureg.flop / ureg.second, "a compute rate (e.g. Q_(989, 'Tflop/s'))"),
    "compute": (ureg.flop, "an amount of computation (e.g. Q_(5e14, 'flop'))"),
    "tokens": (ureg.token, "a number of tokens (e.g. Q_(1e12, 'token'))"),
    "samples": (ureg.sample, "a number of samples (e.g. Q_(1.2e6, 'sample'))"),
}

_FACTORS: dict[str, dict[Any, float]] = {kind: {} for kind in KINDS}


def _factor(kind: str, units: Any) -> float:
    """Multiplier from ``units`` to the kind's canonical unit (computed once per unit, then cached)."""
    cache = _FACTORS[kind]
    factor = cache.get(units)
    if factor is None:
        canonical, what = KINDS[kind]
        try:
            factor = float(ureg.Quantity(1.0, units).to(canonical).magnitude)
        except pint.DimensionalityError:
            got = ureg.Unit(units)
            if got.dimensionless:
                raise UnitsError(f"expected {what}, got a dimensionless number") from None
            raise UnitsError(f"expected {what}, got units of {got!s}") from None
        cache[units] = factor
    return factor


def to_canonical(value: Any, kind: str) -> float:
    """Return ``value`` (a Quantity of the given kind) as a float in the kind's canonical unit.

    Raises :class:`UnitsError` for a plain number, a string or a wrong dimension.
    """
    if type(value) is Quantity:  # the common case, checked without isinstance's ABC machinery
        magnitude = value._magnitude
        if type(magnitude) is float or type(magnitude) is int:
            factor = _FACTORS[kind].get(value._units)
            if factor is None:
                factor = _factor(kind, value._units)
            return magnitude * factor
    return _to_canonical_slow(value, kind)


def _to_canonical_slow(value: Any, kind: str) -> float:
    if not isinstance(value, pint.Quantity):
        what = KINDS[kind][1]
        if isinstance(value, str):
            raise UnitsError(
                f"expected {what}, got the string {value!r}; pass mlsysim.Q_({value!r})"
            )
        raise UnitsError(f"expected {what}, got {value!r} without units")
    if not isinstance(value, ureg.Quantity):  # from another pint registry
        value = ureg.Quantity(value.magnitude, str(value.units))
    magnitude = value._magnitude
    if not isinstance(magnitude, Real) or isinstance(magnitude, bool):
        raise UnitsError(f"expected a single number with units, got {value!r}")
    return float(magnitude) * _factor(kind, value._units)


def positive_canonical(value: Any, kind: str) -> float:
    """:func:`to_canonical`, then require a finite value above zero."""
    x = to_canonical(value, kind)
    if not (x > 0.0 and x != math.inf):  # also rejects NaN
        raise UnitsError(f"expected a finite value above zero, got {value:~P}")
    return x


def nonnegative_canonical(value: Any, kind: str) -> float:
    """:func:`to_canonical`, then require a finite value at or above zero."""
    x = to_canonical(value, kind)
    if not (x >= 0.0 and x != math.inf):
        raise UnitsError(f"expected a finite value at or above zero, got {value:~P}")
    return x


_UNITS: dict[str, Any] = {}


def unit(name: str) -> Any:
    """The cached ``ureg.Unit(name)``: build Quantities with ``Q_(x, unit("ms"))``."""
    u = _UNITS.get(name)
    if u is None:
        u = _UNITS[name] = ureg.Unit(name)
    return u


def quantity(magnitude: Any, unit_name: str) -> Any:
    """Fast ``Q_(magnitude, unit_name)`` with the unit object cached."""
    return Quantity(magnitude, unit(unit_name))


def parse_quantity(text: str, kind: str | None = None) -> Any:
    """Parse ``"100 Gbps"`` into a Quantity; check its kind when given.

    Raises :class:`UnitsError` naming the text when it cannot be parsed.
    """
    try:
        q: Any = ureg.Quantity(text)
    except Exception as exc:  # pint's tokenizer and parser raise many unrelated types on garbage
        raise UnitsError(f"cannot read {text!r} as a quantity with units ({exc})") from None
    if not isinstance(q, pint.Quantity):
        q = ureg.Quantity(q)
    if kind is not None:
        to_canonical(q, kind)
    return q
