"""A whole job from hardware and the model: presets filled, and the inputs derived from them.

A scenario may name a ``node``, a ``fabric`` or an ``accelerator``
(:mod:`mlsysim.engine.inputs.presets`), and may give the job's size and speed as
``training_tokens``/``training_samples`` and ``mfu`` instead of the
one-device ``training_time`` and ``step_time`` of a profile. :func:`resolve`
fills the presets' inputs (an explicit value wins inside one layer; across
layers :mod:`mlsysim.engine.inputs.layers` has already applied "later words win"),
checks that the sources agree, and derives the numeric inputs through
:func:`derive_inputs`: the same function a sweep runs on arrays, so a sweep's
row and the scalar solve of the same layout share every formula:

* ``step_time = b F / (P u)``
  (:func:`mlsysim.physics.compute.step_time_from_flops`) from ``mfu`` u, the
  model FLOPs utilisation as Megatron-LM, NeMo and the PaLM paper report it,
  the workload's model FLOPs per sample F and the accelerator's dense peak P
  at the training precision: nothing added on top (recomputation and the
  element-wise work are inside a measured MFU), so one device achieves MFU u;
* ``training_time = S T1 / b`` with S = ``training_samples``, or
  ``training_tokens`` / sequence length;
* ``activation_memory = a_1 b``: layers x
  :func:`mlsysim.physics.activations.activation_bytes_per_layer` of one sample,
  whenever the workload has a transformer shape (``recompute`` chooses the
  strategy; fused attention, the default, never stores the s x s matrices that
  ``recompute="none"`` would otherwise keep).

What came from where is kept in :attr:`Job.origins`, for ``explain`` and the
command line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, TypeAlias, TypedDict

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.formatting import fmt_given
from mlsysim.core.suggest import setting
from mlsysim.core.units import quantity, to_canonical
from mlsysim.engine.inputs.presets import PRESETS, preset_figures
from mlsysim.engine.inputs.workload_figures import (
    DEFAULT_RECOMPUTE,
    peak_flops,
    shape_gap,
    shape_numbers,
    workload_facts,
)
from mlsysim.engine.model.equations import (
    Inputs,
    fused_attention,
    mixture_of_experts,
    multi_head_latent,
)
from mlsysim.kernels.cluster import check_accelerator, read_cluster_file
from mlsysim.kernels.device import DeviceKernels, attention_missing, device_kernels
from mlsysim.kernels.links import link_curves
from mlsysim.kernels.matmul import shipped_fit
from mlsysim.physics._array import Num
from mlsysim.physics.compute import (
    one_device_training_time,
    samples_from_tokens,
    step_time_from_flops,
)
from mlsysim.physics.matmul import (
    MATMUL_FORMATS,
    SIXTEEN_BIT,
    cast_bytes_per_element,
    fitted_ceiling,
)
from mlsysim.physics.operators import OperatorTimes, operator_times
from mlsysim.physics.precision import BYTES_PER_ELEMENT
from mlsysim.physics.records import Cluster, KernelConstants, Layout, LinkCurves, ModelShape, Rates

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator
    from mlsysim.models.types import Workload

Checked: TypeAlias = Mapping[str, Any]
"""Checked scenario inputs by field name: each value is of its field's kind (see
:mod:`mlsysim.engine.inputs.fields`), which a mapping's type cannot say key by key."""

DERIVED_ATTRIBUTES: Final = (
    "flops_per_sample",
    "peak_flops",
    "sequence_length",
    "activation_memory_per_sample",
    "activation_memory_fused",
    "matmul_ceiling",
    "matmul_peak",
    "attention_ceiling",
    "attention_peak",
    "expert_ceiling",
    "compute_units",
    "cast_bytes",
    "matmul_bytes",
)
"""Model attributes a scenario derives from its categorical inputs (NaN when unknown)."""

DERIVABLE: Final = ("step_time", "training_time", "devices_per_node", "intra_bandwidth")
"""Required inputs that a preset or a derivation may supply."""

SOURCES: Final = (*PRESETS, "mfu", "training_tokens", "training_samples")
"""Inputs whose presence asks for a derivation (besides a workload with a shape)."""

DERIVED_TARGETS: Final = ("step_time", "training_time", "activation_memory")
"""Model inputs :func:`derive_inputs` fills where they are NaN."""

TARGET_UNITS: Final = {"step_time": "s", "training_time": "s", "activation_memory": "byte"}


