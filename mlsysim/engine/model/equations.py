"""The data-parallel model: the seed equations, plus the opt-in choices of :class:`Assumptions`.

:func:`evaluate` composes the pure formulas of :mod:`mlsysim.physics` on
plain floats (one scenario) or numpy arrays (a sweep): the scalar solve and
the vectorized sweep run this same code. Units are canonical SI: bytes,
seconds, bytes/second, US dollars per hour.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from enum import IntEnum
from functools import partial
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Final, NamedTuple, cast

import numpy as np

from mlsysim.physics import energy as energy_mod
from mlsysim.physics import reliability
from mlsysim.physics._array import Array, Num, is_array, maximum, where
from mlsysim.physics.activations import RECOMPUTE_MODES, RECOMPUTE_MODULES
from mlsysim.physics.collectives import (
    ALGORITHMS,
    StageCost,
    bucket_layout,
    inter_node_cost,
    intra_node_cost,
    stage_time,
)
from mlsysim.physics.context_parallel import kv_passes
from mlsysim.physics.experts import all_to_alls_per_layer
from mlsysim.physics.layout import (
    LayoutFigures,
    layout_figures,
    layout_mask,
)
from mlsysim.physics.memory import communication_volume_factor, training_state_bytes
from mlsysim.physics.operators import Experts
from mlsysim.physics.optimizer import optimizer_step_time
from mlsysim.physics.overlap import exposed_communication, interference_delay
from mlsysim.physics.records import (
    Cluster,
    KernelConstants,
    Layout,
    LayoutRecords,
    MixtureOfExperts,
    ModelShape,
    MultiHeadLatent,
    Rates,
    with_fields,
)
from mlsysim.physics.synchronization import (
    jittered_straggler_delay,
    straggler_delay,
    update_overhead,
)


@dataclass(slots=True)
class Inputs:
    """Numeric inputs in canonical units; each a float or a numpy array (broadcast together).

    Attributes carry the names of the scenario inputs they come from
    (:mod:`mlsysim.engine.inputs.fields`); ``gradient_bytes`` and ``parameters`` are
    derived from the workload and precision. The default of an optional input
    is the value that leaves the seed model unchanged: ``inter_bandwidth`` inf
    (one node), ``node_hour_rate`` nan (no price), ``nics_per_node`` 1 (the
    seed's one link), zero latencies and activation memory, ``device_memory``
    nan (unknown).
    """

    gradient_bytes: Num
    parameters: Num
    devices_per_node: Num
    nodes: Num
    accumulation_steps: Num
    step_time: Num
    training_time: Num
    per_device_batch: Num
    intra_bandwidth: Num
    inter_bandwidth: Num = math.inf
    node_hour_rate: Num = math.nan
    nics_per_node: Num = 1.0
    intra_latency: Num = 0.0
    inter_latency: Num = 0.0
    activation_memory: Num = 0.0
    device_memory: Num = math.nan
    # opt-in costs (docs/model.md section 2.9); the defaults leave the seed unchanged.
    # optimizer_bytes (from ``optimizer``) and inter_transport (the factor of
    # ``inter_transport``) are derived like gradient_bytes.
    optimizer_step_time: Num = 0.0
    optimizer_bytes: Num = 0.0
    memory_bandwidth: Num = math.inf
    inter_transport: Num = 1.0
    # share p of the host jitter (the factor of ``input_pipeline``; 1: real data)
    input_pipeline: Num = 1.0
    # sources of the derived inputs (mlsysim.engine.inputs.derivation.derive_inputs); NaN when not given
    mfu: Num = math.nan
    training_tokens: Num = math.nan
    training_samples: Num = math.nan
    flops_per_sample: Num = math.nan
    peak_flops: Num = math.nan
    sequence_length: Num = math.nan
    activation_memory_per_sample: Num = math.nan
    # the whole run (docs/whole_run.md): failures, checkpoints, energy; NaN or 1: not modeled.
    # failure_rate per device-second; checkpoint_bandwidth per writing node (bytes/s);
    # checkpoint_interval NaN: Daly's optimum; device_power, idle_power in W (idle NaN:
    # device_power); carbon_intensity kg/J;
    # energy_price USD/J.
    failure_rate: Num = math.nan
    failure_rate_devices: Num = math.nan  # given: failure_rate is a whole job's (per second)
    restart_time: Num = math.nan
    checkpoint_bandwidth: Num = math.nan
    checkpoint_interval: Num = math.nan
    device_power: Num = math.nan
    idle_power: Num = math.nan
    power_limit: Num = math.nan
    pue: Num = 1.0
    carbon_intensity: Num = math.nan
    energy_price: Num = math.nan
    # a parallel layout (docs/parallelism.md; :func:`evaluate_layout`): NaN = not given. The layout
    # model runs when any of the five is given; t, p, v then default to 1, the shard group to all
    # of d, sequence parallelism to off.
    tensor_parallel: Num = math.nan
    pipeline_parallel: Num = math.nan
    pipeline_chunks: Num = math.nan
    shard_group: Num = math.nan
    sequence_parallel: Num = math.nan
    # the workload's transformer shape (derived from the workload; NaN without one) and the
    # code of the recompute mode in RECOMPUTE_MODES (none, selective, full)
    layers: Num = math.nan
    hidden: Num = math.nan
    heads: Num = math.nan
    seq_len: Num = math.nan
    vocab: Num = 0.0
    recompute_code: Num = 1.0
    recompute_modules_code: Num = math.nan
    """The modules selective recomputation reruns (a sum of bits, ``recompute_modules_code``; NaN: the default)."""
    # uneven pipeline stages (physics.layout.slowest_stage_layers), attention kernels and FSDP's
    # resharding (docs/parallelism.md); NaN = not given: even stages, fused attention, reshard
    first_stage_layers: Num = math.nan
    last_stage_layers: Num = math.nan
    # a custom pipeline layout (physics.pipeline_layout; engine.inputs.fields derived_numbers): its virtual
    # stages, the pipeline ranks it was read at and the layers of its fullest rank; NaN: none given
    layout_stages: Num = math.nan
    layout_ranks: Num = math.nan
    layout_chunks: Num = math.nan
    layout_stage_layers: Num = math.nan
    flash_attention: Num = math.nan
    reshard_after_forward: Num = math.nan
    # context parallelism (physics.context_parallel) and a scale-up domain beyond the node (NVL72); NaN: none
    context_parallel: Num = math.nan
    scale_up_domain: Num = math.nan
    # activation bytes of one sample with fused attention (mlsysim.engine.inputs.derivation; NaN: none derived)
    activation_memory_fused: Num = math.nan
    # the operator model (mlsysim.physics.operators): the shape's attention groups and MLP, and, when
    # the step comes from the operators, the products' peak and fitted ceilings (NaN: priced from u)
    kv_heads: Num = math.nan
    ffn_hidden: Num = math.nan
    gated_mlp: Num = 0.0
    head_dim: Num = math.nan
    mtp_layers: Num = 0.0
    # a mixture of experts (engine.inputs.workload_figures.moe_numbers; experts 0: dense) and multi-head
    # latent attention's widths (NaN: multi-head or grouped-query attention)
    experts: Num = 0.0
    experts_per_token: Num = math.nan
    expert_ffn_hidden: Num = math.nan
    shared_experts: Num = math.nan
    shared_expert_ffn_hidden: Num = math.nan
    moe_share: Num = math.nan
    expert_parameters: Num = math.nan
    active_parameters: Num = math.nan
    q_lora_rank: Num = math.nan
    kv_lora_rank: Num = math.nan
    qk_rope_head_dim: Num = math.nan
    qk_nope_head_dim: Num = math.nan
    v_head_dim: Num = math.nan
    # expert parallelism (physics.experts); NaN: 1
    expert_parallel: Num = math.nan
    expert_tensor_parallel: Num = math.nan
    expert_overlap: Num = math.nan
    hierarchical_dispatch: Num = math.nan
    context_all_gather: Num = math.nan
    tensor_overlap: Num = math.nan
    fused_elementwise: Num = math.nan
    matmul_ceiling: Num = math.nan
    matmul_peak: Num = math.nan
    attention_ceiling: Num = math.nan
    attention_peak: Num = math.nan
    expert_ceiling: Num = math.nan
    compute_units: Num = math.nan
    cast_bytes: Num = 0.0
    matmul_bytes: Num = 2.0


NEUTRAL_INPUTS: Final[Mapping[str, float]] = MappingProxyType(
    {
        f.name: math.nan if f.default is MISSING else cast(float, f.default)
        for f in dataclasses.fields(Inputs)
    }
)
"""Every :class:`Inputs` field, in its order, at its neutral value (NaN for one without:
always given). A scenario's model numbers start as a copy of it, so they hold every
field in this order and :func:`inputs_of` can pass them by position."""


def inputs_of(numbers: Mapping[str, Num]) -> Inputs:
    """The :class:`Inputs` of model numbers by name.

    Numbers that hold every field in the order of :data:`NEUTRAL_INPUTS` (a copy
    of it, updated: a scenario's) are passed by position: about half the time of
    binding ~20 keywords against 60 parameters.
    """
    if len(numbers) == len(NEUTRAL_INPUTS):
        return Inputs(*numbers.values())
    return Inputs(**numbers)


@dataclass(frozen=True)
class Choices:
    """Modeling choices as plain values: :class:`mlsysim.Assumptions` in canonical SI (scalars).

    Names are the Assumptions' own; ``bucket_size`` is in bytes and
    ``update_overhead`` in seconds.
    """

    algorithm: str = "ring"
    intra_efficiency: float = 1.0
    inter_efficiency: float = 1.0
    overlap: bool = False
    bucket_size: float = 25 * 2**20
    backward_fraction: float = 2.0 / 3.0
    update_overhead: float = 0.0
    straggler_cv: float = 0.0
    zero_stage: int = 0
    interference: float = 0.0
    host_jitter: float = 0.0
    bucket_copies: bool = False
    first_bucket_size: float = 0.0
    failure_rate: float = 0.0
    """Failures per device-second when the scenario gives none (``Assumptions.failure_rate``)."""
    sharding_rate: float = 0.0
    expert_imbalance: float = 1.0
    """Achieved bytes/s per rank of ZeRO's gathers and reduce-scatters (0: the links' ring rate)."""
    pipeline_rate: float = 0.0
    """Achieved bytes/s of one device's stage-to-stage transfers (0: the links' rate)."""
    collectives: str = "links"
    """``measured``: a layout's collectives priced by the kernels' measured curves where they cover its links
    (``kernels.collectives``); ``links``: alpha-beta at the links' rates (``Assumptions.collectives``)."""


