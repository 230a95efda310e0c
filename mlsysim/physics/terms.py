"""The terms of one training layout's update, one pure function each, over the three records.

Each function reads the :mod:`~mlsysim.physics.records` (the model's shape, the cluster, the
layout, the rates) and the terms before it, and returns its figures as a named tuple: the time
the update pays for it, and the intermediate figures a derivation prints (explain, the notes,
the timeline picture, the sweep and the planner all read these same tuples). The composition,
the update time, is :func:`mlsysim.physics.layout.layout_figures`; the module docstring there
gives the update's equation and its sources, and each term's formulas live in the topic module
it calls (:mod:`~mlsysim.physics.tensor_parallel`, :mod:`~mlsysim.physics.pipeline`, ...).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mlsysim.physics._array import Num, is_array, maximum, minimum, where
from mlsysim.physics.collectives import inter_node_cost, intra_node_cost, stage_time
from mlsysim.physics.compute import transformer_flops_per_sample
from mlsysim.physics.context_parallel import kv_block_bytes, ring_attention_exposed
from mlsysim.physics.experts import (
    all_to_all_bytes,
    all_to_all_shares,
    all_to_all_time,
    all_to_alls_per_layer,
    ranks_per_domain,
)
from mlsysim.physics.operators import (
    Experts,
    OperatorTimes,
    elementwise_passes,
    experts_in,
    operator_times_by_distinct_rows,
)
from mlsysim.physics.optimizer import optimizer_step_time
from mlsysim.physics.pipeline import (
    bubble_fraction,
    first_stage_activation_bytes,
    p2p_message_bytes,
    p2p_time,
    pipeline_link_rate,
)
from mlsysim.physics.records import Cluster, Layout, ModelShape, Rates
from mlsysim.physics.sharding import (
    gather_time,
    group_rate,
    layerwise_exposed,
    replica_allreduce_bytes,
    sharded_state_bytes,
    zero3_buffer_bytes,
)
from mlsysim.physics.tensor_parallel import (
    tp_activation_bytes_per_layer,
    tp_allreduce_time,
    tp_collectives_per_layer,
    tp_link_rate,
    tp_message_bytes,
)


class Stage(NamedTuple):
    """Where the device sits: its pipeline stage's layers and the groups around it."""

    layers: Num
    """L_s: layers of the slowest stage (:func:`slowest_stage_layers`; L / p when even)."""
    share: Num
    """L_s / L: the share of the model on that stage."""
    tokens: Num
    """s / cp: tokens of each sequence on the device."""
    domain: Num
    """D: devices of one scale-up (NVLink) domain, the node's devices unless stated."""
    nics: Num
    """The NICs of one domain (a node's, times the nodes a domain joins)."""
    data_parallel: Num
    """d = devices / (t cp p)."""


def data_parallel_size(devices: Num, tensor_parallel: Num, pipeline_parallel: Num, context_parallel: Num = 1.0) -> Num:
    """d = devices / (t cp p) (Narayanan et al. 2021, section 3: n = t p d; context parallelism cp splits each
    sequence over cp more devices)."""
    return devices / (tensor_parallel * context_parallel * pipeline_parallel)


