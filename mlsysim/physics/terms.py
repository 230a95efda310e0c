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
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from mlsysim.physics._array import Num, is_array, maximum, minimum, where
from mlsysim.physics.activations import recomputed_modules
from mlsysim.physics.collectives import (
    Flag,
    all_reduce_wires,
    all_to_all_wire,
    dispatch_time,
    fastest,
    gather_wires,
    inter_node_cost,
    intra_node_cost,
    measured_links,
    send_recv_wire,
    stage_time,
    wire_time,
)
from mlsysim.physics.compute import transformer_flops_per_sample
from mlsysim.physics.context_parallel import kv_block_bytes, kv_passes, ring_attention_exposed
from mlsysim.physics.experts import (
    all_to_all_bytes,
    all_to_all_shares,
    all_to_all_time,
    all_to_alls_per_layer,
    ranks_per_domain,
)
from mlsysim.physics.multi_token import attention_width, mtp_layer_weight
from mlsysim.physics.operators import (
    Experts,
    OperatorTimes,
    dense_mlp_parameters,
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
from mlsysim.physics.records import Cluster, Layout, LinkCurves, ModelShape, Rates
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
    nic_share: Num = math.inf
    """B_out: a rank's share of its domain's NICs, B_nic min(k_D, D) / D."""
    measured_up: Flag = False
    """Whether the measured curves price the collectives on the scale-up link
    (:func:`~mlsysim.physics.collectives.measured_links`)."""
    measured_out: Flag = False
    """Whether they price those across domains, on the NICs."""


def data_parallel_size(devices: Num, tensor_parallel: Num, pipeline_parallel: Num, context_parallel: Num = 1.0) -> Num:
    """d = devices / (t cp p) (Narayanan et al. 2021, section 3: n = t p d; context parallelism cp splits each
    sequence over cp more devices)."""
    return devices / (tensor_parallel * context_parallel * pipeline_parallel)


def slowest_stage_layers(
    layers: Num, pipeline_parallel: Num, first_stage_layers: Num = math.nan, last_stage_layers: Num = math.nan,
    last_extra: Num = 0.0,
) -> Num:
    """Layers of the pipeline stage that holds the most (the one that sets the pace).

        L_s = max(L_first, L_last + x, ceil((L - L_first - L_last) / (p - #given)) [+ x on the last stage])

    ``last_extra`` x: layers' worth of work the last stage holds beyond its layers (multi-token prediction,
    :func:`mtp_extra_layers`; at p = 1 the one stage holds L + x).

    where only the given counts enter (NaN: not given); neither given: ceil(L / p),
    the balanced cut (L / p when p divides L). One stage (p = 1) holds all L.
    Megatron-Core's ``num_layers_in_first_pipeline_stage`` and
    ``..._last_pipeline_stage`` set the two counts (Llama 3 405B: 126 layers on
    16 stages with 7 on the first and the last, 8 on the others).
    """

    p = pipeline_parallel
    if not is_array(layers, p, first_stage_layers, last_stage_layers, last_extra):
        plain = _slowest_stage_layers(float(layers), float(p), float(first_stage_layers), float(last_stage_layers))
        if last_extra == 0.0:
            return plain
        return _with_last_extra(plain, float(layers), float(p), float(first_stage_layers),
                                float(last_stage_layers), float(last_extra))
    first_given = first_stage_layers == first_stage_layers
    last_given = last_stage_layers == last_stage_layers
    first = np.where(first_given, first_stage_layers, 0.0)
    last = np.where(last_given, last_stage_layers, 0.0)
    fixed = np.where(first_given, 1.0, 0.0) + np.where(last_given, 1.0, 0.0)
    with np.errstate(invalid="ignore"):
        rest = np.ceil(np.fmax(layers - first - last, 0.0) / np.maximum(p - fixed, 1.0))
        rest = np.where(p - fixed >= 1, rest, 0.0)
        most = np.where(p <= 1, layers, np.maximum(np.maximum(first, last), rest))
        if type(last_extra) is float and last_extra == 0.0:  # no MTP modules: the plain cut
            return most
        last_stage = np.where(last_given, last, rest) + last_extra
        return np.where(p <= 1, layers + last_extra, np.maximum(most, last_stage))


def _with_last_extra(plain: float, layers: float, p: float, first: float, last: float, extra: float) -> float:
    """:func:`slowest_stage_layers` of one layout whose last stage holds ``extra`` layers' worth more."""
    if p <= 1 or layers != layers:
        return layers + extra
    if last == last:
        return max(plain, last + extra)
    fixed = 1.0 if first == first else 0.0
    rest = float(math.ceil(max(layers - (first if first == first else 0.0), 0.0) / (p - fixed)))
    return max(plain, rest + extra)


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


def stage_of(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates | None = None) -> Stage:
    """The device's stage and groups. A scale-up domain larger than the node (NVL72: 72 GPUs over trays
    of 4) is priced as one node of D devices with the NICs of its D / g trays. The links the measured
    curves of ``rates`` price (:func:`~mlsysim.physics.collectives.measured_links`)."""
    g = where(cluster.scale_up_domain == cluster.scale_up_domain, cluster.scale_up_domain, cluster.devices_per_node)
    t, p, cp = layout.tensor_parallel, layout.pipeline_parallel, layout.context_parallel
    custom = layout.layout_stage_layers  # a custom pipeline layout's fullest rank (NaN: none given)
    layers_here = where(custom == custom, custom,
                        slowest_stage_layers(shape.layers, p, layout.first_stage_layers, layout.last_stage_layers,
                                             mtp_extra_layers(shape)))
    nics = cluster.nics_per_node * g / cluster.devices_per_node
    up, out = measured_links(cluster, curves_of(rates))
    return Stage(
        layers=layers_here,
        share=layers_here / shape.layers,
        tokens=shape.seq_len / cp,
        domain=g,
        nics=nics,
        data_parallel=data_parallel_size(cluster.devices, t, p, cp),
        nic_share=cluster.nic_bandwidth * minimum(nics, g) / g,
        measured_up=up,
        measured_out=out,
    )


def shape_attention_width(shape: ModelShape) -> Num:
    """h_att of ``shape`` (:func:`~mlsysim.physics.multi_token.attention_width`)."""
    mla = shape.mla
    return attention_width(shape.hidden, shape.heads, None if mla is None else (mla.nope, mla.rope, mla.value))


def used_parameters(shape: ModelShape) -> Num:
    """N_act: the parameters a token uses (a mixture of experts' active ones; else all N)."""
    return where(shape.active_parameters == shape.active_parameters, shape.active_parameters, shape.parameters)


def shape_mtp_weight(shape: ModelShape) -> Num:
    """w of one MTP module of ``shape`` (:func:`~mlsysim.physics.multi_token.mtp_layer_weight`)."""
    return mtp_layer_weight(used_parameters(shape), shape.layers, shape.hidden, shape.vocab, shape.seq_len,
                            shape_attention_width(shape))


def mtp_extra_layers(shape: ModelShape) -> Num:
    """D w: the multi-token-prediction modules' work on the last stage in average layers
    (:func:`shape_mtp_weight`; 0 without them)."""
    if type(shape.mtp_layers) is float and shape.mtp_layers == 0.0:
        return 0.0
    return where(shape.mtp_layers > 0, shape.mtp_layers * shape_mtp_weight(shape), 0.0)


def curves_of(rates: Rates | None) -> LinkCurves | None:
    """The measured collective curves the rates hold (None: none, every collective alpha-beta)."""
    return None if rates is None or rates.kernels is None else rates.kernels.collectives


def measured(stage: Stage, inside: Flag) -> Flag:
    """Whether the curves price a collective whose group stays ``inside`` one scale-up domain (or not): its
    scale-up link measured, and the NICs too where it crosses domains."""
    return stage.measured_up & (inside | stage.measured_out)


def measured_send(stage: Stage, crosses: Flag) -> Flag:
    """Whether the curves price a send/recv: over the NICs where it ``crosses`` domains, else over the scale-up
    link (one link each)."""
    return where(crosses, stage.measured_out, stage.measured_up)  # type: ignore[return-value]


def priced(covered: Flag, curve: Callable[[], Num], alpha_beta: Num) -> Num:
    """The curve's time where ``covered``, the alpha-beta time elsewhere (the curve is not computed where no
    row is covered)."""
    if not isinstance(covered, np.ndarray):
        return curve() if covered else alpha_beta
    if not covered.any():
        return alpha_beta
    with np.errstate(invalid="ignore", divide="ignore"):  # rows the curve does not price may hold no bytes
        return where(covered, curve(), alpha_beta)


def recompute_flops_per_sample(
    parameters: Num, layers: Num, hidden: Num, seq_len: Num, vocab: Num, recompute: str,
    modules: tuple[str, ...] = (), mlp_parameters: Num = 0.0,
) -> Num:
    """FLOPs of the recomputed forward per sample, on top of the model FLOPs.

        full:       2 (N - V h) s + 4 L h s^2   (the layers' forward again; not the output layer)
        selective:  4 L h s^2                  (the attention core Q K^T and attention x V)
                    + 2 L N_mlp s              (with Megatron-Core's ``mlp`` module: the dense MLP's
                                                products, N_mlp ``mlp_parameters`` per layer)
        none:       0

    (Narayanan et al. 2021, appendix, counts the first; Korthikanti et al.
    2022, section 5, the second.) Selective without ``core_attn`` drops the attention term; the layer norms
    (``layernorm``) add no FLOPs worth counting.
    """
    attention = 4.0 * layers * hidden * seq_len * seq_len
    if recompute == "full":
        return 2.0 * maximum(parameters - vocab * hidden, 0.0) * seq_len + attention
    rerun = recomputed_modules(recompute, modules)
    extra = attention if "core_attn" in rerun else 0.0 * attention
    if "mlp" in rerun:
        extra = extra + 2.0 * layers * mlp_parameters * seq_len
    return extra


class ComputeTerm(NamedTuple):
    """t_c: one micro-batch's forward and backward on the device (the slowest stage)."""

    flops_per_sample: Num
    """F = 6 N s + 12 L h s^2 (N the parameters a token uses)."""
    recompute_flops_per_sample: Num
    """F_re (:func:`recompute_flops_per_sample`)."""
    matmul_time: Num
    """b F (L_s / L) / (t cp u P): the step from the model FLOPs utilisation u."""
    operators: OperatorTimes
    """t_c by operator class (:mod:`~mlsysim.physics.operators`); from FLOPs at u, the products and the
    element-wise work only; all zero when a device step time is given."""
    micro_batch_time: Num
    """t_c (or T1 (L_s / L) / (t cp) when a device step time is given)."""


def compute_term(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage) -> ComputeTerm:
    """t_c = T1 (L_s / L) / (t cp) from a measured device step; else kernel by kernel where a matrix-product
    ceiling and the device's measured kernels are given (:func:`~mlsysim.physics.operators.operator_times`);
    else from the model FLOPs utilisation u (``mfu``: model FLOPs over the peak, nothing added; the recomputed
    forward and the element-wise work are inside a measured MFU):

        t_c = b F (L_s / L) / (t cp u P)

    (a mixture of experts computes with the parameters a token uses; multi-head latent attention's
    attention core is as wide as its heads' query, key and value widths)."""
    t, cp, b = layout.tensor_parallel, layout.context_parallel, layout.micro_batch
    share = stage.share
    used = used_parameters(shape)
    width = shape_attention_width(shape)
    model_per_sample = transformer_flops_per_sample(used, shape.layers, shape.hidden, shape.seq_len, width)
    extra = recompute_flops_per_sample(used, shape.layers, shape.hidden, shape.seq_len, shape.vocab, layout.recompute,
                                       layout.recompute_modules, dense_mlp_parameters(shape))
    matmul = b * model_per_sample * share / (t * cp * rates.math_efficiency * cluster.peak_flops)
    zero = 0.0 * matmul
    from_flops = OperatorTimes(matmul, zero, zero, zero, b * model_per_sample * share / (t * cp), zero, zero, zero)
    ceiling = rates.matmul_ceiling
    if rates.kernels is None or (type(ceiling) is float and ceiling != ceiling):
        ops = from_flops  # no row is priced from the operators (no measured kernels, or no ceiling)
    else:
        priced = operator_times_by_distinct_rows(shape, cluster, layout, rates, stage.layers)
        # rows without a ceiling (a sweep's rows that give mfu) are priced from the FLOPs at u
        by_operators = ceiling == ceiling
        ops = priced if type(by_operators) is bool else OperatorTimes(
            *(where(by_operators, a, f) for a, f in zip(priced, from_flops, strict=True))
        )
    step = rates.device_step_time
    t_c = where(step == step, step * share / (t * cp), ops.total)
    return ComputeTerm(model_per_sample, extra, matmul, ops, t_c)


class TensorTerm(NamedTuple):
    """t_tp: the tensor-parallel all-reduces of one micro-batch (all on the critical path)."""

    rate: Num
    """B_tp."""
    latency: Num
    """alpha of a tensor-parallel step: the intra-node latency while t <= devices per domain."""
    collective_time: Num
    """One tensor-parallel all-reduce: 2 (t-1) alpha + M f(t) / B_tp, or its measured curve (with sequence
    parallelism: a reduce-scatter and an all-gather of the same buffer)."""
    collectives: Num
    """Collectives per layer per micro-batch: 4, or 6 with full recomputation."""
    micro_batch_time: Num
    """t_tp (what asynchronous tensor parallelism leaves exposed)."""
    measured: Flag = False
    """Whether the measured curves priced the collective (:func:`tensor_collective`)."""


def tensor_collective(curves: LinkCurves, message: Num, t: Num, cluster: Cluster, stage: Stage,
                      sequence_parallel: bool) -> Num:
    """One tensor-parallel collective of M bytes over the t ranks (min(t, D) in a domain) by the measured
    curves: an all-reduce (the fastest algorithm that applies: ring or NVLink SHARP in one domain), or with
    sequence parallelism a reduce-scatter plus an all-gather of the same M (Korthikanti et al. 2022)."""
    up, out = cluster.intra_bandwidth, stage.nic_share
    if sequence_parallel:
        return 2.0 * fastest(curves, gather_wires(curves, message, t, stage.domain), up, out)[0]
    return fastest(curves, all_reduce_wires(curves, message, t, stage.domain), up, out)[0]


def tensor_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, stage: Stage, compute: ComputeTerm, rates: Rates | None = None
) -> TensorTerm:
    """t_tp = L_s c (2 (t-1) alpha + M f(t) / B_tp) (:mod:`~mlsysim.physics.tensor_parallel`), each collective
    by the measured curves where they price the links (:func:`tensor_collective`); asynchronous
    tensor parallelism splits each collective in t chunks run under the products that depend on it (Wang et
    al. 2023, "Overlap Communication with Dependent Computation via Decomposition"): the first chunk, and
    what the products cannot cover, stay exposed: max(t_tp - t_matmul, t_tp / t)."""
    t, g = layout.tensor_parallel, stage.domain
    rate = tp_link_rate(t, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics)
    latency = where(t <= g, cluster.intra_latency, cluster.inter_latency)
    message = tp_message_bytes(layout.micro_batch, stage.tokens, shape.hidden)
    one = tp_allreduce_time(message, t, rate, latency)
    curves = curves_of(rates)
    covered = measured(stage, t <= g) & (t > 1)
    if curves is not None:
        one = priced(covered, lambda: tensor_collective(curves, message, t, cluster, stage, layout.sequence_parallel),
                     one)
    collectives = tp_collectives_per_layer(layout.recompute, layout.recompute_modules)
    t_tp = stage.layers * collectives * one
    t_tp = where(layout.tensor_overlap > 0, maximum(t_tp - compute.operators.matmul_time, t_tp / t), t_tp)
    return TensorTerm(rate, latency, one, collectives, t_tp, covered)