SEED_CHOICES = Choices()

UPDATE_TERMS = ("compute_time", "exposed_communication_time", "synchronization_time", "extra_time")
"""The :class:`Figures` that add up to ``update_time``, in order; ``explain`` prints the sum
from this list, so a new term of the update is declared here and in :func:`evaluate` only."""


class Bottleneck(IntEnum):
    """The largest term of the update time."""

    COMPUTE = 0
    INTRA_NODE_LINK = 1
    INTER_NODE_LINK = 2
    SYNCHRONIZATION = 3

    @property
    def label(self) -> str:
        """``"inter-node link"``: how results and tables name it."""
        return self.name.lower().replace("_node_", "-node ").replace("_", " ")


BOTTLENECKS = tuple(b.label for b in Bottleneck)
"""Labels of :class:`Bottleneck`, by code."""


class Buckets(NamedTuple):
    """How the overlap model cut the gradient (DDP buckets), for :func:`explain`.

    ``number`` buckets of ``size`` bytes, the last one ``last_size``;
    ``time`` and ``last_time`` are one bucket's AllReduce over both stages.
    Without overlap the gradient is one bucket.
    """

    number: Num
    size: Num
    last_size: Num
    time: Num
    last_time: Num


class Figures(NamedTuple):
    """Every figure of one layout (floats) or many (arrays), in canonical SI units.

    Seconds, bytes, dollars; ratios as plain numbers. ``inter_algorithm`` is the
    index into :data:`~mlsysim.physics.collectives.ALGORITHMS` of the algorithm
    used across nodes; ``fits`` is whether the memory fits, and is True where
    the device memory is unknown (nothing is excluded for it).

    The fields are what :func:`evaluate` computes; the breakdown of the update
    (shares, the communication overhead, the hidden communication, the
    bottleneck) are properties derived from them when read, so a plan, which
    ranks by training time and cost, never pays for them.
    """

    n_devices: Num
    gradient_bytes: Num
    intra_bytes: Num
    inter_bytes: Num
    intra_time: Num
    inter_time: Num
    communication_time: Num
    exposed_communication_time: Num
    synchronization_time: Num
    compute_time: Num
    update_time: Num
    speedup: Num
    efficiency: Num
    global_batch: Num
    training_time: Num
    cost: Num
    memory_per_device: Num
    device_memory: Num
    fits: bool | Array
    inter_algorithm: int | Array
    intra_cost: StageCost
    inter_cost: StageCost
    buckets: Buckets
    # the opt-in costs of :func:`_extra_costs` (0 by default)
    optimizer_time: Num = 0.0
    interference_time: Num = 0.0
    bucket_copy_time: Num = 0.0
    first_bucket_time: Num = 0.0
    extra_time: Num = 0.0
    # the whole run of :func:`_whole_run` (NaN where not modeled; seconds, bytes, joules,
    # kg CO2e, USD)
    job_mtbf: Num = math.nan
    checkpoint_size: Num = math.nan
    checkpoint_time: Num = math.nan
    checkpoint_interval: Num = math.nan
    checkpoint_overhead: Num = math.nan
    rework_time: Num = math.nan
    restart_overhead: Num = math.nan
    interruptions: Num = math.nan
    goodput: Num = math.nan
    wall_clock_time: Num = math.nan
    energy: Num = math.nan
    emissions: Num = math.nan
    energy_cost: Num = math.nan
    total_cost: Num = math.nan
    update_power: Num = math.nan  # a device's mean power over an update (W), for explain
    # a parallel layout's terms (:func:`evaluate_layout`); NaN on the data-parallel model
    tensor_parallel_time: Num = math.nan
    context_parallel_time: Num = math.nan
    expert_parallel_time: Num = math.nan
    pipeline_transfer_time: Num = math.nan
    sharding_time: Num = math.nan
    data_parallel_time: Num = math.nan
    bubble_time: Num = math.nan
    bubble_fraction: Num = math.nan
    tensor_ranks: Num = math.nan
    pipeline_stages: Num = math.nan
    data_parallel: Num = math.nan
    state_memory: Num = math.nan
    stage_activation_memory: Num = math.nan
    gather_buffer_memory: Num = math.nan
    layout_valid: bool | Array = True
    layout: LayoutFigures | None = None
    # the job's model FLOPs per second per device over the peak (NaN where F or P is unknown)
    achieved_mfu: Num = math.nan

    @property
    def hidden_communication_time(self) -> Num:
        """communication_time - exposed_communication_time (under the backward pass)."""
        return self.communication_time - self.exposed_communication_time

    @property
    def communication_overhead(self) -> Num:
        """communication_time / compute_time."""
        return self.communication_time / self.compute_time

    @property
    def compute_share(self) -> Num:
        """compute_time / update_time."""
        return self.compute_time / self.update_time

    @property
    def communication_share(self) -> Num:
        """exposed_communication_time / update_time."""
        return self.exposed_communication_time / self.update_time

    @property
    def synchronization_share(self) -> Num:
        """synchronization_time / update_time."""
        return self.synchronization_time / self.update_time

    @property
    def extra_share(self) -> Num:
        """extra_time / update_time (the opt-in costs' share)."""
        return self.extra_time / self.update_time

    @property
    def bottleneck(self) -> int | Array:
        """The :class:`Bottleneck` code of the largest term of the update time (see :func:`_bottleneck`)."""
        return _bottleneck(
            self.compute_time,
            self.intra_time,
            self.inter_time,
            self.communication_time,
            self.exposed_communication_time,
            self.synchronization_time,
        )