def slowest_stage_layers(
    layers: Num, pipeline_parallel: Num, first_stage_layers: Num = math.nan, last_stage_layers: Num = math.nan
) -> Num:
    """Layers of the pipeline stage that holds the most (the one that sets the pace).

        L_s = max(L_first, L_last, ceil((L - L_first - L_last) / (p - #given)))

    where only the given counts enter (NaN: not given); neither given: ceil(L / p),
    the balanced cut (L / p when p divides L). One stage (p = 1) holds all L.
    Megatron-Core's ``num_layers_in_first_pipeline_stage`` and
    ``..._last_pipeline_stage`` set the two counts (Llama 3 405B: 126 layers on
    16 stages with 7 on the first and the last, 8 on the others).
    """
    import numpy as np

    p = pipeline_parallel
    if not is_array(layers, p, first_stage_layers, last_stage_layers):
        return _slowest_stage_layers(float(layers), float(p), float(first_stage_layers), float(last_stage_layers))
    first_given = first_stage_layers == first_stage_layers
    last_given = last_stage_layers == last_stage_layers
    first = np.where(first_given, first_stage_layers, 0.0)
    last = np.where(last_given, last_stage_layers, 0.0)
    fixed = np.where(first_given, 1.0, 0.0) + np.where(last_given, 1.0, 0.0)
    with np.errstate(invalid="ignore"):
        rest = np.ceil(np.fmax(layers - first - last, 0.0) / np.maximum(p - fixed, 1.0))
        rest = np.where(p - fixed >= 1, rest, 0.0)
        return np.where(p <= 1, layers, np.maximum(np.maximum(first, last), rest))


def _slowest_stage_layers(layers: float, p: float, first: float, last: float) -> float:
    """:func:`slowest_stage_layers` of one layout (NaN layers: NaN)."""
    if p <= 1 or layers != layers:
        return layers
    if first != first and last != last:
        return layers / p if layers % p == 0 else float(math.ceil(layers / p))
    given = [c for c in (first, last) if c == c]
    others = p - len(given)
    rest = float(math.ceil(max(layers - sum(given), 0.0) / others)) if others >= 1 else 0.0
    return max(*given, rest)


def stage_of(shape: ModelShape, cluster: Cluster, layout: Layout) -> Stage:
    """The device's stage and groups. A scale-up domain larger than the node (NVL72: 72 GPUs over trays
    of 4) is priced as one node of D devices with the NICs of its D / g trays."""
    g = where(cluster.scale_up_domain == cluster.scale_up_domain, cluster.scale_up_domain, cluster.devices_per_node)
    t, p, cp = layout.tensor_parallel, layout.pipeline_parallel, layout.context_parallel
    layers_here = slowest_stage_layers(shape.layers, p, layout.first_stage_layers, layout.last_stage_layers)
    return Stage(
        layers=layers_here,
        share=layers_here / shape.layers,
        tokens=shape.seq_len / cp,
        domain=g,
        nics=cluster.nics_per_node * g / cluster.devices_per_node,
        data_parallel=data_parallel_size(cluster.devices, t, p, cp),
    )


def recompute_flops_per_sample(
    parameters: Num, layers: Num, hidden: Num, seq_len: Num, vocab: Num, recompute: str
) -> Num:
    """FLOPs of the recomputed forward per sample, on top of the model FLOPs.

        full:       2 (N - V h) s + 4 L h s^2   (the layers' forward again; not the output layer)
        selective:  4 L h s^2                  (the attention core Q K^T and attention x V)
        none:       0

    (Narayanan et al. 2021, appendix, counts the first; Korthikanti et al.
    2022, section 5, the second.)
    """
    attention = 4.0 * layers * hidden * seq_len * seq_len
    if recompute == "full":
        return 2.0 * maximum(parameters - vocab * hidden, 0.0) * seq_len + attention
    if recompute == "selective":
        return attention
    return 0.0 * attention


class ComputeTerm(NamedTuple):
    """t_c: one micro-batch's forward and backward on the device (the slowest stage)."""

    flops_per_sample: Num
    """F = 6 N s + 12 L h s^2 (N the parameters a token uses)."""
    recompute_flops_per_sample: Num
    """F_re (:func:`recompute_flops_per_sample`)."""
    matmul_time: Num
    """b (F + F_re) (L_s / L) / (t cp u P)."""
    stored_bytes: Num
    """Activation bytes one layer stores on the device (without recomputation): the element-wise traffic unit."""
    elementwise_passes: Num
    """n_pass: 4, or 6 with full recomputation."""
    elementwise_time: Num
    """L_s n_pass a_layer / B_mem."""
    operators: OperatorTimes
    """t_c by operator class (:mod:`~mlsysim.physics.operators`); from FLOPs at u, the products and the
    element-wise work only; all zero when a device step time is given."""
    micro_batch_time: Num
    """t_c (or T1 (L_s / L) / (t cp) when a device step time is given)."""


