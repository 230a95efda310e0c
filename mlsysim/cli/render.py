"""Rendering of scenarios and results for the terminal (rich) and as JSON."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mlsysim.core.formatting import fmt_bytes, fmt_time
from mlsysim.core.suggest import unknown
from mlsysim.core.text import printable
from mlsysim.engine.job import PRESETS, preset_name
from mlsysim.engine.results import field_unit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.core.units import Quantity
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
    from mlsysim.hardware.types import Accelerator
    from mlsysim.models.types import Workload
    from mlsysim.validation.published import Comparison, CrossValidation, Summary


def safe(text: str) -> str:
    """User text for a rich table cell: control characters and rich markup escaped."""
    from rich.markup import escape

    return escape(printable(text))


def _text(value: object) -> str:
    if value is None:
        return "-"
    if hasattr(value, "magnitude"):
        return f"{value:.6g~P}"
    if isinstance(value, float):
        return f"{value:.6g}"
    if hasattr(value, "name") and not isinstance(value, str):
        return printable(str(value.name))
    return printable(str(value))


def inputs_dict(scenario: DataParallelScaleOutScenario) -> dict[str, JSONValue]:
    """The scenario's inputs in the project's JSON encoding."""
    inputs = scenario.to_dict()["inputs"]
    assert isinstance(inputs, dict)  # to_dict puts the inputs in a mapping
    return dict(inputs)


def result_json(scenario: DataParallelScaleOutScenario) -> str:
    """``run --json``: the scenario's inputs and its result, one JSON document."""
    from mlsysim.core.jsonio import document, dumps

    body = {**scenario.to_dict(), "result": scenario.result.to_dict()}
    if not scenario.assumptions.is_seed():
        body["intervals_80"] = intervals_dict(scenario.result)
    return dumps(document("result", body), indent=2)


def intervals_dict(result: DataParallelScaleOutResult, level: float = 0.8) -> dict[str, JSONValue]:
    """The prediction intervals of a (non-seed) result: [low, high] in the JSON encoding."""
    from mlsysim.core.jsonio import encode
    from mlsysim.validation.intervals import INTERVAL_FIELDS

    out: dict[str, JSONValue] = {}
    for name in INTERVAL_FIELDS:
        if name == "cost" and result.cost is None:
            continue
        unit = field_unit(name)
        out[name] = [encode(b, unit=unit) for b in result.interval(name, level)]
    return out


def interval_line(result: DataParallelScaleOutResult, level: float = 0.8) -> str:
    """One line: the prediction interval of each field that has one (docs/model.md, 4.5)."""
    from mlsysim.core.units import Quantity
    from mlsysim.validation.intervals import INTERVAL_FIELDS

    parts = []
    for name in INTERVAL_FIELDS:
        if name == "cost" and result.cost is None:
            continue
        low, high = result.interval(name, level)
        if isinstance(low, Quantity) and isinstance(high, Quantity):
            unit = {"millisecond": "ms", "hour": "h"}.get(field_unit(name) or "", "")
            parts.append(f"{name} {low.magnitude:,.4g}-{high.magnitude:,.4g} {unit}")
        elif name == "cost":
            parts.append(f"cost {low:,.2f}-{high:,.2f} USD")
        else:
            parts.append(f"{name} {low:.4g}-{high:.4g}")
    return f"{level:.0%} prediction interval (conformal, from published residuals): " + ", ".join(
        parts
    )


RESULT_ROWS: dict[str, str] = {
    "n_devices": "devices, n = d x N",
    "update_time": "update time",
    "compute_time": "compute per update (A x T1)",
    "communication_time": "gradient AllReduce per update",
    "intra_time": "  inside each node",
    "inter_time": "  across nodes",
    "exposed_communication_time": "AllReduce not hidden (exposed)",
    "hidden_communication_time": "AllReduce hidden under backward",
    "synchronization_time": "synchronization per update",
    "optimizer_time": "optimizer step per update",
    "interference_time": "compute slowed beside the AllReduce",
    "bucket_copy_time": "DDP bucket copies per update",
    "speedup": "speedup over one device",
    "efficiency": "scaling efficiency",
    "communication_overhead": "communication / compute",
    "global_batch": "global batch",
    "training_time": "training time on {n} devices",
    "cost": "cost on {nodes}",
    "gradient_bytes": "gradient bytes (G)",
    "intra_bytes": "bytes sent per device inside a node",
    "inter_bytes": "bytes sent per device across nodes",
    "memory_per_device": "memory per device",
    "device_memory": "device memory",
    "fits": "fits in device memory",
    "algorithm": "AllReduce algorithm asked",
    "intra_algorithm": "AllReduce inside a node",
    "inter_algorithm": "AllReduce across nodes",
    "bottleneck": "bottleneck",
}
"""Result field -> its label on the terminal, in the order printed (the answer first)."""

