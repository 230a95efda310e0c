"""The three records a training layout is priced from, and the rates its kernels run at.

After Calculon's split of application, execution and system (Isaev et al. 2023, "Calculon:
a Methodology and Tool for High-Level Codesign of Systems and Large Language Models"), the
terms of :mod:`mlsysim.physics.terms` each read:

* :class:`ModelShape`: the transformer being trained (what changes with the model);
* :class:`Cluster`: the devices, their links and their memory (what changes with the machine);
* :class:`Layout`: how the job is spread and run on them (what a plan searches over);

plus :class:`Rates`: how fast the kernels and the frameworks' collectives actually run,
measured or assumed (a profiled step time, a model FLOPs utilisation, the matrix products'
ceilings, an implementation's achieved collective rate).

Each record is a typed named tuple (immutable, cheap to build per solve). Every numeric field is a float for one layout or a numpy array for many (broadcast
together: a sweep and a plan use the same records); the mode fields (``recompute``,
``sequence_parallel``, ``flash_attention``, ``algorithm``) are one value per record.
Canonical SI: bytes, seconds, bytes/s, FLOP/s. NaN means "not given" where a field says so.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, TypeVar

from mlsysim.physics._array import Num


class MultiHeadLatent(NamedTuple):
    """The widths of multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V2", section 2.1): queries
    through a rank ``q_rank`` bottleneck, keys and values through a joint rank ``kv_rank`` one, each head's
    query and key ``nope`` + ``rope`` wide and its value ``value`` wide."""

    q_rank: Num
    kv_rank: Num
    rope: Num
    nope: Num
    value: Num


class MixtureOfExperts(NamedTuple):
    """A mixture of experts' structure (Fedus, Zoph and Shazeer 2022, "Switch Transformers"): ``share`` of
    the layers route every token to ``top_k`` of ``experts`` routed experts of inner width ``width``
    (gated like the dense MLP), beside ``shared`` always-active experts of width ``shared_width`` (NaN:
    ``width``). Where the experts live is the :class:`Layout`'s (expert_parallel, expert_tensor_parallel)."""

    share: Num
    experts: Num
    top_k: Num
    width: Num
    shared: Num = 0.0
    shared_width: Num = math.nan


class ModelShape(NamedTuple):
    """The transformer: its parameter count and its shape (Narayanan et al. 2021's notation: L layers of
    hidden size h, a heads, sequence s, vocabulary V).

    ``kv_heads`` (NaN: a, multi-head attention), ``ffn_hidden`` (NaN: what the parameter count leaves,
    :func:`mlsysim.physics.operators.mlp_width`), ``gated_mlp`` (1: gate and up matrices), ``head_dim``
    (NaN: h / a); ``active_parameters`` the parameters one token uses (NaN: all; a mixture of experts:
    fewer), ``expert_parameters`` those of the routed experts (0: dense); ``mla`` and ``moe`` the latent
    attention's widths and the experts' structure (None: neither).
    """

    parameters: Num
    layers: Num
    hidden: Num
    heads: Num
    seq_len: Num
    vocab: Num = 0.0
    kv_heads: Num = math.nan
    ffn_hidden: Num = math.nan
    gated_mlp: Num = 0.0
    head_dim: Num = math.nan
    active_parameters: Num = math.nan
    expert_parameters: Num = 0.0
    mtp_layers: Num = 0.0
    """D: multi-token-prediction modules on the last stage (:mod:`~mlsysim.physics.multi_token`)."""
    mla: MultiHeadLatent | None = None
    moe: MixtureOfExperts | None = None


class Cluster(NamedTuple):
    """The devices and their links: ``peak_flops`` the dense peak at the gradients' precision,
    ``memory_bandwidth`` the device memory's, ``compute_units`` the SMs (NaN: unknown, no wave
    quantisation); ``devices`` in all, ``devices_per_node`` to a node, a scale-up (NVLink) domain of
    ``scale_up_domain`` devices (NaN: the node; NVL72: 72 over trays of 4); ``intra_bandwidth`` the
    scale-up link per device and direction, ``nic_bandwidth`` one NIC's achieved rate,
    ``nics_per_node`` the node's NICs; the latencies of a step inside a domain and across;
    ``power_limit`` each device's (NaN: its TDP). The defaults are one device on its own (no link is
    used)."""

    peak_flops: Num
    memory_bandwidth: Num
    compute_units: Num = math.nan
    devices: Num = 1.0
    devices_per_node: Num = 1.0
    intra_bandwidth: Num = math.inf
    nic_bandwidth: Num = math.inf
    nics_per_node: Num = 1.0
    intra_latency: Num = 0.0
    inter_latency: Num = 0.0
    scale_up_domain: Num = math.nan
    power_limit: Num = math.nan
    """Each device's power limit, W (NaN: its default, the TDP its kernels were measured at)."""