def compute_term(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage) -> ComputeTerm:
    """t_c = T1 (L_s / L) / (t cp) from a measured device step; else operator by operator where a matrix-
    product ceiling is given (:func:`~mlsysim.physics.operators.operator_times`); else from the FLOPs at u:

        t_c = b (F + F_re) (L_s / L) / (t cp u P) + L_s n_pass a_layer / B_mem

    (a mixture of experts computes with the parameters a token uses; multi-head latent attention's
    attention core is as wide as its heads' query, key and value widths)."""
    t, cp, b = layout.tensor_parallel, layout.context_parallel, layout.micro_batch
    share, layers_here = stage.share, stage.layers
    used = where(shape.active_parameters == shape.active_parameters, shape.active_parameters, shape.parameters)
    mla = shape.mla
    width = shape.hidden if mla is None else shape.heads * (mla.nope + mla.rope + mla.value) / 2.0
    model_per_sample = transformer_flops_per_sample(used, shape.layers, shape.hidden, shape.seq_len, width)
    extra = recompute_flops_per_sample(used, shape.layers, shape.hidden, shape.seq_len, shape.vocab, layout.recompute)
    matmul = b * (model_per_sample + extra) * share / (t * cp * rates.math_efficiency * cluster.peak_flops)
    stored = tp_activation_bytes_per_layer(
        stage.tokens, b, shape.hidden, shape.heads, t, sequence_parallel=layout.sequence_parallel,
        recompute="none", flash_attention=layout.flash_attention, kv_len=shape.seq_len,
    )
    passes = elementwise_passes(layout.recompute)
    elementwise = layers_here * passes * stored / cluster.memory_bandwidth
    zero = 0.0 * matmul
    from_flops = OperatorTimes(matmul, zero, zero, elementwise, b * (model_per_sample + extra) * share / (t * cp),
                               zero, zero, layers_here * passes * stored)
    ceiling = rates.matmul_ceiling
    if rates.kernels is None or (type(ceiling) is float and ceiling != ceiling):
        ops = from_flops  # no row is priced from the operators (no measured kernels, or no ceiling)
    else:
        priced = operator_times_by_distinct_rows(shape, cluster, layout, rates, layers_here)
        # rows without a ceiling (a sweep's rows that give mfu) are priced from the FLOPs at u
        by_operators = ceiling == ceiling
        ops = priced if type(by_operators) is bool else OperatorTimes(
            *(where(by_operators, a, f) for a, f in zip(priced, from_flops, strict=True))
        )
    step = rates.device_step_time
    t_c = where(step == step, step * share / (t * cp), ops.total)
    return ComputeTerm(model_per_sample, extra, matmul, stored, passes, elementwise, ops, t_c)


class TensorTerm(NamedTuple):
    """t_tp: the tensor-parallel all-reduces of one micro-batch (all on the critical path)."""

    rate: Num
    """B_tp."""
    latency: Num
    """alpha of a tensor-parallel step: the intra-node latency while t <= devices per domain."""
    collective_time: Num
    """One tensor-parallel all-reduce: 2 (t-1) alpha + M f(t) / B_tp."""
    collectives: Num
    """Collectives per layer per micro-batch: 4, or 6 with full recomputation."""
    micro_batch_time: Num
    """t_tp (what asynchronous tensor parallelism leaves exposed)."""


