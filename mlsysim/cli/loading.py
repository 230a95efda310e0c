"""The scenario a command works on: a registry name, a file, or ``--set`` inputs alone, with ``--set`` overrides.

Every command that evaluates a scenario (run, explain, sweep, plan, ui) loads it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario


def load(
    name: str | None, file: str | None, sets: list[str] | None
) -> DataParallelScaleOutScenario:
    """The scenario named, or read from ``--file``, with ``--set`` overrides."""
    from mlsysim.engine.io.overrides import apply_overrides

    if name is None and file is None:
        if not sets:
            raise click.BadParameter(
                "missing the scenario: give its name, --file FILE, or the job's inputs with --set "
                "(e.g. --set workload=Llama3_8B --set node=DGX_H100 --set mfu=0.4 ...)"
            )
        from mlsysim.engine.io.overrides import scenario_from_assignments

        return scenario_from_assignments(sets)
    if name is not None and file is not None:
        raise click.BadParameter(
            f"give a scenario name or --file FILE, not both (got {name!r} and {file!r})"
        )
    if file is not None:
        from mlsysim.engine.io.files import load_scenario

        scenario = load_scenario(file)
    else:
        from mlsysim.engine.scenarios import Scenarios

        assert name is not None  # both None returned above
        scenario = Scenarios.get(name)
    return apply_overrides(scenario, sets or [])