class ContextTerm(NamedTuple):
    """t_cp: the context-parallel ring's (or all-gather's) transfers beyond the attention they overlap."""

    rate: Num
    """B_cp: bytes/s of one step of the context-parallel ring."""
    message: Num
    """M_kv: keys and values of one block of one layer on one device."""
    micro_batch_time: Num
    """t_cp of one micro-batch (0 without context parallelism)."""
    pass_time: Num = 0.0
    """One pass of the blocks by the measured curves: cp - 1 send/recvs of M_kv (the ring), or one all-gather
    of cp M_kv over the cp ranks (0 where the curves do not price it)."""
    attention_time: Num = 0.0
    """t_att,layer: one layer's attention, what the ring overlaps (the all-gather: 1 / cp of it)."""
    measured: Flag = False
    """Whether the measured curves priced the passes."""


def context_pass(curves: LinkCurves, message: Num, t: Num, cp: Num, cluster: Cluster, stage: Stage,
                 all_gather: Num) -> Num:
    """One pass of the key/value blocks by the measured curves: the ring's cp - 1 send/recvs of M_kv between
    neighbours t ranks apart (across domains where t cp > D), or (``all_gather``) one all-gather of the cp
    blocks, cp M_kv, over the cp ranks, max(1, D / t) of them in a domain."""
    up, out = cluster.intra_bandwidth, stage.nic_share
    ring = (cp - 1.0) * wire_time(curves, send_recv_wire(curves, message, t * cp > stage.domain), up, out)
    if not is_array(all_gather) and not all_gather > 0:
        return ring
    per_domain = maximum(1.0, stage.domain / t)
    gather = fastest(curves, gather_wires(curves, cp * message, cp, per_domain), up, out)[0]
    return where(all_gather > 0, gather, ring)


