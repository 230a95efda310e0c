"""TOML files read with the line of every key, so errors can say ``file:line``.

The one TOML reader of the project: scenario files, registry files and the
calibration writer read through it. Key lines are found by a linear scan of
each line (no regular expression on the file's text).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mlsysim.core.exceptions import ScenarioFileError
from mlsysim.core.text import MAX_INT_DIGITS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KeyLines = dict[tuple[str, ...], int]
"""Line (1-based) of each key path: ``("nodes",)``, ``("assumptions", "overlap")``."""


def parse_toml(text: str, file: Path) -> tuple[dict[str, object], KeyLines]:
    """TOML text of ``file`` -> (data, line of each key); syntax errors name the file and line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        found = re.search(r"at line (\d+)", str(exc))
        if line is None and found:
            line = int(found.group(1))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise ScenarioFileError(
            f"TOML syntax error: {message}", path=str(file), line=line
        ) from None
    except RecursionError:
        raise ScenarioFileError("TOML nested too deep", path=str(file)) from None
    except ValueError as exc:  # an integer of more digits than Python converts to int
        longest = _longest_number(text)
        if longest is None:
            raise ScenarioFileError(f"TOML value error: {exc}", path=str(file)) from None
        at, digits = longest
        keys = [k for k, n in _toml_key_lines(text).items() if n == at]
        raise ScenarioFileError(
            f"expected an integer of at most {MAX_INT_DIGITS} digits, got {digits:,} digits",
            path=str(file),
            line=at,
            loc=max(keys, key=len) if keys else (),
        ) from None
    return data, _toml_key_lines(text)


def _longest_number(text: str) -> tuple[int, int] | None:
    """(line, digits) of the longest run of digits in ``text`` (``_`` separators included),
    by a linear scan; None when there is no digit."""
    best: tuple[int, int] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        run = 0
        for char in line:
            run = run + 1 if char.isdigit() else (run if char == "_" and run else 0)
            if best is None or run > best[1]:
                best = (number, run)
    return best if best is not None and best[1] > 0 else None


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _dotted(text: str) -> tuple[str, ...] | None:
    """``"assumptions . overlap"`` -> ``("assumptions", "overlap")``; None unless bare keys."""
    parts = tuple(p.strip() for p in text.split("."))
    if all(p and _KEY_CHARS.issuperset(p) for p in parts):
        return parts
    return None


def _toml_key_lines(text: str) -> KeyLines:
    """Line (1-based) of each key path: ``("nodes",)``, ``("assumptions", "overlap")``.

    A scan of each line in linear time (no regular expression on the file's text).
    """
    lines: KeyLines = {}
    section: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("["):
            close = line.find("]")
            header = _dotted(line[1:close].strip("[]")) if close > 0 else None
            rest = line[close + 1 :].lstrip("]").strip() if close > 0 else "x"
            if header is not None and (not rest or rest.startswith("#")):
                section = header
                lines.setdefault(section, number)
            continue
        equals = line.find("=")
        key = _dotted(line[:equals]) if equals > 0 else None
        if key is not None:
            path = section + key
            for i in range(1, len(path) + 1):
                lines.setdefault(path[:i], number)
    return lines