def tensor_term(shape: ModelShape, cluster: Cluster, layout: Layout, stage: Stage, compute: ComputeTerm) -> TensorTerm:
    """t_tp = L_s c (2 (t-1) alpha + M f(t) / B_tp) (:mod:`~mlsysim.physics.tensor_parallel`); asynchronous
    tensor parallelism splits each collective in t chunks run under the products that depend on it (Wang et
    al. 2023, "Overlap Communication with Dependent Computation via Decomposition"): the first chunk, and
    what the products cannot cover, stay exposed: max(t_tp - t_matmul, t_tp / t)."""
    t, g = layout.tensor_parallel, stage.domain
    rate = tp_link_rate(t, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics)
    latency = where(t <= g, cluster.intra_latency, cluster.inter_latency)
    one = tp_allreduce_time(tp_message_bytes(layout.micro_batch, stage.tokens, shape.hidden), t, rate, latency)
    collectives = tp_collectives_per_layer(layout.recompute)
    t_tp = stage.layers * collectives * one
    t_tp = where(layout.tensor_overlap > 0, maximum(t_tp - compute.operators.matmul_time, t_tp / t), t_tp)
    return TensorTerm(rate, latency, one, collectives, t_tp)


class ContextTerm(NamedTuple):
    """t_cp: the context-parallel ring's (or all-gather's) transfers beyond the attention they overlap."""

    rate: Num
    """B_cp: bytes/s of one step of the context-parallel ring."""
    message: Num
    """M_kv: keys and values of one block of one layer on one device."""
    micro_batch_time: Num
    """t_cp of one micro-batch (0 without context parallelism)."""


def context_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm
) -> ContextTerm:
    """The ring of cp devices after the t tensor ranks (Megatron-Core's order t, cp, d, p), each step's
    key/value block overlapped with a layer's attention, or (``context_all_gather``) their all-gather,
    overlapped with the local block's (:mod:`~mlsysim.physics.context_parallel`)."""
    t, cp, b, g = layout.tensor_parallel, layout.context_parallel, layout.micro_batch, stage.domain
    kv = where(shape.kv_heads == shape.kv_heads, shape.kv_heads, shape.heads)
    message = kv_block_bytes(b, shape.seq_len, kv, shape.hidden / shape.heads, t, cp)
    rate = pipeline_link_rate(t, cp, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics)
    latency = where(t * cp <= g, cluster.intra_latency, cluster.inter_latency)
    attention_flops_layer = 12.0 * b * shape.seq_len * shape.seq_len * shape.hidden / (t * cp)
    ops = compute.operators
    attention_layer = where(
        ops.attention_time > 0, ops.attention_time / stage.layers,
        attention_flops_layer / (rates.math_efficiency * cluster.peak_flops),
    )
    t_cp = where(
        cp > 1,
        stage.layers * ring_attention_exposed(message, cp, rate, latency, attention_layer, layout.recompute,
                                              layout.context_all_gather),
        0.0,
    )
    return ContextTerm(rate, message, t_cp)


class ExpertTerm(NamedTuple):
    """t_ep: expert parallelism's all-to-alls of one micro-batch, exposed (all zero without experts)."""

    experts: Experts | None
    """The mixture of experts where the layout puts it (None: a dense model)."""
    message: Num
    """M_a2a: bytes one device sends in one dispatch or combine."""
    local: Num
    """q: the expert-parallel group's ranks in one scale-up domain."""
    all_to_all_time: Num
    """One all-to-all of one MoE layer (before any overlap)."""
    inside_share: Num
    """s_in: the share of M_a2a that crosses NVLink."""
    outside_share: Num
    """s_out: the share of M_a2a that crosses the NICs."""
    moe_layers: Num
    """MoE layers of the slowest stage: L_s x their share of the layers."""
    micro_batch_time: Num
    """t_ep."""