OPT_IN_ROWS = (
    "exposed_communication_time",
    "hidden_communication_time",
    "synchronization_time",
    "optimizer_time",
    "interference_time",
    "bucket_copy_time",
    "algorithm",
)
"""Rows shown only when the opt-in model is switched on (they equal the seed's figures otherwise)."""


def _fixed(value: float, unit: str) -> tuple[str, str]:
    """A figure in fixed point with its unit: bytes scaled to kB..TB, times in ms or s."""
    if unit == "byte":
        for name, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:,.3f}", name
        return f"{value:,.0f}", "B"
    if unit == "millisecond":
        return f"{value:,.1f}", "ms"
    if unit == "hour":
        return (f"{value:,.2f}", "h") if value >= 1 else (f"{value * 60:,.1f}", "min")
    return f"{value:,.3f}", unit


def result_rows(scenario: DataParallelScaleOutScenario) -> list[tuple[str, str, str]]:
    """The result as (label, value, unit) rows, fixed point, the answer first."""
    return [(label, text, unit) for label, text, unit, _ in _result_cells(scenario)]


def rounding_notes(scenario: DataParallelScaleOutScenario) -> list[str]:
    """A note for each printed figure that reads zero though its value is not (e.g. a training
    time of 2e-5 min printed as 0.0), with the value to three significant digits."""
    notes = []
    for label, text, unit, value in _result_cells(scenario):
        if not isinstance(value, float) or value == 0.0 or not math.isfinite(value):
            continue
        digits = text.replace(",", "").lstrip("-")
        if digits and set(digits) <= set("0."):
            shown = f"{value:.3g} {unit}".strip()
            notes.append(f"{label} is {shown}, below the last digit printed ({text})")
    return notes


def _result_cells(
    scenario: DataParallelScaleOutScenario,
) -> list[tuple[str, str, str, object]]:
    """(label, text, unit, value in that unit) for each result row."""
    result = scenario.result
    seed_only = scenario.assumptions.is_seed()
    n, nodes = result.n_devices, scenario.nodes
    rows = []
    for key, label in RESULT_ROWS.items():
        value = getattr(result, key)
        if value is None or (seed_only and key in OPT_IN_ROWS):
            continue
        label = label.format(n=n, nodes=f"{nodes} node{'s' if nodes != 1 else ''}")
        raw: object = value
        if hasattr(value, "magnitude"):
            text, unit = _fixed(float(value.magnitude), field_unit(key) or "")
            raw = _in_unit(float(value.magnitude), field_unit(key) or "", unit)
        elif key == "cost":
            text, unit = f"{value:,.2f}", "USD"
        elif key == "efficiency":
            text, unit = f"{value:.3f}", f"({value:.1%})"
        elif key == "speedup":
            text, unit = f"{value:,.2f}", "x"
        elif key == "communication_overhead":
            text, unit = f"{value:.3f}", ""
        elif key == "fits":
            text, unit = ("yes" if value else "NO"), ""
        elif isinstance(value, int) and not isinstance(value, bool):
            text, unit = f"{value:,}", ""
        else:
            text, unit = str(value), ""
        rows.append((label, text, unit, raw))
    return rows


