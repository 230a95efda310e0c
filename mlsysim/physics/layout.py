"""One training layout (t, p, d, sharding) of a transformer: its rules, update time, breakdown and memory.

This module composes the pure formulas of :mod:`~mlsysim.physics.tensor_parallel`,
:mod:`~mlsysim.physics.pipeline`, :mod:`~mlsysim.physics.sharding`,
:mod:`~mlsysim.physics.collectives`, :mod:`~mlsysim.physics.compute` and
:mod:`~mlsysim.physics.optimizer` into the time of one optimizer update of a
decoder transformer trained on ``devices`` = t p d accelerators (Narayanan et
al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", section 3, for the composition). Every argument may be a float
or a numpy array (broadcast together), so one call evaluates one layout or a
whole search space; the mode arguments (``recompute``, ``sequence_parallel``,
``flash_attention``, ``algorithm``) are plain scalars.

The update (one device of the first pipeline stage; m micro-batches of b samples):

    T = m t_c + m t_tp + (p-1)/v (t_c + t_tp) + T_p2p + m T_zero3 + T_data + T_opt

* ``t_c``, one micro-batch's compute. Given the model FLOPs utilisation u
  (``mfu``, as Megatron-LM, NeMo and the PaLM paper report it), the model
  FLOPs at u of the peak, nothing added (the recomputed forward and the
  element-wise work are inside a measured MFU):

      t_c = b F (L_s / L) / (t cp u P)

  F = 6 N s + 12 L h s^2 model FLOPs per sample (:mod:`~mlsysim.physics.compute`).
  Given ``matmul_ceiling`` instead, t_c is priced operator by operator
  (:mod:`~mlsysim.physics.operators`: the products at their ceiling, the
  recomputed forward, the element-wise work at the memory bandwidth).
* ``t_tp``: :func:`~mlsysim.physics.tensor_parallel.tp_time_per_micro_batch`.
* the bubble: :func:`~mlsysim.physics.pipeline.bubble_fraction` of m (t_c + t_tp).
* ``T_p2p``: :func:`~mlsysim.physics.pipeline.p2p_time`.
* ``T_zero3``: :func:`~mlsysim.physics.sharding.layerwise_exposed` per micro-step
  (ZeRO-3 / FSDP full shard; zero otherwise).
* ``T_data``: once per update, the gradient synchronisation over the d
  data-parallel ranks: a ring reduce-scatter + all-gather over the shard group
  of k ranks (ZeRO-1/2; k = 1 without sharding) and the AllReduce of the
  gradient shard G / k over the r = d / k replicas, costed by
  :mod:`~mlsysim.physics.collectives` (the seed's ring, hierarchical or tree
  algorithm). The reduce-scatter and AllReduce overlap the last backward pass
  when ``data_overlap`` is 1 (PyTorch DDP, FSDP); the all-gather of updated
  parameters after the optimizer step never does.
* ``T_opt``: :func:`~mlsysim.physics.optimizer.optimizer_step_time` on the
  device's (sharded) parameters.

Layout rules (:func:`layout_mask`, :func:`check_layout`): t p d = devices,
heads divisible by t (Megatron-Core's ``TransformerConfig``), at least one
layer per chunk (L >= p v), m divisible by p for the interleaved schedule
(Megatron-LM's requirement), the shard group dividing d. Fewer micro-batches
than stages (m < p, as in a batch-size ramp-up) is a legal 1F1B schedule: the
bubble (p - 1)/m then exceeds the compute, and the update is (m + p - 1) t_c.

Uneven stages. Layers need not divide evenly over the stages: production runs
cut 126 layers over 16 stages (Llama 3 405B: one layer fewer on the first and
the last stage, Llama Team 2024, section 3.3.2) or 70 over 12 (BLOOM-176B).
The pipeline runs at the pace of its slowest stage, so every per-stage term
is priced with the layers of the stage that holds the most,
:func:`slowest_stage_layers` L_s (L / p when even):

    L_s = max(L_first, L_last, ceil((L - L_first - L_last) / (p - #given)))

with ``first_stage_layers`` and ``last_stage_layers`` (Megatron-Core's
``num_layers_in_first_pipeline_stage`` / ``..._last_...``) when given, and
ceil(L / p) when neither is (the balanced cut). The device then holds the share
L_s / L of the model: t_c, the tensor collectives, the parameters psi = N L_s /
(L t), ZeRO's traffic and the activations all scale with it.

Simplifications, named: the embedding and output layer are spread evenly over
the layers (Narayanan et al. 2021 balance them by assigning layers); the data
sync of a pipeline overlaps the last micro-batch's backward of the device; the
figures are those of the slowest stage, and memory that of a first stage with
as many layers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.physics._array import Array, Num, is_array, maximum, minimum, where
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
    MultiHeadLatent,
    OperatorTimes,
    operator_times_by_distinct_rows,
)
from mlsysim.physics.optimizer import OPTIMIZER_BYTES_PER_PARAMETER, optimizer_step_time
from mlsysim.physics.pipeline import (
    bubble_fraction,
    first_stage_activation_bytes,
    p2p_message_bytes,
    p2p_time,
    pipeline_link_rate,
)
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

UPDATE_EQUATION = "T = m t_c + m t_tp + (p-1)/v (t_c + t_tp) + T_p2p + m T_zero3 + T_data + T_opt"
COMPUTE_EQUATION = "t_c = b F (L_s / L) / (t u P)"

ADAM_BYTES_PER_PARAMETER = OPTIMIZER_BYTES_PER_PARAMETER["adam"]
"""Bytes the Adam step moves per parameter (:mod:`mlsysim.physics.optimizer`: 7 fp32 tensors read or written)."""

ZERO_STAGES = (0, 1, 2, 3)


class LayoutParts(NamedTuple):
    """The intermediate figures of :func:`layout_figures`, for a derivation to print (SI units)."""

    stage_layers: Num
    """L_s: layers of the slowest stage (:func:`slowest_stage_layers`; L / p when even)."""
    parameters_per_device: Num
    """psi = N L_s / (L t) (N / (t p) when the stages are even)."""
    flops_per_sample: Num
    """F = 6 N s + 12 L h s^2."""
    recompute_flops_per_sample: Num
    """F_re (:func:`recompute_flops_per_sample`)."""
    matmul_time: Num
    """b F (L_s / L) / (t cp u P): the step from the model FLOPs utilisation u."""
    micro_batch_time: Num
    """t_c (or T1 (L_s / L) / t when a device step time is given)."""
    tensor_rate: Num
    """B_tp."""
    tensor_latency: Num
    """alpha of a tensor-parallel step: the intra-node latency while t <= devices per node."""
    tensor_collective_time: Num
    """One tensor-parallel all-reduce: 2 (t-1) alpha + M f(t) / B_tp."""
    tensor_collectives: Num
    """Collectives per layer per micro-batch: 4, or 6 with full recomputation."""
    tensor_micro_batch_time: Num
    """t_tp."""
    context_rate: Num
    """B_cp: bytes/s of one step of the context-parallel ring."""
    context_message: Num
    """M_kv: keys and values of one block of one layer on one device."""
    context_micro_batch_time: Num
    """t_cp: the ring's exposed transfers of one micro-batch (0 without context parallelism)."""
    expert_micro_batch_time: Num
    """t_ep: the exposed all-to-alls of one micro-batch (0 without experts)."""
    expert_message: Num
    """M_a2a: bytes one device sends in one dispatch or combine (0 without experts)."""
    expert_local: Num
    """q: the expert-parallel group's ranks in one scale-up domain."""
    expert_all_to_all_time: Num
    """One all-to-all of one MoE layer (before any overlap)."""
    expert_inside_share: Num
    """s_in: the share of M_a2a that crosses NVLink."""
    expert_outside_share: Num
    """s_out: the share of M_a2a that crosses the NICs."""
    moe_layers: Num
    """MoE layers of the slowest stage: L_s x their share of the layers."""
    dense_parameters_per_device: Num
    """(N - N_e) L_s / (L t): the parameters split by tensor parallelism."""
    expert_parameters_per_device: Num
    """N_e L_s / (L ep etp): the routed experts' share of the device (0 without experts)."""
    expert_data_parallel: Num
    """t cp d / (ep etp): the ranks that hold the same experts."""
    expert_sync_rate: Num
    """Bytes/s per rank of the experts' gradient ring."""
    expert_sync_latency: Num
    """alpha of a step of that ring."""
    expert_sync_time: Num
    """The experts' gradient reduction over their data-parallel ranks (0 without experts)."""
    domain: Num
    """D: devices of one scale-up (NVLink) domain, the node's devices unless stated."""
    pipeline_rate: Num
    """B_pp."""
    pipeline_latency: Num
    """alpha of a stage-to-stage transfer: intra-node while t p <= devices per node."""
    pipeline_message: Num
    """Bytes per stage boundary per device: 2 b s h / t."""
    shard_group: Num
    """k (1 without sharding)."""
    replicas: Num
    """r = d / k."""
    shard_rate: Num
    """Bytes/s per rank of the shard group's ring."""
    shard_latency: Num
    """alpha of a step of the shard group's ring: intra-node while the group fits in one node."""
    layer_gather_time: Num
    """One layer's all-gather (or reduce-scatter) over k ranks."""
    layer_forward_time: Num
    """t_f = t_c / L_s / 3."""
    layer_backward_time: Num
    """t_b = 2 t_f."""
    zero3_micro_step_time: Num
    """T_zero3: exposed ZeRO-3 communication of one micro-step (0 below stage 3)."""
    scatter_time: Num
    """ZeRO-1/2: the reduce-scatter (and, as long, the all-gather) over k ranks, once per update."""
    replica_time: Num
    """The AllReduce of the gradient shard over the r replicas (collectives.py's algorithm)."""
    hidden_time: Num
    """Of scatter + replica, the part hidden under the last micro-batch's backward."""
    activation_per_layer: Num
    """Activation bytes one layer keeps per micro-batch (with the recomputation mode)."""
    operators: OperatorTimes
    """t_c by operator class (:mod:`~mlsysim.physics.operators`); from FLOPs at u, the products and the
    element-wise work only; all zero when a device step time is given."""