def expert_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm
) -> ExpertTerm:
    """The MoE layers' all-to-alls over the ep ranks (adjacent after etp; :mod:`~mlsysim.physics.experts`):
    t_ep = L_moe max(n_a2a t_a2a - covered, 0), covered = t_c / L_s with DualPipe's overlap (another
    micro-batch's compute), else 0."""
    moe = experts_in(shape, layout, rates)
    if moe is None:
        zero = 0.0 * compute.micro_batch_time
        return ExpertTerm(None, zero, zero, zero, zero, zero, zero, zero)
    g = stage.domain
    message = all_to_all_bytes(layout.micro_batch * stage.tokens, layout.tensor_parallel, moe.top_k, shape.hidden,
                               moe.tensor)
    nic_per_device = cluster.nic_bandwidth * minimum(stage.nics, g) / g
    local = ranks_per_domain(moe.parallel, moe.tensor, g)
    latency = where(moe.parallel * moe.tensor <= g, cluster.intra_latency, cluster.inter_latency)
    inside, outside = all_to_all_shares(moe.parallel, local, moe.experts, moe.top_k, moe.hierarchical)
    one = all_to_all_time(message, moe.parallel, inside, outside, cluster.intra_bandwidth, nic_per_device, latency)
    per_layer = all_to_alls_per_layer(layout.recompute) * one
    moe_layers = stage.layers * moe.share
    covered = where(layout.expert_overlap > 0, compute.micro_batch_time / stage.layers, 0.0)
    t_ep = moe_layers * maximum(per_layer - covered, 0.0)
    return ExpertTerm(moe, message, local, one, inside, outside, moe_layers, t_ep)


class PipelineTerm(NamedTuple):
    """The pipeline's bubble share and its stage-to-stage transfers."""

    bubble_fraction: Num
    """(p-1)/(v m)."""
    rate: Num
    """B_pp."""
    latency: Num
    """alpha of a stage-to-stage transfer: intra-domain while t cp p <= the domain."""
    message: Num
    """Bytes per stage boundary per device: 2 b (s / cp) h / t."""
    transfer_time: Num
    """T_p2p: the exposed transfers of one update (:func:`~mlsysim.physics.pipeline.p2p_time`)."""


def pipeline_term(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage) -> PipelineTerm:
    """The bubble (:func:`~mlsysim.physics.pipeline.bubble_fraction`) and the point-to-point transfers at the
    links' rate or the implementation's achieved ``pipeline_rate``."""
    t, p, m, v = layout.tensor_parallel, layout.pipeline_parallel, layout.micro_batches, layout.pipeline_chunks
    g = stage.domain
    rate = where(
        rates.pipeline_rate == rates.pipeline_rate,
        rates.pipeline_rate,
        pipeline_link_rate(t, p, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics),
    )
    latency = where(t * p <= g, cluster.intra_latency, cluster.inter_latency)
    message = p2p_message_bytes(layout.micro_batch, stage.tokens, shape.hidden, t)
    return PipelineTerm(bubble_fraction(p, m, v), rate, latency, message, p2p_time(message, rate, p, m, v, latency))


class ShardingTerm(NamedTuple):
    """Where the weights live, and ZeRO-3 / FSDP's per-layer gathers."""

    parameters: Num
    """psi = psi_dense + psi_experts."""
    dense_parameters: Num
    """(N - N_e) L_s / (L t): the parameters split by tensor parallelism."""
    expert_parameters: Num
    """N_e L_s / (L ep etp): the routed experts' share of the device (0 without experts)."""
    group: Num
    """k: the shard group (1 without sharding)."""
    replicas: Num
    """r = d cp / k."""
    rate: Num
    """Bytes/s per rank of the shard group's ring."""
    latency: Num
    """alpha of a step of the shard group's ring: intra-domain while the group fits in one."""
    layer_gather_time: Num
    """One layer's all-gather (or reduce-scatter) over k ranks."""
    layer_forward_time: Num
    """t_f = t_c / L_s / 3."""
    layer_backward_time: Num
    """t_b = t_c / L_s - t_f."""
    micro_step_time: Num
    """T_zero3: exposed ZeRO-3 communication of one micro-step (0 below stage 3)."""


