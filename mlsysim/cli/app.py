"""The command line application (click): ``mlsysim list | run | explain | ...``.

Heavy imports happen inside the commands so that ``mlsysim --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import click

from mlsysim.cli.options import FILE_HELP, FORCE_HELP, REGISTRY_GROUP_HELP, SET_HELP
from mlsysim.cli.params import Argument, Option, command, group

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario

FIRST_COMMANDS: Final = (
    ("mlsysim list", "the named scenarios"),
    ("mlsysim run Gpt2DataParallelFourNodes10GbE", "one scenario's inputs and results"),
    ("mlsysim init job.toml", "a commented scenario file to edit"),
)
"""The three commands a newcomer wants first (command, what it shows): the first examples of
``--help``, and what a bare ``mlsysim`` prints under its usage."""

_MORE_EXAMPLES: Final = (
    'mlsysim run Gpt2DataParallelOneNode --set nodes=4 --set "inter_bandwidth=100 Gbps"',
    "mlsysim explain Gpt2DataParallelFourNodes10GbE --set assumptions=realistic",
    'mlsysim sweep Gpt2DataParallelOneNode --axis nodes=1..64 --axis "inter_bandwidth=25 Gbps,400 Gbps"',
    'mlsysim plan Gpt2DataParallelOneNode --axis nodes=1..64 --axis "inter_bandwidth=100 Gbps,400 Gbps" '
    '--deadline "1 hour"',
    "mlsysim run --file job.toml",
    "mlsysim run --set workload=Llama3_8B --set node=DGX_H100 --set fabric=InfiniBand_NDR "
    '--set nodes=16 --set mfu=0.4 --set "training_tokens=1e12 token" --set per_device_batch=1',
    "mlsysim --registry my_cluster.toml registry nodes",
)

_SUMMARY: Final = (
    "Predict what happens when a training job goes data-parallel: update time, "
    "gradient AllReduce, speedup, efficiency, training time and cost, from a "
    "one-device profile."
)



def first_steps(usage: str, commands: list[str]) -> str:
    """What a bare ``mlsysim`` prints: the usage, the summary, the :data:`FIRST_COMMANDS`
    and the names of every command, on several lines."""
    import textwrap

    width = max(len(command) for command, _ in FIRST_COMMANDS)
    lines = [
        usage.rstrip(),
        "",
        textwrap.fill(_SUMMARY, width=79, break_on_hyphens=False),
        "",
        "Start with:",
        *(f"  {command.ljust(width)}  {what}" for command, what in FIRST_COMMANDS),
        "",
        textwrap.fill(f"Commands: {', '.join(commands)}", width=79, subsequent_indent="  "),
        "More examples: mlsysim --help; one command's options: mlsysim COMMAND --help",
    ]
    return "\n".join(lines)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from mlsysim import __version__

        click.echo(f"mlsysim {__version__}")
        ctx.exit()


def _global_options(
    registry: list[str] | None = Option(
        None,
        "--registry",
        metavar="FILE",
        help=(
            "Add or replace registry entries (accelerators, nodes, fabrics, prices, models) "
            "from a TOML file before the command runs; repeatable, later files win. "
            "'mlsysim registry' shows where each entry came from."
        ),
    ),
    version: bool = Option(
        False, "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Options that apply to every command."""
    if registry:
        from mlsysim.core.registry import load_registry

        for path in registry:
            load_registry(path)


app = group(
    "mlsysim",
    help=(
        f"{_SUMMARY}\n\n"
        "Examples:\n\n"
        + "\n\n".join(f"  {command}" for command in (*(c for c, _ in FIRST_COMMANDS), *_MORE_EXAMPLES))
    ),
    callback=_global_options,
)


ASSUMPTIONS_HELP = (
    "An assumptions file (written by 'mlsysim validate mine'): its constants replace the "
    "scenario's assumptions, and its runs' residuals give the prediction intervals."
)


def _scenario(
    name: str | None, sets: list[str] | None, file: str | None = None, assumptions: str | None = None
) -> TrainingScenario:
    from mlsysim.cli.loading import load

    scenario = load(name, file, sets)
    if assumptions is not None:
        from mlsysim.validation.mine import load_assumptions

        scenario = scenario.variant(assumptions=load_assumptions(assumptions))
    return scenario


@command(app, "list")
def list_scenarios() -> None:
    """List the named scenarios, one line each."""
    from mlsysim.core.text import printable
    from mlsysim.engine.scenarios import Scenarios

    names = Scenarios.names()
    width = max(len(n) for n in names)
    for name in names:  # without building the scenarios: no units, no model
        click.echo(printable(f"{name.ljust(width)}  {Scenarios.description(name)}"))


@command(app, "registry")
def registry(
    group: str | None = Argument(
        None, help=REGISTRY_GROUP_HELP
    ),
    sources: bool = Option(
        False, "--sources", help="Also print each entry's source and note (a kernel table's full citation)."
    ),
) -> None:
    """List the registry entries (the names --set and scenario files accept), with their key figures
    and the file each comes from (built-in, or a --registry file); 'kernels' lists the measured kernel
    tables shipped with mlsysim (kind, accelerator, fit or holdout, rows, source).

    Examples:

      mlsysim registry fabrics

      mlsysim registry models --sources

      mlsysim registry kernels --sources

      mlsysim --registry my_cluster.toml registry nodes
    """
    from mlsysim.cli.render import registry_lines

    for line in registry_lines(group, sources=sources):
        click.echo(line)