class Job(NamedTuple):
    """What a scenario derived, and from what (immutable; a named tuple: cheap to build per solve).

    ``origins`` maps each derived input to where it came from (``"node
    DGX_H100"``, ``"mfu"``); the figures are canonical floats (flop, flop/s,
    tokens, bytes), NaN where not known or not used.
    """

    origins: Mapping[str, str] = MappingProxyType({})
    flops_per_sample: float = math.nan
    peak_flops: float = math.nan
    sequence_length: float = math.nan
    samples: float = math.nan
    activation_memory_per_sample: float = math.nan
    """Activation bytes of one sample in the recompute mode, the attention kernels not fused."""
    recompute: str = DEFAULT_RECOMPUTE
    activations: str = "none"  # "derived", "given" or "none" (not counted)
    matmul_ceiling: float = math.nan
    """The linear layers' fitted (or assumed) ceiling when the step comes from the operators; NaN otherwise."""
    matmul_peak: float = math.nan
    """The peak of the linear layers' format (flop/s)."""
    attention_ceiling: float = math.nan
    """The 16-bit products' ceiling (attention core, output layer)."""
    attention_peak: float = math.nan
    """The 16-bit peak those run at (flop/s)."""
    expert_ceiling: float = math.nan
    """A mixture of experts' routed experts' ceiling (their grouped products); NaN: a dense model."""
    compute_units: float = math.nan
    cast_bytes: float = 0.0
    matmul_bytes: float = 2.0
    """Width of the linear layers' operands in bytes (1 for FP8)."""
    operators: OperatorTimes | None = None
    """The operator classes of one local step of the whole model on one device (a step from the operators)."""
    kernels: KernelConstants | None = None
    """The device's measured kernels a step from the operators is priced with (:mod:`mlsysim.kernels`)."""
    matmul_format: str = ""
    operator_efficiency: float = math.nan
    """u = b F / (P T1) of a step from the operators: the one-device MFU it implies (NaN otherwise)."""
    activation_memory_fused: float = math.nan
    """Activation bytes of one sample with fused attention kernels (the default): the attention's s x s
    matrices never stored (:func:`fused_mode`)."""

    def model_attributes(self) -> dict[str, float]:
        """The derived attributes of :class:`~mlsysim.engine.model.equations.Inputs`."""
        return {name: getattr(self, name) for name in DERIVED_ATTRIBUTES}

    def derives(self, name: str) -> bool:
        """Whether the input ``name`` was derived (not given)."""
        return name in self.origins


NO_JOB: Final = Job()
"""Nothing derived, no activations counted."""

_GIVEN_ACTIVATIONS: Final = Job(activations="given")


def plain_job(values: Checked) -> Job:
    """The :class:`Job` of inputs that derive nothing (activations given or not counted)."""
    return NO_JOB if values.get("activation_memory") is None else _GIVEN_ACTIVATIONS


def wants_derivation(values: Checked) -> bool:
    """Whether :func:`resolve` has anything to do for these checked inputs."""
    # every input is a key of checked values: read by subscript (faster than .get, per solve)
    workload = values["workload"]
    if workload is not None and workload_facts(workload).shape:
        return True
    for name in SOURCES:  # noqa: SIM110 - a plain loop: any() over a generator costs more here
        if values[name] is not None:
            return True
    return False


# -- the derivation, on floats or arrays ----------------------------------------------------


class Derivable(Protocol):
    """What :func:`derive_inputs` reads and fills: :class:`~mlsysim.engine.model.equations.Inputs`
    (a sweep's block), or :class:`_Scalars` (one layout)."""

    step_time: Num
    training_time: Num
    activation_memory: Num
    per_device_batch: Num
    mfu: Num
    flops_per_sample: Num
    peak_flops: Num
    training_tokens: Num
    training_samples: Num
    sequence_length: Num
    activation_memory_per_sample: Num
    activation_memory_fused: Num
    flash_attention: Num


def derive_inputs(x: Derivable, kernels: KernelConstants | None = None) -> Derivable:
    """Fill ``step_time``, ``training_time`` and ``activation_memory`` where they are NaN ("derive here").

    The figures may be floats (one layout) or numpy arrays (a sweep's block):
    a target is NaN where the layout derives it, a number where it was given
    (or swept):

        step_time = b F / (P u)                   (mfu u: model FLOPs utilisation, nothing added)
        training_time = S T1 / b,  S = D / s      (tokens D, or samples S)
        activation_memory = a_1 b                 (a_1 bytes per sample, with fused attention where
                                                   flash_attention is 1 or not given; 0 without a shape)

    ``activation_memory_per_sample`` is left NaN where the activation memory was given
    (a parallel layout counts its own activations unless they were given). ``kernels``: the device's
    measured kernels, for the rows whose step comes from the operators.
    """
    # (a float is tested inline: this runs in every scalar solve of a shaped workload)
    step = x.step_time
    if (step != step) if type(step) is float else _any_nan(step):
        def derived_step() -> Num:
            if not isinstance(x, Inputs):  # one layout: its operators' step is priced before (_operator_step)
                return from_flops()
            ceiling = x.matmul_ceiling  # a sweep's block: rows priced by the operators
            if (ceiling == ceiling) if type(ceiling) is float else not _all_nan(ceiling):
                rows = _operator_step_rows(x, kernels)
                if _all_nan(x.mfu):
                    return rows
                return np.where(np.isnan(x.mfu), rows, from_flops())  # rows that give mfu: from the FLOPs
            return from_flops()

        def from_flops() -> Num:
            return step_time_from_flops(x.flops_per_sample, x.per_device_batch, x.peak_flops, x.mfu)

        x.step_time = _fill(step, derived_step)
    time = x.training_time
    if (time != time) if type(time) is float else _any_nan(time):

        def training_time() -> Num:
            if _all_nan(x.training_tokens):
                samples = x.training_samples
            else:
                samples = samples_from_tokens(x.training_tokens, x.sequence_length)
            return one_device_training_time(samples, x.step_time, x.per_device_batch)

        x.training_time = _fill(time, training_time)
    memory = x.activation_memory
    if (memory != memory) if type(memory) is float else _any_nan(memory):
        per_sample = _activations_per_sample(x)
        x.activation_memory = _fill(
            memory,
            lambda: 0.0 if _all_nan(per_sample) else per_sample * x.per_device_batch,
        )
        if type(memory) is not float and not _all_nan(memory):  # some rows give theirs
            x.activation_memory_per_sample = np.where(np.isnan(memory), per_sample, np.nan)
    elif type(memory) is not float or memory == memory:  # given: nothing derived per sample
        x.activation_memory_per_sample = memory * np.nan
    return x