class LayoutFigures(NamedTuple):
    """Figures of one layout's optimizer update (floats, or arrays in a search); SI units.

    The nine time terms add up to ``update_time``.
    """

    update_time: Num
    """Seconds of one optimizer update."""
    compute_time: Num
    """m t_c: the device's micro-batches' forward and backward compute."""
    tensor_time: Num
    """m t_tp: tensor-parallel collectives, all on the critical path."""
    context_time: Num
    """m t_cp: the context-parallel ring's transfers beyond the attention they overlap."""
    expert_time: Num
    """m t_ep: expert parallelism's all-to-alls, exposed."""
    bubble_time: Num
    """(p-1)/v (t_c + t_tp + t_cp + t_ep): the pipeline's fill and drain."""
    pipeline_time: Num
    """Exposed stage-to-stage transfers."""
    sharding_time: Num
    """m T_zero3: exposed per-layer ZeRO-3/FSDP gathers and reduce-scatters."""
    data_time: Num
    """Exposed gradient synchronisation across data-parallel ranks (once per update)."""
    optimizer_time: Num
    """The optimizer step on the device's parameters."""
    bubble_fraction: Num
    """(p-1)/(v m)."""
    data_parallel: Num
    """d = devices / (t p)."""
    state_bytes: Num
    """Weights, gradients and optimizer state on one device."""
    activation_bytes: Num
    """Activations the first stage holds for its micro-batches in flight."""
    buffer_bytes: Num
    """Unsharded parameters and gradients of the layers in flight (ZeRO-3)."""
    memory_bytes: Num
    """state + activations + buffers: the first stage's peak."""
    model_flops: Num
    """Model FLOPs of one update (recomputation not counted): B (6 N s + 12 L h s^2)."""
    throughput: Num
    """Model FLOP/s per device: model_flops / (T devices)."""
    mfu: Num
    """throughput / peak (Chowdhery et al. 2022)."""
    parts: LayoutParts
    """The intermediate figures (for a derivation)."""