def _inter_costs(
    x: Inputs, c: Choices, message_bytes: Num
) -> tuple[StageCost, int | Array]:
    """The inter-node stage cost and the index of the algorithm used (an array under ``auto``)."""
    bandwidth = x.inter_bandwidth * x.inter_transport * c.inter_efficiency
    if c.algorithm != "auto":
        cost = inter_node_cost(
            c.algorithm, x.devices_per_node, x.nodes, bandwidth, x.nics_per_node, x.inter_latency
        )
        return cost, ALGORITHMS.index(c.algorithm)
    costs = [
        inter_node_cost(
            name, x.devices_per_node, x.nodes, bandwidth, x.nics_per_node, x.inter_latency
        )
        for name in ALGORITHMS
    ]
    times = [stage_time(message_bytes, cost) for cost in costs]
    if not is_array(*times, *(v for cost in costs for v in cost)):
        best = min(range(len(ALGORITHMS)), key=lambda i: times[i])
        return costs[best], best
    best_codes = np.argmin(np.broadcast_arrays(*times), axis=0)
    picked = StageCost(
        *(
            np.choose(best_codes, np.broadcast_arrays(*(cost[part] for cost in costs)))
            for part in range(3)
        )
    )
    return picked, best_codes


def evaluate(x: Inputs, c: Choices = SEED_CHOICES, kernels: KernelConstants | None = None) -> Figures:
    """All result figures of one layout (floats) or many (arrays), in canonical units.

    The seed equations, with the opt-in terms at their neutral values
    (efficiency 1, latency 0, one NIC, no overlap, no sync cost):

        n = d N;  G_c = G z (z = 1.5 under ZeRO-3, else 1)
        intra_bytes = G_c f(d);  intra_time = L_i + intra_bytes / (e_i B_i)
        inter_bytes = G_c v_o;   inter_time = L_o + inter_bytes / rate_o
        communication_time = intra_time + inter_time
        compute_time = A T1
        update_time = compute_time + exposed_communication + synchronization + extra
        speedup = n (compute_time + t_opt) / update_time;  efficiency = speedup / n
        training_time = T_train / speedup;  cost = hours(training_time) N rate

    (``extra`` and ``t_opt``: the opt-in costs of :func:`_extra_costs`, 0 by default.)
    The breakdown of the update (shares, bottleneck) is derived by :class:`Figures`
    when read. A parallel layout (any of ``tensor_parallel``, ``pipeline_parallel``,
    ``pipeline_chunks``, ``shard_group``, ``sequence_parallel`` given) is priced by
    :func:`evaluate_layout` instead.
    """
    if _layout_priced(x, c):
        return _with_mfu(x, _whole_run(x, c, evaluate_layout(x, c, kernels)))
    return _with_mfu(x, _evaluate_data_parallel(x, c))


def _layout_priced(x: Inputs, c: Choices) -> bool:
    """Whether the layout model prices the update: a layout input is given, or a ZeRO stage is
    (sharded data parallelism is priced per layer whether or not t or p is given) for a
    workload whose layers are known. A ZeRO stage on a workload without layers keeps the
    data-parallel rule (ZeRO-3: 1.5x the AllReduce's bytes), said in the notes."""
    if _layout_given(x):
        return True
    if not c.zero_stage:
        return False
    layers = x.layers
    return bool(layers == layers) if type(layers) is float else bool(np.all(np.asarray(layers) == layers))


def _with_mfu(x: Inputs, f: Figures) -> Figures:
    """``f`` with the job's achieved MFU where the model FLOPs and the peak are known:

        MFU = F B / (T n P)   (F model FLOPs per sample, B the global batch, T the update, n devices)

    (Chowdhery et al. 2022, "PaLM", appendix B: recomputation is not counted as model FLOPs.)
    """
    peak, flops = x.peak_flops, x.flops_per_sample
    if type(peak) is float and (peak != peak or flops != flops):
        return f
    return f._replace(achieved_mfu=flops * f.global_batch / (f.update_time * f.n_devices * peak))