def _activations_per_sample(x: Derivable) -> Num:
    """a_1 of each row: the fused-attention figure where the kernels are fused (``flash_attention`` 1, or not
    given: :data:`~mlsysim.engine.model.equations.FUSED_ATTENTION_DEFAULT`), the plain one elsewhere."""
    plain, fused, flash = x.activation_memory_per_sample, x.activation_memory_fused, x.flash_attention
    if type(flash) is float and type(plain) is float:
        return plain if flash == 0.0 or fused != fused else fused
    if _all_nan(fused):
        return plain
    return np.where(fused_attention(flash) > 0, fused, plain)


def fused_mode(recompute: str) -> str:
    """The recompute mode whose activations fused attention kernels store: none keeps no s x s attention
    matrices with them (Dao et al. 2022), as selective recomputation does (Korthikanti et al. 2022, Table 2)."""
    return "selective" if recompute == "none" else recompute


def _operator_times(get: Callable[[str], Num], batch: Num, recompute: str, flash: bool,
                    kernels: KernelConstants | None) -> OperatorTimes:
    """The operator classes of one local step of the whole model on one device, from model numbers by name
    (``get``: the :class:`~mlsysim.engine.model.equations.Inputs` names): the scalar solve's step and each
    row of a sweep's block, priced by the one call."""
    shape = ModelShape(
        parameters=get("parameters"), layers=get("layers"), hidden=get("hidden"), heads=get("heads"),
        seq_len=get("seq_len"), vocab=get("vocab"), kv_heads=get("kv_heads"), ffn_hidden=get("ffn_hidden"),
        gated_mlp=get("gated_mlp"), head_dim=get("head_dim"), mla=multi_head_latent(get),
        moe=mixture_of_experts(get),
    )
    device = Cluster(peak_flops=get("matmul_peak"), memory_bandwidth=get("memory_bandwidth"),
                     compute_units=get("compute_units"), power_limit=get("power_limit"))
    layout = Layout(micro_batch=batch, expert_parallel=_nan_as(get("expert_parallel"), 1.0),
                    expert_tensor_parallel=_nan_as(get("expert_tensor_parallel"), 1.0),
                    cast_bytes=get("cast_bytes"), matmul_bytes=get("matmul_bytes"),
                    fused_elementwise=_nan_as_zero(get("fused_elementwise")), recompute=recompute,
                    flash_attention=flash)
    rates = Rates(matmul_ceiling=get("matmul_ceiling"), matmul_peak=get("matmul_peak"),
                  attention_ceiling=get("attention_ceiling"), attention_peak=get("attention_peak"),
                  expert_ceiling=get("expert_ceiling"), kernels=kernels)
    return operator_times(shape, device, layout, rates)


def _nan_as(value: Num, default: float) -> Num:
    """``value``, or ``default`` where it is not given (NaN)."""
    if type(value) is float:
        return default if value != value else value
    return np.where(np.isnan(value), default, value)


def _nan_as_zero(value: Num) -> Num:
    """An off-by-default switch: NaN (not given) as 0."""
    return _nan_as(value, 0.0)


def _operator_step_rows(x: Inputs, kernels: KernelConstants | None) -> Num:
    """T1 of each row of a sweep's block whose step comes from the operators, at the row's own batch (the
    scalar solve prices the scenario's batch the same way; :func:`_operator_step`)."""
    from mlsysim.physics.activations import RECOMPUTE_MODES

    get = partial(getattr, x)
    codes = np.unique(np.asarray(x.recompute_code, dtype=float))
    recompute = RECOMPUTE_MODES[int(codes[0])]
    on = np.asarray(fused_attention(np.asarray(x.flash_attention, dtype=float))) > 0
    if on.all() or not on.any():
        return _operator_times(get, x.per_device_batch, recompute, bool(on.all()), kernels).total
    return np.where(on, _operator_times(get, x.per_device_batch, recompute, True, kernels).total,
                    _operator_times(get, x.per_device_batch, recompute, False, kernels).total)


