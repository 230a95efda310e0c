"""The typer application: ``mlsysim list | run | explain | ...``.

Heavy imports happen inside the commands so that ``mlsysim --help`` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="mlsysim",
    help=(
        "Predict what happens when a training job goes data-parallel: update time, "
        "gradient AllReduce, speedup, efficiency, training time and cost, from a "
        "one-device profile.\n\n"
        "Examples:\n\n"
        "  mlsysim list\n\n"
        "  mlsysim run Gpt2DataParallelFourNodes10GbE\n\n"
        '  mlsysim run Gpt2DataParallelOneNode --set nodes=4 --set "inter_bandwidth=100 Gbps"\n\n'
        "  mlsysim explain Gpt2DataParallelFourNodes10GbE --set assumptions=realistic"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

from mlsysim.cli.calibrate import calibrate_app  # noqa: E402
from mlsysim.cli.validate import validate_app  # noqa: E402

app.add_typer(calibrate_app, name="calibrate")
app.add_typer(validate_app, name="validate")

SET_HELP = (
    "Override a field: FIELD=VALUE, repeatable. Units as text ('inter_bandwidth=100 Gbps'), "
    "workloads by registry name ('workload=Llama2_7B'), 'assumptions=realistic', "
    "'assumptions.overlap=true', 'none' clears an optional field."
)


def _scenario(name: str, sets: list[str] | None):  # noqa: ANN202
    from mlsysim.engine.overrides import apply_overrides
    from mlsysim.engine.scenarios import Scenarios

    return apply_overrides(Scenarios.get(name), sets or [])


@app.command("list")
def list_scenarios() -> None:
    """List the named scenarios, one line each."""
    from mlsysim.engine.scenarios import Scenarios

    width = max(len(n) for n in Scenarios.names())
    for scenario in Scenarios:
        typer.echo(f"{scenario.name.ljust(width)}  {scenario.description}")


@app.command("run")
def run(
    name: str = typer.Argument(..., help="Scenario name (see 'mlsysim list')."),
    set_: list[str] | None = typer.Option(None, "--set", "-s", help=SET_HELP),
    json_: bool = typer.Option(False, "--json", help="Print the inputs and results as JSON."),
) -> None:
    """Evaluate a scenario and print its inputs and results.

    Examples:

      mlsysim run Gpt2DataParallelOneNode

      mlsysim run Gpt2DataParallelOneNode --set nodes=4 --set "inter_bandwidth=100 Gbps" --json
    """
    from mlsysim.cli.render import print_result, result_json

    scenario = _scenario(name, set_)
    if json_:
        typer.echo(result_json(scenario))
    else:
        print_result(scenario)


@app.command("explain")
def explain(
    name: str = typer.Argument(..., help="Scenario name (see 'mlsysim list')."),
    set_: list[str] | None = typer.Option(None, "--set", "-s", help=SET_HELP),
    markdown: bool = typer.Option(False, "--markdown", help="Markdown instead of plain text."),
) -> None:
    """Print the derivation of every figure, equation by equation with the numbers.

    Example: mlsysim explain Gpt2DataParallelFourNodes10GbE --set assumptions=realistic
    """
    scenario = _scenario(name, set_)
    typer.echo(scenario.explain(format="markdown" if markdown else "text"), nl=False)
