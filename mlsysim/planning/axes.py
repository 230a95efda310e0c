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
from mlsysim.engine.io.overrides import WORKLOAD_PREFIX, coerce_field, vary_workload
from mlsysim.engine.scenario_types import TrainingScenario

_RANGE = re.compile(r"\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*(?::\s*(\d+)\s*)?")


def first_setting(text: str) -> str:
    """``"nodes=4..64:4"`` -> ``"nodes=4"``: the first value of an axis as a ``--set`` (a base scenario that the
    axes complete is built with them: ``--set nodes=4 --axis "inter_bandwidth=10 Gbps,100 Gbps"``)."""
    field, _, spec = text.partition("=")
    found = _RANGE.fullmatch(spec)
    return f"{field.strip()}={found[1] if found else spec.split(',')[0].strip()}"


def parse_axis(text: str, scenario: TrainingScenario) -> tuple[str, Sequence[object]]:
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
        if field.startswith(WORKLOAD_PREFIX):
            return "workload", _workloads(scenario, field, list(values))
        return field, values
    parts = [p.strip() for p in spec.split(",")]
    if field.startswith(WORKLOAD_PREFIX):  # one figure of the workload: an axis of workloads
        return "workload", _workloads(scenario, field, parts)
    if field.startswith("assumptions."):
        sub = field.split(".", 1)[1]
        return "assumptions", [
            scenario.assumptions.variant(**{sub: assumption_from_text(sub, p)}) for p in parts
        ]
    return field, [coerce_field(field, p) for p in parts]


def _workloads(scenario: TrainingScenario, field: str, values: Sequence[object]) -> list[object]:
    """The scenario's workload with its figure ``workload.FIELD`` at each value (``vary_workload``)."""
    name = field.removeprefix(WORKLOAD_PREFIX)
    return [vary_workload(scenario.workload, {name: value}) for value in values]
