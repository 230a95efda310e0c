"""``mlsysim sweep`` and ``mlsysim plan``: many layouts at once, from the command line.

Axes are given as ``--axis FIELD=VALUES``: an inclusive integer range
``nodes=1..64`` (with a step: ``nodes=1..64:2``), or a comma list spelled as
``--set`` spells one value (``"inter_bandwidth=25 Gbps,100 Gbps,400 Gbps"``,
``workload=GPT2,Llama2_7B``, ``assumptions=seed,realistic``,
``assumptions.inter_efficiency=0.7,0.9``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from mlsysim.cli.loading import load
from mlsysim.cli.options import FILE_HELP, FORCE_HELP, SET_HELP
from mlsysim.cli.params import Argument, Option

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn, Task

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.core.units import Quantity
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.summary import ResultGroup
    from mlsysim.planning.table import Axis, SweepTable

JSON_ROWS_HELP = "Print the rows shown (see --rows) as one JSON document (docs/json.md)."
JSON_PLAN_HELP = "Print the plan (best layout, Pareto front, summary) as one JSON document (docs/json.md)."


AXIS_HELP = (
    "A field to sweep: FIELD=A..B (integers, inclusive; A..B:STEP), or FIELD=V1,V2,... "
    "spelled as in --set ('inter_bandwidth=25 Gbps,100 Gbps'). Repeatable; rows follow "
    "the order of the axes."
)
ROWS_HELP = "How many rows to print (all of them go to --csv)."
MAX_LAYOUTS_HELP = (
    "Refuse a search larger than this many layouts, up front, with an estimate of what it "
    "would take (defaults: 20,000,000 for a sweep in memory, 2,000,000,000 streamed)."
)
PROGRESS_MIN_ROWS = 1_000_000
"""Sweeps at least this large show a progress bar on a terminal."""

def check_outputs(
    csv: str | None, plot: str | None, parquet: str | None = None, force: bool = False
) -> None:
    """Refuse unusable output paths before any work is done (:func:`mlsysim.core.fileio.check_target`)."""
    from mlsysim.core.fileio import check_target

    if csv is not None:
        check_target(csv, suffixes=(".csv",), force=force, option="--csv")
    if plot is not None:
        check_target(plot, suffixes=(".png", ".svg"), force=force, option="--plot")

    if parquet is not None:
        check_target(parquet, suffixes=(".parquet",), force=force, option="--parquet")


def write_result_row(
    scenario: TrainingScenario,
    *,
    csv: str | None,
    parquet: str | None,
    force: bool,
    quiet: bool = False,
) -> None:
    """Write the scenario's result as one row, in the columns of ``mlsysim sweep`` over its
    layout (``nodes`` and ``devices_per_node``, then every result field), to CSV and/or Parquet.
    "wrote PATH" goes to stdout (stderr when ``quiet``: stdout holds JSON)."""
    if csv is None and parquet is None:
        return  # nothing to write: the sweep machinery is not loaded
    from mlsysim.core.fileio import replacing_read_only
    from mlsysim.core.text import printable
    from mlsysim.planning.sweep import sweep

    nodes, per_node = [scenario.nodes], [scenario.devices_per_node]
    if csv is not None:
        with replacing_read_only(force):
            sweep(scenario, nodes=nodes, devices_per_node=per_node).to_csv(csv)
        click.echo(f"wrote {printable(csv)}", err=quiet)
    if parquet is not None:
        with replacing_read_only(force):
            sweep(scenario, out=parquet, nodes=nodes, devices_per_node=per_node)
        click.echo(f"wrote {printable(parquet)}", err=quiet)


def _axes(
    texts: list[str] | None, scenario: TrainingScenario
) -> dict[str, Any]:
    """Field -> values (a ``range`` or a list), as ``sweep``/``plan`` take them."""
    from mlsysim.core.exceptions import InputError
    from mlsysim.planning.axes import parse_axis

    # loosely typed values: the dict is passed as **axes beside sweep's and plan's own keywords
    axes: dict[str, Any] = {}
    for text in texts or []:
        field, values = parse_axis(text, scenario)
        if field in axes:
            raise InputError(f"--axis {field} is given twice", field=field)
        axes[field] = values
    return axes


def _quantity(option: str, text: str | None, kind: str) -> Quantity | None:
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.units import parse_quantity

    if text is None:
        return None
    try:
        return parse_quantity(text, kind)
    except InputError as exc:
        raise InputError(f"{option}: {exc}", field=option) from None


class _ProgressBar:
    """A progress bar on stderr with the rate and the time left (a ``progress(done, total)`` callback).

    Shown on a terminal for long runs, or always with ``--progress``.
    """

    def __init__(self, total: int, force: bool) -> None:
        from rich.console import Console

        console = Console(stderr=True)
        self.active = force or (total >= PROGRESS_MIN_ROWS and console.is_terminal)
        self.bar: Progress | None = None
        if self.active:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                MofNCompleteColumn(),
                _RateColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self.task = self.bar.add_task("layouts", total=total)

    def __enter__(self) -> _ProgressBar:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done)


def _rate_column() -> ProgressColumn:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Layouts per second."""

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed / 1e6:,.1f} M/s")

    return RateColumn()


