"""The scenario a command works on: a registry name, a file, or ``--set`` inputs alone, with ``--set`` overrides.

Every command that evaluates a scenario (run, explain, sweep, plan, ui) loads it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mlsysim.core.exceptions import InputError

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario


def load(
    name: str | None, file: str | None, sets: list[str] | None, axes: list[str] | None = None
) -> TrainingScenario:
    """The scenario named, or read from ``--file``, with ``--set`` overrides.

    ``axes`` (a sweep's or a plan's ``--axis`` texts): a base that is incomplete or refused without them (one
    node's scenario with ``--set nodes=4`` and the inter-node link on an axis; a workload's sequence length on
    an axis) is built with each axis at its first value, which every row then replaces; the error of the base
    alone is raised when that fails too.
    """
    try:
        return _load(name, file, sets)
    except (InputError, click.BadParameter):
        if not axes:
            raise
        from mlsysim.planning.axes import first_setting

        try:
            scenario = _load(name, file, [*(sets or []), *(first_setting(text) for text in axes)])
        except InputError:
            pass
        else:  # named after what was set, not the axes' first values (each row replaces them)
            return scenario if scenario.name is None else scenario.variant(name=_name(name, file, sets))
        raise


def _name(name: str | None, file: str | None, sets: list[str] | None) -> str | None:
    """The name ``_load`` gives the scenario named or read from a file, with ``sets`` (as ``apply_overrides``)."""
    if file is not None:
        from mlsysim.engine.io.files import load_scenario

        base = load_scenario(file).name
    else:
        from mlsysim.engine.scenarios import Scenarios

        base = Scenarios.get(name).name if name is not None else None
    if base is None or not sets:
        return base
    return f"{base} [{', '.join(text.strip() for text in sets)}]"


def _load(name: str | None, file: str | None, sets: list[str] | None) -> TrainingScenario:
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

