"""Rendering of scenarios and results for the terminal (rich) and as JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlsysim.core.formatting import fmt_bytes, fmt_time
from mlsysim.engine.results import field_unit


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if hasattr(value, "magnitude"):
        return f"{value:.6g~P}"
    if isinstance(value, float):
        return f"{value:.6g}"
    if hasattr(value, "name") and not isinstance(value, str):
        return safe(str(value.name))
    return safe(str(value))


def safe(text: str) -> str:
    """User text for a rich table: control characters and rich markup escaped."""
    from rich.markup import escape

    from mlsysim.core.text import printable

    return escape(printable(text))


def inputs_dict(scenario: Any) -> dict[str, Any]:
    """The scenario's inputs in the project's JSON encoding."""
    return dict(scenario.to_dict()["inputs"])


def result_json(scenario: Any) -> str:
    """``run --json``: the scenario's inputs and its result, one JSON document."""
    from mlsysim.core.jsonio import document, dumps

    body = {**scenario.to_dict(), "result": scenario.result.to_dict()}
    return dumps(document("result", body), indent=2)


def print_result(scenario: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    result = scenario.result
    console = Console()
    title = safe(scenario.name or "scenario")
    inputs = Table(title=f"{title}: inputs", show_header=True, header_style="bold")
    inputs.add_column("input")
    inputs.add_column("value", justify="right")
    for key, value in scenario.fields().items():
        if key in ("name", "description"):
            continue
        if key == "assumptions":
            value = (
                "seed (default)"
                if value.is_seed()
                else ("realistic" if value == type(value).realistic() else "custom")
            )
        if value is None:
            continue
        inputs.add_row(key, _text(value))
    console.print(inputs)
    table = Table(title=f"{title}: results", show_header=True, header_style="bold")
    table.add_column("result")
    table.add_column("value", justify="right")
    seed_only = scenario.assumptions.is_seed()
    from mlsysim.engine.results import result_fields

    for key, spec in result_fields().items():
        if key == "constraint_trace":
            continue
        value = getattr(result, key)
        if seed_only and key in (
            "exposed_communication_time",
            "hidden_communication_time",
            "synchronization_time",
            "synchronization_share",
            "algorithm",
        ):
            continue
        if value is None:
            continue
        if key == "cost":
            text = f"{value:,.2f} USD"
        elif spec.unit == "byte":
            text = fmt_bytes(float(value.magnitude))
        elif spec.unit is not None:
            text = f"{float(value.magnitude):.6g} {_short(spec.unit)}"
        else:
            text = _text(value)
        table.add_row(key, text)
    console.print(table)
    for note in result.constraint_trace:
        console.print(f"  - {safe(note)}")


def _short(unit: str) -> str:
    return {"millisecond": "ms", "byte": "B", "hour": "h"}.get(unit, unit)


__all__ = ["inputs_dict", "print_result", "result_json", "field_unit"]


def print_validation(seed: list[Any], realistic: list[Any]) -> None:
    """Measured vs predicted efficiency per case, seed and realistic, with median and max errors."""
    from rich.console import Console
    from rich.table import Table

    from mlsysim.validation.published import summary

    table = Table(
        title="Scaling efficiency: published measurements vs the model", header_style="bold"
    )
    for column in ("case", "measured", "seed", "error", "realistic", "error"):
        table.add_column(column, justify="left" if column == "case" else "right", no_wrap=True)
    for s, r in zip(seed, realistic, strict=True):
        table.add_row(
            s.case.id,
            f"{s.case.measured_eff:.3f}",
            f"{s.predicted:.3f}",
            f"{s.error * 100:+.1f} pt",
            f"{r.predicted:.3f}",
            f"{r.error * 100:+.1f} pt",
        )
    (sm, sx), (rm, rx) = summary(seed), summary(realistic)
    table.add_section()
    table.add_row("median |error|", "", "", f"{sm * 100:.1f} pt", "", f"{rm * 100:.1f} pt")
    table.add_row("max |error|", "", "", f"{sx * 100:.1f} pt", "", f"{rx * 100:.1f} pt")
    Console().print(table)


def _registry_groups() -> dict[str, tuple[Any, Callable[[Any], str]]]:
    from mlsysim.core.units import to_canonical
    from mlsysim.hardware.registry import Hardware, Infrastructure, Systems
    from mlsysim.models.registry import Models

    def gb(q: Any) -> str:
        return fmt_bytes(to_canonical(q, "data"))

    def rate(q: Any) -> str:
        return f"{to_canonical(q, 'bandwidth') / 1e9:.6g} GB/s"

    return {
        "models": (Models, lambda w: f"{to_canonical(w.parameters, 'count'):.4g} parameters"),
        "accelerators": (
            Hardware,
            lambda a: (
                f"{gb(a.memory.capacity)}, {a.nvlink.name} {rate(a.nvlink.bandwidth_per_direction)} per direction"
            ),
        ),
        "nodes": (
            Systems.Nodes,
            lambda n: (
                f"{n.accelerators_per_node} x {n.accelerator.name}, {rate(n.intra_node_bw)} intra, "
                f"{n.nics_per_node} x {rate(n.nic_bandwidth)} NICs"
            ),
        ),
        "fabrics": (
            Systems.Fabrics,
            lambda f: (
                f"{rate(f.bandwidth)} per direction, latency {fmt_time(to_canonical(f.latency, 'time'))}"
            ),
        ),
        "prices": (Infrastructure, lambda p: f"{to_canonical(p.rate, 'money_rate'):.6g} USD/hour"),
    }


def registry_lines(group: str | None, *, sources: bool = False) -> list[str]:
    """One line per registry entry (path, name, key figures), optionally with source and note."""
    from mlsysim.core.exceptions import UnknownNameError

    groups = _registry_groups()
    if group is not None and group.lower() not in groups:
        raise UnknownNameError(f"unknown registry group {group!r}; known: {', '.join(groups)}")
    lines: list[str] = []
    for name, (registry, figures) in groups.items():
        if group is not None and name != group.lower():
            continue
        lines.append(f"{name}:")
        entries = list(registry.walk())
        width = max(len(path) for path, _ in entries)
        for path, entry in entries:
            lines.append(f"  {path.ljust(width)}  {entry.name}: {figures(entry)}")
            if sources:
                lines.append(f"  {''.ljust(width)}  source: {entry.source}")
                lines.append(f"  {''.ljust(width)}  note: {entry.note}")
    return lines