_RateColumn = _rate_column


def _size(axes: Mapping[str, Sequence[object]]) -> int:
    size = 1
    for values in axes.values():
        size *= len(values)
    return size


KEY_COLUMNS = (
    "n_devices",
    "update_time",
    "communication_time",
    "speedup",
    "efficiency",
    "global_batch",
    "training_time",
    "cost",
    "fits",
)

WHOLE_RUN_COLUMNS = ("goodput", "wall_clock_time", "energy", "emissions", "total_cost")
"""Columns of the whole run (docs/whole_run.md), shown where a layout models them."""
LAYOUT_COLUMNS = (
    "data_parallel",
    "tensor_parallel_time",
    "context_parallel_time",
    "expert_parallel_time",
    "bubble_fraction",
    "pipeline_transfer_time",
    "sharding_time",
    "data_parallel_time",
    "layout_valid",
)
"""Shown after :data:`KEY_COLUMNS` when the rows are parallel layouts."""




def _print_table(
    table: SweepTable,
    rows: Iterable[int],
    title: str,
    axis_text: dict[int, dict[str, str]] | None = None,
) -> None:
    """Rows of ``table`` in fixed point, units in the headers; wraps only on a terminal.

    ``axis_text`` replaces the axis cells of a row (a group's equivalent values).
    """
    import math

    from rich.table import Table

    picked = [int(i) for i in rows]
    show = [a.column for a in table.axes] + [
        c for c in KEY_COLUMNS if c in table and not (c == "fits" and _unknown_memory(table))
    ]
    show += [c for c in WHOLE_RUN_COLUMNS if c in table and _modeled(table, c)]
    if picked and "data_parallel" in table and not math.isnan(float(table["data_parallel"][picked[0]])):
        show += [c for c in LAYOUT_COLUMNS if c in table and _modeled(table, c)]  # layouts: d and the stages
    from mlsysim.cli.render import safe
    from mlsysim.engine.results import result_fields

    out = Table(title=safe(title), header_style="bold")
    formats = {c: _format(table, c, picked) for c in show}
    for column in show:
        unit = _short(table.units.get(column))
        spec = result_fields().get(column)
        label = spec.header if spec is not None else column
        out.add_column(f"{label} ({unit})" if unit else label, justify="right")
    for i in picked:
        given = (axis_text or {}).get(i, {})
        out.add_row(*(given.get(c) or formats[c](table[c][i]) for c in show))
    from mlsysim.cli.render import wide_console

    wide_console(out).print(out)  # a pipe or a file: whole lines, never squeezed into 80 columns


def _modeled(table: SweepTable, column: str) -> bool:
    """Whether some layout of ``table`` has the (whole-run) figure ``column``."""
    import numpy as np

    return bool(np.isfinite(np.asarray(table[column], dtype=float)).any())


def _unknown_memory(table: SweepTable) -> bool:
    import numpy as np

    return "device_memory" in table and bool(np.isnan(table["device_memory"]).all())


DECIMALS = {
    "cost": 2,
    "efficiency": 3,
    "speedup": 2,
    "update_time": 1,
    "communication_time": 1,
    "total_cost": 2,
    "data_parallel": 0,
}
"""Fixed decimals of the key columns on the terminal (the CSV keeps full precision)."""