def _in_unit(value: float, canonical: str, shown: str) -> float:
    """``value`` (in ``canonical``, as :func:`_fixed` takes it) in the unit :func:`_fixed` chose."""
    scale = {"TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "min": 1 / 60}.get(shown, 1.0)
    return value / scale


def input_rows(scenario: DataParallelScaleOutScenario) -> list[tuple[str, str, str]]:
    """The inputs as given: (field and symbol, value, meaning), labelled by the field table."""
    from mlsysim.engine.fields import FIELDS

    values = scenario.fields()
    rows = []
    for name, f in FIELDS.items():
        value = values.get(name)
        if name == "assumptions":
            a = scenario.assumptions  # the value of the field
            value = (
                "seed (default)"
                if a.is_seed()
                else ("realistic" if a == type(a).realistic() else "custom")
            )
        if value is None or name in ("name", "description") or (name == "zero_stage" and not value):
            continue
        if name in PRESETS:
            value = preset_name(name, value)
        label = f"{name} ({f.symbol})" if f.symbol else name
        origin = scenario.job.origins.get(name)
        if origin and f.display_unit and hasattr(value, "to"):
            value = value.to(f.display_unit)  # a derived figure in the unit a person reads
        rows.append((label, _text(value), f.label + (f" (from {origin})" if origin else "")))
    return rows


def _console() -> Console:
    """A console that wraps only on a terminal (a pipe or file gets whole lines)."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 160), soft_wrap=True)
    return console


def print_result(
    scenario: DataParallelScaleOutScenario, *, next_steps: list[str] | None = None
) -> None:
    """The answer in one line, the results and the inputs, notes, then what to try next."""
    from mlsysim.engine.explain import headline

    result = scenario.result
    console = _console()
    title = printable(scenario.name or "scenario")
    console.print(f"{title}: {headline(result)}", markup=False)
    console.print()
    console.print(_three_columns(("result", "value", "unit"), result_rows(scenario)))
    if not scenario.assumptions.is_seed():
        console.print(interval_line(result), markup=False)
    console.print()
    inputs = [(label, safe(text), meaning) for label, text, meaning in input_rows(scenario)]
    console.print(_three_columns(("input", "value", "meaning"), inputs))
    notes = [*result.constraint_trace, *rounding_notes(scenario)]
    if notes:
        console.print()
        console.print("Notes", style="bold")
        for note in notes:
            console.print(f"  - {printable(note)}", markup=False)
    if next_steps:
        console.print()
    for step in next_steps or []:
        console.print(printable(step), markup=False)


def next_steps(scenario: DataParallelScaleOutScenario, source: str) -> list[str]:
    """One or two commands worth running next, spelled for this scenario (``source``: name, --file, --set)."""
    result = scenario.result
    lines = [f"Next: mlsysim explain {source}   (how each figure is derived)"]
    if result.fits is False:
        lines.append(f"      mlsysim run {source} --set zero_stage=3   (shard the training state)")
        return lines
    nodes = _nodes_axis(scenario.nodes)
    if result.bottleneck in ("inter-node link", "intra-node link", "synchronization"):
        fabrics = '"inter_bandwidth=25 Gbps,100 Gbps,400 Gbps"'
        lines.append(
            f"      mlsysim sweep {source} --axis {nodes} --axis {fabrics}"
            "   (how it scales with the fabric)"
        )
    else:
        axis = "" if scenario.nodes > 1 else ' --set "inter_bandwidth=100 Gbps"'
        lines.append(f"      mlsysim sweep {source}{axis} --axis {nodes}   (how far it scales)")
    return lines


NODES_RANGE_LIMIT = 1024
"""Up to this many nodes a suggested sweep takes every count; beyond, powers of two."""


def _nodes_axis(nodes: int) -> str:
    """``nodes=1..2N`` (at least 16), or powers of two up to 2N when that is too many to list.

    >>> _nodes_axis(4), _nodes_axis(3000)
    ('nodes=1..16', 'nodes=1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192')
    """
    top = max(2 * nodes, 16)
    if top <= NODES_RANGE_LIMIT:
        return f"nodes=1..{top}"
    powers = [1]
    while powers[-1] < top:
        powers.append(2 * powers[-1])
    return "nodes=" + ",".join(str(p) for p in powers)


__all__ = ["inputs_dict", "next_steps", "print_result", "result_json", "field_unit"]


def print_validation(
    seed: list[Comparison],
    realistic: list[Comparison],
    *,
    band: tuple[float, float],
    families: dict[str, dict[str, Summary]],
    totals: dict[str, Summary],
    coverage: tuple[float, float],
    lofo: CrossValidation | None = None,
) -> None:
    """Measured vs predicted efficiency per case (seed, realistic with its 80% interval),
    errors per family, the overall figures, and the leave-one-family-out ones when given."""
    from rich.table import Table

    pt = "{:+.1f} pt".format
    console = _console()
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

    def three(x: Summary) -> str:
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
        total = lofo.summary
        jitters = [v * 1e3 for v in lofo.jitters.values()]
        console.print(
            f"leave one family out: median |error| {total.median_abs * 100:.1f} pt, worst "
            f"{total.max_abs * 100:.1f} pt, mean {pt(total.mean * 100)}; 80% interval from the other "
            f"families covers {lofo.coverage:.0%} (median width {lofo.median_width * 100:.1f} pt); "
            f"host jitter refitted {min(jitters):.1f}-{max(jitters):.1f} ms"
        )


def _registry_figures() -> dict[str, Callable[[Any], str]]:
    """The key figures printed for an entry, by kind."""
    from mlsysim.core.units import to_canonical

    def gb(q: Quantity) -> str:
        return fmt_bytes(to_canonical(q, "data"))

    def rate(q: Quantity) -> str:
        return f"{to_canonical(q, 'bandwidth') / 1e9:.6g} GB/s"

    def usd(q: Quantity) -> str:
        return f"{to_canonical(q, 'money_rate'):.6g} USD/hour"

    def flops(a: Accelerator) -> str:
        """The dense 16-bit peak (bf16, else fp16), the usual training precision."""
        for precision in ("bf16", "fp16"):
            if precision in a.dense_flops:
                peak = to_canonical(a.peak_flops(precision), "compute_rate") / 1e12
                return f", {peak:.6g} TFLOP/s dense {precision}"
        return ""

    def workload(w: Workload) -> str:
        text = f"{to_canonical(w.parameters, 'count'):.4g} parameters"
        if w.forward_flops_per_sample is not None:
            text += (
                f", {w.forward_flops_per_sample.to('flop').magnitude:.4g} forward FLOPs per sample"
            )
        return text

    return {
        "models": workload,
        "accelerators": lambda a: (
            f"{gb(a.memory.capacity)}, {a.nvlink.name} {rate(a.nvlink.bandwidth_per_direction)} "
            f"per direction{flops(a)}"
        ),
        "nodes": lambda n: (
            f"{n.accelerators_per_node} x {n.accelerator.name}, {rate(n.intra_node_bw)} intra, "
            f"{n.nics_per_node} x {rate(n.nic_bandwidth)} NICs"
            + (f", {usd(n.price.rate)}" if n.price is not None else "")
        ),
        "fabrics": lambda f: (
            f"{rate(f.bandwidth)} per direction, latency {fmt_time(to_canonical(f.latency, 'time'))}"
        ),
        "prices": lambda p: usd(p.rate),
    }


def registry_lines(group: str | None, *, sources: bool = False) -> list[str]:
    """One line per registry entry (path, name, key figures, where it was read), optionally
    with its source and note."""
    from mlsysim.core.exceptions import UnknownNameError
    from mlsysim.core.registry import CATALOG

    figures = _registry_figures()
    if group is not None and group.lower() not in figures:
        raise UnknownNameError(unknown(group, "registry group", figures))
    listing = list(CATALOG.listing())
    lines: list[str] = []
    for kind, figure in figures.items():
        if group is not None and kind != group.lower():
            continue
        entries = [(path, entry, origin) for k, path, entry, origin in listing if k == kind]
        lines.append(f"{kind}:")
        width = max(len(path) for path, _, _ in entries)
        for path, entry, origin in entries:
            lines.append(f"  {path.ljust(width)}  {entry.name}: {figure(entry)}  [{origin}]")
            if sources:
                lines.append(f"  {''.ljust(width)}  source: {entry.source}")
                lines.append(f"  {''.ljust(width)}  note: {entry.note}")
    return lines


def _three_columns(headers: tuple[str, str, str], rows: Iterable[tuple[str, str, str]]) -> Table:
    """A borderless table of (label, value right-aligned, unit or meaning) rows."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    table.add_column(headers[0])
    table.add_column(headers[1], justify="right")
    table.add_column(headers[2])
    for row in rows:
        table.add_row(*row)
    return table