def sharding_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm,
    experts: ExpertTerm,
) -> ShardingTerm:
    """The device's parameters (dense ones over t, routed experts over ep etp), the shard group k of the
    d cp ranks that hold the same weights, and ZeRO-3's exposed per-layer gathers
    (:func:`~mlsysim.physics.sharding.layerwise_exposed`) at the group's ring rate or the implementation's
    achieved ``sharding_rate``."""
    t, g = layout.tensor_parallel, stage.domain
    moe = experts.experts
    split = 1.0 if moe is None else moe.parallel * moe.tensor
    psi_experts = shape.expert_parameters * stage.share / split
    psi_dense = (shape.parameters - shape.expert_parameters) * stage.share / t
    psi = psi_dense + psi_experts
    d_grad = stage.data_parallel * layout.context_parallel  # the devices that hold the same weights
    k = where(layout.zero_stage >= 1, where(layout.shard_group > 0, layout.shard_group, d_grad), 1.0)
    k_node = minimum(k, maximum(1.0, g / t))  # ranks of one d x cp group in a domain (Megatron order t, cp, d, p)
    rate = where(
        rates.sharding_rate == rates.sharding_rate,
        rates.sharding_rate,
        group_rate(k_node, k, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics),
    )
    latency = where(k <= k_node, cluster.intra_latency, cluster.inter_latency)
    c_layer = gather_time(layout.gradient_bytes * psi / stage.layers, k, rate, latency)
    t_c = compute.micro_batch_time
    forward = t_c / stage.layers / 3.0
    backward = t_c / stage.layers - forward
    zero3 = layerwise_exposed(stage.layers, c_layer, c_layer, forward, backward, layout.backward_gathers)
    return ShardingTerm(psi, psi_dense, psi_experts, k, d_grad / k, rate, latency, c_layer, forward, backward,
                        where(layout.zero_stage >= 3, zero3, 0.0))


class DataTerm(NamedTuple):
    """The gradient synchronisation over the data-parallel ranks, once per update."""

    scatter_time: Num
    """ZeRO-1/2: the reduce-scatter (and, as long, the all-gather) over k ranks."""
    replica_time: Num
    """The AllReduce of the gradient shard over the r replicas (collectives.py's algorithm)."""
    expert_ranks: Num
    """t cp d / (ep etp): the ranks that hold the same experts."""
    expert_rate: Num
    """Bytes/s per rank of the experts' gradient ring."""
    expert_latency: Num
    """alpha of a step of that ring."""
    expert_time: Num
    """The experts' gradient reduction over their data-parallel ranks (0 without experts)."""
    hidden_time: Num
    """Of scatter + replica + experts, the part hidden under the last micro-batch's backward."""
    exposed_time: Num
    """T_data: what the update waits for."""


def data_term(cluster: Cluster, layout: Layout, stage: Stage, sharding: ShardingTerm, experts: ExpertTerm) -> DataTerm:
    """A ring reduce-scatter + all-gather over the shard group of k ranks (ZeRO-1/2; k = 1 without sharding)
    and the AllReduce of the gradient shard G / k over the r replicas, costed by
    :mod:`~mlsysim.physics.collectives` (the seed's ring, hierarchical or tree algorithm); the experts'
    gradients over the ranks that hold the same experts. The reduce-scatter, AllReduce and experts'
    reduction overlap the last backward when ``data_overlap`` is 1 (PyTorch DDP, FSDP); the all-gather of
    updated parameters after the optimizer step never does."""
    t, g, k, r = layout.tensor_parallel, stage.domain, sharding.group, sharding.replicas
    gradient = layout.gradient_bytes * sharding.dense_parameters
    r_node = minimum(r, maximum(1.0, maximum(1.0, g / t) / k))
    shard_bytes = replica_allreduce_bytes(gradient, k)
    replica = stage_time(shard_bytes, intra_node_cost(r_node, cluster.intra_bandwidth, cluster.intra_latency)) + (
        stage_time(shard_bytes, inter_node_cost(layout.algorithm, r_node, r / r_node, cluster.nic_bandwidth,
                                                stage.nics * r_node / g, cluster.inter_latency))
    )
    scatter = where(layout.zero_stage >= 3, 0.0, gather_time(gradient, k, sharding.rate, sharding.latency))
    moe = experts.experts
    split = 1.0 if moe is None else moe.parallel * moe.tensor
    d_experts = t * layout.context_parallel * stage.data_parallel / split
    per_domain = minimum(d_experts, maximum(1.0, g / split))
    rate = group_rate(per_domain, d_experts, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics)
    latency = where(d_experts <= per_domain, cluster.intra_latency, cluster.inter_latency)
    expert_sync = where(
        (d_experts > 1) & (sharding.expert_parameters > 0),
        2.0 * gather_time(layout.gradient_bytes * sharding.expert_parameters, d_experts, rate, latency), 0.0,
    )
    overlappable = scatter + replica + expert_sync
    hidden = where(layout.data_overlap > 0, minimum(overlappable, sharding.layer_backward_time * stage.layers), 0.0)
    return DataTerm(scatter, replica, d_experts, rate, latency, expert_sync, hidden, overlappable - hidden + scatter)