def context_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm
) -> ContextTerm:
    """The ring of cp devices after the t tensor ranks (Megatron-Core's order t, cp, d, p), each step's
    key/value block overlapped with a layer's attention, or (``context_all_gather``) their all-gather,
    overlapped with the local block's (:mod:`~mlsysim.physics.context_parallel`); by the measured curves
    where they price the links, n_kv passes a layer (:func:`context_pass`):

        t_cp = L_s max(0, n_kv t_pass - t_att,layer)  (the all-gather: t_att,layer / cp)"""
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
    exposed = ring_attention_exposed(message, cp, rate, latency, attention_layer, layout.recompute,
                                     layout.context_all_gather, layout.recompute_modules)
    curves = curves_of(rates)
    covered: Flag = where(layout.context_all_gather > 0, measured(stage, t * cp <= g),  # type: ignore[assignment]
                          measured_send(stage, t * cp > g))
    covered = covered & (cp > 1)
    one_pass = 0.0 * message
    if curves is not None:
        one_pass = priced(covered, lambda: context_pass(curves, message, t, cp, cluster, stage,
                                                        layout.context_all_gather), one_pass)
        overlapped = where(layout.context_all_gather > 0, attention_layer / cp, attention_layer)
        exposed = where(covered, maximum(kv_passes(layout.recompute, layout.recompute_modules) * one_pass - overlapped, 0.0), exposed)
    t_cp = where(cp > 1, stage.layers * exposed, 0.0)
    return ContextTerm(rate, message, t_cp, one_pass, attention_layer, covered)


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
    measured: Flag = False
    """Whether the measured curves priced the all-to-all (its shares of V_up and V_out the routing's)."""


