"""The one unit registry of the project, and fast conversion to SI floats.

Every physical input and output at the public boundary is a pint Quantity of
:data:`ureg`. Inside, the model computes on plain floats in canonical units
(seconds, bytes, bytes per second, US dollars), obtained with
:func:`to_canonical`, which caches the conversion factor per unit so that a
conversion costs a dictionary look-up and a multiplication instead of pint's
unit parsing and graph search.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from importlib.resources import files
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast


def _import_pint_without_dask() -> None:
    """Import pint without the dask integration it loads when dask is installed.

    pint's ``compat`` imports ``dask.base`` whenever dask can be found, to let
    Quantities wrap dask arrays; that costs about 0.2 s of every start of
    ``mlsysim`` on a machine with the ``dask`` extra, and mlsysim never puts a
    Quantity in a dask array (plans send plain numbers to dask workers). So
    dask is hidden from pint's one look-up (``find_spec`` returns None for a
    ``None`` entry of ``sys.modules``) and shown again at once; ``import dask``
    works as usual afterwards.
    """
    if "pint" in sys.modules or "dask" in sys.modules:
        return
    sys.modules["dask"] = None  # type: ignore[assignment]
    try:
        import pint  # noqa: F401
    finally:
        del sys.modules["dask"]


_import_pint_without_dask()

import pint  # noqa: E402
from pint.util import UnitsContainer  # noqa: E402

from mlsysim.core.exceptions import InputError, UnitsError  # noqa: E402
from mlsysim.core.suggest import did_you_mean, example, examples, nearest_list  # noqa: E402


def _definitions() -> list[str]:
    """pint's default definitions, with information as a dimension of its own.

    pint defines ``bit = []`` (dimensionless), which would let a plain number
    pass for a data size and ``1/s`` for a bandwidth. Here ``bit`` is the base
    unit of ``[information]``, and ``bps`` means bit per second (pint aliases
    it to baud, which prints as "Bd").

    Networking spellings mean bits, as people write them: ``b`` is the bit's
    symbol (so ``Kb``, ``Mb``, ``Gb``, ``Tb`` are kilo- to terabits, not
    kilobarns or gilberts: barn and gilbert lose their symbols), ``KB`` is a
    kilobyte and ``Kbps`` a kilobit per second; ``Bps`` is a byte per second
    (``GBps`` a gigabyte per second, with pint's prefixes), as B is a byte.
    """
    root = files("pint")
    text = root.joinpath("default_en.txt").read_text(encoding="utf-8")
    text = text.replace(
        "@import constants_en.txt", root.joinpath("constants_en.txt").read_text(encoding="utf-8")
    )
    patched = (
        text.replace("\nbit = []\n", "\nbit = [information] = b\n")
        .replace(
            "baud = bit / second = Bd = bps",
            "baud = bit / second = Bd\nbps = bit / second\n"
            "kbps = 1e3 * bps = _ = Kbps\nMbps = 1e6 * bps\nGbps = 1e9 * bps\nTbps = 1e12 * bps\n"
            "Kb = 1e3 * bit\nKB = 1e3 * byte\nBps = byte / second\nKBps = 1e3 * Bps",
        )
        .replace("barn = 1e-28 * meter ** 2 = b\n", "barn = 1e-28 * meter ** 2\n")
        .replace("* biot_turn = Gb\n", "* biot_turn\n")
    )
    if (
        patched.count("[information] = b\n") != 1
        or "\nbps = bit / second" not in patched
        or "= Gb\n" in patched
        or "meter ** 2 = b\n" in patched
        or "\nBps = byte / second" not in patched
    ):
        raise RuntimeError(
            "pint's default definitions changed: cannot make information a dimension"
        )
    return patched.splitlines()


def cache_dir() -> Path | None:
    """Where parsed definitions are kept between runs: ``$MLSYSIM_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/mlsysim`` (``~/.cache/mlsysim``); ``MLSYSIM_CACHE_DIR=off`` keeps none."""
    chosen = os.environ.get("MLSYSIM_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "none") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlsysim"


def _registry() -> pint.UnitRegistry:
    """The unit registry, from pint's cache of parsed definitions where one can be kept.

    Parsing pint's definitions costs about 0.3 s at every start; pint keeps the
    parsed form in its disk cache, keyed by the definitions file. The file is
    named after the hash of its text, so a change of pint's definitions or of
    the patch above makes a new one (the cache is invalidated by content). Every
    kind of trouble with the cache (a read-only home, a file half written by another
    process) falls back to parsing, the same registry either way.
    """
    lines = _definitions()
    text = "\n".join(lines) + "\n"
    folder = cache_dir()
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"units-{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt"
            if not path.exists():
                partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
                partial.write_text(text, encoding="utf-8")
                os.replace(partial, path)
            cached: pint.UnitRegistry = pint.UnitRegistry(str(path), cache_folder=folder / "pint")
            cached.default_system = None  # type: ignore[assignment]  # as the parsed registry below
            return cached
        except Exception:  # noqa: BLE001 - any cache failure: parse instead (same result)
            pass
    registry: pint.UnitRegistry = pint.UnitRegistry(None, cache_folder=None)
    registry.load_definitions(lines)
    return registry


ureg: pint.UnitRegistry = _registry()
ureg.define("param = [parameter_count] = _ = params = parameter = parameters")
ureg.define("flop = [floating_point_operation] = _ = flops = FLOP")
ureg.define("USD = [currency] = _ = dollar = dollars = usd")
ureg.define("token = [token] = _ = tokens")
ureg.define("sample = [sample] = _ = samples")
ureg.define("failure = [] = _ = failures = interruption = interruptions")
ureg.define("device = [device] = _ = devices")  # a rate per device: failures/device/hour
ureg.formatter.default_format = "~P"

Q_ = ureg.Quantity
if TYPE_CHECKING:
    Quantity: TypeAlias = pint.Quantity
else:
    Quantity = ureg.Quantity
    """A number with units (pint). Build one with ``Q_(450, "GB/s")`` or ``Q_("450 GB/s")``."""

# Canonical unit of each physical kind the model uses: (unit, what it is, for errors).
KINDS: dict[str, tuple[pint.Unit, str]] = {
    "time": (ureg.second, "a time"),
    "data": (ureg.byte, "a data size"),
    "bandwidth": (ureg.byte / ureg.second, "a bandwidth in bytes or bits per time"),
    "money": (ureg.USD, "an amount of money"),
    "money_rate": (ureg.USD / ureg.hour, "a price per time"),
    "count": (ureg.param, "a parameter count"),
    "compute_rate": (ureg.flop / ureg.second, "a compute rate"),
    "compute": (ureg.flop, "an amount of computation"),
    "tokens": (ureg.token, "a number of tokens"),
    "samples": (ureg.sample, "a number of samples"),
    "power": (ureg.watt, "a power"),
    "energy": (ureg.joule, "an energy"),
    "mass": (ureg.kilogram, "a mass, here of CO2-equivalent emissions"),
    "carbon_intensity": (ureg.kilogram / ureg.joule, "a mass of CO2-equivalent per energy"),
    "energy_price": (ureg.USD / ureg.joule, "a price per energy"),
    "failure_rate": (ureg.failure / ureg.device / ureg.second, "a failure rate per device"),
    "event_rate": (ureg.failure / ureg.second, "a rate of failures of a whole job or of one part"),
}

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "time": (("1.8", "s"),),
    "data": (("3", "GB"),),
    "bandwidth": (("450", "GB/s"), ("10", "Gbps")),
    "money": (("5000", "USD"),),
    "money_rate": (("32", "USD/hour"),),
    "count": (("7e9", "param"),),
    "compute_rate": (("989", "Tflop/s"),),
    "compute": (("5e14", "flop"),),
    "tokens": (("1e12", "token"),),
    "samples": (("1.2e6", "sample"),),
    "power": (("700", "W"),),
    "energy": (("1287", "MWh"),),
    "mass": (("552", "t"),),
    "carbon_intensity": (("400", "g/kWh"),),
    "energy_price": (("0.08", "USD/kWh"),),
    "failure_rate": (("2e-5", "failures/device/hour"),),
    "event_rate": (("8.6", "interruptions/day"),),
}
"""Example values of each kind (number, unit), written in the caller's syntax by
:func:`mlsysim.core.suggest.examples` when a message needs one."""


EXAMPLE_NOTES: dict[str, str] = {
    "mass": "tonnes of CO2e",
}
"""What an example of these kinds means, said after it."""


def expected(kind: str) -> str:
    """What a value of ``kind`` is, with examples in the caller's syntax.

    >>> expected("time")
    "a time (e.g. Q_(1.8, 's'))"
    >>> expected("mass")
    "a mass, here of CO2-equivalent emissions (e.g. Q_(552, 't'), tonnes of CO2e)"
    """
    note = EXAMPLE_NOTES.get(kind)
    return f"{KINDS[kind][1]} ({examples(EXAMPLES[kind])}{f', {note}' if note else ''})"


FACTORS: dict[str, dict[UnitsContainer, float]] = {kind: {} for kind in KINDS}
"""Per kind, the factor from each unit seen so far to the kind's canonical unit (filled by :func:`to_canonical`)."""


def _factor(kind: str, units: UnitsContainer) -> float:
    """Multiplier from ``units`` to the kind's canonical unit (computed once per unit, then cached)."""
    cache = FACTORS[kind]
    factor = cache.get(units)
    if factor is None:
        canonical, what = KINDS[kind][0], expected(kind)
        try:
            factor = float(ureg.Quantity(1.0, units).to(canonical).magnitude)
        except pint.DimensionalityError:
            got = ureg.Unit(units)
            if got.dimensionless:
                raise UnitsError(f"expected {what}, got a dimensionless number") from None
            raise UnitsError(f"expected {what}, got units of {got!s}") from None
        cache[units] = factor
    return factor


def to_canonical(value: object, kind: str) -> float:
    """Return ``value`` (a Quantity of the given kind) as a float in the kind's canonical unit.

    Raises :class:`UnitsError` for a plain number, a string or a wrong dimension.
    """
    if type(value) is Quantity:  # the common case, checked without isinstance's ABC machinery
        magnitude = value._magnitude
        if type(magnitude) is float or type(magnitude) is int:
            factor = FACTORS[kind].get(value._units)
            if factor is None:
                factor = _factor(kind, value._units)
            try:
                return magnitude * factor
            except OverflowError:  # an int beyond any float
                digits = int(int(magnitude).bit_length() * math.log10(2)) + 1
                raise UnitsError(
                    f"expected a finite value, got an integer of about {digits} digits"
                ) from None
    return _to_canonical_slow(value, kind)


def kind_of(value: Quantity) -> str:
    """The unit kind of :data:`KINDS` a Quantity has (by its dimensionality); an error if none."""
    dimensionality = value.dimensionality
    for kind, (canonical, _) in KINDS.items():
        if canonical.dimensionality == dimensionality:
            return kind
    raise UnitsError(f"no unit kind has the dimension of {value!r}")


def _to_canonical_slow(value: object, kind: str) -> float:
    if not isinstance(value, pint.Quantity):
        what = expected(kind)
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


PHYSICAL_RANGE: dict[str, tuple[float, float, str]] = {
    "time": (1e-12, 1e12, "1 ps to 1e12 s (31,700 years)"),
    "data": (0.125, 1e21, "1 bit to 1 ZB"),
    "bandwidth": (0.125, 1e18, "1 bit/s to 1 EB/s"),
    "money": (1e-9, 1e18, "1e-9 to 1e18 USD"),
    "money_rate": (1e-9, 1e15, "1e-9 to 1e15 USD/hour"),
    "count": (1.0, 1e18, "1 to 1e18"),
    "compute_rate": (1.0, 1e24, "1 flop/s to 1e24 flop/s"),
    "compute": (1.0, 1e30, "1 to 1e30 flop"),
    "tokens": (1.0, 1e18, "1 to 1e18 tokens"),
    "samples": (1.0, 1e18, "1 to 1e18 samples"),
    "power": (1e-3, 1e10, "1 mW to 10 GW"),
    "energy": (1e-3, 1e21, "1 mJ to 1e21 J (280 TWh)"),
    "mass": (1e-9, 1e12, "1 ug to 1e9 t"),
    "carbon_intensity": (1e-15, 1e-5, "about 4e-6 to 36,000 g/kWh"),
    "energy_price": (1e-15, 1e-3, "about 4e-9 to 3,600 USD/kWh"),
    "failure_rate": (1e-15, 1.0, "1e-15 to 1 failure per device-second"),
    "event_rate": (1e-15, 1.0, "1e-15 to 1 failure per second"),
}
"""Physical range of an input of each kind, canonical units (low, high, said in words).

Wide enough for any real system, and narrow enough that no result of the
model overflows or divides by a vanishing number: the model refuses an input
outside it, naming the field, instead of returning an infinite or zero result.
"""


def _in_range(x: float, kind: str, value: object, *, low_bound: bool = True) -> float:
    if kind not in PHYSICAL_RANGE:
        return x
    low, high, words = PHYSICAL_RANGE[kind]
    if not (low <= x or not low_bound) or not x <= high:
        raise UnitsError(f"expected a value in the physical range {words}, got {value:~P}")
    return x


def positive_canonical(value: object, kind: str) -> float:
    """:func:`to_canonical`, then require a finite value above zero, in :data:`PHYSICAL_RANGE`."""
    x = to_canonical(value, kind)
    if not (x > 0.0 and x != math.inf):  # also rejects NaN
        raise UnitsError(f"expected a finite value above zero, got {value:~P}")
    return _in_range(x, kind, value)


def nonnegative_canonical(value: object, kind: str) -> float:
    """:func:`to_canonical`, then require a finite value at or above zero, below the top of :data:`PHYSICAL_RANGE`.

    (Such inputs, latencies and memory sizes, are added, never divided by: a tiny one is harmless.)
    """
    x = to_canonical(value, kind)
    if not (x >= 0.0 and x != math.inf):
        raise UnitsError(f"expected a finite value at or above zero, got {value:~P}")
    return _in_range(x, kind, value, low_bound=False)


_UNITS: dict[str, pint.Unit] = {}


def unit(name: str) -> pint.Unit:
    """The cached ``ureg.Unit(name)``: build Quantities with ``Q_(x, unit("ms"))``."""
    u = _UNITS.get(name)
    if u is None:
        u = _UNITS[name] = ureg.Unit(name)
    return u


def quantity(magnitude: object, unit_name: str) -> Quantity:
    """Fast ``Q_(magnitude, unit_name)`` with the unit object cached."""
    if type(magnitude) is float:
        return float_quantity(magnitude, unit(unit_name)._units)
    return Quantity(magnitude, unit(unit_name))


_new_object = object.__new__


def float_quantity(magnitude: float, units: UnitsContainer) -> Quantity:
    """``Quantity(magnitude, units)`` for a float and a units container, without pint's argument dispatch.

    Sets the two attributes pint's ``PlainQuantity.__new__`` sets for this case
    (``_magnitude``, ``_units``; the registry is a class attribute of our
    ``Quantity``): ~0.3 us instead of ~2.5 us, for the Quantities results build
    when a field is read. ``tests/core/test_units.py`` checks it equals ``Q_``.
    """
    q = _new_object(Quantity)
    q._magnitude = magnitude
    q._units = units
    return q


# Spellings accepted for each kind, exactly or by :func:`_fold` (the case of B and b kept:
# a byte, a bit); the error for an unknown unit lists them. Every pint unit of the right
# dimension is accepted too ("furlong / fortnight"), built name by name without evaluating
# expressions, and read as typed: case carries meaning (mW a milliwatt, MW a megawatt).
SPELLINGS: dict[str, tuple[str, ...]] = {
    "time": ("s", "ms", "us", "µs", "ns", "min", "h", "hour", "day", "week", "second", "minute"),
    "data": (
        "B", "kB", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB",
        "bit", "Kb", "Mb", "Gb", "Tb", "kbit", "Mbit", "Gbit", "Tbit", "byte",
    ),
    "bandwidth": (
        "B/s", "kB/s", "KB/s", "MB/s", "GB/s", "TB/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s",
        "bps", "kbps", "Kbps", "Mbps", "Gbps", "Tbps", "Kb/s", "Mb/s", "Gb/s", "Tb/s",
        "Bps", "kBps", "KBps", "MBps", "GBps", "TBps",
        "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s", "G", "GbE", "T", "TbE",
    ),
    "money": ("USD", "dollar"),
    "money_rate": ("USD/hour", "USD/h", "USD/day", "USD/s"),
    "count": ("param", "kparam", "Mparam", "Gparam"),
    "compute_rate": ("flop/s", "Gflop/s", "Tflop/s", "Pflop/s", "TFLOP/s"),
    "compute": ("flop", "Gflop", "Tflop", "Pflop", "Eflop"),
    "tokens": ("token", "Mtoken", "Gtoken", "Ttoken"),
    "samples": ("sample",),
    "power": ("W", "mW", "kW", "MW", "GW", "watt"),
    "energy": ("J", "mJ", "kJ", "MJ", "GJ", "Wh", "kWh", "MWh", "GWh", "joule"),
    "mass": ("g", "kg", "t", "tonne", "kilotonne"),  # not kt: pint reads it as a knot
    "carbon_intensity": ("g/kWh", "kg/kWh", "kg/MWh", "t/MWh", "t/GWh"),
    "energy_price": ("USD/kWh", "USD/MWh"),
    "failure_rate": (
        "failures/device/hour", "failures/device/h", "failures/device/day",
        "failures/device/year", "interruptions/device/day", "interruptions/device/hour",
    ),
    "event_rate": (
        "failures/hour", "failures/h", "failures/day", "failures/year",
        "interruptions/day", "interruptions/hour",
    ),
}
PORT_SPEEDS = {"g": "Gbps", "gbe": "Gbps", "t": "Tbps", "tbe": "Tbps", "m": "Mbps", "mbe": "Mbps"}
"""A bandwidth written as a port speed (``400G``, ``100 GbE``) is in bits per second:
the line rate Ethernet and InfiniBand ports are named by. Only for bandwidths."""

MAX_UNIT_TEXT = 40
MAX_UNIT_NAMES = 6
_PARSED_UNITS: dict[tuple[str, str | None], pint.Unit] = {}


def parse_quantity(text: str, kind: str | None = None) -> Quantity:
    """Parse ``"100 Gbps"`` (or ``"100Gbps"``, ``"2.1 s"``, ``"32 USD/hour"``) into a Quantity.

    The number is decimal notation (:func:`mlsysim.core.text.split_number`:
    bounded digits, no expressions, finite); the unit is one of
    :data:`SPELLINGS` (ignoring case where that is unambiguous), a bandwidth
    port speed (:data:`PORT_SPEEDS`), or pint unit names joined by ``*``,
    ``/`` and small integer powers, looked up name by name: pint never
    evaluates the text. With ``kind``, the dimension is checked and the value
    must be finite in the kind's canonical unit. Raises :class:`UnitsError`
    with a bare message.

    >>> parse_quantity("100 Gb/s", "bandwidth").to("GB/s")
    <Quantity(12.5, 'gigabyte / second')>
    """
    from mlsysim.core.text import number_value, split_number

    try:
        number, unit_text = split_number(text, expected=expected(kind) if kind in KINDS else None)
        magnitude = number_value(number)
    except UnitsError:
        raise
    except InputError as exc:
        raise UnitsError(str(exc)) from None
    if unit_text[:1] in ("*", "/", "^", "(", "+", "-"):
        what = expected(kind) if kind in KINDS else f"a number then a unit (e.g. {example('100', 'Gbps')})"
        raise UnitsError(
            f"expected {what}, got {text.strip()[:40]!r}: expressions are not evaluated"
        )
    if not unit_text:
        what = expected(kind) if kind in KINDS else "a quantity with units"
        raise UnitsError(f"expected {what}, got {number!r} without a unit")
    q = Quantity(magnitude, parse_unit(unit_text, kind))
    if kind is not None:
        x = to_canonical(q, kind)
        if not math.isfinite(x):
            raise UnitsError(f"{text.strip()!r} is out of the range of a floating-point number")
    return q


def parse_unit(text: str, kind: str | None = None) -> pint.Unit:
    """A pint Unit from text such as ``"GB/s"``, ``"gbps"``, ``"USD / hour"``, ``"m*s^-2"``."""
    key = (text, kind)
    found = _PARSED_UNITS.get(key)
    if found is None:
        found = _parse_unit(text, kind)
        if len(_PARSED_UNITS) < 4096:
            _PARSED_UNITS[key] = found
    return found


def _parse_unit(text: str, kind: str | None) -> pint.Unit:
    if len(text) > MAX_UNIT_TEXT:
        raise UnitsError(f"expected a unit of at most {MAX_UNIT_TEXT} characters, got {len(text)}")
    compact = "".join(text.split()) if "/" in text or "*" in text else text.strip()
    spellings = SPELLINGS.get(kind, ()) if kind else tuple(s for v in SPELLINGS.values() for s in v)
    if kind == "bandwidth" and compact.lower() in PORT_SPEEDS:
        return unit(PORT_SPEEDS[compact.lower()])
    if compact in spellings:
        return _spelled(compact)
    try:
        typed: pint.Unit | None = _compound(compact)
    except UnitsError as exc:
        typed, error = None, exc
    folded = _fold(compact, kind, typed, spellings)
    if folded is not None:
        return folded
    if typed is not None:
        return typed  # read as typed; a wrong dimension is named by the caller's check
    try:
        raise error
    except UnitsError as exc:
        hint = did_you_mean(compact, spellings)
        accepted = nearest_list(compact, spellings)
        where = f" for {KINDS[kind][1].split(' in ')[0]}" if kind in KINDS else ""
        port = " (G, GbE, T, TbE: port speeds, 400G = 400 Gb/s)" if kind == "bandwidth" else ""
        raise UnitsError(
            f"{exc}; {hint + ' ' if hint else ''}accepted spellings{where}: {accepted}{port}; "
            "other pint units of that kind work too"
        ) from None


def _spelled(spelling: str) -> pint.Unit:
    """The unit of one of :data:`SPELLINGS`: pint's, else a port speed's (``GbE`` is no pint name: Gbit/s)."""
    try:
        return unit(spelling)
    except pint.UndefinedUnitError:
        return unit(PORT_SPEEDS[spelling.lower()])


def _meaning(u: pint.Unit) -> tuple[object, float]:
    """What a unit means: its dimension and its size in base units (spellings of one unit agree)."""
    base = ureg.Quantity(1.0, u).to_base_units()
    return (base.dimensionality, float(f"{base.magnitude:.12g}"))


def _of_kind(u: pint.Unit, kind: str | None) -> bool:
    return kind not in KINDS or u.dimensionality == KINDS[kind][0].dimensionality


def _fold(
    text: str, kind: str | None, typed: pint.Unit | None, spellings: tuple[str, ...]
) -> pint.Unit | None:
    """The one reading of ``text`` among the spellings that differ from it by case only, else None.

    A spelling's case carries its meaning: B is a byte and b a bit (IEC 80000-13,
    IEEE 1541), m milli and M mega (SI). Text that mixes upper and lower case is
    read as typed where pint knows it (``mW``, ``GBps``), else as the spellings
    that equal it ignoring the case of every letter but B and b (``gB/s`` is
    GB/s, ``gbit/s`` Gbit/s). Text all in one case (``GBPS``, ``gbps``, ``kb``)
    says nothing by its case: it is read only when every spelling it could be
    (and pint's reading as typed) means the same unit (``usd/hour``, ``MIN``),
    else refused naming each reading. None: no spelling differs by case only.
    """
    lower = text.lower()
    candidates = [s for s in spellings if s.lower() == lower]
    typed_ok = typed is not None and _of_kind(typed, kind)
    one_case = not (any(ch.isupper() for ch in text) and any(ch.islower() for ch in text))
    if not one_case:
        if typed_ok:
            return typed
        marks = [ch for ch in text if ch in "bB"]
        candidates = [s for s in candidates if [ch for ch in s if ch in "bB"] == marks]
    if not candidates:
        return None
    readings: dict[tuple[object, float], tuple[str, pint.Unit]] = {}
    for spelling in candidates:
        readings.setdefault(_meaning(_spelled(spelling)), (spelling, _spelled(spelling)))
    if one_case and typed_ok and typed is not None:
        readings.setdefault(_meaning(typed), (text, typed))
    if len(readings) == 1:
        return next(iter(readings.values()))[1]
    named = [f"{s} ({_in_words(s, u, kind)})" for s, u in readings.values()]
    raise UnitsError(
        f"the unit {text!r} is ambiguous: write {' or '.join(named)}; "
        "a unit's case carries its meaning (B a byte, b a bit; M mega, m milli)"
    )


def _in_words(spelling: str, u: pint.Unit, kind: str | None) -> str:
    """What one ``spelling`` is: ``1 Gbps = 125 MB/s`` in the kind's unit, or its name (``gigabyte``)."""
    one = ureg.Quantity(1.0, u)
    if kind not in KINDS:
        try:
            kind = kind_of(one)
        except UnitsError:
            return f"{u:D}"
    value = one.to(KINDS[kind][0]).to_compact()
    words = f"{value.magnitude:.4g} {value.units:~P}"
    return f"{u:D}" if words == f"1 {spelling}" else f"1 {spelling} = {words}"


_POWERS = {"²": 2, "³": 3}


def _compound(text: str) -> pint.Unit:
    """Unit names joined by ``*``, ``·``, ``/`` or spaces, each with an optional power of one digit."""
    result = None
    i, n, names, divide = 0, len(text), 0, False
    while i < n:
        ch = text[i]
        if ch in " *·":
            i += 1
            continue
        if ch == "/":
            if result is None or divide:
                raise UnitsError(f"cannot read the unit {text!r}")
            divide = True
            i += 1
            continue
        start = i
        while i < n and (text[i].isalpha() or text[i] == "_") and text[i] not in _POWERS:
            i += 1
        name = text[start:i]
        if not name:
            raise UnitsError(f"cannot read the unit {text!r} (at {text[start:]!r})")
        power = 1
        if i < n and text[i] in _POWERS:
            power, i = _POWERS[text[i]], i + 1
        elif text.startswith(("^", "**"), i):
            i += 2 if text.startswith("**", i) else 1
            sign = -1 if i < n and text[i] == "-" else 1
            i += 1 if i < n and text[i] in "+-" else 0
            if i >= n or not ("0" <= text[i] <= "9") or (i + 1 < n and "0" <= text[i + 1] <= "9"):
                raise UnitsError(f"cannot read the unit {text!r}: powers are one digit")
            power, i = sign * int(text[i]), i + 1
        names += 1
        if names > MAX_UNIT_NAMES:
            raise UnitsError(f"the unit {text!r} has more than {MAX_UNIT_NAMES} names")
        factor = _named_unit(name) ** power
        result = factor if result is None else (result / factor if divide else result * factor)
        divide = False
    if result is None or divide:
        raise UnitsError(f"cannot read the unit {text!r}")
    # pint's stubs type a unit's ** * / as PlainUnit; at run time it is a Unit of ureg
    return cast(pint.Unit, result)


def _named_unit(name: str) -> pint.Unit:
    try:
        return unit(name)
    except Exception:  # pint's UndefinedUnitError, or a name its parser refuses
        raise UnitsError(f"unknown unit {name!r}") from None