def optimizer_time(cluster: Cluster, layout: Layout, sharding: ShardingTerm, data: DataTerm) -> Num:
    """T_opt: the optimizer step on the device's parameters, sharded by ZeRO (the dense ones over k, the
    experts' over their data-parallel ranks) (:func:`~mlsysim.physics.optimizer.optimizer_step_time`)."""
    sharded = layout.zero_stage >= 1
    k_experts = where(sharded, data.expert_ranks, 1.0)
    parameters = where(
        sharded, sharding.dense_parameters / sharding.group + sharding.expert_parameters / k_experts,
        sharding.parameters,
    )
    return optimizer_step_time(parameters, layout.optimizer_bytes, cluster.memory_bandwidth)


class MemoryTerm(NamedTuple):
    """The first stage's memory per device."""

    state_bytes: Num
    """Weights, gradients and optimizer state (ZeRO-sharded)."""
    activation_per_layer: Num
    """Activation bytes one layer keeps per micro-batch (with the recomputation mode)."""
    activation_bytes: Num
    """Activations the first stage holds for its micro-batches in flight."""
    buffer_bytes: Num
    """Unsharded parameters and gradients of the layers in flight (ZeRO-3)."""


def memory_term(shape: ModelShape, layout: Layout, stage: Stage, sharding: ShardingTerm, data: DataTerm) -> MemoryTerm:
    """state (:func:`~mlsysim.physics.sharding.sharded_state_bytes`, the experts' over their ranks) +
    activations in flight (:func:`~mlsysim.physics.pipeline.first_stage_activation_bytes`) + ZeRO-3's
    gather buffers (:func:`~mlsysim.physics.sharding.zero3_buffer_bytes`)."""
    t, p = layout.tensor_parallel, layout.pipeline_parallel
    k_experts = where(layout.zero_stage >= 1, data.expert_ranks, 1.0)
    state = sharded_state_bytes(sharding.dense_parameters, layout.zero_stage, sharding.group) + sharded_state_bytes(
        sharding.expert_parameters, layout.zero_stage, k_experts
    )
    per_layer = tp_activation_bytes_per_layer(
        stage.tokens, layout.micro_batch, shape.hidden, shape.heads, t, sequence_parallel=layout.sequence_parallel,
        recompute=layout.recompute, flash_attention=layout.flash_attention, kv_len=shape.seq_len,
    )
    activations = first_stage_activation_bytes(stage.layers * p, per_layer, p, layout.micro_batches,
                                               layout.pipeline_chunks)
    buffers = where(layout.zero_stage >= 3, zero3_buffer_bytes(sharding.parameters / stage.layers), 0.0)
    return MemoryTerm(state, per_layer, activations, buffers)