@command(app, "run")
def run(
    name: str | None = Argument(None, help="Scenario name (see 'mlsysim list')."),
    file: str | None = Option(None, "--file", "-f", metavar="FILE", help=FILE_HELP),
    set_: list[str] | None = Option(None, "--set", "-s", metavar="FIELD=VALUE", help=SET_HELP),
    json_: bool = Option(False, "--json", help="Print the inputs and results as JSON."),
    assumptions: str | None = Option(
        None, "--assumptions", metavar="FILE", help=ASSUMPTIONS_HELP
    ),
    csv: str | None = Option(
        None, "--csv", help="Also write the result as one row to this CSV file (as 'sweep --csv')."
    ),
    parquet: str | None = Option(
        None,
        "--parquet",
        help="Also write the result as one row to this Parquet file (pip install 'mlsysim[parquet]').",
    ),
    force: bool = Option(False, "--force", help="Replace read-only output files."),
) -> None:
    """Evaluate a scenario and print its inputs and results.

    Examples:

      mlsysim run Gpt2DataParallelOneNode

      mlsysim run Gpt2DataParallelOneNode --set nodes=4 --set "inter_bandwidth=100 Gbps" --json

      mlsysim run Gpt2DataParallelFourNodes10GbE --csv result.csv

      mlsysim run --file job.toml

      mlsysim run Gpt2DataParallelFourNodes10GbE --assumptions my_cluster.toml
    """
    from mlsysim.cli.render import next_steps, print_result, result_json
    from mlsysim.cli.sweep import check_outputs, write_result_row

    check_outputs(csv, None, parquet, force)
    scenario = _scenario(name, set_, file, assumptions)
    if json_:
        click.echo(result_json(scenario))
    else:
        steps = next_steps(
            scenario,
            _source(name, set_, file),
            assumptions=_source(None, None, None, assumptions=assumptions),
        )
        print_result(scenario, next_steps=steps)
    write_result_row(scenario, csv=csv, parquet=parquet, force=force, quiet=json_)


def _source(
    name: str | None,
    sets: list[str] | None,
    file: str | None,
    *,
    assumptions: str | None = None,
) -> str:
    """The scenario as the command line named it, to repeat in a suggested command
    (``assumptions``: the ``--assumptions FILE`` option alone).

    Each word is quoted for a POSIX shell only where it needs it (double quotes where
    they are enough, as the examples of ``--help`` write them), so the command runs as printed.
    """
    import shlex

    words = [name] if name else (["--file", file] if file else [])
    for text in sets or []:
        words += ["--set", text]
    if assumptions:
        words += ["--assumptions", assumptions]

    def quoted(word: str) -> str:
        if word and not set(word) & set(" \t\n'\"*?$;&|<>()[]{}`\\!#~"):
            return word
        if not set(word) & set('"$`\\!\n'):
            return f'"{word}"'
        return shlex.quote(word)

    return " ".join(quoted(w) for w in words)


@command(app, "explain")
def explain(
    name: str | None = Argument(None, help="Scenario name (see 'mlsysim list')."),
    file: str | None = Option(None, "--file", "-f", metavar="FILE", help=FILE_HELP),
    set_: list[str] | None = Option(None, "--set", "-s", metavar="FIELD=VALUE", help=SET_HELP),
    markdown: bool = Option(False, "--markdown", help="Markdown instead of plain text."),
    json_: bool = Option(False, "--json", help="The derivation as JSON (steps, notes)."),
    assumptions: str | None = Option(
        None, "--assumptions", metavar="FILE", help=ASSUMPTIONS_HELP
    ),
    plot: str | None = Option(
        None, "--plot", metavar="FILE",
        help="Also draw one update as a timeline per pipeline stage to this .png or .svg file.",
    ),
    force: bool = Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Print the derivation of every figure, equation by equation with the numbers.

    Example: mlsysim explain Gpt2DataParallelFourNodes10GbE --set assumptions=realistic

    Example: mlsysim explain Gpt2GradientAccumulationOneNode --plot update.png
    """
    from mlsysim.core.text import printable, printable_lines

    if plot is not None:
        from mlsysim.cli.sweep import check_outputs

        check_outputs(None, plot, force=force)
    scenario = _scenario(name, set_, file, assumptions)
    form = "json" if json_ else ("markdown" if markdown else "text")
    text = scenario.explain(format=form)
    click.echo(text if json_ else printable_lines(text), nl=False)
    if plot is not None:
        from mlsysim.core.fileio import replacing_read_only
        from mlsysim.viz.plots import timeline_plot

        with replacing_read_only(force):
            timeline_plot(scenario, path=plot)
        click.echo(f"wrote {printable(plot)}", err=json_)


@command(app, "schema")
def schema(
    kind: str = Argument(..., help="scenario, result, explanation or plan."),
) -> None:
    """Print the JSON Schema of the documents the commands write with --json.

    Example: mlsysim schema result
    """
    from mlsysim.core.jsonio import dumps
    from mlsysim.engine.io.schema import json_schema

    click.echo(dumps(json_schema(kind), indent=2))


def _register_commands() -> None:
    """Commands defined in their own modules (each light to import)."""
    from mlsysim.cli.calibrate import calibrate_app
    from mlsysim.cli.init import init_command
    from mlsysim.cli.sweep import plan_command, sweep_command
    from mlsysim.cli.ui import ui_command
    from mlsysim.cli.validate import validate_app

    command(app, "sweep")(sweep_command)
    command(app, "plan")(plan_command)
    command(app, "init")(init_command)
    command(app, "ui")(ui_command)
    app.add_command(validate_app)
    app.add_command(calibrate_app)


_register_commands()