def _evaluate_data_parallel(x: Inputs, c: Choices) -> Figures:
    """:func:`evaluate` of the data-parallel model (no layout input, no ZeRO stage on a shaped workload)."""
    d, big_n = x.devices_per_node, x.nodes
    n = d * big_n
    g = x.gradient_bytes * communication_volume_factor(c.zero_stage)

    if c.overlap:
        count, bucket, last = bucket_layout(g, c.bucket_size)
        message = bucket
    else:
        count, bucket, last = 1.0, g, g
        message = g

    intra_cost = intra_node_cost(d, x.intra_bandwidth * c.intra_efficiency, x.intra_latency)
    inter_cost, inter_algorithm = _inter_costs(x, c, message)

    intra_bytes = g * intra_cost.volume
    inter_bytes = g * inter_cost.volume
    intra_time = count * intra_cost.startup + intra_bytes / intra_cost.rate
    inter_time = count * inter_cost.startup + inter_bytes / inter_cost.rate
    communication_time = intra_time + inter_time

    compute_time = x.accumulation_steps * x.step_time
    if c.overlap:
        bucket_time = stage_time(bucket, intra_cost) + stage_time(bucket, inter_cost)
        last_bucket_time = stage_time(last, intra_cost) + stage_time(last, inter_cost)
        exposed = exposed_communication(
            communication_time,
            bucket_time,
            last_bucket_time,
            c.backward_fraction * x.step_time,
            count,
            bucket / g,
            last / g,
        )
    else:
        bucket_time = last_bucket_time = exposed = communication_time
    synchronization = _straggler(x, c, n) + update_overhead(n, c.update_overhead)
    extra = _extra_costs(x, c, n, g, intra_cost, inter_cost, communication_time - exposed)
    if extra is None:  # every opt-in cost at its neutral value: each term would add 0
        update_time = compute_time + exposed + synchronization  # the UPDATE_TERMS
        useful_time = compute_time
        extra = _NO_EXTRAS
    else:
        communication_time = communication_time + extra.first_bucket_time
        exposed = exposed + extra.first_bucket_time
        update_time = compute_time + exposed + synchronization + extra.extra_time
        useful_time = compute_time + extra.optimizer_time

    speedup = n * useful_time / update_time
    training_time = x.training_time / speedup
    memory = training_state_bytes(x.parameters, c.zero_stage, n) + x.activation_memory
    unknown_memory = x.device_memory != x.device_memory

    # positional, in the order of Figures (~2 us less than 28 keywords and 30 defaults bound
    # by name); a field added to Figures is placed here at its place or left to its default
    # at the end (_NEUTRAL_TAIL): Figures._make refuses a count that does not match
    figures = Figures._make((
        n,  # n_devices
        x.gradient_bytes,
        intra_bytes,
        inter_bytes,
        intra_time,
        inter_time,
        communication_time,
        exposed,  # exposed_communication_time
        synchronization,  # synchronization_time
        compute_time,
        update_time,
        speedup,
        speedup / n,  # efficiency
        x.per_device_batch * n * x.accumulation_steps,  # global_batch
        training_time,
        training_time / 3600.0 * big_n * x.node_hour_rate,  # cost
        memory,  # memory_per_device
        x.device_memory,
        (memory <= x.device_memory) | unknown_memory,  # fits
        inter_algorithm,
        intra_cost,
        inter_cost,
        Buckets(count, bucket, last, bucket_time, last_bucket_time),
        *extra,  # optimizer_time, interference_time, bucket_copy_time, first_bucket_time, extra_time
        *_NEUTRAL_TAIL,  # the whole run's and a layout's figures, computed elsewhere
    ))
    return _whole_run(x, c, figures)


def _straggler(x: Inputs, c: Choices, n: Num) -> Num:
    """The straggler wait: proportional variation only, or with absolute host jitter.

    Without either (the seed) the wait of one layout is 0 exactly (c = 0 times finite
    figures), returned without evaluating the square roots.
    """
    if not c.straggler_cv and not c.host_jitter and type(n) is float and type(x.step_time) is float:
        return 0.0
    if c.host_jitter:
        return jittered_straggler_delay(
            x.step_time, x.accumulation_steps, n, c.straggler_cv, c.host_jitter * x.input_pipeline
        )
    return straggler_delay(x.step_time, x.accumulation_steps, n, c.straggler_cv)


class ExtraCosts(NamedTuple):
    """The opt-in per-update costs of :func:`_extra_costs`, in seconds."""

    optimizer_time: Num = 0.0
    interference_time: Num = 0.0
    bucket_copy_time: Num = 0.0
    first_bucket_time: Num = 0.0
    extra_time: Num = 0.0


_NO_EXTRAS = ExtraCosts()

_DATA_PARALLEL_FIELDS = Figures._fields.index("optimizer_time") + len(ExtraCosts._fields)
_NEUTRAL_TAIL: tuple[Any, ...] = tuple(
    Figures._field_defaults[name] for name in Figures._fields[_DATA_PARALLEL_FIELDS:]
)
"""The defaults of the :class:`Figures` after the opt-in costs (whole run, layout):
what :func:`evaluate` leaves to :func:`_whole_run` and :func:`evaluate_layout`."""


def _extra_costs(
    x: Inputs,
    c: Choices,
    n: Num,
    g: Num,
    intra_cost: StageCost,
    inter_cost: StageCost,
    hidden: Num,
) -> ExtraCosts | None:
    """The opt-in per-update costs beyond the seed (each 0 at its neutral input):

        optimizer_time    = t_opt = optimizer_step_time + P beta / B_mem (once per update)
        interference_time = s x hidden communication (compute slowed beside it)
        bucket_copy_time  = 4 G / B_mem (DDP copies gradients into buckets and back)
        first_bucket_time = L_intra + L_inter (DDP's capped first bucket: one more
                            collective; exposed without overlap, hidden with it)
        extra_time        = optimizer_time + interference_time + bucket_copy_time

    None when every one is neutral (no optimizer input, no interference, no DDP
    copies or first bucket): adding zeros would change no figure.
    """
    first_bucket = c.first_bucket_size and not c.overlap
    if (
        not (c.interference or c.bucket_copies or first_bucket)
        and type(x.optimizer_step_time) is float
        and type(x.optimizer_bytes) is float
        and not x.optimizer_step_time
        and not x.optimizer_bytes
    ):
        return None
    distributed = n > 1
    optimizer = x.optimizer_step_time + optimizer_step_time(
        x.parameters, x.optimizer_bytes, x.memory_bandwidth
    )
    interference = interference_delay(hidden, c.interference)
    copies = 4.0 * x.gradient_bytes / x.memory_bandwidth * distributed if c.bucket_copies else 0.0
    first: Num = 0.0
    if first_bucket:
        startup = intra_cost.startup + inter_cost.startup
        first = where(g > c.first_bucket_size, startup, 0.0) * distributed
    return ExtraCosts(optimizer, interference, copies, first, optimizer + interference + copies)


def _bottleneck(
    compute: Num, intra: Num, inter: Num, total: Num, exposed: Num, sync: Num
) -> int | Array:
    """The :class:`Bottleneck` code (an int, or an array of them) of the largest term of the update time.

    Exposed communication is split between the two links in proportion to
    their share of the communication time.
    """
    if not is_array(compute, intra, inter, total, exposed, sync):
        share = exposed / total if total > 0 else 0.0
        best, top = 0, compute  # the first of equal terms wins, as argmax
        for code, term in ((1, intra * share), (2, inter * share), (3, sync)):
            if term > top:
                best, top = code, term
        return best
    share = where(total > 0, exposed / where(total > 0, total, 1.0), 0.0)
    return _argmax_first((compute, intra * share, inter * share, sync))


def _argmax_first(terms: tuple[Num, ...]) -> Array:
    """Index of the largest of several broadcastable arrays, the first on ties (as argmax).

    A chain of comparisons: ~5x faster than ``np.argmax`` over stacked arrays on
    large sweeps, with the same answer.
    """
    top = terms[0]
    best = np.zeros(np.broadcast_shapes(*(np.shape(t) for t in terms)), dtype=np.intp)
    for index, term in enumerate(terms[1:], 1):
        better = term > top
        best[np.broadcast_to(better, best.shape)] = index
        top = np.maximum(top, term)
    return best