def _format(table: SweepTable, column: str, rows: list[int]) -> Callable[[Any], str]:
    """A formatter for one column: fixed point, as many decimals as its smallest value needs."""
    import math

    import numpy as np

    axis_columns = {a.column for a in table.axes}
    values = table[column][rows] if rows else table[column][:0]
    numeric = values.dtype.kind in "fiu" and values.dtype != bool
    if column in axis_columns or not numeric:
        return lambda v: _plain(v)
    if values.dtype.kind in "iu":
        return lambda v: f"{int(v):,}"
    decimals = DECIMALS.get(column)
    if decimals is None:  # three significant digits for the smallest value, at most 5 decimals
        finite = np.abs(values[np.isfinite(values) & (values != 0)])
        smallest = float(finite.min()) if finite.size else 1.0
        decimals = min(5, max(0, 2 - math.floor(math.log10(smallest))))
    return lambda v: "-" if v != v else f"{float(v):,.{decimals}f}"


def _plain(value: object) -> str:
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "NO"
    if isinstance(value, (float, np.floating)):
        return "-" if value != value else f"{float(value):g}"
    from mlsysim.cli.render import safe

    return safe(str(value))


def _short(unit: str | None) -> str | None:
    short = {"millisecond": "ms", "byte": "B", "hour": "h", "megawatt_hour": "MWh", "metric_ton": "t"}
    return short.get(unit or "", unit)


RATE_MIN_SECONDS = 1.0
"""A sweep's rate (layouts per second) is printed only when it ran at least this long."""


def _check_intervals(scenario: TrainingScenario, axes: Mapping[str, object], level: object) -> None:
    """--intervals needs one set of non-seed assumptions and a level in (0, 1)."""
    from mlsysim.core.exceptions import InputError

    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"--intervals: expected a level in (0, 1), got {level!r}", field="intervals")
    if any(name == "assumptions" or name.startswith("assumptions.") for name in axes):
        raise InputError(
            "--intervals: the interval belongs to one set of assumptions; do not sweep them",
            field="intervals",
        )
    from mlsysim.engine.inputs.rules import LAYOUT_FIELDS

    given = scenario.fields()
    layouts = any(name in LAYOUT_FIELDS for name in axes) or any(given.get(f) is not None for f in LAYOUT_FIELDS)
    if scenario.assumptions.is_seed() and not layouts:  # a parallel layout has its runs' interval
        raise InputError(
            "--intervals: the seed model has no prediction interval (it is a bound); "
            "give --set assumptions=realistic (or an assumptions file)",
            field="intervals",
        )


def _with_intervals(table: SweepTable, scenario: TrainingScenario, level: float) -> SweepTable:
    """The table with ``<field>_low`` / ``<field>_high`` columns (docs/model.md, section 4.5)."""
    import numpy as np

    from mlsysim.engine.reports.bands import interval_columns
    from mlsysim.engine.results import INTERVAL_FIELDS

    values = {name: table[name] for name in INTERVAL_FIELDS if name in table}
    extra = interval_columns(
        scenario.assumptions,
        table["efficiency"],
        table.nodes(),
        table["n_devices"],
        values,
        level,
        np.isfinite(np.asarray(table["tensor_ranks"], dtype=float)),
    )
    units = {f"{name}_{end}": table.units.get(name) for name in values for end in ("low", "high")}
    return table.with_columns(extra, units)


