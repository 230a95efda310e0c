"""Rendering of scenarios and results for the terminal (rich) and as JSON."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from mlsysim.cli.options import KERNEL_GROUP, REGISTRY_GROUPS
from mlsysim.core.formatting import fmt_bytes, fmt_time
from mlsysim.core.suggest import unknown
from mlsysim.core.text import printable
from mlsysim.engine.inputs.presets import PRESETS, preset_name
from mlsysim.engine.results import field_unit, run_rows

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.core.units import Quantity
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.hardware.types import Accelerator
    from mlsysim.models.types import Workload
    from mlsysim.validation.published import (
        Comparison,
        ConstantCheck,
        CrossValidation,
        NestedCheck,
        Summary,
    )


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


def inputs_dict(scenario: TrainingScenario) -> dict[str, JSONValue]:
    """The scenario's inputs in the project's JSON encoding."""
    inputs = scenario.to_dict()["inputs"]
    assert isinstance(inputs, dict)  # to_dict puts the inputs in a mapping
    return dict(inputs)


def result_json(scenario: TrainingScenario) -> str:
    """``run --json``: the scenario's inputs and its result, one JSON document."""
    from mlsysim.core.jsonio import document, dumps
    from mlsysim.engine.reports.bands import has_interval

    body = {**scenario.to_dict(), "result": scenario.result.to_dict()}
    if has_interval(scenario.result):
        body["intervals_80"] = intervals_dict(scenario.result)
    return dumps(document("result", body), indent=2)


def intervals_dict(result: DataParallelScaleOutResult, level: float = 0.8) -> dict[str, JSONValue]:
    """The prediction intervals of a (non-seed) result: [low, high] in the JSON encoding."""
    from mlsysim.core.jsonio import encode
    from mlsysim.engine.results import INTERVAL_FIELDS

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
    from mlsysim.engine.reports.bands import interval_source
    from mlsysim.engine.results import INTERVAL_FIELDS

    parts = []
    for name in INTERVAL_FIELDS:
        if name == "cost" and result.cost is None:
            continue
        low, high = result.interval(name, level)
        if isinstance(low, Quantity) and isinstance(high, Quantity):
            unit = field_unit(name) or ""
            parts.append(f"{name} {fixed_range(low.to(unit).magnitude, high.to(unit).magnitude, unit)}")
        elif name == "cost":
            parts.append(f"cost {low:,.2f}-{high:,.2f} USD")
        else:
            parts.append(f"{name} {_plain(float(low))}-{_plain(float(high))}")
    how = "split conformal" if result.figures.layout is not None else "normalised conformal"
    return f"{level:.0%} prediction interval ({how}; {interval_source(result)}): " + ", ".join(parts)


def fixed_range(low: float, high: float, unit: str) -> str:
    """``"18,110.0-76,240.0 ms"``: both ends in fixed point in the unit :func:`_fixed` gives the
    high end (the run table's), never in e-notation.

    >>> fixed_range(18110.2, 76240.4, "millisecond"), fixed_range(0.5, 0.75, "hour")
    ('18,110.2-76,240.4 ms', '30.0-45.0 min')
    """
    high_text, shown = _fixed(high, unit)
    if unit == "hour":  # the one unit _fixed switches (to min below an hour): low follows high
        low_text = f"{low * 60:,.1f}" if shown == "min" else f"{low:,.2f}"
    else:
        low_text = _fixed(low, unit)[0]
    return f"{low_text}-{high_text} {shown}"


