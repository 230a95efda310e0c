"""Matrix-multiply efficiency from the matrices' shape and the number format.

A matrix product C (M x N) = A (M x K) B (K x N) costs 2 M N K FLOPs. A GPU
computes it in output tiles of T_M x T_N, one tile per compute unit (SM) at a
time, each running a main loop over K. What it achieves, as a fraction of the
format's dense peak, is modelled as

    e(M, N, K) = c_f q_tile q_wave K / (K + K_0)

* q_tile = M N / (ceil(M / T_M) T_M ceil(N / T_N) T_N): the partial tiles at
  the matrix's edges do a whole tile's work (tile quantisation);
* q_wave = w / ceil(w), w = ceil(M / T_M) ceil(N / T_N) / U: the last wave of
  tiles leaves compute units idle (wave quantisation; U compute units, 1 when
  the registry does not state the count, which turns it off);
* K / (K + K_0): each tile's fixed start (loading the pipeline) and end
  (writing the tile) against its K-loop, worth K_0 of K; a K-step loads a
  fixed number of bytes, so K_0 is 128 for 16-bit operands and 256 for 8-bit
  ones (:func:`k_overhead`);
* c_f: what the accelerator's kernels reach on large matrices in format f,
  its achievable ceiling, the one fitted constant per architecture and format
  (:data:`mlsysim/data/matmul_ceilings.json`, fitted on published training
  runs by ``python -m mlsysim.validation.ceilings``).

Sources: NVIDIA, "Matrix Multiplication Background User's Guide" (Deep
Learning Performance documentation: tile and wave quantisation, the
dimensions a multiple of the tile); Kerr et al. 2017, "CUTLASS: Fast Linear
Algebra in CUDA C++" (the tiled main loop over K). T_M x T_N = 128 x 256 is
the largest common tile of CUTLASS's 16-bit and 8-bit kernels on Ampere and
Hopper; K_0 = 128 is an order-of-magnitude count (a pipeline of two to three
k-steps of 64 to fill, and an epilogue), not fitted.

Every function takes floats or numpy arrays (broadcast together).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache, lru_cache
from importlib.resources import files

from mlsysim.core.exceptions import InputError
from mlsysim.physics._array import Num, ceil, is_array, where

TILE_M = 128.0
"""Rows of one output tile (CUTLASS's large 16/8-bit tiles on Ampere and Hopper: 128 x 256)."""

TILE_N = 256.0
"""Columns of one output tile."""

K_OVERHEAD = 128.0
"""K_0 of 16-bit operands: a tile's fixed start and end, in units of the K-loop (order of magnitude, not fitted)."""

K_OVERHEAD_BYTES = 2.0 * K_OVERHEAD
"""The same in bytes of an operand row: a K-step loads a fixed number of bytes (64 16-bit or 128 8-bit
elements), so K_0 = 256 bytes / element width: 128 for 16-bit operands, 256 for 8-bit ones."""


def k_overhead(element_bytes: Num) -> Num:
    """K_0 of operands ``element_bytes`` wide: K_OVERHEAD_BYTES / width."""
    return K_OVERHEAD_BYTES / element_bytes

MATMUL_FORMATS: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "fp8_rowwise": "fp8",
    "fp8_blockwise": "fp8",
    "mxfp8": "mxfp8",
    "nvfp4": "nvfp4",
}
"""The formats the linear layers' matrix products may run in, each with the peak it runs at.

``fp8`` scales each tensor by one factor (tensorwise, dynamic: torchao's and
Transformer Engine's default); ``fp8_rowwise`` by one per row, which the
kernel applies in its epilogue; ``fp8_blockwise`` by one per 1 x 128 block of
the activations and per 128 x 128 block of the weights (DeepSeek-V3's
fine-grained scaling, DeepGEMM), applied by the kernel as it accumulates
along K; ``mxfp8`` and ``nvfp4`` carry a scale per
block of 32 or 16 values, applied by Blackwell's tensor cores."""

SIXTEEN_BIT = ("bf16", "fp16")
"""The 16-bit formats: the attention core and the output layer run in one of them."""

CAST_BYTES: dict[str, float] = {
    "fp8": 6.0,
    "fp8_rowwise": 6.0,
    "fp8_blockwise": 6.0,
    "mxfp8": 6.0,
    "nvfp4": 6.0,
}
"""Bytes moved per element of each operand cast to a low-precision format, unfused:
the 16-bit tensor read to find its largest value (2), read again to cast (2), the
8-bit copy written (1) and its transpose for the backward pass (1). Micikevicius et
al. 2022, "FP8 Formats for Deep Learning" (per-tensor scaling from the amax);
16-bit formats cast nothing."""

CAST_BYTES_FUSED = 4.0
"""The same with the cast fused into the kernel that produced the tensor (torch.compile,
Transformer Engine's fused casts): one read (2) and the two writes (2)."""


def check_matmul_format(value: object) -> str:
    """A matrix-product format name (case-insensitive), returned in lower case."""
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_")
        if key in MATMUL_FORMATS:
            return key
    raise InputError(
        f"unknown matmul_format {value!r}; supported: {', '.join(MATMUL_FORMATS)}", field="matmul_format"
    )


