"""The time of one matrix-product kernel as GPU libraries run it: tiles, waves, split-K, a floor.

A kernel computes ``batch`` products C_i (M x N) = A_i (M x K) B_i (K x N), or one grouped
product (a mixture of experts' experts: G groups of M_g tokens each, one weight matrix of
K x N per group), 2 K N sum(M_g) FLOPs. Libraries (cuBLAS, CUTLASS, DeepGEMM, XLA's Triton
GEMMs) cut the output into tiles of T_M x T_N, run one tile per SM at a time, each over a
main loop along K, and pick among a few tile shapes, either way round (a skinny product
runs transposed, "swap AB", its few rows on the tile's narrow side), and among splits of K
(split-K, stream-K) when there are too few output tiles to fill the SMs. The model prices
every choice of :data:`TILES` x orientation x :data:`SPLITS` and keeps the fastest:

    work     = s * ceil(N / T_N) * sum_g ceil(M_g / T_M)         (tiles, K split s ways;
                                                                   swapped: T_M along N, T_N along M)
    waves    = ceil(work / U)                                     (U: the SM count)
    K_s      = ceil(K / (s k_step)) * k_step                      (each split's K-loop, whole k-steps)
    t_main   = 2 T_M T_N K_s / (c_f sigma P_f / U)                (one tile's K-loop on one SM)
    t_out    = T_M T_N w_out / (eta B / U)                        (one tile written at the SM's share
                                                                   of the memory bandwidth)
    t_split  = [s > 1] 2 s 4 sum(M_g) N / (eta B)                 (fp32 partial sums written, read back)
    t(cfg)   = t_F + waves * (t_main + phi t_out) + t_split

and, for the operands' traffic (each read once, the result written once),

    bytes    = sum(M_g) K w_in + G K N w_in + sum(M_g) N w_out
    t_memory = bytes / (eta B)

    T        = t_L + max(min over cfg of t(cfg), t_memory)

* t_L, the launch latency: from the kernel's start on the device to its first
  instruction and from its last to its end, paid by every kernel;
* t_F, the pipeline's fill and drain: the first tile's prologue (descriptors fetched,
  the first k-steps loaded) and the last tile's epilogue, paid once by a tiled kernel;
  t_L + t_F is the per-kernel floor, what a tiny product takes;
* phi, the share of each wave's epilogue (the tile written out) that the next tile's
  K-loop does not hide: 0 for a persistent kernel that overlaps them fully, 1 for one
  that does not (short K-loops expose it: 8192 x 8192 x 256 takes four times its
  FLOPs' time);
* c_f, the ceiling: the fraction of the format's dense peak P_f the K-loop reaches,
  per architecture and format; sigma the share of it sustained under the device's power
  limit (:func:`mlsysim.physics.clocks.sustained_fraction`, 1 at the default limit);
* eta, the fraction of the memory's peak bandwidth B a streaming kernel reaches;
* tile quantisation (the partial tiles at the edges do a whole tile's work), wave
  quantisation (the last wave leaves SMs idle) and the K-loop's whole k-steps come out
  of the ceilings above, not as separate factors.

The constants t_L, t_F, phi, eta and c_f are fitted on measured kernel tables
(``python -m mlsysim.validation.kernels_matmul``, ``mlsysim/data/kernel_fits/matmul.json``).
:data:`TILES` and :data:`SPLITS` are not fitted.

Sources: NVIDIA, "Matrix Multiplication Background User's Guide" (tile and wave
quantisation); Kerr et al. 2017, "CUTLASS: Fast Linear Algebra in CUDA C++" (the tiled
main loop over K, split-K); Osama et al. 2023, "Stream-K: Work-centric Parallel
Decomposition for Dense Matrix-Matrix Multiplication on the GPU" (splitting K when the
output has fewer tiles than SMs); NVIDIA, CUTLASS 3 "Efficient GEMM" documentation
(warp-specialised persistent kernels overlapping one tile's epilogue with the next's
main loop); DeepSeek-AI, DeepGEMM (grouped products over ragged groups, one kernel).

Every function takes floats or numpy arrays (broadcast together); a grouped product's
group sizes lie along the last axis of ``tokens``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mlsysim.physics._array import Num, ceil, is_array, maximum, where
from mlsysim.physics.bounds import Bound, KernelTime

TILES: tuple[tuple[float, float], ...] = ((128.0, 256.0), (128.0, 128.0), (128.0, 64.0), (128.0, 32.0))
"""Output tiles per SM (T_M, T_N) the libraries choose among, each either way round: CUTLASS 3's
and cuBLAS's Hopper and Blackwell kernels run 128 x 256 on large outputs (Blackwell's 2-SM
256 x 256 is 128 x 256 per SM; kernel names such as ``sm90_xmma_gemm_..._128x256x64`` and
``nvjet_sm100_..._128x256_..._2cta``), 128 x 128 on smaller ones, and 128 x 64 or 128 x 32
with the product transposed for a few rows (decoding, small experts): Hopper's wgmma and
Blackwell's tcgen05 take an N of 8 to 256. Not fitted."""

SPLITS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
"""The ways K may be split (split-K / stream-K) when the output has too few tiles for the SMs.
Not fitted: cuBLAS and CUTLASS offer splits of 2 to 8 and stream-K decompositions in between."""

K_STEP_BYTES = 128.0
"""Bytes of an operand row one k-step of the main loop loads: K-tiles of 64 16-bit or 128 8-bit
elements (CUTLASS's Hopper and Blackwell kernels). Each split's K-loop runs whole k-steps."""

ACCUMULATOR_BYTES = 4.0
"""Bytes of a partial sum of a split-K product (fp32), written by each split and read back to reduce."""