def _plain(x: float) -> str:
    """A ratio or a count in fixed point: 3 decimals below 1, 4 significant digits below 1,000,
    whole numbers above (never e-notation)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else (f"{x:.4g}" if abs(x) >= 1 else f"{x:.3f}")


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
    if unit == "megawatt_hour" and abs(value) < 1:
        return f"{value * 1e3:,.3f}", "kWh"
    if unit == "metric_ton" and abs(value) < 1:
        return f"{value * 1e3:,.3f}", "kg CO2e"
    if unit in _SHORT_UNITS:
        return f"{value:,.3f}", _SHORT_UNITS[unit]
    return f"{value:,.3f}", unit


_SHORT_UNITS = {"second": "s", "minute": "min", "megawatt_hour": "MWh", "metric_ton": "t CO2e"}
"""How the run table writes the units of the whole-run fields."""


def result_rows(scenario: TrainingScenario) -> list[tuple[str, str, str]]:
    """The result as (label, value, unit) rows, fixed point, the answer first."""
    return [(label, text, unit) for label, text, unit, _ in _result_cells(scenario)]


def rounding_notes(scenario: TrainingScenario) -> list[str]:
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
    scenario: TrainingScenario,
) -> list[tuple[str, str, str, object]]:
    """(label, text, unit, value in that unit) for each result row."""
    result = scenario.result
    seed_only = scenario.assumptions.is_seed()
    n, nodes = result.n_devices, scenario.nodes
    layout = result.figures.layout is not None
    rows = []
    for f in run_rows():
        key = f.name
        value = getattr(result, key)
        if value is None or (seed_only and f.opt_in):
            continue
        label = (f.layout_label if layout else f.label).format(
            n=n, nodes=f"{nodes} node{'s' if nodes != 1 else ''}"
        )
        text, unit = _DISPLAY[f.display](value, f.unit or "")
        raw: object = value
        if f.display == "fixed":
            raw = _in_unit(float(value.magnitude), unit)
        elif f.display == "money":
            raw = float(value)
        rows.append((label, text, unit, raw))
    return rows


def _in_unit(value: float, shown: str) -> float:
    """``value`` (in the field's unit, as :func:`_fixed` takes it) in the unit :func:`_fixed` chose."""
    scale = {"TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "min": 1 / 60}.get(shown, 1.0)
    return value / scale


def _fixed_quantity(value: object, unit: str) -> tuple[str, str]:
    """A field shown in fixed decimals: its value is a Quantity (``display="fixed"``)."""
    return _fixed(float(cast("Quantity", value).magnitude), unit)


_DISPLAY: dict[str, Callable[[object, str], tuple[str, str]]] = {
    "fixed": _fixed_quantity,
    "money": lambda value, unit: (f"{value:,.2f}", "USD"),
    "percent": lambda value, unit: (f"{value:.3f}", f"({value:.1%})"),
    "times": lambda value, unit: (f"{value:,.2f}", "x"),
    "ratio": lambda value, unit: (f"{value:.3f}", ""),
    "yes_no": lambda value, unit: ("yes" if value else "NO", ""),
    "count": lambda value, unit: (f"{value:,}", ""),
    "text": lambda value, unit: (str(value), ""),
}
"""How each ``display`` of a result field (:class:`~mlsysim.engine.results.ResultField`)
is written on the run table: (value, unit)."""


def input_rows(scenario: TrainingScenario) -> list[tuple[str, str, str]]:
    """The inputs as given: (field and symbol, value, meaning), labelled by the field table."""
    from mlsysim.engine.inputs.fields import FIELDS, GROUPS

    values = scenario.fields()
    rows = []
    order = {group: i for i, group in enumerate(GROUPS)}
    shown_group = None
    for name, f in sorted(FIELDS.items(), key=lambda item: order[item[1].group]):
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
        if f.group != shown_group:
            shown_group = f.group
            rows.append((f"[{GROUPS[f.group]}]", "", ""))
        rows.append((label, _text(value), f.label + (f" (from {origin})" if origin else "")))
    return rows


def wide_console(*tables: Table) -> Console:
    """A console that wraps only on a terminal: a pipe or file gets whole lines, as wide
    as the widest of ``tables`` needs (rich would otherwise cut its cells to fit)."""
    from rich.console import Console

    console = Console(highlight=False)
    if console.is_terminal:
        return console
    unbounded = Console(highlight=False, width=1 << 20)
    needed = max((unbounded.measure(t).maximum for t in tables), default=0)
    return Console(highlight=False, width=max(console.width, 160, needed), soft_wrap=True)


def print_result(
    scenario: TrainingScenario, *, next_steps: list[str] | None = None
) -> None:
    """The answer in one line, the results and the inputs, notes, then what to try next.

    On a terminal rich prints it (bold headers, columns wrapped to the window); elsewhere (a
    pipe, a file, a test's runner) the same text is written here without importing rich
    (:func:`plain_table`, ~0.03 s of the command's start), unless a cell needs rich to tell
    how it prints (markup, an emoji code, a character that is not ASCII).
    """
    from mlsysim.engine.reports.headline import headline

    result = scenario.result
    result_cells = result_rows(scenario)
    input_cells = input_rows(scenario)
    title = printable(scenario.name or "scenario")
    first = f"{title}: {headline(result)}"
    from mlsysim.engine.reports.bands import has_interval

    intervals = has_interval(result)
    if intervals and result.n_devices > 1:
        low, high = result.interval("efficiency")
        first += f"; 80% interval: efficiency {low:.1%} - {high:.1%}"
    interval = interval_line(result) if intervals else None
    notes = [f"  - {printable(note)}" for note in (*result.constraint_trace, *rounding_notes(scenario))]
    steps = [printable(step) for step in next_steps or []]
    if not rich_console_needed():
        results = plain_table(("result", "value", "unit"), result_cells)
        inputs = plain_table(("input", "value", "meaning"), input_cells, escaped=True)
        texts = [first, *([interval] if interval else []), *notes, *steps]
        if results is not None and inputs is not None and not any(map(_needs_rich, texts)):
            lines = [first, "", *results, *([interval] if interval else []), "", *inputs]
            if notes:
                lines += ["", "Notes", *notes]
            if steps:
                lines.append("")
            sys.stdout.write("".join(f"{line}\n" for line in [*lines, *steps]))
            return
    results_table = _three_columns(("result", "value", "unit"), result_cells)
    inputs_table = _three_columns(
        ("input", "value", "meaning"),
        [(label, safe(text), meaning) for label, text, meaning in input_cells],
    )
    console = wide_console(results_table, inputs_table)
    console.print(first, markup=False)
    console.print()
    console.print(results_table)
    if interval is not None:
        console.print(interval, markup=False)
    console.print()
    console.print(inputs_table)
    if notes:
        console.print()
        console.print("Notes", style="bold")
        for note in notes:
            console.print(note, markup=False)
    if steps:
        console.print()
    for step in steps:
        console.print(step, markup=False)


_MARKUP_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")
"""A markup tag as rich reads one (``rich.markup.RE_TAGS``): its cells render it as a style."""
_EMOJI_CODE = re.compile(r":\S*?:")
"""Wider than rich's emoji codes (``:smile:``), which it replaces in every text it prints."""


def _needs_rich(text: str) -> bool:
    """Whether only rich can tell how ``text`` prints (see :func:`print_result`)."""
    return not text.isascii() or _EMOJI_CODE.search(text) is not None


def rich_console_needed() -> bool:
    """Whether rich's console would style or wrap the output: stdout is a terminal (or rich is
    told to treat it as one: ``FORCE_COLOR``, ``TTY_COMPATIBLE``, ``TTY_INTERACTIVE``), or
    this runs in a notebook."""
    if any(os.environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return True
    if "ipykernel" in sys.modules:
        return True
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream: rich would not print to it either
        return True


def plain_table(
    headers: tuple[str, str, str], rows: Iterable[tuple[str, str, str]], *, escaped: bool = False
) -> list[str] | None:
    """The lines rich prints for :func:`_three_columns` on a console that is not a terminal
    (every column as wide as its widest cell, the middle one right-aligned, three spaces
    between columns, a rule under the headers), or None where only rich can tell (a cell
    with markup, an emoji code or a character that is not ASCII). ``escaped``: the middle
    column is user text that :func:`print_result` hands rich through :func:`safe` (shown as
    given, markup and all)."""
    table = [headers, *rows]
    for label, value, meaning in table:
        for cell, literal in ((label, False), (value, escaped), (meaning, False)):
            if _needs_rich(cell) or (not literal and _MARKUP_TAG.search(cell)):
                return None
            if literal and "\\" in cell:  # rich's escape and its reading of backslashes
                return None
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines = [
        f"{label.ljust(widths[0])}   {value.rjust(widths[1])}   {meaning.ljust(widths[2])}"
        for label, value, meaning in table
    ]
    lines.insert(1, "\u2500" * (sum(widths) + 6))
    return lines


def next_steps(
    scenario: TrainingScenario, source: str, *, assumptions: str = ""
) -> list[str]:
    """One or two commands worth running next, spelled for this scenario (``source``: name,
    --file, --set). ``assumptions`` is ``--assumptions FILE`` as given to ``run``: repeated where
    the command takes it; a sweep (which does not) is then not suggested, rather than one that
    would silently drop the file's constants."""
    result = scenario.result
    extra = f" {assumptions}" if assumptions else ""
    lines = [f"Next: mlsysim explain {source}{extra}   (how each figure is derived)"]
    from mlsysim.engine.reports.bands import has_interval

    if scenario.assumptions.is_seed() and result.n_devices > 1 and not has_interval(result):  # a bound
        lines.append(
            f"      mlsysim run {source} --set assumptions=realistic   (80% intervals; the seed model is a bound)"
        )
    if result.fits is False:
        lines.append(
            f"      mlsysim run {source}{extra} --set zero_stage=3   (shard the training state)"
        )
        return lines
    if assumptions:
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
    intervals: tuple[np.ndarray, np.ndarray],
    families: dict[str, dict[str, Summary]],
    totals: dict[str, Summary],
    coverage: tuple[float, float],
    lofo: CrossValidation | None = None,
    held_out: CrossValidation | None = None,
    jitter: ConstantCheck | None = None,
    nested: NestedCheck | None = None,
) -> None:
    """Measured vs predicted efficiency per case (seed, realistic with its 80% interval),
    errors per family, the overall figures (held out first, in sample second), and every
    case and family left out when ``lofo`` is given.

    ``band`` is (z_lo, z_hi), the score quantiles; ``intervals`` the (low, high)
    efficiency interval of every case (the band times the case's difficulty);
    ``held_out`` the leave-one-family-out check of the headline (``lofo`` by default);
    ``jitter`` the host jitter's held-out check."""
    from rich.table import Table

    from mlsysim.engine.reports.bands import DIFFICULTY_FORMULA
    from mlsysim.validation.published import by_family

    pt = "{:+.1f} pt".format
    console = wide_console()
    table = Table(
        title="Scaling efficiency: published measurements vs the model", header_style="bold"
    )
    columns = ["case", "meas.", "seed", "err", "real.", "80% int.", "err"]
    if lofo is not None:
        columns += ["CV", "err"]
    for column in columns:
        table.add_column(column, justify="left" if column == "case" else "right", no_wrap=True)
    held = {c.case.id: c for c in lofo.comparisons} if lofo is not None else {}
    for s, r, low, high in zip(seed, realistic, *intervals, strict=True):
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
    columns = ["family", "cases", "seed"]
    if lofo is not None:
        columns += ["held out", "80% cov."]
    columns += ["in sample"]
    for column in columns:
        fam.add_column(column, justify="left" if column == "family" else "right", no_wrap=True)

    def three(x: Summary) -> str:
        return f"{x.median_abs * 100:.1f} / {x.max_abs * 100:.1f} / {x.mean * 100:+.1f}"

    held_families = by_family(lofo.comparisons) if lofo is not None else {}
    for name, s_ in families["seed"].items():
        row = [name, str(s_.count), three(s_)]
        if lofo is not None:
            in_band = [
                bool(ok)
                for c, ok in zip(lofo.comparisons, lofo.covered, strict=True)
                if c.case.family == name
            ]
            row += [three(held_families[name]), f"{sum(in_band) / len(in_band):.0%}"]
        fam.add_row(*row, three(families["realistic"][name]))
    fam.add_section()
    total_row = ["all", str(totals["seed"].count), three(totals["seed"])]
    if lofo is not None:
        total_row += [three(lofo.summary), f"{lofo.coverage:.0%}"]
    fam.add_row(*total_row, three(totals["realistic"]))
    console.print(fam)
    covered, width = coverage
    lead = held_out if held_out is not None else lofo
    if lead is not None:
        total = lead.summary
        jitters = [v * 1e3 for v in lead.jitters.values()]
        console.print(
            "realistic, each family left out (host jitter "
            + (
                f"refitted without it, {min(jitters):.1f}-{max(jitters):.1f} ms"
                if jitters
                else "not fitted"
            )
            + f"; its 80% interval from the other families): median |error| "
            f"{total.median_abs * 100:.1f} pt, worst {total.max_abs * 100:.1f} pt, mean "
            f"{pt(total.mean * 100)}; the 80% interval covers {lead.coverage:.0%} of cases "
            f"({lead.family_coverage:.0%} of the average family), median width "
            f"{lead.median_width * 100:.1f} pt"
        )
    if nested is not None:
        console.print(nested_line(nested))
    in_sample = totals["realistic"]
    console.print(
        f"realistic, in sample (fitted on every case): median |error| "
        f"{in_sample.median_abs * 100:.1f} pt, worst {in_sample.max_abs * 100:.1f} pt, mean "
        f"{pt(in_sample.mean * 100)}; the 80% interval covers {covered:.0%} of cases, median "
        f"width {width * 100:.1f} pt"
    )
    console.print(
        f"realistic 80% interval: predicted + [{band[0]:+.3f}, {band[1]:+.3f}] x s, s = "
        f"{DIFFICULTY_FORMULA}{', N nodes' if 'log2(N)' in DIFFICULTY_FORMULA else ''} "
        "(e the predicted efficiency; one conformal quantile over families, each weighing "
        "alike, from residuals of each case predicted without its family); at e = 1 it "
        f"still reaches {-band[0] * 100:.1f} pt below, the floor for the loss no term models"
        "  (* = measured outside)"
    )
    if jitter is not None:
        kept = "kept" if jitter.helps else "it does not help: remove it from the preset"
        console.print(
            f"host jitter, held out: median |error| {jitter.with_it.median_abs * 100:.2f} pt "
            f"with it (refitted without each family), {jitter.without_it.median_abs * 100:.2f} "
            f"pt without (mean {pt(jitter.with_it.mean * 100)} against "
            f"{pt(jitter.without_it.mean * 100)}): {kept}"
        )


def nested_line(nested: NestedCheck) -> str:
    """The fully nested check of the 80% interval, in one line (``validate published --cv``)."""
    return (
        "realistic, fully nested (each family left out of the jitter's fit behind every residual "
        "of its band, of the band's weights and of the band): the 80% interval covers "
        f"{nested.coverage:.0%} of cases ({nested.family_coverage:.0%} of the average family), "
        f"median width {nested.median_width * 100:.1f} pt"
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

    figures: dict[str, Callable[[Any], str]] = {
        "models": workload,
        "accelerators": lambda a: (
            f"{gb(a.memory.capacity)}, {a.nvlink.name} {rate(a.nvlink.bandwidth_per_direction)} "
            f"per direction{flops(a)}"
            + (f", TDP {a.power.tdp.to('W').magnitude:.6g} W" if a.power is not None else "")
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
        "grids": lambda g: f"{g.intensity.to('g/kWh').magnitude:.6g} g CO2e/kWh ({g.year})",
        "failures": lambda f: f"{f.rate.to('failure/hour').magnitude:.4g} failures per {f.per}-hour",
    }
    return {group: figures[group] for group in REGISTRY_GROUPS}  # the order --help names them in


def registry_lines(group: str | None, *, sources: bool = False) -> list[str]:
    """One line per registry entry (path, name, key figures, where it was read), optionally
    with its source and note."""
    from mlsysim.core.exceptions import UnknownNameError
    from mlsysim.core.registry import CATALOG

    figures = _registry_figures()
    if group is not None and group.lower() not in (*figures, KERNEL_GROUP):
        raise UnknownNameError(unknown(group, "registry group", (*figures, KERNEL_GROUP)))
    if group is not None and group.lower() == KERNEL_GROUP:
        return kernel_table_lines(sources=sources)
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
    if group is None:
        lines.extend(kernel_table_lines(sources=sources))
    return lines


def kernel_table_lines(*, sources: bool = False) -> list[str]:
    """One line per shipped kernel table (file, kind, accelerator, split, rows, source's title and date);
    with ``sources`` its full citation and what its figures are."""
    from mlsysim.kernels.tables import shipped_tables

    shipped = shipped_tables()
    lines = [f"{KERNEL_GROUP}:"]
    if not shipped:
        return [*lines, "  (none shipped)"]
    width = max(len(t.name) for t in shipped)
    for table in shipped:
        lines.append(printable(f"  {table.name.ljust(width)}  {table.kind}, {table.accelerator}, {table.split}, "
                               f"{len(table)} rows: {table.source.title} ({table.source.date})"))
        if sources:
            lines.append(printable(f"  {''.ljust(width)}  source: {table.source.cite()}"))
            lines.append(printable(f"  {''.ljust(width)}  notes: {table.source.notes}"))
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