def _fill(target: Num, formula: Callable[[], Num]) -> Num:
    """``formula()`` where ``target`` is NaN, ``target`` elsewhere (called where one is NaN)."""
    if type(target) is float or _all_nan(target):
        return formula()
    return np.where(np.isnan(target), formula(), target)


def _any_nan(value: Num) -> bool:
    if type(value) is float:
        return value != value
    return bool(np.any(np.isnan(value)))


def _all_nan(value: Num) -> bool:
    if type(value) is float:
        return value != value
    return bool(np.all(np.isnan(value)))


@dataclass(slots=True)
class _Scalars:
    """One layout's :class:`Derivable` figures (canonical floats; NaN: derive, or not given)."""

    step_time: Num = math.nan
    training_time: Num = math.nan
    activation_memory: Num = math.nan
    per_device_batch: Num = math.nan
    mfu: Num = math.nan
    flops_per_sample: Num = math.nan
    peak_flops: Num = math.nan
    training_tokens: Num = math.nan
    training_samples: Num = math.nan
    sequence_length: Num = math.nan
    activation_memory_per_sample: Num = math.nan
    activation_memory_fused: Num = math.nan
    flash_attention: Num = math.nan


# -- resolution ------------------------------------------------------------------------------


def resolve(
    out: dict[str, Any],
    replaced: Mapping[str, object] | None = None,
    numbers: Mapping[str, float] | None = None,
) -> Job:
    """Fill, in place, the inputs a scenario leaves to its presets and derivations; return the :class:`Job`.

    ``out`` holds every input, checked (each on its own by its field: the values of
    :func:`~mlsysim.engine.inputs.checking.checked_inputs`); an input that is not None was
    given and is never replaced. ``replaced`` are
    the values a newer layer's sources took over (:func:`mlsysim.engine.inputs.layers.overlay`),
    named in the origins; ``numbers`` the model numbers the check computed (canonical
    SI floats of the given inputs), read instead of converting again. Raises an :class:`InputError` located at an input
    when two inputs contradict each other or a derivation lacks a source.
    """
    origins: dict[str, str] = {}
    for kind in PRESETS:
        entry = out[kind]
        if entry is None:
            continue
        for name, (value, origin) in preset_figures(kind, entry).items():
            if out[name] is None and value is not None:
                out[name] = value
                origins[name] = origins.get(kind, origin)
    job = _derive_job(out, origins, numbers or {})
    if replaced:
        for name, old in replaced.items():
            if name in origins:
                origins[name] += f", replacing {fmt_given(old)} of the scenario"
    return job


def _derive_job(out: dict[str, Any], origins: dict[str, str], numbers: Mapping[str, float]) -> Job:
    """Check the sources of step time, training time and activation memory, and derive them.

    The derived inputs are written into ``out`` (Quantities) and ``origins``; the
    :class:`Job` returned holds the figures they came from.
    """
    workload = out["workload"]
    recompute = out["recompute"] or DEFAULT_RECOMPUTE
    if workload is None:
        return Job(origins, recompute=recompute)  # the scenario reports the missing workload
    batch = out["per_device_batch"]
    facts = workload_facts(workload)
    x = _Scalars()
    if batch is not None:
        x.per_device_batch = float(batch)
    nan = math.nan
    fps = nan if facts.flops_per_sample is None else facts.flops_per_sample
    x.flops_per_sample = fps
    x.sequence_length = sequence_length = facts.sequence_length
    peak = samples = per_sample = fused_per_sample = nan

    mfu = out["mfu"]
    operators: _OperatorStep | None = None
    if mfu is not None or out["step_time"] is not None:
        _refuse_operator_inputs(out, "mfu" if mfu is not None else "step_time")
    elif batch is not None and facts.shape:
        operators = _operator_step(out, workload, recompute, float(batch))
        if operators is None and out["accelerator"] is not None and out["cluster_file"] is None:
            raise _operator_gap(out)
    if out["cluster_file"] is not None and operators is None:  # never read in silence
        raise InputError(_cluster_file_unread(out, facts.shape), loc=("cluster_file",))
    if operators is not None:
        x.peak_flops = peak = operators.peak
        # T1 through the FLOP equation: the one-device MFU the operators imply
        x.mfu = operators.figures["operator_efficiency"]
        origins["step_time"] = operators.origin
    elif mfu is not None:
        _check_mfu_sources(out, workload, facts.flops_per_sample)
        x.peak_flops = peak = peak_flops(out["accelerator"], out["precision"] or "fp16")
        x.mfu = mfu
        origins["step_time"] = "mfu"
    elif out["step_time"] is not None:
        x.step_time = _number(numbers, "step_time", out["step_time"], "time")
    if out.get("power_limit") is not None and operators is None:
        given = "a measured step_time" if out["step_time"] is not None else "mfu" if mfu is not None else (
            "no step from the operators")
        raise InputError(
            f"power_limit slows the kernels of a step from the operators; with {given} it would change nothing "
            "(the measured figure holds at the power it ran at): leave power_limit out", loc=("power_limit",))
    if mfu is None and operators is None and out["accelerator"] is not None:  # the peak of the achieved MFU
        try:
            peak = peak_flops(out["accelerator"], out["precision"] or "fp16")
        except InputError:
            peak = nan
        if batch is not None and out["step_time"] is not None:
            _check_step_within_peak(out, float(batch) * fps, peak, x.step_time)

    tokens, given_samples = out["training_tokens"], out["training_samples"]
    if tokens is not None or given_samples is not None:
        samples = _job_samples(out, workload, tokens, given_samples)
        if mfu is None and out["step_time"] is None and batch is not None and operators is None:
            raise InputError(
                "required to derive training_time: give step_time, or mfu with node= or accelerator= "
                f"({_no_operator_step(out, facts.shape)})",
                loc=("step_time",),
            )
        if tokens is not None:
            x.training_tokens = _number(numbers, "training_tokens", tokens, "tokens")
        else:
            x.training_samples = samples
        origins["training_time"] = "training_tokens" if tokens is not None else "training_samples"
    elif out["training_time"] is not None:
        x.training_time = _number(numbers, "training_time", out["training_time"], "time")

    if out["activation_memory"] is not None:
        activations = "given"
        x.activation_memory = _number(numbers, "activation_memory", out["activation_memory"], "data")
    elif facts.shape and batch is not None:
        x.activation_memory_per_sample = per_sample = facts.activation_per_sample[recompute]
        x.activation_memory_fused = fused_per_sample = facts.activation_per_sample[fused_mode(recompute)]
        activations = "derived"
        flash = out["flash_attention"]
        x.flash_attention = math.nan if flash is None else float(flash)
        origins["activation_memory"] = f"recompute={recompute}" + (
            ", fused attention" if recompute == "none" and flash != 0 else ""
        )
    else:
        activations = "none"
        x.activation_memory = 0.0

    if batch is not None:
        derive_inputs(x)
        for target in DERIVED_TARGETS:
            if target in origins:
                out[target] = quantity(getattr(x, target), TARGET_UNITS[target])
    if operators is None:
        return Job(origins, fps, peak, sequence_length, samples, per_sample, recompute, activations,
                   activation_memory_fused=fused_per_sample)
    return Job(origins, fps, peak, sequence_length, samples, per_sample, recompute, activations,
               **operators.figures, activation_memory_fused=fused_per_sample)


