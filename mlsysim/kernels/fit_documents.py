"""The JSON forms of the memory-bound and fused-attention fits, as typed dictionaries.

``mlsysim/data/kernel_fits/memory.json`` (:func:`mlsysim.kernels.memory.fit_memory`) and
``mlsysim/data/kernel_fits/attention.json`` (:func:`mlsysim.kernels.attention_fit.fit_attention`) are
written and read in these forms; a cluster file's ``memory`` and ``attention`` fits are the same
(:mod:`mlsysim.kernels.cluster`). One declaration of each document's keys: the writers build them,
the readers index them.
"""

from __future__ import annotations

from typing import TypedDict


class _Constant(TypedDict):
    value: float
    what: str


class FittedConstant(_Constant, total=False):
    """One fitted constant: its value, what it is, and where stated its unit and its bound ``[low, high]``."""

    unit: str
    bound: list[float]


class MemoryEntry(TypedDict):
    """One accelerator's streaming-kernel constants (the bandwidth fraction and the floor, seconds)."""

    fraction: FittedConstant
    floor: FittedConstant
    tables: list[str]
    rows: int


class MemoryFit(TypedDict):
    """``memory.json``: the memory-bound constants of every accelerator fitted, by registry name."""

    about: str
    accelerators: dict[str, MemoryEntry]


class AttentionGroup(TypedDict):
    """The constants of one format and direction (``"bf16 forward"``): the scale a, the loop overhead L_0
    and the ceiling c."""

    format: str
    direction: str
    scale: FittedConstant
    loop_overhead: FittedConstant
    ceiling: FittedConstant
    tables: list[str]
    rows: int


class ArchitectureFit(TypedDict):
    """What :func:`mlsysim.kernels.attention_fit.fit_architecture` fits: the head overhead D_0 and the groups."""

    head_overhead: FittedConstant
    groups: dict[str, AttentionGroup]


class AttentionArchitecture(ArchitectureFit):
    """One architecture's attention constants: the fitted ones and the floor t_0 (seconds) they were fitted with."""

    floor: FittedConstant


class AttentionFit(TypedDict):
    """``attention.json``: the fused-attention constants of every architecture fitted, by architecture name."""

    about: str
    tile: float
    architectures: dict[str, AttentionArchitecture]
