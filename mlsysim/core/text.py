"""The boundary for text: numbers and names read from the command line and files.

Every number read from text (``--set nodes=8``, a scenario file's
``step_time = "2.1 s"``, a URL later) goes through these pure functions,
which bound what they accept *before* evaluating anything:

* at most :data:`MAX_TEXT` characters, and no control characters;
* numbers in plain decimal notation only (``8``, ``-3``, ``1.5e9``, ``.5``):
  ASCII digits, at most :data:`MAX_DIGITS` of them, no ``**``, no
  expressions, no ``inf``/``nan``; the result must be finite;
* nesting of parsed data (TOML arrays, YAML mappings) at most
  :data:`MAX_DEPTH` levels (:func:`check_depth`).

Each raises :class:`~mlsysim.core.exceptions.InputError` with a bare message
(what was received, what was expected); the caller prefixes the field.
:func:`printable` escapes control characters before text reaches a terminal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import example

MAX_TEXT = 200
"""Longest text accepted for one value (a quantity, a number, a name)."""
MAX_DIGITS = 30
"""Most digits in one number (a float has 17 significant; an integer input is far smaller)."""
MAX_INT_DIGITS = 18
"""Most digits of an integer input (fits a signed 64-bit integer)."""
MAX_DEPTH = 32
"""Deepest nesting of arrays and tables read from a file."""

# Linear-time patterns (no nested or overlapping repetition), applied to text already
# bounded by MAX_TEXT: a sign, digits, an optional fraction, an optional exponent.
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def short(text: str, limit: int = 40) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters, for error messages."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def check_text(text: object, *, what: str = "text", limit: int = MAX_TEXT) -> str:
    """``text`` stripped, when it is a string of at most ``limit`` characters without control characters."""
    if not isinstance(text, str):
        raise InputError(f"expected {what} as a string, got {type(text).__name__}")
    if len(text) > limit:
        raise InputError(f"expected {what} of at most {limit} characters, got {len(text):,}")
    if _CONTROL.search(text):
        raise InputError(f"{what} {printable(short(text))} contains control characters")
    return text.strip()


def parse_name(text: str) -> str:
    """A registry or scenario name read from text: stripped, bounded, no control characters."""
    return check_text(text, what="a name")


def parse_int(text: str) -> int:
    """An integer written in decimal (``8``, ``-3``, ``+16``): at most 18 digits.

    >>> parse_int(" 64 ")
    64
    """
    body = check_text(text, what="an integer")
    if not _INT.fullmatch(body):
        raise InputError(f"expected an integer (e.g. 8), got {short(body)}")
    if len(body.lstrip("+-")) > MAX_INT_DIGITS:
        raise InputError(
            f"expected an integer of at most {MAX_INT_DIGITS} digits, got {len(body.lstrip('+-'))} digits"
        )
    return int(body)


TRUE_WORDS = ("true", "yes", "on", "1")
"""Words read as True (compared without regard to case): ``--set``, files, the page."""
FALSE_WORDS = ("false", "no", "off", "0")
"""Words read as False (compared without regard to case)."""


def parse_bool(text: str) -> bool:
    """A yes/no value read from text: one of :data:`TRUE_WORDS` or :data:`FALSE_WORDS`, any case.

    >>> parse_bool(" Yes "), parse_bool("FALSE"), parse_bool("0")
    (True, False, False)
    """
    word = check_text(text, what="true or false").lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise InputError(f"expected true or false (or yes/no, 1/0), got {short(word)}")


def parse_float(text: str) -> float:
    """A finite number in decimal notation (``0.9``, ``1e-3``, ``-2``); no ``inf``, ``nan`` or expressions.

    >>> parse_float("1.5e3")
    1500.0
    """
    body = check_text(text, what="a number")
    number = _number(body)
    if number is None or len(number) != len(body):
        raise InputError(f"expected a number (e.g. 0.9 or 1e-3), got {short(body)}")
    return _finite(number)


def split_number(text: str, *, expected: str | None = None) -> tuple[str, str]:
    """``"100Gbps"`` -> ``("100", "Gbps")``: the leading decimal number and the rest, stripped.

    Raises :class:`InputError` when the text does not start with a number, saying
    what was expected: ``expected`` (e.g. ``"a time (e.g. Q_(1.8, 's'))"``) when given.
    """
    body = check_text(text, what="a quantity")
    number = _number(body)
    if number is None:
        what = expected or f"a number then a unit (e.g. {example('100', 'Gbps')})"
        raise InputError(f"expected {what}, got {short(body)}")
    return number, body[len(number) :].strip()


def number_value(number: str) -> int | float:
    """The value of a number from :func:`split_number`: an int when written as one, else a finite float."""
    if _INT.fullmatch(number):
        return int(number)
    return _finite(number)


def _number(body: str) -> str | None:
    found = _FLOAT.match(body)
    if found is None:
        return None
    digits = sum(ch.isdigit() for ch in found.group())
    if digits > MAX_DIGITS:
        raise InputError(f"expected a number of at most {MAX_DIGITS} digits, got {digits} digits")
    return found.group()


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise InputError(f"{number} is out of the range of a floating-point number")
    return value


def check_depth(data: object, *, limit: int = MAX_DEPTH) -> None:
    """Refuse nested lists and dicts deeper than ``limit`` (walked iteratively, no recursion)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            raise InputError(f"nested more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children)


def decode_utf8(data: bytes) -> str:
    """Strict UTF-8 (a leading byte-order mark is dropped); the error names the byte and its line.

    >>> decode_utf8("nodes = 4".encode())
    'nodes = 4'
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = ""
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = " (it looks like UTF-16: save it as UTF-8)"
        elif exc.reason.startswith("invalid"):
            hint = " (perhaps Latin-1 or Windows-1252: save it as UTF-8)"
        raise InputError(
            f"line {line}: not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}){hint}"
        ) from None


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\x1b`` for ESC), safe to print on a terminal.

    Tabs and newlines are escaped too: user text is printed on one line.

    >>> printable("evil\\x1b]0;title\\x07")
    'evil\\\\x1b]0;title\\\\x07'
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def printable_lines(text: str) -> str:
    """:func:`printable` on each line of ``text``, keeping the newlines."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
