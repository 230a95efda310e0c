"""Expert parallelism: the all-to-alls that carry each token to its experts and back.

With ep-way expert parallelism (Lepikhin et al. 2021, "GShard"; Megatron-Core's
``expert_model_parallel_size``) the E routed experts of a MoE layer live E / ep to a
device. Each device's T / t tokens (sequence-parallel over the t tensor ranks) go to
their k experts and come back: per MoE layer and micro-batch, a dispatch and a
combine in the forward pass, and both again for the gradients in the backward
(6 with full recomputation, which dispatches and combines the forward again). One
all-to-all moves, per device,

    M_a2a = (T / t) k h B_act etp

bytes (etp: the expert-tensor ranks that each need the token), of which the share
(ep - q) / ep goes to devices outside the device's scale-up domain, q = min(ep,
D / etp) of the group's ranks sharing it, over the device's share of the NICs, and
(q - 1) / ep inside it over NVLink; the two run at once:

    t_a2a = max((q - 1) / ep M_a2a / B_intra, (ep - q) / ep M_a2a / B_nic,dev) + (ep - 1) alpha

Overlap (``expert_overlap``; DeepSeek-AI 2024's DualPipe, DeepEP): the all-to-alls
of one micro-batch run under the compute of another, so only what exceeds the
layer's compute is exposed.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, maximum, minimum, where

ACTIVATION_BYTES = 2.0
"""Bytes per element of the tokens dispatched (16-bit)."""


def all_to_all_bytes(tokens: Num, tensor_parallel: Num, top_k: Num, hidden: Num, expert_tensor: Num = 1.0) -> Num:
    """M_a2a = (T / t) k h B_act etp: what one device sends in one dispatch (or combine)."""
    return tokens / tensor_parallel * top_k * hidden * ACTIVATION_BYTES * expert_tensor


def all_to_alls_per_layer(recompute: str) -> float:
    """Dispatch and combine, forward and backward: 4; 6 when full recomputation reruns the forward."""
    return 6.0 if recompute == "full" else 4.0


def ranks_per_domain(expert_parallel: Num, expert_tensor: Num, domain: Num) -> Num:
    """q = min(ep, max(1, D / etp)): the expert-parallel group's ranks in one scale-up domain."""
    return minimum(expert_parallel, maximum(1.0, domain / expert_tensor))


def all_to_all_time(
    message: Num, group: Num, local: Num, intra_bandwidth: Num, nic_per_device: Num, latency: Num = 0.0
) -> Num:
    """t_a2a of one all-to-all over ``group`` ranks, ``local`` of them in the device's domain."""
    inside = message * (local - 1.0) / group / intra_bandwidth
    outside = message * (group - local) / group / nic_per_device
    return where(group > 1, maximum(inside, outside) + (group - 1.0) * latency, 0.0)