def _whole_run(x: Inputs, c: Choices, f: Figures) -> Figures:
    """The whole run beyond one update: failures, checkpoints, goodput, energy, emissions, cost.

    docs/whole_run.md ("How the terms enter a scenario"); the formulas are those of
    :mod:`mlsysim.physics.reliability` (Young 1974, Daly 2006) and
    :mod:`mlsysim.physics.energy` (Patterson et al. 2021). With ``T_s`` the
    failure-free ``training_time``, ``n`` devices on ``N`` nodes, ``psi`` parameters:

        lambda = failure_rate (per device; a job's rate / failure_rate_devices), else the
            assumptions' rate
        failures modeled where lambda > 0 and checkpoint_bandwidth and restart_time are given
        M = 1 / (lambda n);  S = 14 psi;  delta = S / (w B_ckpt)  (w = N when ZeRO shards
            the state, else min(N, ceil(t p / g)): the nodes of one replica, each its shards)
        tau = checkpoint_interval, else Daly's optimum (delta, M)
        T_w = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau;  G = T_s / T_w
        T_ckpt, T_rework, T_restart, N_f: Daly's terms (physics.reliability.overheads)
        E = PUE n ((T_s + T_rework) P_update + (T_ckpt + T_restart) P_idle)
        P_update = (P t_busy + P_idle (t_exposed + t_sync + t_bubble)) / update_time
            (P = device_power, P_idle = idle_power; without idle_power every state at P:
            the published convention)
        emissions = E I;  energy_cost = E price
        total_cost = T_w N node_hour_rate + energy_cost  (the terms whose price is given)

    Without failures ``T_w`` is ``T_s`` in the energy; the failure figures stay NaN.
    Every figure of the update (and ``training_time``, ``cost``) is unchanged: with no
    whole-run input the figures are returned as they are.
    """
    rate, power, given_price = x.failure_rate, x.device_power, x.energy_price
    if type(rate) is float and type(power) is float and power != power:  # one layout, no power
        if not c.failure_rate and rate != rate:
            return f  # no failure rate and no device power: nothing of the whole run to compute
        bandwidth, restart = x.checkpoint_bandwidth, x.restart_time
        if (
            type(bandwidth) is float
            and type(restart) is float
            and not ((rate if rate == rate else c.failure_rate) > 0 and bandwidth == bandwidth and restart == restart)
        ):
            # a failure rate (the realistic assumptions') without what a failure costs: failures
            # are not modeled, and without power every whole-run figure is NaN, as in ``f``
            return f
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _whole_run_figures(x, c, f, rate, power, given_price)


def _whole_run_figures(
    x: Inputs, c: Choices, f: Figures, rate: Num, power: Num, price: Num
) -> Figures:
    n, t_s = f.n_devices, f.training_time
    observed = x.failure_rate_devices  # a job's rate: per device over the devices it was seen on
    rate = where(observed == observed, rate / observed, rate)
    rate = where(rate == rate, rate, c.failure_rate)
    on = (rate > 0) & (x.checkpoint_bandwidth == x.checkpoint_bandwidth) & (
        x.restart_time == x.restart_time
    )
    nan = math.nan
    mtbf: Num = nan
    size: Num = nan
    delta: Num = nan
    tau: Num = nan
    ckpt: Num = nan
    rework: Num = nan
    restarts: Num = nan
    failures: Num = nan
    goodput: Num = nan
    t_w: Num = nan
    if is_array(on) or on:
        size = where(on, reliability.checkpoint_size(x.parameters), nan)
        terms = reliability.run_terms(
            t_s,
            where(on, rate, nan),
            n,
            size,
            x.checkpoint_bandwidth,
            reliability.checkpoint_writers(
                x.nodes,
                x.devices_per_node,
                _or(x.tensor_parallel, 1.0) * _or(x.pipeline_parallel, 1.0),
                bool(c.zero_stage),
            ),
            x.restart_time,
            where(on, x.checkpoint_interval, nan),
        )
        mtbf, delta, tau = terms.mtbf, terms.checkpoint_time, terms.interval
        ckpt, rework, restarts, failures = (
            terms.checkpoints, terms.rework, terms.restarts, terms.failures
        )
        t_w, goodput = terms.wall_time, terms.goodput
    wall = where(on, t_w, t_s)
    energy: Num = nan
    emitted: Num = nan
    energy_cost: Num = nan
    update_power: Num = nan
    if is_array(power) or power == power:
        lost = where(on, rework, 0.0)
        waiting = where(on, ckpt + restarts, 0.0)
        # every state at device_power (the published convention) unless idle_power is given:
        # then the update's exposed communication and synchronization draw it
        idle = x.idle_power
        given_idle = idle == idle
        idle = where(given_idle, idle, power)
        # the pipeline's bubble is a wait too (docs/whole_run.md): the device is idle in it
        bubble = where(f.bubble_time == f.bubble_time, f.bubble_time, 0.0)
        waits = f.synchronization_time + bubble
        busy = f.update_time - f.exposed_communication_time - waits
        update_power = where(
            given_idle,
            energy_mod.average_device_power(
                power, idle, idle, busy, f.exposed_communication_time, waits
            ),
            power,
        )
        energy = energy_mod.run_energy(n, t_s, lost, waiting, update_power, idle, x.pue)
        emitted = energy_mod.emissions(energy, x.carbon_intensity)
        energy_cost = energy_mod.energy_cost(energy, price)
    node_cost = wall / 3600.0 * x.nodes * x.node_hour_rate
    priced = (node_cost == node_cost) | (energy_cost == energy_cost)
    total = where(node_cost == node_cost, node_cost, 0.0) + where(
        energy_cost == energy_cost, energy_cost, 0.0
    )
    total = where(priced & (on | (energy_cost == energy_cost)), total, nan)
    return f._replace(
        job_mtbf=mtbf,
        checkpoint_size=size,
        checkpoint_time=delta,
        checkpoint_interval=tau,
        checkpoint_overhead=ckpt,
        rework_time=rework,
        restart_overhead=restarts,
        interruptions=failures,
        goodput=goodput,
        wall_clock_time=where(on, t_w, nan),
        energy=energy,
        emissions=emitted,
        energy_cost=energy_cost,
        total_cost=total,
        update_power=update_power,
    )
# -- parallel layouts (tensor, pipeline, sharded data parallelism) -------------------------

LAYOUT_INPUTS = (
    "tensor_parallel",
    "pipeline_parallel",
    "pipeline_chunks",
    "shard_group",
    "sequence_parallel",
    "first_stage_layers",
    "last_stage_layers",
    "context_parallel",
    "expert_parallel",
    "expert_tensor_parallel",
)
"""The :class:`Inputs` that switch on :func:`evaluate_layout` when any is given (not NaN);
a ZeRO stage does too, on a workload with layers (:func:`_layout_priced`). Not
``flash_attention``: the attention kernels are no layout (the data-parallel model reads
them too, in the activations), and their default is on."""

FUSED_ATTENTION_DEFAULT = 1.0
"""``flash_attention`` when not given (NaN): fused attention kernels, on. Every training stack
since 2023 runs them by default (:data:`mlsysim.engine.inputs.defaults.DEFAULTS`, the table of
defaults with their sources)."""


def fused_attention(value: Num) -> Num:
    """1 where the attention kernels are fused (``flash_attention`` given 1, or not given), else 0."""
    return _or(value, FUSED_ATTENTION_DEFAULT)


_layout_values = attrgetter(*LAYOUT_INPUTS)


