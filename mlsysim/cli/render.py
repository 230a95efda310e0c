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
        return str(value.name)
    return str(value)


def inputs_dict(scenario: Any) -> dict[str, Any]:
    """The scenario's inputs in the project's JSON encoding."""
    return dict(scenario.to_dict()["inputs"])


def result_json(scenario: Any) -> str:
    """``run --json``: the scenario's inputs and its result, one JSON document."""
    from mlsysim.core.jsonio import document, dumps

    body = {**scenario.to_dict(), "result": scenario.result.to_dict()}
    if not scenario.assumptions.is_seed():
        body["intervals_80"] = intervals_dict(scenario.result)
    return dumps(document("result", body), indent=2)


def intervals_dict(result: Any, level: float = 0.8) -> dict[str, Any]:
    """The prediction intervals of a (non-seed) result: [low, high] in the JSON encoding."""
    from mlsysim.core.jsonio import encode
    from mlsysim.validation.intervals import INTERVAL_FIELDS

    out: dict[str, Any] = {}
    for name in INTERVAL_FIELDS:
        if name == "cost" and result.cost is None:
            continue
        unit = field_unit(name)
        out[name] = [encode(b, unit=unit) for b in result.interval(name, level)]
    return out


def print_result(scenario: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    result = scenario.result
    console = Console()
    title = scenario.name or "scenario"
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

    bands = {} if seed_only else intervals_dict(result)
    if bands:
        table.add_column("80% interval", justify="right")
    for key, spec in result_fields().items():
        if key == "constraint_trace":
            continue
        value = getattr(result, key)
        if seed_only and key in (
            "exposed_communication_time",
            "hidden_communication_time",
            "synchronization_time",
            "synchronization_share",
            "extra_share",
            "optimizer_time",
            "interference_time",
            "bucket_copy_time",
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
        if bands:
            table.add_row(key, text, _band_text(key, bands.get(key)))
        else:
            table.add_row(key, text)
    console.print(table)
    for note in result.constraint_trace:
        console.print(f"  - {note}")


def _band_text(key: str, band: Any) -> str:
    if band is None:
        return ""
    if isinstance(band[0], dict):
        unit = _short(band[0]["unit"])
        return f"{band[0]['value']:.4g} - {band[1]['value']:.4g} {unit}"
    if key == "cost":
        return f"{band[0]:,.2f} - {band[1]:,.2f} USD"
    return f"{band[0]:.4g} - {band[1]:.4g}"


def _short(unit: str) -> str:
    return {"millisecond": "ms", "byte": "B", "hour": "h"}.get(unit, unit)


__all__ = ["inputs_dict", "print_result", "result_json", "field_unit"]


def print_validation(
    seed: list[Any],
    realistic: list[Any],
    *,
    band: tuple[float, float],
    families: dict[str, dict[str, Any]],
    totals: dict[str, Any],
    coverage: tuple[float, float],
    lofo: Any = None,
) -> None:
    """Measured vs predicted efficiency per case (seed, realistic with its 80% interval),
    errors per family, the overall figures, and the leave-one-family-out ones when given."""
    from rich.console import Console
    from rich.table import Table

    pt = "{:+.1f} pt".format
    console = Console()
    table = Table(
        title="Scaling efficiency: published measurements vs the model", header_style="bold"
    )
    columns = ["case", "meas.", "seed", "err", "real.", "80% int.", "err"]
    if lofo is not None:
        columns += ["CV", "err"]
    for column in columns:
        table.add_column(column, justify="left" if column == "case" else "right", no_wrap=True)
    held = {c.case.id: c for c in lofo.comparisons} if lofo is not None else {}
    for s, r in zip(seed, realistic, strict=True):
        low = max(r.predicted + band[0], 0.001)
        high = min(r.predicted + band[1], 1.0)
        inside = "" if low <= r.case.measured_eff <= high else "*"
        row = [
            s.case.id,
            f"{s.case.measured_eff:.3f}",
            f"{s.predicted:.3f}",
            f"{s.error * 100:+.1f}",
            f"{r.predicted:.3f}",
            f"{low:.2f}-{high:.2f}{inside}",
            f"{r.error * 100:+.1f}",
        ]
        if lofo is not None:
            h = held[s.case.id]
            row += [f"{h.predicted:.3f}", f"{h.error * 100:+.1f}"]
        table.add_row(*row)
    console.print(table)

    fam = Table(
        title="Error per family, points: median |e| / worst |e| / mean e", header_style="bold"
    )
    for column in ("family", "cases", "seed", "realistic"):
        fam.add_column(column, justify="left" if column == "family" else "right", no_wrap=True)

    def three(x: Any) -> str:
        return f"{x.median_abs * 100:.1f} / {x.max_abs * 100:.1f} / {x.mean * 100:+.1f}"

    for name, s_ in families["seed"].items():
        fam.add_row(name, str(s_.count), three(s_), three(families["realistic"][name]))
    fam.add_section()
    fam.add_row("all", str(totals["seed"].count), three(totals["seed"]), three(totals["realistic"]))
    console.print(fam)
    covered, width = coverage
    console.print(
        f"realistic 80% interval: predicted {pt(band[0] * 100)} .. {pt(band[1] * 100)} "
        f"(conformal, from these residuals); covers {covered:.0%} of cases, width "
        f"{width * 100:.1f} pt  (* = measured outside)"
    )
    if lofo is not None:
        h = lofo.summary
        jitters = [v * 1e3 for v in lofo.jitters.values()]
        console.print(
            f"leave one family out: median |error| {h.median_abs * 100:.1f} pt, worst "
            f"{h.max_abs * 100:.1f} pt, mean {pt(h.mean * 100)}; 80% interval from the other "
            f"families covers {lofo.coverage:.0%} (median width {lofo.median_width * 100:.1f} pt); "
            f"host jitter refitted {min(jitters):.1f}-{max(jitters):.1f} ms"
        )


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