class Layout(NamedTuple):
    """How the job runs: t, p, v, cp, ep, etp; m micro-batches of b samples a device per update; the ZeRO
    stage and the HSDP ``shard_group`` k (0: all of d); uneven stages; what is recomputed and which kernels
    and overlaps the framework uses; the bytes of a gradient and of the optimizer step per parameter and
    of the casts per operand element (the number formats).

    ``backward_gathers`` (FSDP: 0 keeps the gathered parameters for the backward), ``data_overlap`` (1:
    the gradient sync runs under the last backward), ``tensor_overlap`` (asynchronous tensor parallelism),
    ``expert_overlap`` (DualPipe), ``context_all_gather`` (Llama 3's all-gather instead of a ring),
    ``hierarchical_dispatch`` (DeepEP), ``fused_elementwise`` (torch.compile): 1 on, 0 off.
    ``matmul_bytes``: the linear layers' operand width (2; 1 for FP8), ``cast_bytes``: bytes per operand
    element of the casts to a low-precision format (0 for 16-bit).
    """

    tensor_parallel: Num = 1.0
    pipeline_parallel: Num = 1.0
    pipeline_chunks: Num = 1.0
    context_parallel: Num = 1.0
    expert_parallel: Num = 1.0
    expert_tensor_parallel: Num = 1.0
    micro_batch: Num = 1.0
    micro_batches: Num = 1.0
    zero_stage: Num = 0.0
    shard_group: Num = 0.0
    first_stage_layers: Num = math.nan
    last_stage_layers: Num = math.nan
    layout_stages: Num = math.nan
    """A custom pipeline layout's virtual stages (:mod:`~mlsysim.physics.pipeline_layout`; NaN: none)."""
    layout_ranks: Num = math.nan
    """The pipeline ranks p the custom layout was read at (its stages sit on ranks i mod p)."""
    layout_stage_layers: Num = math.nan
    """The layers of the custom layout's fullest rank (:func:`~mlsysim.physics.pipeline_layout.stage_layers`)."""
    backward_gathers: Num = 1.0
    data_overlap: Num = 1.0
    tensor_overlap: Num = 0.0
    expert_overlap: Num = 0.0
    context_all_gather: Num = 0.0
    hierarchical_dispatch: Num = 0.0
    fused_elementwise: Num = 0.0
    gradient_bytes: Num = 2.0
    optimizer_bytes: Num = 28.0
    cast_bytes: Num = 0.0
    matmul_bytes: Num = 2.0
    recompute: str = "none"
    recompute_modules: tuple[str, ...] = ()
    """What ``selective`` reruns, in Megatron-Core's names (:data:`~mlsysim.physics.activations.RECOMPUTE_MODULES`;
    empty: the attention core alone)."""
    sequence_parallel: bool = False
    """On or off for the whole record (the terms read one value; the records kept with the figures of a
    sweep whose rows mix the two hold the rows' modes as a bool array)."""
    flash_attention: bool = False
    algorithm: str = "ring"


class AttentionPass(NamedTuple):
    """The fitted constants of one direction of the fused attention kernel
    (:func:`mlsysim.physics.attention.fused_attention_time`): the scale a, the loop overhead L_0 and
    the ceiling c of the architecture and format."""

    scale: Num
    loop_overhead: Num
    ceiling: Num


