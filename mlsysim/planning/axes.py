"""Sweep axes written as text: ``nodes=1..64``, ``"inter_bandwidth=100 Gbps,400 Gbps"``.

The command line's ``--axis`` and the browser page's ``axis=`` read the same
spelling through :func:`parse_axis`; each value is read by its field's entry in
the field table, as ``--set`` reads it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mlsysim.core.exceptions import InputError
from mlsysim.core.text import check_text, parse_int
from mlsysim.engine.inputs.assumptions import assumption_from_text
from mlsysim.engine.io.overrides import coerce_field
from mlsysim.engine.scenario_types import DataParallelScaleOutScenario

_RANGE = re.compile(r"\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*(?::\s*(\d+)\s*)?")


def parse_axis(text: str, scenario: DataParallelScaleOutScenario) -> tuple[str, Sequence[object]]:
    """``"nodes=1..8:2"`` -> ``("nodes", range(1, 9, 2))``; lists go through ``coerce_field``.

    A range stays a ``range`` (its size is known before any value is made).
    """
    field, sep, spec = text.partition("=")
    field = field.strip()
    if not sep or not field or not spec.strip():
        raise InputError(f"--axis expects FIELD=VALUES (e.g. nodes=1..64), got {text!r}")
    try:
        found = _RANGE.fullmatch(check_text(spec, what="--axis values", limit=4000))
        if found:
            start, stop = parse_int(found[1]), parse_int(found[2])
            step = parse_int(found[3] or "1")
    except InputError as exc:
        raise InputError(f"--axis {field}: {exc}", field=field) from None
    if found:
        values = range(start, stop + 1, step) if step > 0 else range(0)
        if not values:
            raise InputError(
                f"--axis {field}: the range {spec.strip()!r} holds no values", field=field
            )
        return field, values
    parts = [p.strip() for p in spec.split(",")]
    if field.startswith("assumptions."):
        sub = field.split(".", 1)[1]
        return "assumptions", [
            scenario.assumptions.variant(**{sub: assumption_from_text(sub, p)}) for p in parts
        ]
    return field, [coerce_field(field, p) for p in parts]