def expert_all_to_all(curves: LinkCurves, message: Num, moe: Experts, inside: Num, outside: Num, cluster: Cluster,
                      stage: Stage) -> Num:
    """One all-to-all of the experts by the measured fits: NCCL's all-to-all curve
    (:func:`~mlsysim.physics.collectives.all_to_all_wire`), or with a hierarchical dispatch DeepEP's normal
    kernels (:func:`~mlsysim.physics.collectives.dispatch_time`); the routing's shares on each link."""
    up, out = cluster.intra_bandwidth, stage.nic_share
    flat = wire_time(curves, all_to_all_wire(curves, message, moe.parallel, inside, outside,
                                             moe.parallel * moe.tensor > stage.domain), up, out)
    if not is_array(moe.hierarchical) and not moe.hierarchical > 0:
        return flat
    return where(moe.hierarchical > 0, dispatch_time(curves, message, inside, outside, up, out), flat)


def expert_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm
) -> ExpertTerm:
    """The MoE layers' all-to-alls over the ep ranks (adjacent after etp; :mod:`~mlsysim.physics.experts`):
    t_ep = L_moe max(n_a2a t_a2a - covered, 0), covered = t_c / L_s with DualPipe's overlap (another
    micro-batch's compute), else 0; t_a2a by the measured curves where they price the links, the routing's
    shares of the message on each link (:func:`~mlsysim.physics.collectives.all_to_all_wire`)."""
    moe = experts_in(shape, layout, rates)
    if moe is None:
        zero = 0.0 * compute.micro_batch_time
        return ExpertTerm(None, zero, zero, zero, zero, zero, zero, zero, False)
    g = stage.domain
    message = all_to_all_bytes(layout.micro_batch * stage.tokens, layout.tensor_parallel, moe.top_k, shape.hidden,
                               moe.tensor)
    nic_per_device = cluster.nic_bandwidth * minimum(stage.nics, g) / g
    local = ranks_per_domain(moe.parallel, moe.tensor, g)
    latency = where(moe.parallel * moe.tensor <= g, cluster.intra_latency, cluster.inter_latency)
    inside, outside = all_to_all_shares(moe.parallel, local, moe.experts, moe.top_k, moe.hierarchical)
    one = all_to_all_time(message, moe.parallel, inside, outside, cluster.intra_bandwidth, nic_per_device, latency)
    curves = curves_of(rates)
    span = moe.parallel * moe.tensor
    covered = measured(stage, span <= g) & (moe.parallel > 1)
    if curves is not None:
        flat = moe.hierarchical <= 0  # DeepEP's fit covers the architecture (and the fabric, where it crosses one)
        covered = covered & (flat | (curves.dispatch_efficiency == curves.dispatch_efficiency)) & (
            flat | (span <= g) | (curves.dispatch_out_efficiency == curves.dispatch_out_efficiency))
        one = priced(covered, lambda: expert_all_to_all(curves, message, moe, inside, outside, cluster, stage), one)
    per_layer = all_to_alls_per_layer(layout.recompute) * one
    moe_layers = stage.layers * moe.share
    overlap = where(layout.expert_overlap > 0, compute.micro_batch_time / stage.layers, 0.0)
    t_ep = moe_layers * maximum(per_layer - overlap, 0.0)
    return ExpertTerm(moe, message, local, one, inside, outside, moe_layers, t_ep, covered)


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
    send_time: Num = 0.0
    """One transfer by the measured curves: a send/recv of the message (0 where they do not price it)."""
    measured: Flag = False
    """Whether the measured curves priced the transfers."""


