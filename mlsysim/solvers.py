"""Solvers, at the path the textbook engine uses (``mlsysim.solvers.DataParallelScaleOutModel``)."""

from mlsysim.engine.solvers import DataParallelScaleOutModel

__all__ = ["DataParallelScaleOutModel"]