def sweep_command(
    name: str | None = Argument(None, help="Scenario name (see 'mlsysim list')."),
    file: str | None = Option(None, "--file", "-f", metavar="FILE", help=FILE_HELP),
    axis: list[str] | None = Option(None, "--axis", "-a", metavar="FIELD=VALUES", help=AXIS_HELP),
    set_: list[str] | None = Option(None, "--set", "-s", metavar="FIELD=VALUE", help=SET_HELP),
    csv: str | None = Option(None, "--csv", help="Write every row to this CSV file."),
    plot: str | None = Option(None, "--plot", help="Draw a plot to this .png or .svg file."),
    plot_kind: str = Option(
        "efficiency", "--plot-kind", help="efficiency, speedup or breakdown."
    ),
    rows: int = Option(20, "--rows", help=ROWS_HELP),
    progress: bool = Option(
        False, "--progress", help="Show a progress bar even for short sweeps."
    ),
    parquet: str | None = Option(
        None,
        "--parquet",
        help="Stream every row to this Parquet file in bounded memory (pip install 'mlsysim[parquet]'); for sweeps bigger than memory.",
    ),
    max_layouts: int | None = Option(None, "--max-layouts", help=MAX_LAYOUTS_HELP),
    force: bool = Option(False, "--force", help=FORCE_HELP),
    json_: bool = Option(False, "--json", help=JSON_ROWS_HELP),
    intervals: float | None = Option(
        None,
        "--intervals",
        metavar="LEVEL",
        help="Add <field>_low and <field>_high columns: the prediction interval at LEVEL "
        "(e.g. 0.8) of efficiency, speedup, update time, training time and cost "
        "(non-seed assumptions, the same for every row).",
    ),
) -> None:
    """Evaluate every combination of the --axis values and print the key figures.

    Examples:

      mlsysim sweep Gpt2DataParallelOneNode --axis nodes=1..64 --axis "inter_bandwidth=25 Gbps,100 Gbps,400 Gbps" --plot eff.png

      mlsysim sweep --file job.toml --axis accumulation_steps=1,2,4,8 --csv out.csv

      mlsysim sweep Gpt2DataParallelOneNode --set "inter_bandwidth=100 Gbps" --axis nodes=1..4096 --axis accumulation_steps=1..64 --parquet rows.parquet
    """
    import numpy as np

    from mlsysim.core.exceptions import InputError
    from mlsysim.core.fileio import replacing_read_only
    from mlsysim.core.jsonio import document, dumps
    from mlsysim.core.text import printable
    from mlsysim.planning.sweep import sweep

    check_outputs(csv, plot, parquet, force)
    if parquet is not None and (csv is not None or plot is not None):
        raise InputError("--parquet writes every row to a file: give --csv/--plot without it")
    scenario = load(name, file, set_, axis)
    axes = _axes(axis, scenario)
    kinds = ("efficiency", "speedup", "breakdown")
    if plot_kind not in kinds:
        raise click.BadParameter(
            f"expected one of {', '.join(kinds)}, got {plot_kind!r}", param_hint="--plot-kind"
        )
    started = time.perf_counter()
    if parquet is not None:
        if intervals is not None:
            raise InputError("--intervals: not with --parquet (give --csv)", field="intervals")
        with _ProgressBar(_size(axes), progress) as bar, replacing_read_only(force):
            sweep(scenario, progress=bar, out=parquet, max_layouts=max_layouts, **axes)
        _report_rate(_size(axes), scenario, time.perf_counter() - started)
        click.echo(f"wrote {printable(parquet)}")
        return
    if intervals is not None and parquet is None:
        _check_intervals(scenario, axes, intervals)
    with _ProgressBar(_size(axes), progress) as bar:
        table = sweep(scenario, progress=bar, max_layouts=max_layouts, **axes)
    if intervals is not None:
        table = _with_intervals(table, scenario, intervals)
    shown = np.arange(min(max(rows, 0), len(table)))
    if json_:
        body: dict[str, JSONValue] = {
            "scenario": scenario.name,
            "layouts": len(table),
            "units": {c: table.units.get(c) for c in table.columns},
            "rows": _rows_json(table, shown),
        }
        click.echo(dumps(document("sweep", body), indent=2))
    else:
        _report_rate(len(table), scenario, time.perf_counter() - started)
        if len(shown):
            _print_table(table, shown, f"{scenario.name or 'scenario'}: sweep")
        if len(table) > len(shown):
            click.echo(f"... {len(table) - len(shown):,} more rows (--rows N, or --csv FILE for all)")
    if csv:
        with replacing_read_only(force):
            table.to_csv(csv)
        click.echo(f"wrote {printable(csv)}", err=json_)
    if plot:
        from mlsysim.viz import plots

        with replacing_read_only(force):
            if plot_kind == "efficiency" and any(a.magnitudes is not None for a in table.axes):
                plots.efficiency_plot(table, path=plot)
            elif plot_kind == "speedup":
                plots.speedup_plot(table, path=plot)
            else:
                plots.breakdown_plot(table, path=plot)
        click.echo(f"wrote {printable(plot)}", err=json_)


def _rows_json(table: SweepTable, rows: Iterable[int]) -> list[JSONValue]:
    """Rows of a sweep table in the one JSON encoding: a figure with a unit as {value, unit}."""
    from mlsysim.core.jsonio import encode

    out: list[JSONValue] = []
    for i in rows:
        row = table.row(int(i))
        out.append(
            {
                column: encode(value, unit=table.units.get(column))
                if isinstance(value, (int, float)) and not isinstance(value, bool)
                else encode(value)
                for column, value in row.items()
            }
        )
    return out