def data_parallel_size(devices: Num, tensor_parallel: Num, pipeline_parallel: Num, context_parallel: Num = 1.0) -> Num:
    """d = devices / (t cp p) (Narayanan et al. 2021, section 3: n = t p d; context parallelism cp splits each
    sequence over cp more devices)."""
    return devices / (tensor_parallel * context_parallel * pipeline_parallel)


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


def _mod(a: Num, b: Num) -> Num:
    return np.mod(a, b) if is_array(a, b) else float(a) % float(b)


def layout_mask(
    *,
    devices: Num,
    tensor_parallel: Num,
    pipeline_parallel: Num,
    heads: Num,
    layers: Num,
    micro_batches: Num,
    pipeline_chunks: Num = 1.0,
    shard_group: Num = 0.0,
    first_stage_layers: Num = math.nan,
    last_stage_layers: Num = math.nan,
    context_parallel: Num = 1.0,
    seq_len: Num = math.nan,
    experts: Num = 0.0,
    expert_parallel: Num = 1.0,
    expert_tensor_parallel: Num = 1.0,
) -> Num:
    """True where a layout obeys the rules (a bool, or a bool array): see :func:`check_layout`."""
    positive = (tensor_parallel >= 1) & (pipeline_parallel >= 1) & (pipeline_chunks >= 1) & (micro_batches >= 1)
    positive = positive & (context_parallel >= 1)
    t, p = maximum(tensor_parallel, 1.0), maximum(pipeline_parallel, 1.0)
    v, m = maximum(pipeline_chunks, 1.0), maximum(micro_batches, 1.0)
    cp = maximum(context_parallel, 1.0)
    d = data_parallel_size(devices, t, p, cp)
    ok_d = positive & (_mod(devices, t * cp * p) == 0) & (d >= 1)
    # the load-balanced causal split: each sequence cut into 2 cp chunks (seq_len NaN: not checked)
    ok_d = ok_d & ((cp == 1) | (seq_len != seq_len) | (_mod(where(seq_len == seq_len, seq_len, 0.0), 2.0 * cp) == 0))
    ok_heads = _mod(heads, t) == 0
    ok_layers = layers >= p * v
    ok_inter = (v == 1) | ((p > 1) & (_mod(m, p) == 0))
    ok_shard = (shard_group == 0) | (_mod(d * cp, maximum(shard_group, 1.0)) == 0)
    ok_stages = _stage_counts_fit(layers, p, first_stage_layers, last_stage_layers)
    ep, etp = maximum(expert_parallel, 1.0), maximum(expert_tensor_parallel, 1.0)
    ok_experts = ((ep == 1) & (etp == 1)) | (
        (experts > 0) & (_mod(where(experts > 0, experts, 1.0), ep) == 0) & (_mod(t * cp * d, ep * etp) == 0)
    )
    return ok_d & ok_heads & ok_layers & ok_inter & ok_shard & ok_stages & ok_experts