def _layout_given(x: Inputs) -> bool:
    """Whether a layout input is given: in every row of a sweep, or in none.

    A sweep whose rows mix the two models (``--axis tensor_parallel=none,2``) is refused:
    a row without a layout input is the data-parallel model, which the layout model with
    t = p = 1 does not reproduce.
    """
    values = _layout_values(x)
    for v in values:  # one layout, all floats: a plain loop (the solve's path)
        if type(v) is not float:
            break  # an array: the sweep's path below
        if v == v:
            return True
    else:
        return False
    given = np.zeros((), dtype=bool)
    for v in values:
        given = given | (np.asarray(v) == np.asarray(v))
    if bool(given.all()):
        return True
    if not given.any():
        return False
    from mlsysim.core.exceptions import InputError

    raise InputError(
        f"sweep: some rows give a parallel layout ({', '.join(LAYOUT_INPUTS)}) and others none; "
        "give 1 instead of none on a layout axis",
        field="tensor_parallel",
    )


def _or(value: Num, default: Num) -> Num:
    """``value``, or ``default`` where it is not given (NaN)."""
    return where(value == value, value, default)


def _modules(code: Num) -> tuple[str, ...]:
    """The modules of a ``recompute_modules_code`` (NaN: none given, the default)."""
    number = _scalar_mode(code, "recompute_modules")
    if number != number:
        return ()
    return tuple(m for i, m in enumerate(RECOMPUTE_MODULES) if int(number) >> i & 1)


def _scalar_mode(value: Num, name: str) -> float:
    """A mode input that must be one value per ``evaluate`` call (a categorical input's number)."""
    if type(value) is float:  # one layout: the value itself
        return value
    values = np.unique(np.asarray(value, dtype=float))
    if values.size != 1:
        raise ValueError(f"{name} must be a single value per evaluate call, got {values}")
    return float(values[0])


_LAYOUT_DERIVED = frozenset({
    "micro_batch", "micro_batches", "zero_stage", "backward_gathers", "data_overlap", "gradient_bytes", "recompute",
    "sequence_parallel", "flash_attention", "algorithm", "pipeline_chunks", "recompute_modules",
})
"""The :class:`~mlsysim.physics.records.Layout` fields :func:`layout_records` derives from inputs of other names
(or the choices); every other Layout field is the :class:`Inputs` attribute of its name."""

_LAYOUT_BY_NAME: Final = tuple(
    (name, Layout._field_defaults[name]) for name in Layout._fields if name not in _LAYOUT_DERIVED
)
"""(name, default) of the Layout fields taken from the Inputs attribute of their name (NaN there: the default)."""


def layout_records(x: Inputs, c: Choices, kernels: KernelConstants | None = None) -> LayoutRecords:
    """The records :func:`~mlsysim.physics.layout.layout_figures` prices a scenario's layout from.

    Shape: the workload's transformer (its mixture of experts and latent attention). Cluster:
    devices = d_node x N, the links with the assumptions' efficiencies (one NIC's ``inter_bandwidth``
    x transport factor x ``inter_efficiency``), latencies, the scale-up domain. Layout: t =
    ``tensor_parallel``, p = ``pipeline_parallel``, v = ``pipeline_chunks`` (1 when not given),
    micro-batch b = ``per_device_batch``, micro-batches m = ``accumulation_steps`` (Megatron's
    semantics), the ZeRO stage, the HSDP ``shard_group`` (0: all of d), uneven stages,
    ``reshard_after_forward`` (FSDP: 0 keeps the gathered parameters for the backward), the
    optimizer's beta bytes per parameter (none without an optimizer); ``algorithm`` ``auto`` prices
    the replicas' AllReduce as a ring. Rates: a measured device step time T1 (one micro-batch of the
    whole model on one device), so t_c = T1 (L_s / L) / t; a step derived from ``mfu`` u (the model FLOPs
    utilisation a run reports) from the model FLOPs, nothing added, t_c = b F (L_s / L) / (t cp u P); a
    step from the operators (neither given) is priced kernel by kernel
    at the layout's own t, b and stage (``matmul_ceiling`` and the operator figures the derivation
    found; :mod:`~mlsysim.physics.operators`); the implementations' achieved rates where the
    assumptions name them (``sharding_rate``, ``pipeline_rate``).
    """
    nan = math.nan
    given_mfu = x.mfu == x.mfu
    derived = given_mfu | (x.matmul_ceiling == x.matmul_ceiling)  # the step time comes from FLOPs or operators
    get = partial(getattr, x)
    shape = ModelShape(
        parameters=x.parameters, layers=x.layers, hidden=x.hidden, heads=x.heads, seq_len=x.seq_len,
        vocab=x.vocab, kv_heads=x.kv_heads, ffn_hidden=x.ffn_hidden, gated_mlp=x.gated_mlp,
        head_dim=x.head_dim, active_parameters=x.active_parameters, expert_parameters=_or(x.expert_parameters, 0.0),
        mtp_layers=x.mtp_layers,
        mla=multi_head_latent(get), moe=mixture_of_experts(get),
    )
    cluster = Cluster(
        peak_flops=x.peak_flops, memory_bandwidth=x.memory_bandwidth, compute_units=x.compute_units,
        devices=x.devices_per_node * x.nodes, devices_per_node=x.devices_per_node,
        intra_bandwidth=x.intra_bandwidth * c.intra_efficiency,
        nic_bandwidth=x.inter_bandwidth * x.inter_transport * c.inter_efficiency, nics_per_node=x.nics_per_node,
        intra_latency=x.intra_latency, inter_latency=x.inter_latency, scale_up_domain=x.scale_up_domain,
        power_limit=x.power_limit,
    )
    layout = Layout(
        **{name: _or(getattr(x, name), default) for name, default in _LAYOUT_BY_NAME},
        pipeline_chunks=_or(x.pipeline_chunks, _or(x.layout_chunks, 1.0)),  # given, or a custom layout's
        micro_batch=x.per_device_batch, micro_batches=x.accumulation_steps, zero_stage=float(c.zero_stage),
        backward_gathers=_or(x.reshard_after_forward, 1.0), data_overlap=1.0 if c.overlap else 0.0,
        gradient_bytes=x.gradient_bytes / x.parameters,
        recompute=RECOMPUTE_MODES[int(_scalar_mode(x.recompute_code, "recompute"))],
        recompute_modules=_modules(x.recompute_modules_code),
        sequence_parallel=_mode(x.sequence_parallel), flash_attention=_mode(fused_attention(x.flash_attention)),  # type: ignore[arg-type]
        algorithm=c.algorithm,
    )
    rates = Rates(
        device_step_time=where(derived, nan, x.step_time), math_efficiency=where(given_mfu, x.mfu, 1.0),
        matmul_ceiling=where(given_mfu, nan, x.matmul_ceiling),  # a given mfu prices from the FLOPs
        matmul_peak=x.matmul_peak, attention_ceiling=x.attention_ceiling, attention_peak=x.attention_peak,
        expert_ceiling=x.expert_ceiling, expert_imbalance=c.expert_imbalance,
        sharding_rate=c.sharding_rate if c.sharding_rate > 0 else nan,
        pipeline_rate=c.pipeline_rate if c.pipeline_rate > 0 else nan, kernels=measured_kernels(kernels, c),
    )
    return LayoutRecords(shape, cluster, layout, rates)