def cast_bytes_per_element(matmul_format: str, fused: bool = False) -> float:
    """Bytes of scaling and cast traffic per operand element (0 for a 16- or 32-bit format)."""
    if matmul_format not in CAST_BYTES:
        return 0.0
    return CAST_BYTES_FUSED if fused else CAST_BYTES[matmul_format]


def tile_quantization(m: Num, n: Num) -> Num:
    """q_tile = M N / (ceil(M / T_M) T_M ceil(N / T_N) T_N)."""
    return (m * n) / (ceil(m / TILE_M) * TILE_M * ceil(n / TILE_N) * TILE_N)


def wave_quantization(m: Num, n: Num, compute_units: Num, batch: Num = 1.0) -> Num:
    """q_wave = w / ceil(w), w = batch ceil(M / T_M) ceil(N / T_N) / U (1 where U is 1 or NaN)."""
    units = where(compute_units == compute_units, compute_units, 1.0)
    waves = batch * ceil(m / TILE_M) * ceil(n / TILE_N) / units
    return waves / ceil(waves)


def matmul_efficiency(
    m: Num, n: Num, k: Num, ceiling: Num, compute_units: Num, batch: Num = 1.0, k0: Num = K_OVERHEAD
) -> Num:
    """e = c q_tile q_wave K / (K + K_0) of ``batch`` products of (M x K)(K x N) (see the module docstring)."""
    return ceiling * tile_quantization(m, n) * wave_quantization(m, n, compute_units, batch) * k / (k + k0)


def matmul_time(
    m: Num, n: Num, k: Num, peak: Num, ceiling: Num, compute_units: Num, batch: Num = 1.0, k0: Num = K_OVERHEAD
) -> Num:
    """Seconds of ``batch`` products of (M x K)(K x N): 2 M N K batch / (e P)."""
    return 2.0 * m * n * k * batch / (matmul_efficiency(m, n, k, ceiling, compute_units, batch, k0) * peak)


def training_matmul_time(
    m: Num, n: Num, k: Num, peak: Num, ceiling: Num, compute_units: Num, batch: Num = 1.0, k0: Num = K_OVERHEAD
) -> tuple[Num, Num]:
    """Seconds of a linear layer's forward product and of its two backward products.

    Forward Y = X W: (M x K)(K x N). Backward: the input gradient dX = dY W^T,
    (M x N)(N x K), and the weight gradient dW = X^T dY, (K x M)(M x N); each 2 M N K
    FLOPs, each priced at its own shape.

    One layout's (scalars) are kept per shape, peak, ceiling and unit count
    (:func:`_shape_times`): the same numbers, computed once for the layouts that share them.
    """
    if is_array(m, n, k, peak, ceiling, compute_units, batch, k0):
        return _training_matmul_time(m, n, k, peak, ceiling, compute_units, batch, k0)
    return _shape_times(m, n, k, peak, ceiling, compute_units, batch, k0)


def _training_matmul_time(
    m: Num, n: Num, k: Num, peak: Num, ceiling: Num, compute_units: Num, batch: Num, k0: Num
) -> tuple[Num, Num]:
    forward = matmul_time(m, n, k, peak, ceiling, compute_units, batch, k0)
    backward = matmul_time(m, k, n, peak, ceiling, compute_units, batch, k0) + matmul_time(
        k, n, m, peak, ceiling, compute_units, batch, k0
    )
    return forward, backward


_shape_times: Callable[..., tuple[Num, Num]] = lru_cache(maxsize=4096, typed=True)(_training_matmul_time)
""":func:`_training_matmul_time` of one layout, kept per argument tuple (typed: 1 and 1.0 apart)."""


# -- the fitted ceilings ---------------------------------------------------------------------


@cache
def _ceilings() -> dict[str, dict[str, float]]:
    text = files("mlsysim.data").joinpath("matmul_ceilings.json").read_text(encoding="utf-8")
    table: dict[str, dict[str, float]] = json.loads(text)["ceilings"]
    return table


MOE_SUFFIX = " MoE"
"""The ceilings of mixtures of experts' routed experts are stored under the architecture's name and this
suffix."""


def fitted_ceiling(architecture: str | None, matmul_format: str, experts: bool = False) -> float | None:
    """The fitted ceiling c_f of an architecture (``"Hopper"``) and format, or None where none was fitted.

    ``experts``: the ceiling of a mixture of experts' routed experts (``"Hopper MoE"``), fitted on the
    architecture's published mixtures of experts with their attention and dense layers at the dense
    ceilings: it carries what the experts lose beyond their products' shapes (grouped products over
    ragged token counts, the tokens' permutation, the router), which the operator model does not price
    one by one; None where none was fitted.
    """
    if architecture is None:
        return None
    table = _ceilings().get(architecture + MOE_SUFFIX if experts else architecture, {})
    value = table.get(matmul_format)
    if value is None and matmul_format in SIXTEEN_BIT:  # fp16 and bf16 run at one rate on tensor cores
        value = next((table[f] for f in SIXTEEN_BIT if f in table), None)
    if value is None and matmul_format == "fp8" and "mxfp8" in table:
        # where only MXFP8 was measured (Blackwell), FP8 with per-tensor scales runs on the same tensor cores
        # at the same peak: its ceiling
        value = table["mxfp8"]
    return None if value is None else float(value)


def fitted_formats(architecture: str | None) -> tuple[str, ...]:
    """The formats an architecture has a fitted ceiling for."""
    return tuple(_ceilings().get(architecture or "", {}))