class _OperatorFigures(TypedDict):
    """The :class:`Job` figures of a step priced operator by operator."""

    matmul_ceiling: float
    matmul_peak: float
    attention_ceiling: float
    attention_peak: float
    expert_ceiling: float
    compute_units: float
    cast_bytes: float
    matmul_bytes: float
    operators: OperatorTimes
    kernels: KernelConstants
    matmul_format: str
    operator_efficiency: float


class _OperatorStep(NamedTuple):
    """A step priced operator by operator: the peak its MFU is of, where it came from, its figures."""

    peak: float
    origin: str
    figures: _OperatorFigures

OPERATOR_NUMBERS: Final = (
    "matmul_ceiling", "matmul_peak", "attention_ceiling", "attention_peak", "expert_ceiling", "compute_units",
    "cast_bytes", "matmul_bytes",
)
"""The model numbers of a step from the operators (:class:`~mlsysim.engine.model.equations.Inputs`)."""


def operator_numbers(job: Job) -> dict[str, float]:
    """The model numbers a step from the operators sets: its peaks and ceilings (so the layout model and a
    sweep's rows price t_c operator by operator where no ``mfu`` is given); {} otherwise."""
    if job.operator_efficiency != job.operator_efficiency:
        return {}
    return {name: float(getattr(job, name)) for name in OPERATOR_NUMBERS}


def peak_format(matmul_format: str) -> str:
    """The format whose peak a linear layers' ``matmul_format`` runs at (``fp8_rowwise``: the fp8 peak)."""
    return MATMUL_FORMATS[matmul_format]


def operator_formats(out: Checked) -> tuple[str, str]:
    """The linear layers' format and the 16-bit format of the attention core and output layer."""
    precision = out["precision"] or "fp16"
    sixteen = precision if precision in SIXTEEN_BIT else "bf16"
    return out["matmul_format"] or (precision if precision in MATMUL_FORMATS else sixteen), sixteen


class Ceilings(NamedTuple):
    """The ceilings a step from the operators is priced at, and where they came from."""

    matmul: float
    """The linear layers' (their format's)."""
    attention: float
    """The 16-bit products' (the output layer; unfused attention's products)."""
    experts: float
    """A mixture of experts' routed experts' grouped products (NaN: the linear layers')."""
    source: str