def _stage_counts_fit(layers: Num, p: Num, first: Num, last: Num) -> bool | Array:
    """Given first/last stage counts leave at least one layer for every other stage (and need p > 1)."""
    first_given, last_given = first == first, last == last
    given = where(first_given, 1.0, 0.0) + where(last_given, 1.0, 0.0)
    taken = where(first_given, first, 0.0) + where(last_given, last, 0.0)
    others = p - given
    # one stage given both counts: they must name the same stage (p = 1 is refused with a count)
    return (given == 0) | ((p > 1) & (others >= 0) & (layers - taken >= others) & ((others > 0) | (layers == taken)))


def check_layout(
    *,
    devices: int,
    tensor_parallel: int,
    pipeline_parallel: int,
    heads: int,
    layers: int,
    micro_batches: int,
    pipeline_chunks: int = 1,
    shard_group: int = 0,
    first_stage_layers: int | None = None,
    last_stage_layers: int | None = None,
    context_parallel: int = 1,
    seq_len: int | None = None,
    experts: int = 0,
    expert_parallel: int = 1,
    expert_tensor_parallel: int = 1,
) -> None:
    """Raise :class:`InputError` (one line naming both numbers and the fix) for a layout that breaks a rule.

    t p d = devices; heads divisible by t; at least one layer per chunk (L >= p v);
    micro-batches a multiple of p when interleaved; the HSDP shard group dividing d;
    first/last stage layer counts that leave every other stage a layer. Fewer
    micro-batches than stages is legal (priced: the bubble dominates).
    """
    t, p, v, m, cp = tensor_parallel, pipeline_parallel, pipeline_chunks, micro_batches, context_parallel
    layout = dict(devices=devices, tensor_parallel=t, pipeline_parallel=p, heads=heads, layers=layers,
                  micro_batches=m, pipeline_chunks=v, shard_group=shard_group, context_parallel=cp,
                  experts=experts, expert_parallel=expert_parallel, expert_tensor_parallel=expert_tensor_parallel)
    if seq_len is not None:
        layout["seq_len"] = seq_len
    for name, count in (("first_stage_layers", first_stage_layers), ("last_stage_layers", last_stage_layers)):
        if count is not None:
            layout[name] = count

    def fix(*names: str) -> str:  # values that obey every rule at once, not only the broken one
        from mlsysim.physics.layout_advice import advice

        return advice(layout_mask, layout, names)

    for name, value in (("devices", devices), ("tensor_parallel", t), ("pipeline_parallel", p),
                        ("pipeline_chunks", v), ("accumulation_steps", m), ("context_parallel", cp)):
        if value < 1:
            raise InputError(f"{name} must be a positive integer, got {value}", field=name)
    if shard_group < 0:
        raise InputError(f"shard_group must be 0 (all data-parallel ranks) or a divisor of d, got {shard_group}",
                         field="shard_group")
    if cp > 1 and devices % (t * cp * p):
        raise InputError(
            f"tensor_parallel x context_parallel x pipeline_parallel ({t} x {cp} x {p} = {t * cp * p}) must divide "
            f"the devices ({devices}); {fix('context_parallel', 'tensor_parallel', 'pipeline_parallel')}",
            field="context_parallel",
        )
    if devices % (t * p):
        raise InputError(
            f"tensor_parallel x pipeline_parallel ({t} x {p} = {t * p}) must divide the devices ({devices}); "
            f"{fix('tensor_parallel', 'pipeline_parallel')}",
            field="tensor_parallel",
        )
    if cp > 1 and seq_len is not None and seq_len % (2 * cp):
        raise InputError(
            f"seq_len ({seq_len}) must be a multiple of 2 x context_parallel = {2 * cp}: each sequence is cut into "
            f"2 cp chunks, one from each end per device (load-balanced causal attention); "
            f"{fix('context_parallel')}",
            field="context_parallel",
        )
    if heads % t:
        raise InputError(
            f"heads ({heads}) must be a multiple of tensor_parallel ({t}); "
            f"{fix('tensor_parallel')}",
            field="tensor_parallel",
        )
    if layers < p * v:
        raise InputError(
            f"layers ({layers}) must be at least pipeline_parallel x pipeline_chunks = {p} x {v} = {p * v}: "
            f"every chunk holds a layer; {fix('pipeline_parallel', 'pipeline_chunks')}",
            field="pipeline_parallel",
        )
    if v > 1 and (p == 1 or m % p):
        raise InputError(
            f"the interleaved schedule (pipeline_chunks {v}) needs pipeline_parallel > 1 and micro-batches ({m}) "
            f"a multiple of pipeline_parallel ({p}); {fix('accumulation_steps', 'pipeline_chunks')}",
            field="pipeline_chunks",
        )
    d = devices // (t * cp * p)
    if shard_group and d * cp % shard_group:
        raise InputError(
            f"shard_group ({shard_group}) must divide the data-parallel size d = {d}"
            + (f" times context_parallel {cp} = {d * cp}" if cp > 1 else "") + "; "
            f"{fix('shard_group')}",
            field="shard_group",
        )
    for name, count in (("first_stage_layers", first_stage_layers), ("last_stage_layers", last_stage_layers)):
        if count is not None and p == 1:
            raise InputError(f"{name} ({count}) needs a pipeline (pipeline_parallel > 1)", field=name)
    ep, etp = expert_parallel, expert_tensor_parallel
    for name, value in (("expert_parallel", ep), ("expert_tensor_parallel", etp)):
        if value > 1 and not experts:
            raise InputError(f"{name} ({value}) spreads a mixture of experts, but the workload has no experts; "
                             f"leave {name} out", field=name)
    if experts and experts % ep:
        raise InputError(f"expert_parallel ({ep}) must divide the experts ({experts}) of each MoE layer; "
                         f"{fix('expert_parallel')}", field="expert_parallel")
    if (ep > 1 or etp > 1) and (t * cp * d) % (ep * etp):
        raise InputError(
            f"expert_parallel x expert_tensor_parallel ({ep} x {etp} = {ep * etp}) must divide the devices of one "
            f"pipeline stage, tensor_parallel x context_parallel x d = {t * cp * d}; {fix('expert_parallel')}",
            field="expert_parallel",
        )
    nan = math.nan
    first = nan if first_stage_layers is None else float(first_stage_layers)
    last = nan if last_stage_layers is None else float(last_stage_layers)
    if not _stage_counts_fit(float(layers), float(p), first, last):
        given = [c for c in (first_stage_layers, last_stage_layers) if c is not None]
        others = p - len(given)
        raise InputError(
            f"first and last stage layers ({' + '.join(str(c) for c in given)}) leave {layers - sum(given)} of "
            f"{layers} layers for the other {others} stage(s), which need at least one each",
            field="first_stage_layers" if first_stage_layers is not None else "last_stage_layers",
        )


