"""The notes of a plan: the warnings ``mlsysim run`` gives a layout, for the best layout
and for the rows a plan prints, said once per plan (not once per row), and the
constraint that would keep the search within what has been shown to work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mlsysim.core.suggest import SYNTAX
from mlsysim.engine.reports.notes import BATCH_SANITY_TOLERANCE, sanity_notes

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.planning.table import SweepTable
    from mlsysim.planning.view import PlanView

_NUMBER = re.compile(r"\d[\d,.]*(?:e[+-]?\d+)?")


def layout_notes(scenario: TrainingScenario) -> tuple[str, ...]:
    """The warnings of one layout, as ``mlsysim run`` lists them among its notes
    (:func:`mlsysim.engine.reports.notes.sanity_notes`: MFU, ZeRO-3, global batch, cluster size)."""
    result = scenario.result
    return sanity_notes(result.inputs, result.job)


def _kind(note: str) -> str:
    """A note with its figures masked: notes of one kind on different rows compare equal."""
    return _NUMBER.sub("#", note)


def rows_notes(table: SweepTable, rows: Iterable[int], what: str) -> list[str]:
    """For each kind of warning among ``rows`` of ``table``: on how many rows, and one example."""
    picked = list(dict.fromkeys(int(i) for i in rows))
    found: dict[str, tuple[int, str]] = {}
    for i in picked:
        for note in layout_notes(table.scenario(i)):
            count, first = found.get(_kind(note), (0, note))
            found[_kind(note)] = (count + 1, first)
    return [
        f"{count} of the {len(picked)} {what} carry this note; e.g. {first}"
        for count, first in found.values()
    ]


def batch_limit(scenario: TrainingScenario) -> int | None:
    """The largest global batch that gets no note (the workload's largest reported batch,
    with the sources' rounding), in whole steps of the scenario's batch per node
    (``per_device_batch x devices_per_node x accumulation_steps``, what one more node
    adds); None when the workload's sources state none.

    >>> from mlsysim import Scenarios
    >>> batch_limit(Scenarios.Gpt2DataParallelFourNodes10GbE)  # 512 reported; 128 per node
    512
    """
    reported = scenario.workload.largest_reported_batch_samples()
    if reported is None:
        return None
    step = scenario.per_device_batch * scenario.devices_per_node * scenario.accumulation_steps
    limit = math.floor(reported * BATCH_SANITY_TOLERANCE)
    return max(limit // step * step, step) if limit >= step else limit


def plan_notes(plan: PlanView, shown: dict[str, Iterable[int]] | None = None) -> list[str]:
    """The best layout's warnings, those of the rows ``shown`` ({what: rows of
    ``plan.pareto``}, default: the whole front) once per kind, and the constraint to add
    when a global batch is beyond the largest reported (in the caller's syntax).
    """
    best = plan.best
    notes = [f"best layout: {note}" for note in layout_notes(best)]
    if shown is None:
        shown = {"layouts of the Pareto front": range(len(plan.pareto))}
    for what, rows in shown.items():
        notes += rows_notes(plan.pareto, rows, what)
    limit = batch_limit(best)
    batch_noted = any("global batch #" in _kind(n) for n in notes)
    limits = plan.constraints
    if batch_noted and limit is not None and limits.max_global_batch is None and limits.global_batch is None:
        option = {
            "text": f"--max-global-batch {limit}",
            "form": f"a largest global batch of {limit}",
        }.get(SYNTAX.get(), f"plan(..., max_global_batch={limit})")
        notes.append(
            f"to keep the global batch within the largest reported for {best.workload.name}, "
            f"add {option}"
        )
    return notes


__all__ = ["batch_limit", "layout_notes", "plan_notes", "rows_notes"]