def _ceilings(out: Checked, kernels: DeviceKernels, matmul_format: str) -> Ceilings:
    """The ceilings of a step from the operators: an assumption's, else the in-training share of the device's
    best measured kernels. The share is ``kernel_share`` where given, else the architecture's 16-bit in-training
    ceiling (fitted on its published
    runs, :func:`~mlsysim.physics.matmul.fitted_ceiling`: what its kernels reach inside a training step) over
    the device's best measured 16-bit kernel (at most 1; 1 where no run informs one): every format runs at that
    share of its own best measured kernel (:func:`mlsysim.kernels.device.device_kernels`), so the formats'
    relative speed is the kernels'. A mixture of experts' routed experts take ``expert_ceiling``, else the one
    fitted on the architecture's published mixtures of experts, else the linear layers'."""
    accelerator: Accelerator = out["accelerator"]
    architecture = accelerator.architecture
    assumptions = out["assumptions"]
    given = assumptions.matmul_ceiling if assumptions is not None else 0.0
    given_attention = assumptions.attention_ceiling if assumptions is not None else 0.0
    given_experts = assumptions.expert_ceiling if assumptions is not None else 0.0
    given_share = assumptions.kernel_share if assumptions is not None else 0.0
    fitted = fitted_ceiling(architecture, sixteen_bit_of(out))
    share = given_share or (min(1.0, fitted / _fitted_against(out, kernels)) if fitted else 1.0)
    ceiling = given or share * kernels.matmul_ceiling
    if given_attention:
        attention = given_attention
    elif matmul_format in SIXTEEN_BIT and given:
        attention = given
    else:
        attention = share * kernels.sixteen_bit_ceiling
    source = "assumed" if given else (
        f"(kernel_share, assumed: {share:.3g} of the best measured kernel)" if given_share
        else f"in training on {architecture}: {share:.3g} of the best measured kernel" if fitted
        else "the best measured kernel")
    experts = math.nan
    if getattr(out["workload"], "experts", None) is not None:
        fitted_experts = fitted_ceiling(architecture, matmul_format, experts=True)
        experts = given_experts or (min(fitted_experts, kernels.matmul_ceiling) if fitted_experts else ceiling)
        origin = "assumed" if given_experts else "in training, mixtures of experts" if fitted_experts else (
            "the linear layers'")
        source += f"; routed experts {experts:.3g} {origin}"
    return Ceilings(ceiling, attention, experts, source)


def _fitted_against(out: Checked, kernels: DeviceKernels) -> float:
    """The best measured 16-bit kernel the in-training ceiling's share is of: the shipped tables' (the runs it
    was fitted on were priced with them), so that a cluster file's kernels keep that share of their own rate;
    the cluster's where no shipped table measures the accelerator's architecture in 16 bits."""
    if out["cluster_file"] is None:
        return kernels.sixteen_bit_ceiling
    try:
        return shipped_fit().ceiling(out["accelerator"], sixteen_bit_of(out))
    except InputError:
        return kernels.sixteen_bit_ceiling


def sixteen_bit_of(out: Checked) -> str:
    """The 16-bit format of the attention core and the output layer."""
    return operator_formats(out)[1]


def _device_kernels(out: Checked, matmul_format: str) -> DeviceKernels | str:
    """The device's measured kernels in ``matmul_format``, or why there are none (a missing table)."""
    accelerator: Accelerator | None = out["accelerator"]
    if accelerator is None:
        return "a step from the operators needs node= or accelerator="
    cluster = None
    if out["cluster_file"] is not None:  # the user's fits of this accelerator (another's is refused)
        cluster = read_cluster_file(out["cluster_file"])
        check_accelerator(cluster, accelerator)
    try:
        kernels = device_kernels(accelerator, matmul_format, cluster=cluster)
    except InputError as error:
        return error.message
    if out["flash_attention"] != 0:  # None: the default, fused
        missing = attention_missing(accelerator, kernels)
        if missing:
            return missing
    return kernels


def _link_curves(out: Checked) -> LinkCurves | None:
    """The measured collective curves of the scenario's registry node and fabric (a cluster file's collective
    fits in place of the shipped ones), or None: no node, or no table covers its architecture (every
    collective then priced alpha-beta at the links' rates; :func:`mlsysim.kernels.links.link_curves`)."""
    node = out["node"]
    if node is None:
        return None
    cluster = read_cluster_file(out["cluster_file"]) if out["cluster_file"] is not None else None
    domain = out["scale_up_domain"]
    return link_curves(node, fabric=out["fabric"], domain=None if domain is None else float(domain),
                       constants=None if cluster is None else cluster.collectives)


def _power_limit(out: Checked, accelerator: Accelerator) -> float:
    """The devices' power limit in W (NaN: not given, the TDP); refused above the accelerator's TDP."""
    given = out.get("power_limit")
    if given is None:
        return math.nan
    watts = to_canonical(given, "power")
    tdp = None if accelerator.power is None else to_canonical(accelerator.power.tdp, "power")
    if tdp is None:
        raise InputError(f"{accelerator.name} has no TDP in the registry to scale a power limit from",
                         loc=("power_limit",))
    if watts > tdp:
        raise InputError(f"{watts:g} W is above {accelerator.name}'s {tdp:g} W TDP, the most it can be set to",
                         loc=("power_limit",))
    return watts