def layout_figures(
    *,
    parameters: Num,
    layers: Num,
    hidden: Num,
    heads: Num,
    seq_len: Num,
    vocab: Num,
    devices: Num,
    devices_per_node: Num,
    peak_flops: Num,
    math_efficiency: Num,
    memory_bandwidth: Num,
    intra_bandwidth: Num,
    nic_bandwidth: Num,
    nics_per_node: Num,
    tensor_parallel: Num = 1.0,
    pipeline_parallel: Num = 1.0,
    pipeline_chunks: Num = 1.0,
    micro_batch: Num = 1.0,
    micro_batches: Num = 1.0,
    zero_stage: Num = 0.0,
    shard_group: Num = 0.0,
    backward_gathers: Num = 1.0,
    data_overlap: Num = 1.0,
    intra_latency: Num = 0.0,
    inter_latency: Num = 0.0,
    gradient_bytes: Num = 2.0,
    device_step_time: Num = math.nan,
    sharding_rate: Num = math.nan,
    pipeline_rate: Num = math.nan,
    first_stage_layers: Num = math.nan,
    last_stage_layers: Num = math.nan,
    optimizer_bytes: Num = ADAM_BYTES_PER_PARAMETER,
    recompute: str = "none",
    sequence_parallel: bool = False,
    flash_attention: bool = False,
    algorithm: str = "ring",
    matmul_ceiling: Num = math.nan,
    matmul_peak: Num = math.nan,
    attention_ceiling: Num = math.nan,
    attention_peak: Num = math.nan,
    compute_units: Num = math.nan,
    kv_heads: Num = math.nan,
    ffn_hidden: Num = math.nan,
    gated_mlp: Num = 0.0,
    cast_bytes: Num = 0.0,
    matmul_bytes: Num = 2.0,
    fused_elementwise: Num = 0.0,
    context_parallel: Num = 1.0,
    context_all_gather: Num = 0.0,
    scale_up_domain: Num = math.nan,
    head_dim: Num = math.nan,
    mla: MultiHeadLatent | None = None,
    moe: Experts | None = None,
    active_parameters: Num = math.nan,
    expert_parameters: Num = 0.0,
    expert_overlap: Num = 0.0,
    tensor_overlap: Num = 0.0,
) -> LayoutFigures:
    """Time, breakdown and memory of one optimizer update of a layout (see the module docstring).

    Workload: ``parameters`` N, ``layers`` L, ``hidden`` h, ``heads`` a,
    ``seq_len`` s, ``vocab`` V. Cluster: ``devices`` n, ``devices_per_node``
    g, ``peak_flops`` P (16-bit dense), ``memory_bandwidth`` B_mem,
    ``intra_bandwidth`` (per device per direction), ``nic_bandwidth`` (one
    NIC, per direction), ``nics_per_node``, latencies per message step.
    Layout: t, p, v, micro-batch b, micro-batches m per update, ``zero_stage``
    0-3 (3 = FSDP full shard), ``shard_group`` k (0: all d ranks; HSDP: a
    divisor of d), ``backward_gathers`` (1: ZeRO-3 gathers again in the
    backward; 0: parameters kept unsharded after the forward),
    ``data_overlap`` (1: the gradient sync overlaps the last backward).
    ``math_efficiency`` u: the model FLOPs utilisation of one device's step
    (``mfu``: model FLOPs over the peak, nothing added). ``device_step_time`` T1, when given (not NaN), is a
    measured or derived time of one micro-batch's forward and backward of
    the whole model on one device; it replaces the FLOP-based t_c by
    T1 (L_s / L) / t, as a profiled step time enters the data-parallel model.
    ``first_stage_layers``, ``last_stage_layers``: uneven stages
    (:func:`slowest_stage_layers`). ``optimizer_bytes`` beta: bytes the
    optimizer step moves per parameter (28: Adam; 0: no step time).
    ``pipeline_rate``, when given (not NaN), is an achieved rate in bytes/s of
    one device's stage-to-stage transfers, replacing the links' rate (as
    ``sharding_rate`` does for ZeRO's collectives).
    ``matmul_ceiling``, when given (not NaN), prices t_c operator by operator
    (:func:`~mlsysim.physics.operators.transformer_operator_times`: the linear
    layers' products at ``matmul_peak`` (NaN: ``peak_flops``) and that ceiling, the
    attention core at ``peak_flops`` and ``attention_ceiling`` (NaN: the same
    ceiling), the casts of ``cast_bytes`` per operand element (operands ``matmul_bytes``
    wide: their K-loop overhead), the element-wise
    work, fused or not by ``fused_elementwise``; ``kv_heads``, ``ffn_hidden``,
    ``gated_mlp`` the shape, ``compute_units`` the wave count) instead of u.
    ``sharding_rate``, when given (not NaN), is a measured (achieved) rate in
    bytes/s per rank of the shard group's all-gathers and reduce-scatters; it
    replaces the ring rate :func:`~mlsysim.physics.sharding.group_rate`
    derives from the links (a framework's collectives can run far below what
    the links carry; docs/parallelism.md, the ZeRO-3 runs of 2021).
    ``context_parallel`` cp: a ring of key/value blocks, overlapped with each layer's
    attention, or (``context_all_gather`` 1) their all-gather, overlapped with the local
    block's (:mod:`~mlsysim.physics.context_parallel`).
    """
    t, p, v, cp = tensor_parallel, pipeline_parallel, pipeline_chunks, context_parallel
    b, m = micro_batch, micro_batches
    # a scale-up domain larger than the node (NVL72: 72 GPUs over trays of 4) is priced as one node of D
    # devices with the NICs of its D / g trays
    g = where(scale_up_domain == scale_up_domain, scale_up_domain, devices_per_node)
    nics_per_node = nics_per_node * g / devices_per_node
    d = data_parallel_size(devices, t, p, cp)
    s_dev = seq_len / cp  # tokens of each sequence on one device
    layers_here = slowest_stage_layers(layers, p, first_stage_layers, last_stage_layers)
    share = layers_here / layers  # of the model on the slowest stage (1/p when even)

    # compute of one micro-batch on one device
    # a mixture of experts computes with the parameters a token uses; multi-head latent attention is wider
    used = where(active_parameters == active_parameters, active_parameters, parameters)
    width = hidden if mla is None else heads * (mla.nope + mla.rope + mla.value) / 2.0
    model_per_sample = transformer_flops_per_sample(used, layers, hidden, seq_len, width)
    extra = recompute_flops_per_sample(used, layers, hidden, seq_len, vocab, recompute)
    # from the model FLOPs utilisation u (mfu): the model FLOPs alone, recomputation and element-wise work inside u
    matmul = b * model_per_sample * share / (t * cp * math_efficiency * peak_flops)
    zero = 0.0 * matmul
    from_flops = OperatorTimes(matmul, zero, zero, zero, b * model_per_sample * share / (t * cp), zero, zero, zero)
    if type(matmul_ceiling) is float and matmul_ceiling != matmul_ceiling:
        ops = from_flops
    else:
        priced = operator_times_by_distinct_rows(
            parameters=parameters, layers=layers, hidden=hidden, heads=heads, seq_len=seq_len, vocab=vocab,
            micro_batch=b, matmul_peak=where(matmul_peak == matmul_peak, matmul_peak, peak_flops),
            matmul_ceiling=matmul_ceiling,
            attention_peak=where(attention_peak == attention_peak, attention_peak, peak_flops),
            attention_ceiling=where(attention_ceiling == attention_ceiling, attention_ceiling, matmul_ceiling),
            memory_bandwidth=memory_bandwidth, kv_heads=kv_heads, ffn_hidden=ffn_hidden, gated_mlp=gated_mlp,
            tensor_parallel=t, layers_here=layers_here, compute_units=compute_units, cast_bytes=cast_bytes,
            matmul_bytes=matmul_bytes, context_parallel=cp, head_dim=head_dim, mla=mla, moe=moe,
            fused_elementwise=fused_elementwise, recompute=recompute, flash_attention=flash_attention,
            sequence_parallel=sequence_parallel,
        )
        # rows without a ceiling (a sweep's rows that give mfu) are priced from the FLOPs at u
        by_operators = matmul_ceiling == matmul_ceiling
        ops = priced if type(by_operators) is bool else OperatorTimes(
            *(where(by_operators, a, f) for a, f in zip(priced, from_flops, strict=True))
        )
    measured = device_step_time == device_step_time
    t_c = where(measured, device_step_time * share / (t * cp), ops.total)

    # tensor parallelism
    tp_rate = tp_link_rate(t, g, intra_bandwidth, nic_bandwidth, nics_per_node)
    tp_latency = where(t <= g, intra_latency, inter_latency)
    tp_message = tp_message_bytes(b, s_dev, hidden)
    tp_one = tp_allreduce_time(tp_message, t, tp_rate, tp_latency)
    t_tp = layers_here * tp_collectives_per_layer(recompute) * tp_one  # tp_time_per_micro_batch
    # asynchronous tensor parallelism: each collective split in t chunks and run under the products that
    # depend on it (Wang et al. 2023, "Overlap Communication with Dependent Computation via Decomposition");
    # the first chunk, and what the products cannot cover, stay exposed
    t_tp = where(tensor_overlap > 0, maximum(t_tp - ops.matmul_time, t_tp / t), t_tp)

    # context parallelism: the ring of cp devices after the t tensor ranks (Megatron-Core's order t, cp, d, p)
    kv = where(kv_heads == kv_heads, kv_heads, heads)
    cp_message = kv_block_bytes(b, seq_len, kv, hidden / heads, t, cp)
    cp_rate = pipeline_link_rate(t, cp, g, intra_bandwidth, nic_bandwidth, nics_per_node)
    cp_latency = where(t * cp <= g, intra_latency, inter_latency)
    attention_flops_layer = 12.0 * b * seq_len * seq_len * hidden / (t * cp)  # the FLOP model's attention
    attention_layer = where(
        ops.attention_time > 0, ops.attention_time / layers_here,
        attention_flops_layer / (math_efficiency * peak_flops),
    )
    t_cp = where(
        cp > 1,
        layers_here * ring_attention_exposed(cp_message, cp, cp_rate, cp_latency, attention_layer, recompute,
                                             context_all_gather),
        0.0,
    )
    # expert parallelism: the MoE layers' all-to-alls, over the ep ranks (adjacent after etp)
    if moe is None:
        a2a_one = moe_layers_here = t_ep = a2a_message = local = a2a_in = a2a_out = 0.0 * t_cp
    else:
        a2a_message = all_to_all_bytes(b * s_dev, t, moe.top_k, hidden, moe.tensor)
        nic_per_device = nic_bandwidth * minimum(nics_per_node, g) / g
        local = ranks_per_domain(moe.parallel, moe.tensor, g)
        a2a_latency = where(moe.parallel * moe.tensor <= g, intra_latency, inter_latency)
        a2a_in, a2a_out = all_to_all_shares(moe.parallel, local, moe.experts, moe.top_k, moe.hierarchical)
        a2a_one = all_to_all_time(a2a_message, moe.parallel, a2a_in, a2a_out, intra_bandwidth, nic_per_device,
                                  a2a_latency)
        a2a_layer = all_to_alls_per_layer(recompute) * a2a_one
        moe_layers_here = layers_here * moe.share
        covered = where(expert_overlap > 0, t_c / layers_here, 0.0)  # DualPipe: another micro-batch's compute
        t_ep = moe_layers_here * maximum(a2a_layer - covered, 0.0)
    t_comm = t_tp + t_cp + t_ep  # collectives on the critical path of each micro-batch

    # pipeline
    bubble = bubble_fraction(p, m, v)
    pp_rate = where(
        pipeline_rate == pipeline_rate,
        pipeline_rate,
        pipeline_link_rate(t, p, g, intra_bandwidth, nic_bandwidth, nics_per_node),
    )
    pp_latency = where(t * p <= g, intra_latency, inter_latency)
    pp_message = p2p_message_bytes(b, s_dev, hidden, t)
    t_p2p = p2p_time(pp_message, pp_rate, p, m, v, pp_latency)

    # sharding and data parallelism
    # the dense parameters split over t, the routed experts over ep x etp
    expert_tensor = 1.0 if moe is None else moe.tensor
    experts_split = 1.0 if moe is None else moe.parallel * expert_tensor
    psi_experts = expert_parameters * share / experts_split
    psi_dense = (parameters - expert_parameters) * share / t
    psi = psi_dense + psi_experts
    grad = gradient_bytes * psi_dense
    sharded = zero_stage >= 1
    d_grad = d * cp  # the devices that hold the same weights: data and context parallel ranks
    k = where(sharded, where(shard_group > 0, shard_group, d_grad), 1.0)
    r = d_grad / k
    per_node = maximum(1.0, g / t)  # ranks of one d x cp group in a node (Megatron order: t, cp, d, p)
    k_node = minimum(k, per_node)
    k_rate = where(
        sharding_rate == sharding_rate,
        sharding_rate,
        group_rate(k_node, k, g, intra_bandwidth, nic_bandwidth, nics_per_node),
    )
    k_latency = where(k <= k_node, intra_latency, inter_latency)

    full_shard = zero_stage >= 3
    layer_bytes = gradient_bytes * psi / layers_here
    c_layer = gather_time(layer_bytes, k, k_rate, k_latency)
    forward_layer = t_c / layers_here / 3.0
    backward_layer = t_c / layers_here - forward_layer
    zero3 = layerwise_exposed(layers_here, c_layer, c_layer, forward_layer, backward_layer, backward_gathers)
    t_zero3 = where(full_shard, zero3, 0.0)

    r_node = minimum(r, maximum(1.0, per_node / k))
    r_nodes = r / r_node
    r_nics = nics_per_node * r_node / g
    shard_bytes = replica_allreduce_bytes(grad, k)
    replica = stage_time(shard_bytes, intra_node_cost(r_node, intra_bandwidth, intra_latency)) + stage_time(
        shard_bytes, inter_node_cost(algorithm, r_node, r_nodes, nic_bandwidth, r_nics, inter_latency)
    )
    scatter = where(full_shard, 0.0, gather_time(grad, k, k_rate, k_latency))
    # the experts' gradients: reduced over the expert-data-parallel ranks that hold the same experts
    d_experts = t * cp * d / experts_split
    k_experts = where(sharded, d_experts, 1.0)
    per_domain_experts = minimum(d_experts, maximum(1.0, g / experts_split))
    experts_rate = group_rate(per_domain_experts, d_experts, g, intra_bandwidth, nic_bandwidth, nics_per_node)
    experts_latency = where(d_experts <= per_domain_experts, intra_latency, inter_latency)
    experts_sync = where(
        (d_experts > 1) & (psi_experts > 0),
        2.0 * gather_time(gradient_bytes * psi_experts, d_experts, experts_rate, experts_latency), 0.0,
    )
    overlappable = scatter + replica + experts_sync
    last_backward = backward_layer * layers_here
    hidden_part = where(data_overlap > 0, minimum(overlappable, last_backward), 0.0)
    t_data = overlappable - hidden_part + scatter  # the all-gather after the step: as long as the scatter

    t_opt = optimizer_step_time(
        where(sharded, psi_dense / k + psi_experts / k_experts, psi), optimizer_bytes, memory_bandwidth
    )

    compute = m * t_c
    tensor = m * t_tp
    bubble_time = (p - 1.0) / v * (t_c + t_comm)
    sharding = m * t_zero3
    update = compute + tensor + m * t_cp + m * t_ep + bubble_time + t_p2p + sharding + t_data + t_opt

    # memory of the first stage
    state = sharded_state_bytes(psi_dense, zero_stage, k) + sharded_state_bytes(psi_experts, zero_stage, k_experts)
    act_layer = tp_activation_bytes_per_layer(
        s_dev, b, hidden, heads, t, sequence_parallel=sequence_parallel, recompute=recompute,
        flash_attention=flash_attention,
    )
    activations = first_stage_activation_bytes(layers_here * p, act_layer, p, m, v)
    buffers = where(full_shard, zero3_buffer_bytes(psi / layers_here), 0.0)

    flops = b * m * d * model_per_sample
    throughput = flops / (update * devices)
    return LayoutFigures(
        update_time=update,
        compute_time=compute,
        tensor_time=tensor,
        context_time=m * t_cp,
        expert_time=m * t_ep,
        bubble_time=bubble_time,
        pipeline_time=t_p2p,
        sharding_time=sharding,
        data_time=t_data,
        optimizer_time=t_opt,
        bubble_fraction=bubble,
        data_parallel=d,
        state_bytes=state,
        activation_bytes=activations,
        buffer_bytes=buffers,
        memory_bytes=state + activations + buffers,
        model_flops=flops,
        throughput=throughput,
        mfu=throughput / peak_flops,
        parts=LayoutParts(
            stage_layers=layers_here,
            parameters_per_device=psi,
            flops_per_sample=model_per_sample,
            recompute_flops_per_sample=extra,
            matmul_time=matmul,
            micro_batch_time=t_c,
            tensor_rate=tp_rate,
            tensor_latency=tp_latency,
            tensor_collective_time=tp_one,
            tensor_collectives=tp_collectives_per_layer(recompute),
            tensor_micro_batch_time=t_tp,
            context_rate=cp_rate,
            context_message=cp_message,
            context_micro_batch_time=t_cp,
            expert_micro_batch_time=t_ep,
            expert_message=a2a_message,
            expert_local=local,
            expert_all_to_all_time=a2a_one,
            expert_inside_share=a2a_in,
            expert_outside_share=a2a_out,
            moe_layers=moe_layers_here,
            dense_parameters_per_device=psi_dense,
            expert_parameters_per_device=psi_experts,
            expert_data_parallel=d_experts,
            expert_sync_rate=experts_rate,
            expert_sync_latency=experts_latency,
            expert_sync_time=experts_sync,
            domain=g,
            pipeline_rate=pp_rate,
            pipeline_latency=pp_latency,
            pipeline_message=pp_message,
            shard_group=k,
            replicas=r,
            shard_rate=k_rate,
            shard_latency=k_latency,
            layer_gather_time=c_layer,
            layer_forward_time=forward_layer,
            layer_backward_time=backward_layer,
            zero3_micro_step_time=t_zero3,
            scatter_time=scatter,
            replica_time=replica,
            hidden_time=hidden_part,
            activation_per_layer=act_layer,
            operators=ops,
        ),
    )