def gemm_time(
    m: Num, n: Num, k: Num, batch: Num, *, peak: Num, ceiling: Num, compute_units: Num, bandwidth: Num,
    in_bytes: Num, out_bytes: Num, launch: Num, fill: Num, epilogue_share: Num, memory_efficiency: Num,
    sustained: Num = 1.0,
) -> KernelTime:
    """Seconds of one kernel of ``batch`` products (M x K)(K x N) (the module docstring's T).

    ``peak``: the format's dense FLOP/s; ``ceiling``: c_f; ``compute_units``: U;
    ``bandwidth``: B (bytes/s); ``in_bytes``/``out_bytes``: bytes per operand / result
    element; ``launch``: t_L (s); ``fill``: t_F (s); ``epilogue_share``: phi;
    ``memory_efficiency``: eta; ``sustained``: sigma. Efficiency: of ``peak``
    (compute-bound) or of ``bandwidth`` (memory-bound).
    """
    return _kernel(
        lambda tile: batch * ceil(m / tile), batch * m, batch, n, k, peak=peak, ceiling=ceiling,
        compute_units=compute_units, bandwidth=bandwidth, in_bytes=in_bytes, out_bytes=out_bytes, launch=launch,
        fill=fill, epilogue_share=epilogue_share, memory_efficiency=memory_efficiency, sustained=sustained,
    )


def grouped_gemm_time(
    tokens: Num, n: Num, k: Num, *, peak: Num, ceiling: Num, compute_units: Num, bandwidth: Num,
    in_bytes: Num, out_bytes: Num, launch: Num, fill: Num, epilogue_share: Num, memory_efficiency: Num,
    sustained: Num = 1.0,
) -> KernelTime:
    """Seconds of one grouped kernel: groups of ``tokens`` rows (last axis) times their own K x N matrices.

    A mixture of experts' expert layer as DeepGEMM and CUTLASS's grouped GEMMs run it: each
    group's rows tile separately (sum_g ceil(M_g / T_M) rows of tiles), an empty group costs
    nothing (its weights are not read). The other arguments as :func:`gemm_time`.
    """
    counts = np.asarray(tokens, dtype=float)
    if counts.ndim == 0:
        counts = counts[None]
    total = counts.sum(axis=-1)
    groups = np.count_nonzero(counts > 0, axis=-1).astype(float)
    scalar = counts.ndim == 1 and not isinstance(n, np.ndarray) and not isinstance(k, np.ndarray)

    def tile_rows(tile: float) -> Num:
        rows = np.ceil(counts / tile).sum(axis=-1)
        return float(rows) if scalar else rows

    return _kernel(
        tile_rows, float(total) if scalar else total, float(groups) if scalar else groups, n, k, peak=peak,
        ceiling=ceiling, compute_units=compute_units, bandwidth=bandwidth, in_bytes=in_bytes, out_bytes=out_bytes,
        launch=launch, fill=fill, epilogue_share=epilogue_share, memory_efficiency=memory_efficiency,
        sustained=sustained,
    )


def _kernel(
    tile_rows: Callable[[float], Num], rows: Num, groups: Num, n: Num, k: Num, *, peak: Num, ceiling: Num,
    compute_units: Num, bandwidth: Num, in_bytes: Num, out_bytes: Num, launch: Num, fill: Num,
    epilogue_share: Num, memory_efficiency: Num, sustained: Num,
) -> KernelTime:
    """The module docstring's T for ``rows`` = sum(M_g) rows in ``groups`` groups; ``tile_rows(T)`` = sum ceil(M_g/T)."""
    per_unit = ceiling * sustained * peak / compute_units
    stream = memory_efficiency * bandwidth
    k_step = K_STEP_BYTES / in_bytes
    split_bytes = 2.0 * ACCUMULATOR_BYTES * rows * n / stream
    out_per_area = epilogue_share * out_bytes * compute_units / stream
    vector = is_array(rows, n, k, peak, ceiling, compute_units, bandwidth, in_bytes, out_bytes, fill,
                      epilogue_share, memory_efficiency, sustained)
    compute: Num = math.inf
    single_wave: Num = False
    for tile_m, tile_n in TILES:
        area = tile_m * tile_n
        out = out_per_area * area
        orientations = (tile_rows(tile_m) * ceil(n / tile_n),) if tile_m == tile_n else (
            tile_rows(tile_m) * ceil(n / tile_n), tile_rows(tile_n) * ceil(n / tile_m))
        for row_tiles in orientations:
            for split in SPLITS:
                work = row_tiles * split
                k_split = ceil(k / (split * k_step)) * k_step
                t = fill + ceil(work / compute_units) * (2.0 * area * k_split / per_unit + out)
                if split > 1.0:
                    t = t + split * split_bytes
                if vector:
                    better = t < compute
                    single_wave = np.where(better, work < compute_units, single_wave)
                    compute = np.where(better, t, compute)
                elif t < compute:
                    compute, single_wave = t, work < compute_units
    traffic = rows * k * in_bytes + groups * k * n * in_bytes + rows * n * out_bytes
    memory = traffic / stream
    busy = maximum(compute, memory)
    time = launch + busy
    fixed = launch + where(memory >= compute, 0.0, fill)
    bound = where(
        fixed > time - fixed, int(Bound.LAUNCH),
        where(memory >= compute, int(Bound.MEMORY), where(single_wave, int(Bound.WAVES), int(Bound.COMPUTE))),
    )
    efficiency = where(bound == int(Bound.MEMORY), traffic / (time * bandwidth), 2.0 * rows * n * k / (time * peak))
    return KernelTime(time, efficiency, bound)
