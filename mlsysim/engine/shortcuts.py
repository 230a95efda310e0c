"""Shortcut functions: thin wrappers over the full objects (as httpx.get wraps Client.request)."""

from __future__ import annotations

from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.engine.scenario_types import DataParallelScaleOutScenario


def estimate(**inputs: object) -> DataParallelScaleOutResult:
    """Build a :class:`TrainingScenario` from keyword inputs and return its result.

    Parameters: see :class:`TrainingScenario`.

    >>> from mlsysim import estimate, Models, Q_
    >>> r = estimate(workload=Models.Language.GPT2, step_time=Q_(1.8, "s"),
    ...              training_time=Q_(25, "hour"), per_device_batch=16,
    ...              devices_per_node=8, intra_bandwidth=Q_(450, "GB/s"))
    >>> round(r.efficiency, 6)
    0.99356
    """
    return DataParallelScaleOutScenario(**inputs).result
