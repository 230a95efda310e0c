"""Everything the scenario's operators read of one accelerator's kernels, from the measured fits.

:func:`device_kernels` gathers, for an accelerator, the linear layers' number format and a power
limit, the constants of :mod:`mlsysim.kernels.matmul` (the per-kernel floor, the epilogue, the
streaming efficiency, the clock sustained at the limit, the ceilings of the format and of the
16-bit products), of :mod:`mlsysim.kernels.attention` (the fused kernel's forward and backward
constants in 16 bits) and of :mod:`mlsysim.kernels.memory` (the memory-bound kernels' share of the
bandwidth and floor), as the physics' :class:`~mlsysim.physics.records.KernelConstants`. A table
that is missing is named in a one-line :class:`~mlsysim.core.exceptions.InputError`, with how to
supply one; nothing falls back to another format or accelerator.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import to_canonical
from mlsysim.hardware.types import Accelerator
from mlsysim.kernels._accelerator import accelerator_entry
from mlsysim.kernels.attention import attention_constants
from mlsysim.kernels.cluster import ClusterFits
from mlsysim.kernels.fit_documents import AttentionFit
from mlsysim.kernels.matmul import MatmulFit, matmul_params, shipped_fit
from mlsysim.kernels.memory import memory_constants
from mlsysim.physics.records import AttentionPass, KernelConstants

SIXTEEN_BIT = "bf16"
"""The format of the attention core and the output layer (fp16 runs at the same tensor-core rate)."""


class DeviceKernels(NamedTuple):
    """One accelerator's kernels for a scenario: the constants, and the peaks and ceilings of its formats (SI)."""

    constants: KernelConstants
    matmul_peak: float
    matmul_ceiling: float
    sixteen_bit_peak: float
    sixteen_bit_ceiling: float
    compute_units: float
    sources: str
    """Which fits priced them, in words (for the origins of explain)."""


def _attention(accelerator: Accelerator, fit: AttentionFit | None) -> dict[str, AttentionPass | float | None]:
    """The fused attention constants in 16 bits: each pass's, or the two passes' together; NaN/None if none."""
    out: dict[str, AttentionPass | float | None] = {}
    for key, direction in (("attention_forward", "forward"), ("attention_backward", "backward"),
                           ("attention_both", "forward+backward")):
        constants = attention_constants(accelerator, SIXTEEN_BIT, direction, fit)
        if constants is not None:
            out[key] = AttentionPass(constants.scale, constants.loop_overhead, constants.ceiling)
            out["head_overhead"], out["attention_floor"] = constants.head_overhead, constants.floor
    return out


def _device_kernels(accelerator: Accelerator, matmul_format: str, matmul: MatmulFit | None,
                    cluster: ClusterFits | None) -> DeviceKernels:
    if cluster is not None and cluster.matmul is not None:
        matmul = cluster.matmul
    linear = matmul_params(accelerator, matmul_format, fit=matmul)
    sixteen = matmul_params(accelerator, SIXTEEN_BIT, fit=matmul)
    fraction, floor = memory_constants(accelerator, None if cluster is None else cluster.memory)
    fit = matmul or shipped_fit()
    tdp = math.nan if accelerator.power is None else to_canonical(accelerator.power.tdp, "power")
    constants = KernelConstants(
        launch=linear.launch, fill=linear.fill, epilogue_share=linear.epilogue_share,
        stream_efficiency=linear.memory_efficiency, reference_power=tdp, power_exponent=fit.power_exponent,
        memory_fraction=fraction, memory_floor=floor, sixteen_bit_best=sixteen.ceiling,
        **_attention(accelerator, None if cluster is None else cluster.attention),  # type: ignore[arg-type]
    )
    sources = "kernel tables (mlsysim/data/kernels)" if cluster is None else cluster.describe()
    return DeviceKernels(constants, linear.peak, linear.ceiling, sixteen.peak, sixteen.ceiling, linear.compute_units,
                         sources)


def device_kernels(
    accelerator: Accelerator | str, matmul_format: str = "bf16", *, matmul: MatmulFit | None = None,
    cluster: ClusterFits | None = None,
) -> DeviceKernels:
    """The kernels of ``accelerator`` with its linear layers in ``matmul_format``, measured at its TDP (a power
    limit below it is the cluster's, priced by the operators); ``matmul``: a matrix-product fit of the user's
    own (None: the shipped one); ``cluster``: a cluster file's fits of this accelerator
    (:func:`mlsysim.kernels.cluster.read_cluster_file`), which replace the shipped ones of the kinds it holds."""
    entry = accelerator_entry(accelerator)
    key = (id(entry), matmul_format, id(matmul), id(cluster))
    found = _CACHE.get(key)
    if found is None or found[0] is not entry or found[1] is not matmul or found[2] is not cluster:
        found = _CACHE[key] = (entry, matmul, cluster, _device_kernels(entry, matmul_format, matmul, cluster))
    return found[3]


_CACHE: dict[tuple[int, str, int, int],
             tuple[Accelerator, MatmulFit | None, ClusterFits | None, DeviceKernels]] = {}
"""Each accelerator's kernels by identity (registry entries are not hashable): the entry and the fits are kept
with them, so an identity is never reused for another."""


def attention_missing(accelerator: Accelerator, kernels: DeviceKernels) -> str | None:
    """Why fused attention cannot be priced on ``accelerator`` (no table in 16 bits), or None."""
    c = kernels.constants
    if (c.attention_forward is not None and c.attention_backward is not None) or c.attention_both is not None:
        return None
    if math.isnan(float(c.attention_floor)):
        return (f"no fused-attention table covers {accelerator.name} in {SIXTEEN_BIT}; supply one (an attention "
                "table in the kernel tables format, `mlsysim calibrate kernels FILE`) or set flash_attention=false")
    return (f"the fused-attention tables of {accelerator.name} in {SIXTEEN_BIT} ({kernels.sources}) measure the "
            "forward or the backward pass alone; a training step needs both (or forward+backward): measure the "
            "other, or set flash_attention=false")


__all__ = ["DeviceKernels", "InputError", "attention_missing", "device_kernels"]