def _report_rate(size: int, scenario: TrainingScenario, elapsed: float) -> None:
    from mlsysim.core.text import printable

    rate = f", {size / elapsed:,.0f} per second" if elapsed >= RATE_MIN_SECONDS else ""
    name = printable(scenario.name or "the scenario")
    click.echo(f"{size:,} layouts of {name} in {elapsed:.2f} s{rate}")


def _group_cells(table: SweepTable, group: ResultGroup) -> dict[str, str]:
    """Axis cells of a group: its one value, the equivalent values, or "any" (no difference)."""
    from mlsysim.planning.summary import fmt_value

    cells = {}
    for axis in table.axes:
        values = group.values[axis.field]
        if axis.field in group.free:
            cells[axis.column] = "any"
        elif len(values) > 1:
            cells[axis.column] = ", ".join(_axis_cell(axis, v, fmt_value) for v in values)
    return cells


def _axis_cell(axis: Axis, value: object, fmt_value: Callable[[object], str]) -> str:
    """A value in the unit of its column (the header carries the unit)."""
    if axis.unit is not None and hasattr(value, "to"):
        return f"{value.to(axis.unit).magnitude:g}"
    return fmt_value(value)


def plan_command(
    name: str | None = Argument(None, help="Scenario name (see 'mlsysim list')."),
    file: str | None = Option(None, "--file", "-f", metavar="FILE", help=FILE_HELP),
    axis: list[str] | None = Option(None, "--axis", "-a", metavar="FIELD=VALUES", help=AXIS_HELP),
    set_: list[str] | None = Option(None, "--set", "-s", metavar="FIELD=VALUE", help=SET_HELP),
    objective: str = Option(
        "cost", "--objective", help="cost (needs node_hour_rate) or time."
    ),
    deadline: str | None = Option(
        None,
        "--deadline",
        help="Longest training time, e.g. '2 day' (the wall clock where failures are modeled).",
    ),
    budget: str | None = Option(
        None,
        "--budget",
        help="Highest cost, e.g. '5000 USD' (the whole run's where failures or energy are priced).",
    ),
    min_efficiency: float | None = Option(
        None, "--min-efficiency", help="Lowest scaling efficiency, e.g. 0.8."
    ),
    max_global_batch: int | None = Option(
        None, "--max-global-batch", help="Largest global batch."
    ),
    max_emissions: str | None = Option(
        None, "--max-emissions", help="Most CO2e of the run, e.g. '50 t' (needs device_power and carbon_intensity)."
    ),
    max_energy: str | None = Option(
        None, "--max-energy", help="Most energy of the run, e.g. '500 MWh' (needs device_power)."
    ),
    min_goodput: float | None = Option(
        None, "--min-goodput", help="Lowest goodput, e.g. 0.9 (needs failure_rate, checkpoint_bandwidth, restart_time)."
    ),
    confidence: float | None = Option(
        None,
        "--confidence",
        help="Meet --deadline and --budget with this probability (0.5-1, e.g. 0.8), at the "
        "bound of the prediction interval (non-seed assumptions).",
    ),
    csv: str | None = Option(None, "--csv", help="Write the Pareto front to this CSV file."),
    plot: str | None = Option(
        None, "--plot", help="Draw time against cost to this .png or .svg file."
    ),
    rows: int = Option(20, "--rows", help=ROWS_HELP),
    progress: bool = Option(
        False, "--progress", help="Show a progress bar even for short searches."
    ),
    workers: int | None = Option(
        None, "--workers", "-j", help="Processes to use (default: every core for large spaces)."
    ),
    scheduler: str | None = Option(
        None,
        "--scheduler",
        help="Run on a Dask cluster: the scheduler's address, e.g. tcp://10.0.0.1:8786 (pip install 'mlsysim[dask]').",
    ),
    top: int = Option(0, "--top", help="Also list the K best layouts."),
    max_layouts: int | None = Option(None, "--max-layouts", help=MAX_LAYOUTS_HELP),
    force: bool = Option(False, "--force", help=FORCE_HELP),
    json_: bool = Option(False, "--json", help=JSON_PLAN_HELP),
) -> None:
    """Find the cheapest (or fastest) layout that meets a deadline, a budget, an efficiency.

    Prints the plan, then the Pareto front of training time against cost (the wall
    clock and the whole run's cost where failures are modeled or energy priced).

    Example:

      mlsysim plan Gpt2DataParallelOneNode --axis nodes=1..64 --axis "inter_bandwidth=25 Gbps,100 Gbps,400 Gbps" --objective cost --deadline "2 hour" --min-efficiency 0.8
    """

    from mlsysim.core.fileio import replacing_read_only
    from mlsysim.core.jsonio import document, dumps
    from mlsysim.core.text import printable, printable_lines
    from mlsysim.planning.plan import MAX_STREAM_LAYOUTS, PlanInterrupted, plan

    check_outputs(csv, plot, force=force)
    scenario = load(name, file, set_, axis)
    axes = _axes(axis, scenario)
    try:
        with _ProgressBar(_size(axes), progress) as bar:
            result = plan(
                scenario,
                objective=objective,
                deadline=_quantity("--deadline", deadline, "time"),
                budget=_quantity("--budget", budget, "money"),
                min_efficiency=min_efficiency,
                max_global_batch=max_global_batch,
                max_emissions=_quantity("--max-emissions", max_emissions, "mass"),
                max_energy=_quantity("--max-energy", max_energy, "energy"),
                min_goodput=min_goodput,
                confidence=confidence,
                top=top,
                workers=workers,
                scheduler=scheduler,
                progress=bar,
                max_layouts=MAX_STREAM_LAYOUTS if max_layouts is None else max_layouts,
                **axes,
            )
    except PlanInterrupted as stop:
        click.echo("mlsysim: the workers are stopped", err=True)
        if stop.plan is not None:
            click.echo(stop.plan.summary())
        else:
            click.echo(
                f"Interrupted after {stop.evaluated:,} of {stop.size:,} layouts: "
                "no feasible layout found so far"
            )
        raise click.exceptions.Exit(130) from None
    except KeyboardInterrupt:  # before the first block came back (workers still starting)
        click.echo(
            f"Interrupted after 0 of {_size(axes):,} layouts: no feasible layout found so far"
        )
        raise click.exceptions.Exit(130) from None
    from mlsysim.planning.notes import plan_notes
    from mlsysim.planning.reduce import FIGURE_WORDS
    from mlsysim.planning.summary import group_results

    if json_:
        front = result.pareto
        body: dict[str, JSONValue] = {
            "scenario": scenario.name,
            "objective": objective,
            "time_figure": result.time_figure,
            "cost_figure": result.cost_figure,
            "summary": result.summary(),
            "notes": list(plan_notes(result)),
            "best": {**result.best.to_dict(), "result": result.best.result.to_dict()},
            "units": {c: front.units.get(c) for c in front.columns},
            "pareto": _rows_json(front, range(len(front))),
        }
        if result.top is not None:
            body["top"] = _rows_json(result.top, range(len(result.top)))
        click.echo(dumps(document("plan", body), indent=2))
        if csv:
            with replacing_read_only(force):
                front.to_csv(csv)
        return
    click.echo(printable_lines(result.summary()))
    if result.top is not None and len(result.top):
        _print_table(result.top, range(len(result.top)), f"Top {len(result.top)} layouts")
    front = result.pareto
    groups = group_results(front)
    shown = groups[: max(rows, 0)]
    _print_table(
        front,
        [g.rows[0] for g in shown],
        f"Pareto front: {FIGURE_WORDS[result.time_figure]} against {FIGURE_WORDS[result.cost_figure]} "
        "(layouts with equal results on one row)",
        axis_text={g.rows[0]: _group_cells(front, g) for g in shown},
    )
    if len(groups) > len(shown):
        click.echo(
            f"... {len(groups) - len(shown)} more results on the front (--rows N, or --csv FILE)"
        )
    notes = plan_notes(result, {"rows of the front shown": [g.rows[0] for g in shown]})
    if notes:
        click.echo("Notes (as 'mlsysim run' gives them, once per plan)")
        for note in notes:
            click.echo(f"  - {printable(note)}")
    if csv:
        with replacing_read_only(force):
            front.to_csv(csv)
        click.echo(f"wrote {printable(csv)}")
    if plot:
        from mlsysim.viz.plots import pareto_plot

        with replacing_read_only(force):
            pareto_plot(result, path=plot)
        click.echo(f"wrote {printable(plot)}")