def pipeline_term(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage) -> PipelineTerm:
    """The bubble (:func:`~mlsysim.physics.pipeline.bubble_fraction`) and the point-to-point transfers at the
    links' rate or the implementation's achieved ``pipeline_rate``; by the measured curves where they price the
    links (and no ``pipeline_rate`` is given): 2 (v m + p - 1) t_sr(M), t_sr one send/recv
    (:func:`~mlsysim.physics.collectives.send_recv_wire`)."""
    t, p, m, v = layout.tensor_parallel, layout.pipeline_parallel, layout.micro_batches, layout.pipeline_chunks
    g = stage.domain
    rate = where(
        rates.pipeline_rate == rates.pipeline_rate,
        rates.pipeline_rate,
        pipeline_link_rate(t, p, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics),
    )
    latency = where(t * p <= g, cluster.intra_latency, cluster.inter_latency)
    message = p2p_message_bytes(layout.micro_batch, stage.tokens, shape.hidden, t)
    transfers = p2p_time(message, rate, p, m, v, latency)
    curves = curves_of(rates)
    covered = measured_send(stage, t * p > g) & (p > 1) & (rates.pipeline_rate != rates.pipeline_rate)
    one = 0.0 * message
    if curves is not None:
        one = priced(covered, lambda: wire_time(curves, send_recv_wire(curves, message, t * p > g),
                                                cluster.intra_bandwidth, stage.nic_share), one)
        transfers = where(covered, p2p_time(message, math.inf, p, m, v, one), transfers)
    return PipelineTerm(bubble_fraction(p, m, v), rate, latency, message, transfers, one, covered)


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
    group_per_domain: Num = 1.0
    """k_D: the shard group's ranks in one scale-up domain, min(k, max(1, D / t))."""
    measured: Flag = False
    """Whether the measured curves priced the gathers (an all-gather, or reduce-scatter, of the layer's M_l
    over k ranks, k_D of them in a domain; no ``sharding_rate`` given)."""