class LinkCurves(NamedTuple):
    """The measured size curves of the cluster's collectives (:mod:`mlsysim.kernels.collectives`: fits on
    published nccl-tests tables, or a user's own), for the links of one registry node and fabric.

    A collective of S bytes over n ranks in scale-up domains of d takes
    (:mod:`mlsysim.physics.collective_curves`; :func:`mlsysim.physics.collectives.curve_time`)

        t(S) = a_0 + a_up h_up + a_out h_out + max(V_up / (e_up B_up), V_out / (e_out B_out)) / fill(x),
        fill(x) = (x / (x + x_h))^g,  x = S / n  (S for a send/recv)

    ``ring_efficiency`` e_up of ring and point-to-point copies on the scale-up link of the node's
    architecture, ``nvls_efficiency`` NVLink SHARP's at the domain's level (NaN: not measured, or no
    NVLink SHARP), ``base_latency`` a_0 and ``step_latency`` a_up of the architecture;
    ``out_efficiency`` e_out and ``out_step_latency`` a_out of the fabric between domains (NaN: no
    fit covers it); ``half_size`` x_h and ``sharpness`` g of the curve. A hierarchical dispatch
    (``hierarchical_dispatch``: DeepEP's normal kernels, HybridEP) is priced by their own fit,
    t = a_d + max(V_up / (e_d,up B_up), V_out / (e_d,out B_out)) (:mod:`mlsysim.physics.expert_dispatch`).

    The curves are for the links at the registry's figures: ``up_rate`` and ``up_latency`` (the node's
    NVLink rate per direction and its step latency), ``out_rate`` and ``out_latency`` (one NIC's rate
    and the fabric's latency). A :class:`Cluster` whose link differs (a rate or latency given by hand,
    or scaled by an efficiency assumption) prices that link's collectives at its own figures with the
    alpha-beta equations (:func:`mlsysim.physics.collectives.measured_links`).
    """

    ring_efficiency: Num
    nvls_efficiency: Num
    base_latency: Num
    step_latency: Num
    out_efficiency: Num
    out_step_latency: Num
    half_size: Num
    sharpness: Num
    up_rate: Num
    up_latency: Num
    out_rate: Num = math.nan
    out_latency: Num = math.nan
    dispatch_efficiency: Num = math.nan
    """e_up of DeepEP's normal (hierarchical) dispatch and combine kernels on the architecture's NVLink
    (:mod:`mlsysim.kernels.dispatch`; NaN: no table covers it)."""
    dispatch_out_efficiency: Num = math.nan
    """e_out of those kernels on the fabric (NaN: none covers it)."""
    dispatch_latency: Num = math.nan
    """a_d: the fixed time of one of those kernels."""
    source: str = ""
    """Which constants, in words (the architecture, level and fabric, and the fits file): for explain."""


class KernelConstants(NamedTuple):
    """How the device's kernels run, measured (:mod:`mlsysim.kernels`: fits on published kernel tables or
    a user's own): what turns an operator's shape into its time.

    Matrix products (:func:`mlsysim.physics.gemm.gemm_time`): ``launch`` t_L and ``fill`` t_F (the
    per-kernel floor), ``epilogue_share`` phi, ``stream_efficiency`` eta (the memory's share a
    streaming product reaches); their ceilings are the :class:`Rates`' ``matmul_ceiling`` and
    ``attention_ceiling``, measured at the device's ``reference_power`` (its TDP, W): under a lower
    :class:`Cluster` ``power_limit`` a compute-bound kernel sustains the share
    (P / P_ref)^(1 / ``power_exponent``) of its rate (:func:`mlsysim.physics.clocks.sustained_fraction`).
    Fused attention (:func:`mlsysim.physics.attention.fused_attention_time`): ``attention_forward``
    and ``attention_backward`` (None: no table measures the format), ``head_overhead`` D_0,
    ``attention_floor`` t_0. Memory-bound kernels (:func:`mlsysim.physics.streaming.memory_kernel_time`):
    ``memory_fraction`` f of the peak bandwidth, ``memory_floor`` t_0.
    """

    launch: Num
    fill: Num
    epilogue_share: Num
    stream_efficiency: Num
    reference_power: Num
    power_exponent: Num
    memory_fraction: Num
    memory_floor: Num
    attention_forward: AttentionPass | None = None
    attention_backward: AttentionPass | None = None
    attention_both: AttentionPass | None = None
    """Where only the two passes together were measured (FlashAttention-2's A100 figures)."""
    head_overhead: Num = math.nan
    attention_floor: Num = math.nan
    sixteen_bit_best: Num = math.nan
    """The best measured 16-bit product's efficiency: the in-training 16-bit ceiling over it is the share of
    their measured rate the compute-bound kernels keep inside a training step (fused attention too)."""
    collectives: LinkCurves | None = None
    """The measured curves of the cluster's collectives (None: every collective priced with the alpha-beta
    equations at the links' rates and latencies)."""


