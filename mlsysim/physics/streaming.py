"""The time of one memory-bound kernel: norms, activations, casts, optimizer steps.

A streaming kernel reads and writes each byte once and does too little arithmetic per
byte for the math units to matter. Its time is a floor plus its bytes at the share of
the memory's peak bandwidth that streaming kernels reach:

    t = t_0 + bytes / (f B)

* B: the memory's peak bandwidth (the registry's datasheet figure);
* f: the achievable fraction, fitted per accelerator on published streaming-kernel
  measurements (STREAM-like copy, scale and triad kernels, RMSNorm and LayerNorm) and
  bounded by the best measured one;
* t_0: the per-kernel floor (launch, the first loads' latency, the tail): what the
  smallest kernels take (the form of the "gpu-small-kernels" fit of Hager and Ernst's
  gpu-benches, T = V / (a + V / b) per byte, i.e. t = a + V / b).

The constants come from ``python -m mlsysim.validation.kernels_attention`` (written to
``mlsysim/data/kernel_fits/memory.json``). Floats or numpy arrays, broadcast together.
"""

from __future__ import annotations

import numpy as np

from mlsysim.physics._array import Num, where
from mlsysim.physics.bounds import Bound, KernelTime


def memory_kernel_time(bytes_moved: Num, bandwidth: Num, fraction: Num, floor: Num) -> KernelTime:
    """``t = t_0 + bytes / (f B)``; bound: launch when the floor is the larger term, else memory.

    The efficiency is the achieved bandwidth over the peak, bytes / (t B).
    """
    transfer = bytes_moved / (fraction * bandwidth)
    time = floor + transfer
    bound = where(floor > transfer, float(Bound.LAUNCH), float(Bound.MEMORY))
    code = bound.astype(int) if isinstance(bound, np.ndarray) else int(bound)
    return KernelTime(time, bytes_moved / (time * bandwidth), code)
