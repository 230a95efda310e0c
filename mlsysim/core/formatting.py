"""Figures as a person reads them: six significant digits and a unit that fits the size.

Shared by explain, the command line's tables and the plots; full precision
belongs in JSON and CSV, not here.

>>> fmt_bytes(5.25e9), fmt_time(0.0116667), fmt_time(90000.0), fmt_rate(1.25e9)
('5.25 GB', '11.6667 ms', '25 h', '1.25 GB/s')
"""

from __future__ import annotations

from typing import SupportsFloat


def fmt_bytes(value: SupportsFloat) -> str:
    """A data size in B, kB, MB, GB or TB."""
    x = float(value)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.6g} {unit}"
    return f"{x:.6g} B"


def fmt_time(value: SupportsFloat) -> str:
    """A time in us, ms, s, or hours from ten hours on."""
    x = float(value)
    if x == 0:
        return "0 ms"
    if abs(x) >= 3600 * 10:
        return f"{x / 3600:.6g} h"
    if abs(x) >= 10:
        return f"{x:.6g} s"
    if abs(x) >= 1e-3:
        return f"{x * 1e3:.6g} ms"
    return f"{x * 1e6:.6g} us"


def fmt_rate(value: SupportsFloat) -> str:
    """A bandwidth in GB/s."""
    return f"{float(value) / 1e9:.6g} GB/s"


def fmt_num(value: SupportsFloat) -> str:
    """A plain number, six significant digits."""
    return f"{float(value):.6g}"


def fmt_given(value: object) -> str:
    """An input as the user gave it: ``10 Gbps``, ``InfiniBand_NDR``, ``0.4``."""
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        return f"{float(value.magnitude):.6g} {value.units:~P}"
    return str(getattr(value, "name", value))