def measured_kernels(kernels: KernelConstants | None, c: Choices) -> KernelConstants | None:
    """The device's kernels as the layout prices them: with the measured collective curves only where the
    assumptions ask for them (``collectives`` ``measured``); without, every collective is alpha-beta."""
    if kernels is None or kernels.collectives is None or c.collectives == "measured":
        return kernels
    return kernels._replace(collectives=None)


def multi_head_latent(get: Callable[[str], Num]) -> MultiHeadLatent | None:
    """Multi-head latent attention's widths from model numbers by name (``get``), or None for multi-head or
    grouped-query attention."""
    rank = get("kv_lora_rank")
    if type(rank) is float and rank != rank:
        return None
    return MultiHeadLatent(get("q_lora_rank"), rank, get("qk_rope_head_dim"), get("qk_nope_head_dim"),
                           get("v_head_dim"))


def mixture_of_experts(get: Callable[[str], Num]) -> MixtureOfExperts | None:
    """The mixture of experts' structure from model numbers by name (``get``), or None for a dense model."""
    if not _scalar_mode(get("experts"), "experts") > 0:
        return None
    return MixtureOfExperts(
        share=get("moe_share"), experts=get("experts"), top_k=get("experts_per_token"),
        width=get("expert_ffn_hidden"), shared=_or(get("shared_experts"), 0.0),
        shared_width=get("shared_expert_ffn_hidden"),
    )


LAYOUT_MODES = ("sequence_parallel", "flash_attention")
"""The on/off modes of :class:`~mlsysim.physics.records.Layout` a sweep's rows may mix."""


def _mode(value: Num) -> Num:
    """A mode input as the layout takes it: on or off (NaN, not given: off); an array of rows as 0/1."""
    flag = _or(value, 0.0)
    return np.asarray(flag) > 0 if is_array(flag) else bool(flag)


def _layout_of(records: LayoutRecords) -> LayoutFigures:
    """:func:`layout_figures`, with its on/off modes (sequence parallelism, fused attention) per
    element where one is an array: the layout evaluated with the mode on and off, picked row by row
    (the picked figures' records carry the rows' modes as the array)."""
    for name in LAYOUT_MODES:
        chosen = getattr(records.layout, name)
        if is_array(chosen):
            on = _layout_of(records._replace(layout=with_fields(records.layout, {name: True})))
            off = _layout_of(records._replace(layout=with_fields(records.layout, {name: False})))

            def pick(a: Any, b: Any, chosen: Any = chosen) -> Any:
                if a is None or isinstance(a, (LayoutRecords, Experts)):
                    return a
                if isinstance(a, tuple):
                    return type(a)(*(pick(u, v) for u, v in zip(a, b, strict=True)))
                return np.where(chosen, a, b)

            picked: LayoutFigures = pick(on, off)
            return picked._replace(records=records)
    return layout_figures(*records)


def evaluate_layout(x: Inputs, c: Choices = SEED_CHOICES, kernels: KernelConstants | None = None) -> Figures:
    """All figures of a parallel layout: :func:`~mlsysim.physics.layout.layout_figures`, as :class:`Figures`.

    The update (docs/parallelism.md), plus the scenario's synchronisation cost:

        T = m t_c + m t_tp + (p-1)/v (t_c + t_tp) + T_p2p + m T_zero3 + T_data + T_opt + sync
        compute_time = m t_c;  exposed communication = m t_tp + T_p2p + m T_zero3 + T_data
        extra_time = bubble + T_opt (+ a given optimizer_step_time x psi'/N)
        sync = the straggler wait of n devices over m micro-steps of t_c + update overhead
        speedup = d (m T1 + t_opt,1) / T (samples per second over one device's; t_opt,1 the
                  whole model's optimizer step on one device);  efficiency = speedup / n
        global_batch = b m d;  memory = state + activations + gather buffers (first stage)

    ``layout_valid`` is False where the layout breaks a rule
    (:func:`~mlsysim.physics.layout.layout_mask`: t p divides the devices, heads by
    t, a layer per chunk, m a multiple of p when interleaved, ...): a plan drops such layouts as infeasible (its
    ``layout_rules`` constraint); a single scenario refuses them (:mod:`mlsysim.engine.inputs.rules`).
    The seed's link figures are kept for the record (``intra_bytes``, ``inter_bytes``:
    the gradient AllReduce of the seed); ``intra_time`` and ``inter_time`` split the
    exposed communication by link: each term inside a node when its group fits in one
    (tensor: t <= g; stage transfers: t p <= g; ZeRO-3's gathers: the shard group;
    the gradient sync: the data-parallel group, d <= g / t), across nodes otherwise.
    """
    records = layout_records(x, c, kernels)
    f = _layout_of(records)
    q, lay = f.terms, records.layout
    t, p = lay.tensor_parallel, lay.pipeline_parallel
    g, big_n, m = x.devices_per_node, x.nodes, x.accumulation_steps
    n = g * big_n
    d = f.data_parallel
    psi_share = where(c.zero_stage >= 1, 1.0 / q.sharding.group, 1.0) * q.sharding.parameters / x.parameters
    given_optimizer = x.optimizer_step_time * psi_share
    if c.host_jitter:
        wait = jittered_straggler_delay(
            q.compute.micro_batch_time, m, n, c.straggler_cv, c.host_jitter * x.input_pipeline
        )
    else:
        wait = straggler_delay(q.compute.micro_batch_time, m, n, c.straggler_cv)
    synchronization = wait + update_overhead(n, c.update_overhead)
    exposed = f.tensor_time + f.context_time + f.expert_time + f.pipeline_time + f.sharding_time + f.data_time
    optimizer = f.optimizer_time + given_optimizer
    extra = f.bubble_time + optimizer
    update = f.compute_time + exposed + synchronization + extra
    one_device_optimizer = x.optimizer_step_time + optimizer_step_time(x.parameters, x.optimizer_bytes, x.memory_bandwidth)
    # the job's time: its updates (the one-device run's steps, d m a device per update) at T each
    training_time = x.training_time / (d * (m * x.step_time + one_device_optimizer) / update)
    speedup = d * (m * one_device_reference(x.step_time, f) + one_device_optimizer) / update

    domain = q.stage.domain  # the scale-up domain: the node, or an NVL72 rack of trays
    cp = lay.context_parallel
    ranks_in_node = maximum(1.0, domain / t)  # ranks of a d x cp group in a domain (Megatron order: t, cp, d, p)
    one_domain = big_n * g <= domain
    within_node = (q.sharding.group * q.sharding.replicas <= ranks_in_node) | one_domain
    shard_in_node = (q.sharding.group <= ranks_in_node) | one_domain
    intra = (
        where(t <= domain, f.tensor_time, 0.0)
        + where(t * cp <= domain, f.context_time, 0.0)
        + where(_expert_span(q.experts.experts) <= domain, f.expert_time, 0.0)
        + where(t * cp * p <= domain, f.pipeline_time, 0.0)
        + where(shard_in_node, f.sharding_time, 0.0)
        + where(within_node, f.data_time, 0.0)
    )
    valid: bool | Array = layout_mask(  # type: ignore[assignment]
        devices=n, tensor_parallel=t, pipeline_parallel=p, heads=x.heads, layers=x.layers,
        micro_batches=m, pipeline_chunks=lay.pipeline_chunks, shard_group=lay.shard_group,
        first_stage_layers=x.first_stage_layers, last_stage_layers=x.last_stage_layers,
        layout_stages=x.layout_stages, layout_ranks=x.layout_ranks, context_parallel=cp, seq_len=x.seq_len, experts=x.experts,
        expert_parallel=lay.expert_parallel, expert_tensor_parallel=lay.expert_tensor_parallel,
    )
    # a given activation_memory (not derived from the shape) replaces the layout's count
    given = (x.activation_memory_per_sample != x.activation_memory_per_sample) & (x.activation_memory > 0)
    activations = where(given, x.activation_memory, f.activation_bytes)
    memory = f.state_bytes + activations + f.buffer_bytes
    unknown_memory = x.device_memory != x.device_memory
    intra_bytes, inter_bytes = _layout_bytes(f, c.zero_stage, t <= g, t * p <= g, shard_in_node, within_node)
    grad = x.gradient_bytes
    intra_cost = intra_node_cost(g, x.intra_bandwidth * c.intra_efficiency, x.intra_latency)
    inter_cost, inter_algorithm = _inter_costs(x, c, grad)
    return Figures(
        gradient_bytes=grad,
        intra_bytes=intra_bytes,
        inter_bytes=inter_bytes,
        device_memory=x.device_memory,
        inter_algorithm=inter_algorithm,
        intra_cost=intra_cost,
        inter_cost=inter_cost,
        buckets=Buckets(1.0, grad, grad, 0.0, 0.0),
        n_devices=n,
        intra_time=intra,
        inter_time=exposed - intra,
        communication_time=exposed + q.data.hidden_time,
        exposed_communication_time=exposed,
        synchronization_time=synchronization,
        compute_time=f.compute_time,
        update_time=update,
        speedup=speedup,
        efficiency=speedup / n,
        global_batch=x.per_device_batch * m * d,
        training_time=training_time,
        cost=training_time / 3600.0 * big_n * x.node_hour_rate,
        memory_per_device=memory,
        fits=(memory <= x.device_memory) | unknown_memory,
        optimizer_time=optimizer,
        interference_time=0.0,
        bucket_copy_time=0.0,
        first_bucket_time=0.0,
        extra_time=extra,
        tensor_parallel_time=f.tensor_time,
        context_parallel_time=where(cp > 1, f.context_time, math.nan),  # a row only with context parallelism
        expert_parallel_time=f.expert_time if q.experts.experts is not None else math.nan,  # a row with experts
        pipeline_transfer_time=f.pipeline_time,
        sharding_time=f.sharding_time,
        data_parallel_time=f.data_time,
        bubble_time=f.bubble_time,
        bubble_fraction=f.bubble_time / update,  # a share of the update ((p-1)/(v m) is one of the compute)
        tensor_ranks=t,
        pipeline_stages=p,
        data_parallel=d,
        state_memory=f.state_bytes,
        stage_activation_memory=activations,
        gather_buffer_memory=f.buffer_bytes,
        layout_valid=valid,
        layout=f,
    )


