"""Solvers: thin wiring from validated inputs to the physics and a result."""

from mlsysim.engine.solvers.data_parallel import DataParallelScaleOutModel

__all__ = ["DataParallelScaleOutModel"]
