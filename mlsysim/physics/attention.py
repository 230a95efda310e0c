"""The time of one fused attention call (FlashAttention, cuDNN), forward and backward.

A fused attention kernel computes O = softmax(Q K^T / sqrt(d) + mask) V without
writing the scores to memory (Dao et al. 2022, "FlashAttention"). It walks the
score matrix in tiles of T x T (T query rows by T keys): every *work unit* (a
thread block) owns one tile row of queries (forward) or of keys (backward) of
one head and loops over the tiles of the other side. The model of its time:

    t = t_0 + max(t_compute, t_memory)

    t_compute = max( F_exec / (P e),  F / (P c) )
    e         = a  x  f / (f + D_0)  x  L / (L + L_0)  x  q_wave
    t_memory  = bytes / B

* F: the FLOPs the work needs, by the convention every FlashAttention and cuDNN
  benchmark uses (:func:`attention_flops`): 2 (d + d_v) per score in the forward
  pass (Q K^T and P V), 2 (3 d + 2 d_v) in the backward pass (Q K^T again, dV,
  dP, dQ, dK: 2.5 times the forward when d = d_v), scores above the causal
  diagonal not counted (s^2 / 2 of s^2 when the query and key lengths are equal);
* F_exec: what the kernel executes, whole T x T tiles: the tiles on and below the
  diagonal under a causal mask (:func:`tile_pairs`), not exactly half, and the
  padding of the last partial tile (tile quantisation); a query shorter than a tile
  packs the query heads that share a key/value head into one tile (:func:`packed_tiles`);
* f / (f + D_0): the work on each score that the tensor cores do not do
  (exponential, rescaling, masking: D_0 FLOPs' worth of time per score) against
  the f = 2 (d + d_v) (forward) or 2 (3 d + 2 d_v) (backward) tensor-core FLOPs
  of the score; small head dims reach less (Shah et al. 2024, "FlashAttention-3",
  section 3: softmax exponentials throttle the matmuls; Zadouri et al. 2026,
  "FlashAttention-4": on Blackwell the exponential units, not the tensor cores,
  bind); one fitted D_0 per architecture;
* L / (L + L_0): each work unit loads its own tile row and writes its output
  once, worth L_0 tiles of its loop; L is the mean loop length in tiles
  (executed tiles / work units), so short sequences and causal masks (shorter
  loops) reach less; fitted per architecture, format and direction;
* q_wave = w / ceil(w), w = work units / compute units: the last wave of work
  units leaves SMs idle (as :func:`mlsysim.physics.matmul.wave_quantization`);
* a: what the architecture's kernels reach on large, long problems in the
  format and direction (fitted), and c the best efficiency any table of that
  architecture, format and direction shows (F / (t P)): no prediction is faster;
* t_memory: Q, K, V and the output (and, backward, their gradients) read and
  written once at the memory bandwidth B: binds only when the query is a few
  rows (decoding);
* t_0: the per-kernel floor (launch, prologue, epilogue).

The fitted constants come from published kernel timings
(``python -m mlsysim.validation.kernels_attention``). Every function takes
floats or numpy arrays (broadcast together). :func:`unfused_attention_time`
prices the alternative of two batched matrix products and a softmax in memory.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from mlsysim.physics._array import Num, ceil, maximum, minimum, where
from mlsysim.physics.bounds import Bound, KernelTime

TILE = 128.0
"""Query rows and keys per tile: the block FlashAttention-2 (forward, head dim up to 128),
FlashAttention-3 (head dim 128) and cuDNN's fused kernels use along each side (Dao 2023,
"FlashAttention-2", section 3.1; Shah et al. 2024, section 4); one size for every kernel."""

STATS_BYTES = 4.0
"""Bytes of the softmax statistic (log-sum-exp, fp32) kept per query row and head."""


class Direction(IntEnum):
    """Which pass of one attention call: declared once, the tables' words derive from the names."""

    FORWARD = 0
    BACKWARD = 1
    FORWARD_BACKWARD = 2
    """Both passes, as one figure (the FlashAttention-2 README's "forward + backward")."""

    @property
    def word(self) -> str:
        """``"forward"``, ``"backward"``, ``"forward+backward"``: how tables name it."""
        return self.name.lower().replace("_", "+")


DIRECTIONS = {d.word: d for d in Direction}
"""The tables' direction words and their codes."""


def causal_pairs(seq_q: Num, seq_k: Num) -> Num:
    """Query-key pairs a causal mask keeps, queries aligned to the last keys (bottom right).

    ``m^2 / 2 + s_q (s_k - m)``, m = min(s_q, s_k): s^2 / 2 when the lengths are equal
    (FlashAttention's and cuDNN's benchmark convention, the diagonal counted as half).
    """
    m = minimum(seq_q, seq_k)
    return m * m / 2.0 + seq_q * (seq_k - m)


def attention_pairs(seq_q: Num, seq_k: Num, causal: Num) -> Num:
    """Query-key pairs scored: all s_q s_k, or :func:`causal_pairs` under a causal mask."""
    return where(causal, causal_pairs(seq_q, seq_k), seq_q * seq_k)