def sharding_term(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, stage: Stage, compute: ComputeTerm,
    experts: ExpertTerm,
) -> ShardingTerm:
    """The device's parameters (dense ones over t, routed experts over ep etp), the shard group k of the
    d cp ranks that hold the same weights, and ZeRO-3's exposed per-layer gathers
    (:func:`~mlsysim.physics.sharding.layerwise_exposed`) at the group's ring rate or the implementation's
    achieved ``sharding_rate``; by the measured curves where they price the links (and no ``sharding_rate``
    is given), each layer's gather an all-gather of M_l over the k ranks
    (:func:`~mlsysim.physics.collectives.gather_wires`)."""
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
    layer_bytes = layout.gradient_bytes * psi / stage.layers
    c_layer = gather_time(layer_bytes, k, rate, latency)
    curves = curves_of(rates)
    covered = measured(stage, k <= k_node) & (k > 1) & (rates.sharding_rate != rates.sharding_rate)
    if curves is not None:
        c_layer = priced(covered, lambda: fastest(curves, gather_wires(curves, layer_bytes, k, k_node),
                                                  cluster.intra_bandwidth, stage.nic_share)[0], c_layer)
    t_c = compute.micro_batch_time
    forward = t_c / stage.layers / 3.0
    backward = t_c / stage.layers - forward
    zero3 = layerwise_exposed(stage.layers, c_layer, c_layer, forward, backward, layout.backward_gathers)
    return ShardingTerm(psi, psi_dense, psi_experts, k, d_grad / k, rate, latency, c_layer, forward, backward,
                        where(layout.zero_stage >= 3, zero3, 0.0), k_node, covered)


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
    replicas_per_domain: Num = 1.0
    """r_D: the replicas in one scale-up domain."""
    experts_per_domain: Num = 1.0
    """The experts' data-parallel ranks in one scale-up domain."""
    measured_scatter: Flag = False
    """Whether the measured curves priced the reduce-scatter (and all-gather) over the shard group."""
    measured_replica: Flag = False
    """... the AllReduce over the replicas (the assumption's algorithm across domains, ``auto`` the fastest)."""
    measured_experts: Flag = False
    """... the experts' gradient reduction."""


