"""The range of runs a set of fitted assumptions came from, and a note when a layout leaves it.

``mlsysim validate mine`` fits a cluster's constants (link efficiencies, an
update overhead) and the scores of its intervals to a user's measured runs.
Those constants hold for layouts like the runs: a fit on a few data-parallel
runs of a 7B model says nothing certain about a 512-GPU tensor- and
pipeline-parallel job of a 70B model. The assumptions file records the
envelope of the runs (:class:`FitRange`: devices, nodes, parameters, tensor
and pipeline ranks), :func:`register_fit_range` ties it to the assumptions it
loaded, and :func:`fit_range_notes` says when a result's layout is outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.reports.view import ResultView

RANGE_FIGURES: tuple[tuple[str, str], ...] = (
    ("devices", "devices"),
    ("nodes", "nodes"),
    ("parameters", "parameters"),
    ("tensor_parallel", "tensor-parallel ranks"),
    ("pipeline_parallel", "pipeline stages"),
)
"""The figures of a layout a fit's range covers (name in the file, words in the note)."""

TOLERANCE = 1e-9
"""Relative slack at the ends of a range (a figure written to a file and read back)."""


@dataclass(frozen=True)
class FitRange:
    """The lowest and highest value of each :data:`RANGE_FIGURES` figure over the fitted runs."""

    source: str
    runs: int
    bounds: Mapping[str, tuple[float, float]]

    def outside(self, figures: Mapping[str, float]) -> list[str]:
        """The figures of a layout outside the range, each said with the range (``512 devices
        (the runs: 8 to 32)``)."""
        out = []
        for name, words in RANGE_FIGURES:
            if name not in self.bounds or name not in figures:
                continue
            low, high = self.bounds[name]
            value = figures[name]
            if value < low * (1 - TOLERANCE) or value > high * (1 + TOLERANCE):
                span = f"{_g(low)}" if low == high else f"{_g(low)} to {_g(high)}"
                out.append(f"{_g(value)} {words} (the runs: {span})")
        return out


_RANGES: dict[Assumptions, FitRange] = {}


def register_fit_range(assumptions: Assumptions, fit_range: FitRange) -> None:
    """Tie the range of the runs ``assumptions`` were fitted on to them (a file's ``[range]``)."""
    _RANGES[assumptions] = fit_range


def fit_range_of(assumptions: Assumptions) -> FitRange | None:
    """The range of runs ``assumptions`` were fitted on, if a file recorded one."""
    try:
        return _RANGES.get(assumptions)
    except TypeError:  # unhashable: never registered
        return None


def range_figures(r: ResultView) -> dict[str, float]:
    """The :data:`RANGE_FIGURES` of a result (a layout without model parallelism has t = p = 1)."""
    x = r.model_inputs

    def given(value: object) -> float:
        number = float(value)  # type: ignore[arg-type]
        return number if number == number else 1.0

    return {
        "devices": float(r.figures.n_devices),
        "nodes": float(x.nodes),
        "parameters": float(x.parameters),
        "tensor_parallel": given(x.tensor_parallel),
        "pipeline_parallel": given(x.pipeline_parallel),
    }


def fit_range_notes(r: ResultView, assumptions: Assumptions) -> tuple[str, ...]:
    """A note when the assumptions were fitted on runs and this layout is outside their range."""
    fit_range = fit_range_of(assumptions)
    if fit_range is None:
        return ()
    outside = fit_range.outside(range_figures(r))
    if not outside:
        return ()
    return (
        f"outside the fitted range: the assumptions of {fit_range.source} were fitted on "
        f"{_runs(fit_range.runs)}, and this layout has {'; '.join(outside)}: the fitted constants "
        "and their interval may not hold here",
    )


def _runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}" if count else "runs"


def _g(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) and abs(value) < 1e6 else f"{value:.3g}"