def pair_flops(head_dim: Num, head_dim_v: Num, direction: Num) -> Num:
    """Tensor-core FLOPs per scored pair: forward 2 (d + d_v); backward 2 (3 d + 2 d_v); both, the sum.

    Forward: S = Q K^T (2 d), O = P V (2 d_v). Backward (Dao 2023, Algorithm 2): S again
    (2 d), dV = P^T dO (2 d_v), dP = dO V^T (2 d_v), dQ = dS K (2 d), dK = dS^T Q (2 d).
    """
    forward = 2.0 * (head_dim + head_dim_v)
    backward = 2.0 * (3.0 * head_dim + 2.0 * head_dim_v)
    return where(direction == Direction.FORWARD, forward,
                 where(direction == Direction.BACKWARD, backward, forward + backward))


def attention_flops(batch: Num, heads: Num, seq_q: Num, seq_k: Num, head_dim: Num, head_dim_v: Num,
                    causal: Num, direction: Num) -> Num:
    """FLOPs of one call by the benchmarks' convention: ``b h pairs x pair_flops``.

    With d = d_v and s_q = s_k = s: 4 b h s^2 d forward, halved when causal, 2.5 times that
    backward, 3.5 times forward and backward together (FlashAttention's
    ``benchmarks/benchmark_flash_attention.py``; cuDNN frontend's SDPA benchmark counts the
    same, 2 (3 d_qk + 2 d_v) backward for DeepSeek-V3's d_qk 192, d_v 128).
    """
    return batch * heads * attention_pairs(seq_q, seq_k, causal) * pair_flops(head_dim, head_dim_v, direction)


def tile_pairs(seq_q: Num, seq_k: Num, causal: Num, tile: float = TILE) -> Num:
    """(query tile, key tile) blocks a fused kernel computes for one head.

    All n_q n_k blocks, n = ceil(s / T); under a causal mask aligned to the last keys,
    query tile i needs key tiles up to i + 1 + c (c = ceil((s_k - s_q) / T)), clipped to
    [0, n_k]: the blocks on and below the diagonal, summed in closed form.
    """
    n_q = ceil(seq_q / tile)
    n_k = ceil(seq_k / tile)
    offset = ceil((seq_k - seq_q) / tile)
    low = minimum(maximum(-offset, 0.0), n_q)
    high = minimum(maximum(n_k - 1.0 - offset, low), n_q)
    triangle = (high - low) * (low + high + 1.0 + 2.0 * offset) / 2.0 + (n_q - high) * n_k
    return where(causal, triangle, n_q * n_k)


def work_units(batch: Num, heads: Num, seq_q: Num, seq_k: Num, direction: Num, tile: float = TILE) -> Num:
    """Thread blocks of one call: a tile row of queries (forward) or of keys (backward) per head."""
    rows = where(direction == Direction.BACKWARD, seq_k, seq_q)
    return batch * heads * ceil(rows / tile)


def packed_tiles(batch: Num, heads: Num, kv_heads: Num, seq_q: Num, seq_k: Num, causal: Num,
                 direction: Num) -> tuple[Num, Num]:
    """(executed tiles, work units) of one call, query heads packed when the query is shorter than a tile.

    A forward call whose query is shorter than a tile (decoding, s_q < T) packs the
    heads / kv_heads query heads of one key/value head into the tile's rows, as
    FlashAttention does for grouped-query attention ("pack GQA"), and then sees every key
    tile; otherwise every head owns :func:`tile_pairs` tiles and :func:`work_units` units.
    Splitting the key loop across units (split-KV decoding) is not modelled.
    """
    pack = (seq_q < TILE) & (direction == Direction.FORWARD)
    rows = seq_q * heads / kv_heads
    packed = batch * kv_heads * ceil(rows / TILE)
    tiles = where(pack, packed * ceil(seq_k / TILE), tile_pairs(seq_q, seq_k, causal) * batch * heads)
    units = where(pack, packed, work_units(batch, heads, seq_q, seq_k, direction))
    return tiles, units


def wave_efficiency(units: Num, compute_units: Num) -> Num:
    """``w / ceil(w)``, w = units / compute units: the share of the last wave's SMs kept busy."""
    waves = units / compute_units
    return waves / ceil(waves)


def attention_bytes(batch: Num, heads: Num, kv_heads: Num, seq_q: Num, seq_k: Num, head_dim: Num,
                    head_dim_v: Num, element_bytes: Num, direction: Num) -> Num:
    """Bytes one call reads and writes at least once in device memory.

    Forward: Q, K, V in, O and the log-sum-exp out. Backward: Q, K, V, O, dO and the
    log-sum-exp in, dQ, dK, dV out. Both: the sum.
    """
    q = batch * heads * seq_q * head_dim
    o = batch * heads * seq_q * head_dim_v
    kv = batch * kv_heads * seq_k * (head_dim + head_dim_v)
    stats = batch * heads * seq_q * STATS_BYTES
    forward = (q + kv + o) * element_bytes + stats
    backward = (2.0 * q + 2.0 * kv + 2.0 * o) * element_bytes + o * element_bytes + stats
    return where(direction == Direction.FORWARD, forward,
                 where(direction == Direction.BACKWARD, backward, forward + backward))