def data_term(cluster: Cluster, layout: Layout, stage: Stage, sharding: ShardingTerm, experts: ExpertTerm,
              rates: Rates | None = None) -> DataTerm:
    """A ring reduce-scatter + all-gather over the shard group of k ranks (ZeRO-1/2; k = 1 without sharding)
    and the AllReduce of the gradient shard G / k over the r replicas, costed by
    :mod:`~mlsysim.physics.collectives` (the seed's ring, hierarchical or tree algorithm); the experts'
    gradients over the ranks that hold the same experts. The reduce-scatter, AllReduce and experts'
    reduction overlap the last backward when ``data_overlap`` is 1 (PyTorch DDP, FSDP); the all-gather of
    updated parameters after the optimizer step never does. Where the measured curves price the links
    (:func:`data_collectives`), each of the three is the curve's collective of the same bytes and group."""
    t, g, k, r = layout.tensor_parallel, stage.domain, sharding.group, sharding.replicas
    gradient = layout.gradient_bytes * sharding.dense_parameters
    r_node = minimum(r, maximum(1.0, maximum(1.0, g / t) / k))
    shard_bytes = replica_allreduce_bytes(gradient, k)
    algorithm = "ring" if layout.algorithm == "auto" else layout.algorithm  # the seed's auto: priced as a ring
    replica = stage_time(shard_bytes, intra_node_cost(r_node, cluster.intra_bandwidth, cluster.intra_latency)) + (
        stage_time(shard_bytes, inter_node_cost(algorithm, r_node, r / r_node, cluster.nic_bandwidth,
                                                stage.nics * r_node / g, cluster.inter_latency))
    )
    scatter = where(layout.zero_stage >= 3, 0.0, gather_time(gradient, k, sharding.rate, sharding.latency))
    moe = experts.experts
    split = 1.0 if moe is None else moe.parallel * moe.tensor
    d_experts = t * layout.context_parallel * stage.data_parallel / split
    per_domain = minimum(d_experts, maximum(1.0, g / split))
    rate = group_rate(per_domain, d_experts, g, cluster.intra_bandwidth, cluster.nic_bandwidth, stage.nics)
    latency = where(d_experts <= per_domain, cluster.intra_latency, cluster.inter_latency)
    expert_gradient = layout.gradient_bytes * sharding.expert_parameters
    expert_sync = where(
        (d_experts > 1) & (sharding.expert_parameters > 0),
        2.0 * gather_time(expert_gradient, d_experts, rate, latency), 0.0,
    )
    curves = curves_of(rates)
    measured_scatter: Flag = False
    measured_replica: Flag = False
    measured_experts: Flag = False
    if curves is not None:
        up, out = cluster.intra_bandwidth, stage.nic_share
        measured_scatter = sharding.measured & (layout.zero_stage < 3)
        scatter = priced(measured_scatter, lambda: fastest(curves, gather_wires(curves, gradient, k, sharding.group_per_domain), up, out)[0], scatter)
        measured_replica = measured(stage, r <= r_node) & (r > 1)
        replica = priced(measured_replica, lambda: fastest(curves, all_reduce_wires(curves, shard_bytes, r, r_node, layout.algorithm), up, out)[0], replica)
        measured_experts = measured(stage, d_experts <= per_domain) & (d_experts > 1) & (sharding.expert_parameters > 0)
        expert_sync = priced(measured_experts, lambda: 2.0 * fastest(curves, gather_wires(curves, expert_gradient, d_experts, per_domain), up, out)[0], expert_sync)
    overlappable = scatter + replica + expert_sync
    hidden = where(layout.data_overlap > 0, minimum(overlappable, sharding.layer_backward_time * stage.layers), 0.0)
    return DataTerm(scatter, replica, d_experts, rate, latency, expert_sync, hidden, overlappable - hidden + scatter,
                    r_node, per_domain, measured_scatter, measured_replica, measured_experts)


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
        modules=layout.recompute_modules,
    )
    activations = first_stage_activation_bytes(stage.layers * p, per_layer, p, layout.micro_batches,
                                               layout.pipeline_chunks)
    buffers = where(layout.zero_stage >= 3, zero3_buffer_bytes(sharding.parameters / stage.layers), 0.0)
    return MemoryTerm(state, per_layer, activations, buffers)
