"""Tensor (intra-layer) parallelism of a transformer: its collectives, link and activation memory.

Megatron-LM splits each transformer layer's matrices over t devices
(Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language
Models Using Model Parallelism", section 3 and Figure 4): the attention
block's and the MLP's outputs are each summed by one AllReduce of the layer's
b x s x h activations in the forward pass (operator g) and one in the backward
pass (operator f), so a layer costs **two AllReduces in the forward and two in
the backward**, each of M = 2 b s h bytes in 16-bit precision. Full
activation recomputation repeats the forward, and with it its two AllReduces
(Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", section 3.2). Sequence parallelism (Korthikanti
et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", section 4.2.2) replaces each AllReduce by a reduce-scatter plus an
all-gather of the same buffer: the same bytes on the wire, ring volume
2 (t-1)/t M per device, and the layer-norm and dropout activations are split
over t as well.

Parameters, FLOPs and the training state per device are divided by t
(Narayanan et al. 2021, section 2.3). The collectives run inside the node's
scale-up link (NVLink) while t <= devices per node; beyond that the ring
crosses nodes and its node-crossing edges ride the NICs, as in
:func:`mlsysim.physics.collectives.inter_node_cost` (``ring``). Megatron-LM of
2021-2022 does not overlap these collectives with the layer's computation
(they sit between dependent matrix products), so their time is counted on the
critical path; later releases can overlap part of them (``--tp-comm-overlap``),
which this model does not credit.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, minimum, where
from mlsysim.physics.activations import MLP_RERUN_UNITS, NORM_OUTPUT_UNITS, recomputed_modules
from mlsysim.physics.collectives import ring_allreduce_factor

ACTIVATION_BYTES = 2.0
"""Bytes per activation element on the wire and in memory: 16-bit (fp16 or bf16)."""

ALLREDUCES_PER_LAYER = 4.0
"""Two AllReduces in the forward pass, two in the backward (Shoeybi et al. 2019, Figure 4)."""

RECOMPUTE_ALLREDUCES_PER_LAYER = 2.0
"""The two forward AllReduces again, when full recomputation reruns the forward (Narayanan et al. 2021)."""

TP_MESSAGE_EQUATION = "M = 2 b s h  (16-bit activations of one micro-batch)"
TP_TIME_EQUATION = "T_tp = L_s x c x (2 (t-1) alpha + M f(t) / B_tp),  c = 4 (5 rerunning the MLP, 6 with full recompute)"
TP_ACTIVATION_EQUATIONS = {
    "none": "s b h (10 + 24/t + 5 a s/(h t))   [with sequence parallelism: s b h (34 + 5 a s/h) / t]",
    "selective": "s b h (10 + 24/t)   [with sequence parallelism: 34 s b h / t]",
    "full": "2 s b h   [with sequence parallelism: 2 s b h / t]",
}
"""Activation bytes per layer per device under tensor parallelism (Korthikanti et al. 2022, Table 2)."""


def tp_message_bytes(micro_batch: Num, seq_len: Num, hidden: Num) -> Num:
    """Bytes of one tensor-parallel AllReduce: M = 2 b s h (16-bit activations; Shoeybi et al. 2019)."""
    return ACTIVATION_BYTES * micro_batch * seq_len * hidden


def tp_collectives_per_layer(recompute: str, modules: tuple[str, ...] = ()) -> float:
    """AllReduces per layer per micro-batch: 4, 6 when full recomputation reruns the forward, 5 when selective
    recomputation reruns the MLP (its forward ends in one).

    The attention core and the layer norms are recomputed inside each tensor-parallel rank, with no
    collective (Korthikanti et al. 2022, section 5).
    """
    if recompute == "full":
        return ALLREDUCES_PER_LAYER + RECOMPUTE_ALLREDUCES_PER_LAYER
    mlp = "mlp" in recomputed_modules(recompute, modules)
    return ALLREDUCES_PER_LAYER + (RECOMPUTE_ALLREDUCES_PER_LAYER / 2.0 if mlp else 0.0)


def tp_link_rate(
    tensor_parallel: Num,
    devices_per_node: Num,
    intra_bandwidth: Num,
    nic_bandwidth: Num,
    nics_per_node: Num,
) -> Num:
    """Bytes/s per device of the tensor-parallel ring: the intra-node link while t <= devices per node.

        B_tp = B_intra                       if t <= g
               min(k, g) B_nic               otherwise (the ring's node-crossing edges on k NICs)

    The second line is :func:`mlsysim.physics.collectives.inter_node_cost`'s ``ring`` rate.
    """
    inter = minimum(nics_per_node, devices_per_node) * nic_bandwidth
    return where(tensor_parallel <= devices_per_node, intra_bandwidth, inter)


def tp_allreduce_time(message_bytes: Num, tensor_parallel: Num, rate: Num, latency: Num = 0.0) -> Num:
    """One ring AllReduce (or reduce-scatter + all-gather) over t devices: 2 (t-1) alpha + M f(t) / B.

    f(t) = 2 (t-1)/t (Patarasuk and Yuan 2009); zero for t = 1.
    """
    t = tensor_parallel
    return 2.0 * (t - 1.0) * latency + message_bytes * ring_allreduce_factor(t) / rate


def tp_time_per_micro_batch(
    layers_on_device: Num,
    message_bytes: Num,
    tensor_parallel: Num,
    rate: Num,
    latency: Num = 0.0,
    recompute: str = "none",
) -> Num:
    """Seconds of tensor-parallel collectives per micro-batch on one device (all on the critical path).

        T_tp = L_s x c x (2 (t-1) alpha + M f(t) / B_tp)

    L_s layers on the device (L / p), c collectives per layer
    (:func:`tp_collectives_per_layer`), M = 2 b s h.
    """
    per_collective = tp_allreduce_time(message_bytes, tensor_parallel, rate, latency)
    return layers_on_device * tp_collectives_per_layer(recompute) * per_collective


def tp_activation_bytes_per_layer(
    seq_len: Num,
    micro_batch: Num,
    hidden: Num,
    heads: Num,
    tensor_parallel: Num,
    *,
    sequence_parallel: bool = False,
    recompute: str = "none",
    flash_attention: bool = False,
    kv_len: Num | None = None,
    modules: tuple[str, ...] = (),
) -> Num:
    """Bytes of activations one layer keeps on one device under t-way tensor parallelism.

    Korthikanti et al. 2022, Table 2 (16-bit activations):

        none:       s b h (10 + 24/t + 5 a s_kv/(h t));  with SP: s b h (34 + 5 a s_kv/h) / t
        selective:  s b h (10 + 24/t);                   with SP: 34 s b h / t
        full:       2 s b h;                             with SP: 2 s b h / t

    Selective with Megatron-Core's ``modules`` (:data:`~mlsysim.physics.activations.RECOMPUTE_MODULES`):
    the attention matrices are dropped only where ``core_attn`` is rerun (or fused attention never stores
    them); ``mlp`` drops the 16 s b h / t between the MLP's products, ``layernorm`` the norms' outputs, 4 s b h
    (4 s b h / t with SP).

    s the device's tokens of each sequence, s_kv (``kv_len``; None: s) the keys each of them
    attends to: under context parallelism the device holds s / cp queries that attend to all s
    keys, so its attention matrices are (s / cp) x s, not (s / cp)^2. ``flash_attention`` drops
    the 5 a s s_kv b attention matrices, as selective recomputation does (Dao et al. 2022 never
    store them). At t = 1 the three lines are
    :func:`mlsysim.physics.activations.activation_bytes_per_layer`.
    """
    t = tensor_parallel
    sbh = seq_len * micro_batch * hidden
    keys = seq_len if kv_len is None else kv_len
    rerun = recomputed_modules(recompute, modules)
    attention = 0.0 if ("core_attn" in rerun or flash_attention) else 5.0 * heads * keys / hidden
    if recompute == "full":
        return 2.0 * sbh / t if sequence_parallel else 2.0 * sbh
    saved = (MLP_RERUN_UNITS / t if "mlp" in rerun else 0.0) + (
        NORM_OUTPUT_UNITS * (1.0 / t if sequence_parallel else 1.0) if "layernorm" in rerun else 0.0)
    if sequence_parallel:
        return sbh * ((34.0 + attention) / t - saved)
    return sbh * (10.0 + 24.0 / t + attention / t - saved)
