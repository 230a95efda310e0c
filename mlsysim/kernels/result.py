"""The public answer of a kernel model: its time as a Quantity, its efficiency and what binds it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlsysim.core.units import Quantity, quantity
from mlsysim.physics.bounds import BOUNDS, KernelTime


@dataclass(frozen=True)
class KernelEstimate:
    """One kernel's (or, with array inputs, many kernels') predicted time.

    ``time`` is a Quantity (microseconds); ``efficiency`` the fraction of the binding
    resource's peak it reaches; ``bound`` the label of the binding term (``"compute"``,
    ``"launch"``, ``"bandwidth"``, ...; an array of labels for many kernels); ``what``
    says which kernel, on which accelerator, in which format.
    """

    what: str
    time: Quantity
    efficiency: float | np.ndarray
    bound: str | np.ndarray

    @classmethod
    def of(cls, what: str, kernel: KernelTime) -> KernelEstimate:
        """The public form of a :class:`~mlsysim.physics.bounds.KernelTime` (seconds, codes)."""
        code = kernel.bound
        if isinstance(code, np.ndarray):
            bound: str | np.ndarray = np.array(BOUNDS, dtype=object)[code.astype(int)]
        else:
            bound = BOUNDS[int(code)]
        efficiency = kernel.efficiency
        eff = efficiency if isinstance(efficiency, np.ndarray) else float(efficiency)
        return cls(what, quantity(np.asarray(kernel.time) * 1e6 if isinstance(kernel.time, np.ndarray)
                                  else float(kernel.time) * 1e6, "us"), eff, bound)