def attention_efficiency(scale: Num, head_overhead: Num, loop_overhead: Num, flops_per_pair: Num,
                         mean_loop: Num, waves: Num) -> Num:
    """``e = a x f / (f + D_0) x L / (L + L_0) x q_wave`` (the module's equation)."""
    return (scale * flops_per_pair / (flops_per_pair + head_overhead)
            * mean_loop / (mean_loop + loop_overhead) * waves)


def fused_attention_time(
    *,
    batch: Num,
    heads: Num,
    kv_heads: Num,
    seq_q: Num,
    seq_k: Num,
    head_dim: Num,
    head_dim_v: Num,
    causal: Num,
    direction: Num,
    element_bytes: Num,
    peak_flops: Num,
    bandwidth: Num,
    compute_units: Num,
    scale: Num,
    head_overhead: Num,
    loop_overhead: Num,
    ceiling: Num,
    floor: Num,
) -> KernelTime:
    """One fused attention call: ``t = t_0 + max(t_compute, t_memory)`` (the module's model), SI units.

    ``direction`` is a :class:`Direction` code; ``causal`` 1 or 0; ``peak_flops`` the
    format's dense peak (FLOP/s), ``bandwidth`` the memory's (B/s), ``compute_units`` the
    SMs (1 turns wave quantisation off); ``scale`` (a), ``head_overhead`` (D_0),
    ``loop_overhead`` (L_0), ``ceiling`` (c) and ``floor`` (t_0, s) the fitted constants.
    The efficiency is F / (t P) for compute and launch, bytes / (t B) for memory.
    """
    flops = attention_flops(batch, heads, seq_q, seq_k, head_dim, head_dim_v, causal, direction)
    per_pair = pair_flops(head_dim, head_dim_v, direction)
    tiles, units = packed_tiles(batch, heads, kv_heads, seq_q, seq_k, causal, direction)
    executed = tiles * TILE * TILE * per_pair
    waves = units / compute_units
    efficiency = attention_efficiency(scale, head_overhead, loop_overhead, per_pair, tiles / units,
                                      wave_efficiency(units, compute_units))
    compute = maximum(executed / (peak_flops * efficiency), flops / (peak_flops * ceiling))
    moved = attention_bytes(batch, heads, kv_heads, seq_q, seq_k, head_dim, head_dim_v, element_bytes, direction)
    memory = moved / bandwidth
    work = maximum(compute, memory)
    time = floor + work
    bound = where(floor > work, float(Bound.LAUNCH),
                  where(memory > compute, float(Bound.MEMORY),
                        where(waves < 1.0, float(Bound.WAVES), float(Bound.COMPUTE))))
    achieved = where(bound == Bound.MEMORY, moved / (time * bandwidth), flops / (time * peak_flops))
    code = bound.astype(int) if isinstance(bound, np.ndarray) else int(bound)
    return KernelTime(time, achieved, code)


UNFUSED_PASSES = {Direction.FORWARD: 4.0, Direction.BACKWARD: 7.0}
"""Passes over the score matrix in memory when attention is not fused: forward, S written,
read by the softmax, P written, read by P V (4); backward, dP written and read, P read twice
(softmax backward and dV), dS written and read twice (dQ, dK): 7. Order of magnitude."""


def unfused_attention_time(
    *,
    batch: Num,
    heads: Num,
    seq_q: Num,
    seq_k: Num,
    head_dim: Num,
    head_dim_v: Num,
    direction: Num,
    element_bytes: Num,
    matmul_rate: Num,
    peak_flops: Num,
    bandwidth: Num,
) -> KernelTime:
    """Attention as two (forward) or four (backward) batched matrix products and a softmax in memory.

    The documented alternative to :func:`fused_attention_time` (PyTorch's math path):
    ``t = F_mm / R + passes x b h s_q s_k x bytes / B`` with F_mm = 2 (d + d_v) per score
    forward, 4 (d + d_v) backward (P is kept, not recomputed), every score computed (a mask
    saves nothing), R the matrix products' achieved rate (a matmul model's answer), P the
    format's peak (the efficiency is F_mm / (t P) when the products bind) and B the memory
    bandwidth; ``direction`` forward or backward only.
    """
    scores = batch * heads * seq_q * seq_k
    backward = direction == Direction.BACKWARD
    flops = scores * where(backward, 4.0, 2.0) * (head_dim + head_dim_v)
    passes = where(backward, UNFUSED_PASSES[Direction.BACKWARD], UNFUSED_PASSES[Direction.FORWARD])
    moved = passes * scores * element_bytes
    compute = flops / matmul_rate
    memory = moved / bandwidth
    time = compute + memory
    memory_binds = memory > compute
    bound = where(memory_binds, float(Bound.MEMORY), float(Bound.COMPUTE))
    achieved = where(memory_binds, moved / (time * bandwidth), flops / (time * peak_flops))
    code = bound.astype(int) if isinstance(bound, np.ndarray) else int(bound)
    return KernelTime(time, achieved, code)
