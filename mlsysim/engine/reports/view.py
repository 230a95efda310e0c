"""What a report reads of a result: :class:`ResultView`.

The reports sit below the result type (:class:`~mlsysim.engine.results.DataParallelScaleOutResult`
calls them from ``explain()`` and ``interval()``), so they name what they read
here, not the class: mypy checks that the result provides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.engine.inputs.derivation import Job
    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.model.equations import Choices, Figures, Inputs


class ResultView(Protocol):
    """The members of a result that explain, the headline, the notes and the bands read."""

    @property
    def job(self) -> Job: ...
    @property
    def figures(self) -> Figures: ...
    @property
    def choices(self) -> Choices: ...
    @property
    def model_inputs(self) -> Inputs: ...
    @property
    def inputs(self) -> Mapping[str, Value]: ...
    @property
    def n_devices(self) -> int: ...
    @property
    def devices_per_node(self) -> int: ...
    @property
    def global_batch(self) -> int: ...
    @property
    def efficiency(self) -> float: ...
    @property
    def cost(self) -> float | None: ...
    @property
    def fits(self) -> bool | None: ...
    @property
    def bottleneck(self) -> str: ...
    @property
    def inter_algorithm(self) -> str: ...
    @property
    def device_memory(self) -> Quantity | None: ...
    @property
    def constraint_trace(self) -> tuple[str, ...]: ...

    def interval(self, name: str, level: float = 0.8) -> tuple[Quantity | float, Quantity | float]:
        """The prediction interval of a result field (:func:`mlsysim.engine.reports.bands.interval`)."""
        ...