class Rates(NamedTuple):
    """How fast the kernels and collectives run, measured or assumed.

    ``device_step_time`` T1 (NaN: not given): a measured time of one micro-batch's forward and
    backward of the whole model on one device, which replaces the compute model; ``math_efficiency``
    u: the fraction of ``peak_flops`` the step reaches when it is priced from the model FLOPs;
    ``matmul_ceiling`` (NaN: price from the FLOPs at u): the linear layers' products' ceiling, which
    prices the step operator by operator, at ``matmul_peak`` (NaN: the cluster's peak); the attention
    core's and output layer's at ``attention_peak`` and ``attention_ceiling`` (NaN: the peak and the
    matmul ceiling); the routed experts' at ``expert_ceiling`` (NaN: the matmul ceiling) with the
    busiest device's load ``expert_imbalance`` times the mean; ``sharding_rate`` and ``pipeline_rate``
    (NaN: the links' ring rates): achieved bytes/s of ZeRO's collectives and of the stage transfers.
    """

    device_step_time: Num = math.nan
    math_efficiency: Num = 1.0
    matmul_ceiling: Num = math.nan
    matmul_peak: Num = math.nan
    attention_ceiling: Num = math.nan
    attention_peak: Num = math.nan
    expert_ceiling: Num = math.nan
    expert_imbalance: Num = 1.0
    sharding_rate: Num = math.nan
    pipeline_rate: Num = math.nan
    kernels: KernelConstants | None = None
    """The device's measured kernels: a step from the operators is priced kernel by kernel with them."""


class LayoutRecords(NamedTuple):
    """The records one layout (or a grid of them) is priced from."""

    shape: ModelShape
    cluster: Cluster
    layout: Layout
    rates: Rates


_RECORDS = (ModelShape, Cluster, Layout, Rates)


def records_from(**values: object) -> LayoutRecords:
    """The records of flat keyword values, each to the record that declares its name (a convenience for
    scripts and tests: ``records_from(parameters=70e9, layers=80, ..., tensor_parallel=8)``).

    ``moe`` may be a :class:`MixtureOfExperts` (the shape's) or any object with its fields and the
    layout's and rates' expert fields (``parallel``, ``tensor``, ``hierarchical``, ``imbalance``,
    ``ceiling``: the operator model's :class:`~mlsysim.physics.operators.Experts`), which are spread
    to ``expert_parallel``, ``expert_tensor_parallel``, ``hierarchical_dispatch``, ``expert_imbalance``
    and ``expert_ceiling`` unless those are given. An unknown name is refused.
    """
    values = dict(values)
    moe = values.get("moe")
    if moe is not None and not isinstance(moe, MixtureOfExperts):
        values["moe"] = MixtureOfExperts(*(getattr(moe, name) for name in MixtureOfExperts._fields))
        for name, field in (("expert_parallel", "parallel"), ("expert_tensor_parallel", "tensor"),
                            ("hierarchical_dispatch", "hierarchical"), ("expert_imbalance", "imbalance"),
                            ("expert_ceiling", "ceiling")):
            values.setdefault(name, getattr(moe, field))
    parts: list[dict[str, object]] = []
    for record in _RECORDS:
        names = record._fields
        parts.append({name: values.pop(name) for name in list(values) if name in names})
    if values:
        raise TypeError(f"records_from: no record has the field(s) {', '.join(sorted(values))}")
    return LayoutRecords(*(record(**part) for record, part in zip(_RECORDS, parts, strict=True)))


R = TypeVar("R", ModelShape, Cluster, Layout, Rates)


def with_fields(record: R, values: dict[str, Any]) -> R:
    """``record`` with the fields named in ``values`` replaced (a sweep's or a search's rows)."""
    return record._replace(**values)
