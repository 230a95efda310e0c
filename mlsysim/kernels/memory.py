"""Memory-bound element-wise kernels (norms, activations, casts, optimizer steps) on one accelerator.

The time of one kernel moving ``bytes`` through device memory is
:func:`mlsysim.physics.streaming.memory_kernel_time`: a per-kernel floor plus the bytes at
the fraction of the peak bandwidth streaming kernels reach. Both constants are fitted per
accelerator on the ``memory`` tables (``mlsysim/data/kernels/memory_*.json``) by
:func:`fit_memory` and shipped in ``mlsysim/data/kernel_fits/memory.json`` (written by
``python -m mlsysim.validation.kernels_attention``); a user's own tables fit the same way.

>>> from mlsysim.kernels.memory import memory_kernel
>>> memory_kernel("H200", bytes_moved=268e6).bound
'memory'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.resources import files
from typing import cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity
from mlsysim.hardware.types import Accelerator
from mlsysim.kernels._accelerator import accelerator_entry, accelerator_name, memory_bandwidth
from mlsysim.kernels.fit_documents import MemoryEntry, MemoryFit
from mlsysim.kernels.result import KernelEstimate
from mlsysim.kernels.tables import KernelTable
from mlsysim.physics._array import Num
from mlsysim.physics.bounds import KernelTime
from mlsysim.physics.streaming import memory_kernel_time

FIT_FILE = "memory.json"
"""The shipped fit, in ``mlsysim/data/kernel_fits``."""

FRACTION_STEP = 0.0005
"""Resolution of the fitted bandwidth fraction."""

FLOOR_STEPS = 400
"""The floor is searched on this many steps from 0 to the shortest measured time."""

HOW_TO_SUPPLY = ("supply one: a memory table (kernel, bytes, time or bandwidth) in the kernel tables format, "
                 "`mlsysim calibrate kernels FILE`")


def significant(value: float, digits: int = 6) -> float:
    """``value`` to ``digits`` significant figures (the fit files' precision: a fresh fit reproduces them)."""
    return float(f"{value:.{digits}g}")


def fit_streaming(bytes_moved: np.ndarray, seconds: np.ndarray, bandwidth: float) -> tuple[float, float, float]:
    """(fraction, floor s, best measured fraction) minimising the summed absolute log error of ``t_0 + bytes / (f B)``.

    Absolute, not squared, errors: a few kernels with a reduction in them (a norm's backward
    sums its scale gradient over the rows) run far below the streaming rate, and should not
    pull the fraction of every other kernel down. The fraction is searched up to the best
    measured one, bytes / (t B) (no fitted value beyond what a measurement shows), the floor
    from 0 to the shortest measured time.
    """
    best = float(np.max(bytes_moved / (seconds * bandwidth)))
    fractions = np.append(np.arange(FRACTION_STEP, best, FRACTION_STEP), best)[:, None]
    measured = np.log(seconds)[None, :]
    result = (np.inf, 0.0, 0.0)
    for floor in np.linspace(0.0, float(seconds.min()), FLOOR_STEPS + 1):
        error = np.abs(np.log(floor + bytes_moved[None, :] / (fractions * bandwidth)) - measured).sum(axis=1)
        at = int(np.argmin(error))
        if error[at] < result[0]:
            result = (float(error[at]), float(fractions[at, 0]), float(floor))
    return result[1], result[2], best


def fit_memory(tables: Iterable[KernelTable]) -> MemoryFit:
    """Each accelerator's bandwidth fraction and floor, fitted on the ``fit`` memory tables given.

    Holdout tables are skipped (never fitted on). The answer is the format of
    ``mlsysim/data/kernel_fits/memory.json``.
    """
    by_accelerator: dict[str, list[KernelTable]] = {}
    for table in tables:
        if table.kind == "memory" and table.split == "fit":
            by_accelerator.setdefault(table.accelerator, []).append(table)
    fitted: dict[str, MemoryEntry] = {}
    for name, group in sorted(by_accelerator.items()):
        bandwidth = memory_bandwidth(accelerator_entry(name))
        moved = np.concatenate([t.columns["bytes"] for t in group])
        seconds = np.concatenate([t.time for t in group])
        fraction, floor, best = fit_streaming(moved, seconds, bandwidth)
        fitted[name] = {
            "fraction": {"value": significant(fraction), "bound": [0.0, significant(best)],
                         "what": "achieved over the datasheet's peak memory bandwidth of streaming kernels "
                                 "(the upper bound: the best measured bytes / (time x peak))"},
            "floor": {"value": significant(floor), "unit": "s", "bound": [0.0, significant(float(seconds.min()))],
                      "what": "per-kernel time floor (launch, first loads, tail); the upper bound is the "
                              "shortest measured kernel"},
            "tables": sorted(t.name for t in group),
            "rows": int(len(seconds)),
        }
    return {"about": "Memory-bound kernel constants fitted by mlsysim.kernels.memory.fit_memory on the tables "
                     "named (python -m mlsysim.validation.kernels_attention); the model is "
                     "mlsysim.physics.streaming.memory_kernel_time.",
            "accelerators": fitted}


@cache
def shipped_memory_fit() -> MemoryFit:
    """The shipped fit (``mlsysim/data/kernel_fits/memory.json``)."""
    text = files("mlsysim.data").joinpath("kernel_fits").joinpath(FIT_FILE).read_text(encoding="utf-8")
    return cast(MemoryFit, dict(json.loads(text)))


SAME_MEMORY: Mapping[str, str] = {"H800": "H100"}
"""Accelerators whose memory subsystem is another's, stated by the vendor: the H800 SXM5 is the H100 SXM5 (the
same GH100 die, clocks and HBM3 stacks at 3.35 TB/s) with its NVLink cut to 400 GB/s and FP64 to 1 TFLOPS (NVIDIA
H800 datasheet; the registry's H800 entry): its streaming kernels are the H100's measured ones. No other
accelerator borrows another's table."""


def memory_constants(accelerator: Accelerator, fit: MemoryFit | None = None) -> tuple[float, float]:
    """(fraction, floor s) of ``accelerator`` (or of the accelerator whose memory it is, :data:`SAME_MEMORY`);
    InputError naming the missing table where no fit covers it."""
    fitted = (fit or shipped_memory_fit())["accelerators"]
    name = accelerator_name(accelerator)
    entry = fitted.get(name, fitted.get(SAME_MEMORY.get(name, "")))
    if entry is None:
        covered = ", ".join(fitted) or "none"
        raise InputError(f"no memory-bound kernel table covers {name} (covered: {covered}); {HOW_TO_SUPPLY}",
                         field="accelerator")
    return float(entry["fraction"]["value"]), float(entry["floor"]["value"])


def memory_time(accelerator: Accelerator | str, bytes_moved: Num, *, fit: MemoryFit | None = None) -> KernelTime:
    """SI level: one streaming kernel moving ``bytes_moved`` bytes (float or array) on ``accelerator``."""
    entry = accelerator_entry(accelerator)
    fraction, floor = memory_constants(entry, fit)
    return memory_kernel_time(bytes_moved, memory_bandwidth(entry), fraction, floor)


def memory_kernel(accelerator: Accelerator | str, *, bytes_moved: float | Quantity,
                  fit: MemoryFit | None = None) -> KernelEstimate:
    """One memory-bound kernel reading and writing ``bytes_moved`` in all (a number of bytes or a Quantity)."""
    amount = bytes_moved.to("B").magnitude if isinstance(bytes_moved, Quantity) else bytes_moved
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
        raise InputError(f"bytes_moved must be a positive number of bytes, got {bytes_moved!r}", field="bytes_moved")
    entry = accelerator_entry(accelerator)
    return KernelEstimate.of(f"memory-bound kernel of {amount:.3g} B on {accelerator_name(entry)}",
                             memory_time(entry, float(amount), fit=fit))
