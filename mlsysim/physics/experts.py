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

    t_a2a = max(s_in M_a2a / B_intra, s_out M_a2a / B_nic,dev) + (ep - 1) alpha,
    s_in = (q - 1) / ep,  s_out = (ep - q) / ep

A hierarchical dispatch (``hierarchical_dispatch``: DeepSeek-AI 2024, "DeepSeek-V3
Technical Report", section 3.2.2; DeepEP and Megatron-Core's HybridEP) sends each token
over the NICs once per remote domain that holds any of its k experts, to the device of
the same index there, which forwards it over NVLink to the experts' devices. Of the
n = ep / q domains of the group, a remote one holds none of a token's k experts (drawn
without replacement from E, E / n in each domain) with probability
C(E - E / n, k) / C(E, k), so the copies that cross the NICs are

    r = (n - 1) (1 - C(E - E / n, k) / C(E, k))

of the k (:func:`remote_domains_per_token`), and the NVLink hop carries the copies
that end on another device of their domain:

    s_out = r / k,  s_in = (q - 1) / q

(k = 8 of E = 128 experts over 4 domains: r = 2.7 where the flat all-to-all sends 6 of
the 8 copies across). Routing that limits a token's domains (DeepSeek-V3's at most 4
nodes) would lower r further; the scenario has no such limit.

Overlap (``expert_overlap``; DeepSeek-AI 2024's DualPipe, DeepEP): the all-to-alls
of one micro-batch run under the compute of another, so only what exceeds the
layer's compute is exposed.
"""

from __future__ import annotations

import numpy as np

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


def none_in_domain(experts: Num, top_k: Num, domains: Num) -> Num:
    """C(E - E / n, k) / C(E, k): the chance that one of n equal domains holds none of a token's k
    experts drawn without replacement from E (k whole; the product form prod_{i<k} (E - E/n - i) / (E - i))."""
    per_domain = experts / domains
    missed: Num = 1.0
    for i in range(int(round(float(np.max(top_k))))):
        factor = maximum(experts - per_domain - i, 0.0) / maximum(experts - i, 1.0)
        missed = missed * where(i < top_k, factor, 1.0)
    return missed


def remote_domains_per_token(experts: Num, top_k: Num, group: Num, local: Num) -> Num:
    """r = (n - 1) (1 - C(E - E / n, k) / C(E, k)), n = ep / q: the remote domains that hold any of a
    token's k experts (:func:`none_in_domain`)."""
    domains = group / local
    return (domains - 1.0) * (1.0 - none_in_domain(experts, top_k, domains))


def all_to_all_shares(group: Num, local: Num, experts: Num, top_k: Num, hierarchical: Num) -> tuple[Num, Num]:
    """(s_in, s_out): the shares of M_a2a that cross NVLink and the NICs; flat, (q - 1) / ep and
    (ep - q) / ep; hierarchical (``hierarchical`` > 0), (q - 1) / q and r / k."""
    flat_in, flat_out = (local - 1.0) / group, (group - local) / group
    on = hierarchical > 0
    if type(on) is bool and not on:
        return flat_in, flat_out
    remote = remote_domains_per_token(experts, top_k, group, local) / top_k
    return where(on, (local - 1.0) / local, flat_in), where(on, remote, flat_out)


def all_to_all_time(
    message: Num, group: Num, inside_share: Num, outside_share: Num, intra_bandwidth: Num, nic_per_device: Num,
    latency: Num = 0.0,
) -> Num:
    """t_a2a = max(s_in M / B_intra, s_out M / B_nic,dev) + (ep - 1) alpha of one all-to-all over ``group``
    ranks (:func:`all_to_all_shares`)."""
    inside = message * inside_share / intra_bandwidth
    outside = message * outside_share / nic_per_device
    return where(group > 1, maximum(inside, outside) + (group - 1.0) * latency, 0.0)