OPERATOR_INPUTS: Final = {
    "matmul_format": "prices the linear layers' products in their number format",
    "fused_elementwise": "prices the element-wise kernels fused",
}
"""Inputs that only a step priced from the operators reads, with what they change there."""


def _refuse_operator_inputs(out: Checked, source: str) -> None:
    """Refuse an input of the operator model beside a step that does not come from the operators (issue 40: an
    input that changes nothing is an error with its reason, never dropped): a measured ``step_time`` is what it
    is, and an ``mfu`` is a measured model FLOPs utilisation, its products' format and kernels inside it."""
    why = ("the step is measured" if source == "step_time"
           else "a measured model FLOPs utilisation holds the products' format and kernels: the step is the model "
                "FLOPs at the precision's peak x mfu")
    for name, does in OPERATOR_INPUTS.items():
        value = out[name]
        if value is None or value == 0:  # not given, or given off: nothing dropped
            continue
        raise InputError(
            f"{name}={value} {does} when the step is priced from the operators, but here it comes from {source} "
            f"({why}): it would change nothing; leave {name} out, or clear {source} ({setting(source, None)}) to "
            "price the step from the operators",
            loc=(name,),
        )


def _operator_gap(out: Checked) -> InputError:
    """What a step priced from the operators lacks on this accelerator (a peak, or a measured kernel table), as an
    error at the input that chose it (``precision``, ``matmul_format``, ``flash_attention``; ``step_time`` where
    nothing was chosen), saying how to supply it."""
    accelerator: Accelerator = out["accelerator"]
    matmul_format, sixteen = operator_formats(out)
    precision = out["precision"] or "fp16"
    chosen = "matmul_format" if out["matmul_format"] is not None else "step_time"
    named = f"the {accelerator.name}" + (f" ({accelerator.architecture})" if accelerator.architecture else "")
    peaks = ", ".join(accelerator.dense_flops) or "none"
    for fmt, at in ((precision, "precision"), (MATMUL_FORMATS[matmul_format], chosen), (sixteen, "step_time")):
        if fmt not in accelerator.dense_flops:
            return InputError(
                f"{named} has no {fmt} peak in the registry (its peaks: {peaks}): it does not run {fmt} products; "
                f"give a format it has, or an accelerator that runs {fmt} (node= or accelerator=)",
                loc=(at,),
            )
    found = _device_kernels(out, matmul_format)
    reason = found if isinstance(found, str) else "the step can come from the operators"
    at = "step_time"
    if reason.startswith(f"no matmul table measures {matmul_format} ") and chosen == "matmul_format":
        at = "matmul_format"
    elif reason.startswith("no fused-attention table") and out["flash_attention"] is not None:
        at = "flash_attention"
    return InputError(
        ("" if at != "step_time" else f"a step priced from the operators on {named}: ") + reason + "; "
        + ("or leave matmul_format out and give a measured step_time or mfu" if at == "matmul_format"
           else "or give a measured step_time, or mfu (the model FLOPs utilisation of one device's step)"),
        loc=(at,),
    )


def _check_step_within_peak(out: Checked, flops: float, peak: float, step: Num) -> None:
    """Refuse a given step time shorter than its model FLOPs at the accelerator's peak: the model FLOPs
    utilisation it implies, b F / (P T1), would exceed 1 (issue 40: never a utilisation above 100%)."""
    implied = flops / (peak * float(step))
    if implied > 1.0:
        raise InputError(
            f"step_time ({fmt_given(out['step_time'])}) is shorter than one step's model FLOPs at the "
            f"{out['accelerator'].name}'s {out['precision'] or 'fp16'} peak ({flops / peak:.4g} s): it implies a "
            f"model FLOPs utilisation of {implied:.4g}, above 1; check step_time, per_device_batch, the workload or "
            "the accelerator",
            loc=("step_time",),
        )


def _no_operator_step(out: Checked, shape: bool) -> str:
    """Why a step cannot come from the operators (for an error message)."""
    if not shape:
        return shape_gap(out["workload"]) or "the workload has no transformer shape to price operator by operator"
    found = _device_kernels(out, operator_formats(out)[0])
    return found if isinstance(found, str) else "the step can come from the operators"


def _cluster_file_unread(out: Checked, shape: bool) -> str:
    """Why a given cluster file prices nothing: the step does not come from the operators."""
    given = "mfu" if out["mfu"] is not None else "step_time" if out["step_time"] is not None else None
    if given is not None:
        return (f"the cluster file's kernels price a step from the operators, but {given} gives the step; clear "
                f"one ({given}=none or cluster_file=none)")
    return (f"the cluster file's kernels price a step from the operators, which this scenario cannot "
            f"({_no_operator_step(out, shape)})")


