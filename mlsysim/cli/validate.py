"""``mlsysim validate ...``: the model against published measurements."""

from __future__ import annotations

import json

import typer

validate_app = typer.Typer(
    help="Check the model against reality: published scale-out measurements.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@validate_app.command("published")
def published(
    json_: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Predict every published case with the seed model and with Assumptions.realistic().

    Prints measured, predicted and error side by side, with the median and
    maximum absolute error of each model (points of scaling efficiency).
    """
    from mlsysim.engine.assumptions import Assumptions
    from mlsysim.validation.published import compare, summary

    seed = compare()
    realistic = compare(Assumptions.realistic())
    if json_:
        rows = [
            {
                "id": s.case.id,
                "source": s.case.source,
                "measured_efficiency": s.case.measured_eff,
                "seed_efficiency": s.predicted,
                "seed_error": s.error,
                "realistic_efficiency": r.predicted,
                "realistic_error": r.error,
            }
            for s, r in zip(seed, realistic, strict=True)
        ]
        (sm, sx), (rm, rx) = summary(seed), summary(realistic)
        typer.echo(
            json.dumps(
                {
                    "cases": rows,
                    "seed": {"median_abs_error": sm, "max_abs_error": sx},
                    "realistic": {"median_abs_error": rm, "max_abs_error": rx},
                },
                indent=2,
            )
        )
        return
    from mlsysim.cli.render import print_validation

    print_validation(seed, realistic)
