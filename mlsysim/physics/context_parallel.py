"""Context parallelism: the sequence of each sample split over cp devices, attention by a ring of key/value blocks.

With context parallelism of size cp (Liu, Zaharia and Abbeel 2023, "Ring
Attention with Blockwise Transformers for Near-Infinite Context"; Megatron-Core's
``context_parallel_size``), each device holds s / cp tokens of every sequence:
the linear layers, the element-wise work and the stored activations shrink by
cp, and each device's queries attend to all s keys. The keys and values travel
round the ring of the cp devices, one block per step, cp - 1 steps, overlapped
with the attention of the block in hand:

    M_kv = 2 b (s / cp) a_kv d B_act / t      (K and V of one block, one layer, per device)
    forward:  (cp - 1) M_kv;  backward: 2 (cp - 1) M_kv (the blocks again and their gradients)

so one layer moves n_kv (cp - 1) M_kv, n_kv = 3 (4 when the attention's forward is
recomputed: selective or full), at the rate B_cp of the link the ring spans, and
exposes what its attention compute does not cover:

    t_cp,layer = max(0, n_kv (cp - 1) (M_kv / B_cp + alpha) - t_att,layer)

The all-gather variant (``context_all_gather``; Llama Team 2024, "The Llama 3 Herd of
Models", section 3.3.2; TorchTitan's default 'allgather' rotation) gathers the keys and
values of all cp blocks before the attention of the local queries (and again in the
backward, the gradients reduce-scattered): the same bytes, but only the local block's
attention, 1 / cp of the layer's, runs while they travel:

    t_cp,layer = max(0, n_kv (cp - 1) (M_kv / B_cp + alpha) - t_att,layer / cp)

(Llama 3 gathers first and exposes all of it, "small due to GQA": the difference is
that 1 / cp share.)

Load balance: Megatron-Core cuts each sequence into 2 cp chunks and gives each
device a chunk from each end, so every device does the same share of the causal
attention (the rule: 2 cp divides s). The gradients of the weights are reduced
over the d cp devices that hold the same weights.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, maximum, where
from mlsysim.physics.activations import recomputed_modules

ACTIVATION_BYTES = 2.0
"""Bytes per element of the keys and values sent (16-bit)."""


def kv_block_bytes(micro_batch: Num, seq_len: Num, kv_heads: Num, head_dim: Num, tensor_parallel: Num,
                   context_parallel: Num) -> Num:
    """M_kv = 2 b (s / cp) a_kv d B_act / t: the keys and values of one block of one layer on one device."""
    return 2.0 * micro_batch * seq_len / context_parallel * kv_heads * head_dim * ACTIVATION_BYTES / tensor_parallel


def kv_passes(recompute: str, modules: tuple[str, ...] = ()) -> float:
    """n_kv: 3 (forward once, backward twice), 4 when the attention's forward is recomputed (full, or a
    selective recomputation that reruns ``core_attn``: :func:`~mlsysim.physics.activations.recomputed_modules`)."""
    return 4.0 if "core_attn" in recomputed_modules(recompute, modules) else 3.0


def ring_attention_exposed(
    block_bytes: Num, context_parallel: Num, rate: Num, latency: Num, attention_time: Num, recompute: str,
    all_gather: Num = 0.0, modules: tuple[str, ...] = (),
) -> Num:
    """Seconds per layer the ring's transfers add beyond the attention compute they overlap: all of the
    layer's attention for the ring, the local block's (1 / cp of it) for the all-gather variant
    (``all_gather`` > 0)."""
    steps = kv_passes(recompute, modules) * (context_parallel - 1.0)
    covered = where(all_gather > 0, attention_time / context_parallel, attention_time)
    return maximum(steps * (block_bytes / rate + latency) - covered, 0.0)
