"""What one kernel's time is, and which term of its model binds.

Every kernel model of :mod:`mlsysim.kernels` (a matrix product, a fused attention call, a
collective, an expert dispatch) answers with a :class:`KernelTime`: its seconds, its
efficiency (the fraction of the resource's peak it reaches: the format's dense FLOP/s for
compute, the link's or memory's bandwidth for transfers) and the :class:`Bound` code of the
term that sets the time. Floats for one kernel, numpy arrays (broadcast together) for many.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from mlsysim.physics._array import Num


class Bound(IntEnum):
    """The term of a kernel's model that sets its time (declared once; labels derive from the names)."""

    LAUNCH = 0
    """The per-kernel floor: launch, prologue and epilogue; the work is too small to matter."""
    COMPUTE = 1
    """The math units at the format's achievable rate."""
    WAVES = 2
    """Compute, with the last wave of tiles leaving compute units idle (fewer tiles than units)."""
    MEMORY = 3
    """The device memory's bandwidth."""
    LATENCY = 4
    """A collective's per-step latency (small messages)."""
    BANDWIDTH = 5
    """A link's achievable bandwidth (large messages)."""

    @property
    def label(self) -> str:
        """``"launch"``, ``"compute"``, ...: how explain and tables name it."""
        return self.name.lower()


BOUNDS = tuple(b.label for b in Bound)
"""Labels of :class:`Bound`, by code."""


class KernelTime(NamedTuple):
    """One kernel's (or many kernels') time, efficiency and binding term; SI units."""

    time: Num
    """Seconds."""
    efficiency: Num
    """Achieved over peak of the resource that binds (0 < e <= 1)."""
    bound: int | Num
    """The :class:`Bound` code (an int, or an array of codes)."""