def _operator_step(out: Checked, workload: Workload, recompute: str, batch: float) -> _OperatorStep | None:
    """The figures of a step priced operator by operator (:mod:`mlsysim.physics.operators`) with the device's
    measured kernels, or None where the accelerator or a kernel table is missing.

    The step of one device (the whole model, b samples) is T1 = sum of the operator classes (recomputation
    and the element-wise work among them); it enters the data-parallel model as the one-device MFU it
    implies, u = b F / (P T1), so that b F / (P u) = T1.
    """
    matmul_format, sixteen = operator_formats(out)
    kernels = _device_kernels(out, matmul_format)
    if isinstance(kernels, str):
        return None
    accelerator: Accelerator = out["accelerator"]
    ceiling, attention, experts, source = _ceilings(out, kernels, matmul_format)
    try:
        peak = peak_flops(accelerator, out["precision"] or "fp16")
    except InputError:
        return None
    facts = workload_facts(workload)
    shape = shape_numbers(workload, recompute)
    bandwidth = to_canonical(out["memory_bandwidth"] or accelerator.memory.bandwidth, "bandwidth")
    fused = bool(out["fused_elementwise"])
    cast = cast_bytes_per_element(matmul_format, fused)
    width = BYTES_PER_ELEMENT[MATMUL_FORMATS[matmul_format]]
    numbers: dict[str, float] = {
        **shape, "parameters": facts.parameters, "matmul_peak": kernels.matmul_peak, "matmul_ceiling": ceiling,
        "attention_peak": kernels.sixteen_bit_peak, "attention_ceiling": attention, "memory_bandwidth": bandwidth,
        "expert_ceiling": experts, "compute_units": kernels.compute_units, "cast_bytes": cast, "matmul_bytes": width,
        "fused_elementwise": float(fused), "power_limit": _power_limit(out, accelerator),
    }
    fused = out["flash_attention"] != 0  # None: the default, fused
    times = _operator_times(lambda name: numbers.get(name, math.nan), batch, recompute, fused, kernels.constants)
    step = float(times.total)
    model = facts.flops_per_sample or math.nan
    implied = batch * model / (peak * step)
    origin = (f"operators ({matmul_format} matrix products, ceiling {ceiling:.3g} {source}; "
              + ("measured kernels" if out["cluster_file"] is None else f"kernels from the {kernels.sources}")
              + ")")
    return _OperatorStep(peak, origin, {
        "matmul_ceiling": float(ceiling),
        "matmul_peak": kernels.matmul_peak,
        "attention_ceiling": float(attention),
        "expert_ceiling": float(experts),
        "attention_peak": kernels.sixteen_bit_peak,
        "compute_units": kernels.compute_units,
        "cast_bytes": cast,
        "matmul_bytes": width,
        "operators": times,
        "kernels": kernels.constants._replace(collectives=_link_curves(out)),
        "matmul_format": matmul_format,
        "operator_efficiency": implied,
    })


def _number(numbers: Mapping[str, float], name: str, value: object, dimension: str) -> float:
    """The model number the check computed for a given input (converted here where it did not)."""
    number = numbers.get(name)
    if number is None or number != number:
        return to_canonical(value, dimension)
    return number


def _check_mfu_sources(out: Checked, workload: Workload, fps: float | None) -> None:
    if out.get("step_time") is not None:
        raise InputError(
            "give either a measured step_time or mfu (step time derived from FLOPs), "
            f"not both; clear one ({setting('step_time', None)})",
            loc=("step_time",),
        )
    if out.get("accelerator") is None:
        raise InputError(
            "deriving step_time needs the accelerator's peak FLOPs: give node= or accelerator=",
            loc=("mfu",),
        )
    if fps is None:
        gap = shape_gap(workload)
        raise InputError(
            f"{gap}; its FLOPs need it (or give step_time)" if gap else
            f"{workload.name} states neither a transformer shape (layers, hidden_dim, "
            "seq_len) nor forward_flops_per_sample, so its FLOPs are unknown; give step_time",
            loc=("mfu",),
        )


def _job_samples(out: Checked, workload: Workload, tokens: object, samples: object) -> float:
    """Samples of the job, from ``training_tokens`` or ``training_samples``."""
    if tokens is not None and samples is not None:
        raise InputError(
            "give training_tokens or training_samples, not both", loc=("training_samples",)
        )
    given = "training_tokens" if tokens is not None else "training_samples"
    if out.get("training_time") is not None:
        raise InputError(
            f"give either the one-device training_time or {given}, not both; "
            "clear one (training_time=none)",
            loc=("training_time",),
        )
    if samples is not None:
        return to_canonical(samples, "samples")
    if not workload_facts(workload).shape:
        gap = shape_gap(workload)
        raise InputError(
            f"{gap}; turning tokens into samples needs it (or give training_samples)" if gap else
            f"{workload.name} has no sequence length to turn tokens into samples; give training_samples",
            loc=("training_tokens",),
        )
    return float(samples_from_tokens(to_canonical(tokens, "tokens"), float(getattr(workload, "seq_len"))))  # noqa: B009 - a transformer's, checked above


def sweep_base(job: Job) -> dict[str, float]:
    """Model inputs of a sweep group: the derived figures, and NaN for each target it derives."""
    base = job.model_attributes()
    base.update(operator_numbers(job))
    for target in DERIVED_TARGETS:
        if job.derives(target):
            base[target] = math.nan
    return base
