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
  Without it, t_c is priced kernel by kernel with the device's measured kernels
  (:mod:`~mlsysim.physics.operators`: the products at their in-training ceiling,
  the recomputed forward, the fused attention, the element-wise work), or from a
  measured device step T1 (L_s / L) / (t cp).
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
from mlsysim.physics._array import Array, Num, is_array, maximum, where
from mlsysim.physics.optimizer import OPTIMIZER_BYTES_PER_PARAMETER
from mlsysim.physics.records import Cluster, Layout, LayoutRecords, ModelShape, Rates
from mlsysim.physics.terms import (
    ComputeTerm,
    ContextTerm,
    DataTerm,
    ExpertTerm,
    MemoryTerm,
    PipelineTerm,
    ShardingTerm,
    Stage,
    TensorTerm,
    compute_term,
    context_term,
    data_parallel_size,
    data_term,
    expert_term,
    memory_term,
    optimizer_time,
    pipeline_term,
    recompute_flops_per_sample,
    sharding_term,
    slowest_stage_layers,
    stage_of,
    tensor_term,
)

UPDATE_EQUATION = "T = m t_c + m t_tp + (p-1)/v (t_c + t_tp) + T_p2p + m T_zero3 + T_data + T_opt"
COMPUTE_EQUATION = "t_c = b F (L_s / L) / (t u P)"

ADAM_BYTES_PER_PARAMETER = OPTIMIZER_BYTES_PER_PARAMETER["adam"]
"""Bytes the Adam step moves per parameter (:mod:`mlsysim.physics.optimizer`: 7 fp32 tensors read or written)."""

ZERO_STAGES = (0, 1, 2, 3)


class LayoutTerms(NamedTuple):
    """The terms of one layout's update (:mod:`~mlsysim.physics.terms`), for a derivation to print."""

    stage: Stage
    compute: ComputeTerm
    tensor: TensorTerm
    context: ContextTerm
    experts: ExpertTerm
    pipeline: PipelineTerm
    sharding: ShardingTerm
    data: DataTerm
    memory: MemoryTerm


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
    terms: LayoutTerms
    """Each term's figures (for a derivation)."""
    records: LayoutRecords
    """The records the layout was priced from."""


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
    layout_stages: Num = math.nan,
    layout_ranks: Num = math.nan,
) -> Num:
    """True where a layout obeys the rules (a bool, or a bool array): see :func:`check_layout`. A custom
    pipeline layout (``layout_stages`` virtual stages read at ``layout_ranks`` ranks; NaN: none) holds for
    its own p and p v = its stages only, and its stages may hold no layer (the embedding, the loss)."""
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
    custom, free = layout_stages == layout_stages, layout_stages != layout_stages
    ok_layers = ((layers >= p * v) | custom) & (free | ((p == layout_ranks) & (p * v == layout_stages)))
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
    custom_layout: bool = False,
) -> None:
    """Raise :class:`InputError` (one line naming both numbers and the fix) for a layout that breaks a rule.
    ``custom_layout``: a pipeline layout text places the layers (its own checks:
    :func:`~mlsysim.physics.pipeline_layout.check_pipeline_layout`), so a chunk may hold none.

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
    if layers < p * v and not custom_layout:
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


def layout_figures(shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates) -> LayoutFigures:
    """The update of one layout (or of arrays of layouts), term by term (see the module docstring):

        T = m t_c + m t_tp + m t_cp + m t_ep + (p-1)/v (t_c + t_tp + t_cp + t_ep) + T_p2p + m T_zero3
            + T_data + T_opt

    each term one function of :mod:`~mlsysim.physics.terms` over the records.
    """
    stage = stage_of(shape, cluster, layout, rates)
    compute = compute_term(shape, cluster, layout, rates, stage)
    tensor = tensor_term(shape, cluster, layout, stage, compute, rates)
    context = context_term(shape, cluster, layout, rates, stage, compute)
    experts = expert_term(shape, cluster, layout, rates, stage, compute)
    pipeline = pipeline_term(shape, cluster, layout, rates, stage)
    sharding = sharding_term(shape, cluster, layout, rates, stage, compute, experts)
    data = data_term(cluster, layout, stage, sharding, experts, rates)
    t_opt = optimizer_time(cluster, layout, sharding, data)
    memory = memory_term(shape, layout, stage, sharding, data)

    m, t_c = layout.micro_batches, compute.micro_batch_time
    t_tp, t_cp, t_ep = tensor.micro_batch_time, context.micro_batch_time, experts.micro_batch_time
    compute_time = m * t_c
    tensor_time = m * t_tp
    bubble_time = (layout.pipeline_parallel - 1.0) / layout.pipeline_chunks * (t_c + (t_tp + t_cp + t_ep))
    sharding_time = m * sharding.micro_step_time
    update = (compute_time + tensor_time + m * t_cp + m * t_ep + bubble_time + pipeline.transfer_time + sharding_time
              + data.exposed_time + t_opt)
    flops = layout.micro_batch * m * stage.data_parallel * compute.flops_per_sample
    throughput = flops / (update * cluster.devices)
    return LayoutFigures(
        update_time=update,
        compute_time=compute_time,
        tensor_time=tensor_time,
        context_time=m * t_cp,
        expert_time=m * t_ep,
        bubble_time=bubble_time,
        pipeline_time=pipeline.transfer_time,
        sharding_time=sharding_time,
        data_time=data.exposed_time,
        optimizer_time=t_opt,
        bubble_fraction=pipeline.bubble_fraction,
        data_parallel=stage.data_parallel,
        state_bytes=memory.state_bytes,
        activation_bytes=memory.activation_bytes,
        buffer_bytes=memory.buffer_bytes,
        memory_bytes=memory.state_bytes + memory.activation_bytes + memory.buffer_bytes,
        model_flops=flops,
        throughput=throughput,
        mfu=throughput / cluster.peak_flops,
        terms=LayoutTerms(stage, compute, tensor, context, experts, pipeline, sharding, data, memory),
        records=LayoutRecords(shape, cluster, layout, rates),
    )


__all__ = [
    "ZERO_STAGES",
    "LayoutFigures",
    "LayoutTerms",
    "check_layout",
    "data_parallel_size",
    "layout_figures",
    "layout_mask",
    "recompute_flops_per_sample",
    "slowest_stage_layers",
]