def one_device_reference(step_time: Num, f: LayoutFigures) -> Num:
    """The one-device step the speedup of a layout is measured against:

        T_ref = min(T1, t_c t cp L / L_s)

    T1 the whole model's step on one device; t_c t cp L / L_s the layout's own kernels summed over the
    devices that share one micro-batch (its t x cp ranks, each of its stages' L_s of the L layers). Where
    the layout's kernels do the same work faster than one device running the whole model (a mixture of
    experts' grouped products fed by ep devices' tokens, each expert's weights cast once for all of
    them), one device running those kernels is the reference: the speedup never exceeds n, the
    efficiency never 1, and what the layout's kernels gain shows in the update time and the MFU.
    """
    layout, q = f.records.layout, f.terms
    aggregate = q.compute.micro_batch_time * layout.tensor_parallel * layout.context_parallel * (
        f.records.shape.layers / q.stage.layers
    )
    return where(aggregate < step_time, aggregate, step_time)


def _expert_span(moe: Experts | None) -> Num:
    """Devices one expert-parallel group spans: ep x etp (1 without experts)."""
    return 1.0 if moe is None else moe.parallel * moe.tensor


def _layout_bytes(
    f: LayoutFigures,
    zero_stage: int,
    tp_in_node: Num,
    pp_in_node: Num,
    shard_in_node: Num,
    dp_in_node: Num,
) -> tuple[Num, Num]:
    """Bytes each device sends per update (ring volumes), inside a node and across nodes.

        tensor:   m (L/p) c 2 b (s/cp) h f(t)           (c collectives a layer, f(k) = 2 (k-1)/k)
        context:  m (L/p) n_kv (cp-1) M_kv                (the ring's key/value blocks)
        experts:  m L_moe n_a2a M_a2a (ep-1)/ep           (the all-to-alls; (q-1)/ep of it in the domain)
        pipeline: 2 (v m + p - 1) 2 b s h / t            (stage transfers, p > 1)
        ZeRO-3:   m (L/p) 3 M_l (k-1)/k                  (two gathers and a reduce-scatter a layer)
        data:     2 G (k-1)/k (ZeRO-1/2) + (G/k) f(r)    (G = the device's gradient bytes)

    Each group's bytes count inside a node when the group fits in one, across nodes otherwise
    (ZeRO-3's per-layer traffic by its shard group, the data term by the whole data-parallel group).
    """
    q, shape, lay = f.terms, f.records.shape, f.records.layout
    t, p, v = lay.tensor_parallel, lay.pipeline_parallel, lay.pipeline_chunks
    m, layers_here = lay.micro_batches, q.stage.layers
    k, r = q.sharding.group, q.sharding.replicas
    grad = lay.gradient_bytes * q.sharding.parameters
    cp = lay.context_parallel
    tensor = m * layers_here * q.tensor.collectives * 2.0 * lay.micro_batch * shape.seq_len / cp * shape.hidden * (
        2.0 * (t - 1.0) / t
    )
    context = m * layers_here * kv_passes(lay.recompute) * (cp - 1.0) * q.context.message
    moe = q.experts.experts
    ep = 1.0 if moe is None else moe.parallel
    experts = m * q.experts.moe_layers * all_to_alls_per_layer(lay.recompute) * q.experts.message
    experts_inside = where(ep > 1, experts * q.experts.inside_share, 0.0)
    experts_across = where(ep > 1, experts * q.experts.outside_share, 0.0)
    pipeline = where(p > 1, 2.0 * (v * m + p - 1.0) * q.pipeline.message, 0.0)
    sharding = m * layers_here * 3.0 * (grad / layers_here) * (k - 1.0) / k if zero_stage >= 3 else 0.0 * k
    scatter = 2.0 * grad * (k - 1.0) / k if zero_stage in (1, 2) else 0.0 * k
    data = scatter + grad / k * 2.0 * (r - 1.0) / r
    intra = (
        where(tp_in_node, tensor, 0.0)
        + where(t * cp <= q.stage.domain, context, 0.0)
        + experts_inside
        + where(pp_in_node, pipeline, 0.0)
        + where(shard_in_node, sharding, 0.0)
        + where(dp_in_node, data, 0.0)
    )
    return intra, tensor + context + experts_inside + experts_across + pipeline + sharding + data - intra
