"""A whole job from hardware and the model: presets, and the inputs derived from them.

A scenario may name a ``node`` (a server of the registry), a ``fabric`` (the
link between nodes) or an ``accelerator``, and may give the job's size and
speed as ``training_tokens``/``training_samples`` and ``mfu`` instead of the
one-device ``training_time`` and ``step_time`` of a profile. :func:`resolve`
turns those into the seed's inputs, once, after every input was checked on its
own; a value given explicitly always wins over a preset. What came from where
is kept in :attr:`Job.origins`, for ``explain`` and the command line.

Derived inputs (each optional, each only where its sources are given):

* node preset: ``devices_per_node``, ``intra_bandwidth``, ``intra_latency``,
  ``nics_per_node``, the NIC fabric's ``inter_bandwidth`` and
  ``inter_latency``, the ``accelerator`` and its ``device_memory`` and
  ``memory_bandwidth``, and the
  node's ``node_hour_rate`` where the price registry has one;
* fabric preset: ``inter_bandwidth`` and ``inter_latency`` (before the node's
  own NICs);
* ``step_time = F b / (P u)`` (:func:`mlsysim.physics.compute.step_time_from_flops`)
  from ``mfu`` u, the workload's training FLOPs per sample F and the
  accelerator's dense peak P at the training precision;
* ``training_time = S T1 / b`` with S = ``training_samples``, or
  ``training_tokens`` / sequence length;
* ``activation_memory`` = layers x :func:`mlsysim.physics.activations.activation_bytes_per_layer`
  whenever the workload has a transformer shape (``recompute`` chooses the
  strategy, default ``"selective"``: what FlashAttention-style kernels, the
  default attention of PyTorch's scaled_dot_product_attention and of Megatron,
  store; ``"none"`` is eager attention that keeps the s x s matrices).

The same formulas run on numpy arrays in :func:`derive_inputs`, so a sweep over
``per_device_batch``, ``mfu`` or ``training_tokens`` derives each layout's
figures again, vectorized; categorical inputs (workload, precision, node,
fabric, accelerator, recompute) go through :func:`resolve` once per value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

import numpy as np

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.units import quantity, to_canonical
from mlsysim.engine.scale import cluster_note
from mlsysim.physics._array import Num
from mlsysim.physics.activations import RECOMPUTE_MODES, activation_bytes
from mlsysim.physics.compute import (
    cnn_flops_per_sample,
    one_device_training_time,
    samples_from_tokens,
    step_time_from_flops,
    transformer_flops_per_sample,
)
from mlsysim.physics.memory import training_state_bytes
from mlsysim.physics.precision import BYTES_PER_ELEMENT

if TYPE_CHECKING:
    from mlsysim.core.registry import Registry
    from mlsysim.core.units import Quantity
    from mlsysim.engine.equations import Inputs
    from mlsysim.engine.fields import Value
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
    from mlsysim.hardware.types import Accelerator, Fabric, Node
    from mlsysim.models.types import Workload

Checked: TypeAlias = Mapping[str, Any]
"""Checked scenario inputs by field name: each value is of its field's kind (see
:mod:`mlsysim.engine.fields`), which a mapping's type cannot say key by key."""

PRESETS = ("node", "fabric", "accelerator")
"""Inputs that fill other inputs from a registry entry."""

DERIVED_ATTRIBUTES = (
    "flops_per_sample",
    "peak_flops",
    "sequence_length",
    "activation_memory_per_sample",
)
"""Model attributes a scenario derives from its categorical inputs (NaN when unknown)."""

DEFAULT_RECOMPUTE = "selective"
"""Activations counted by default: the attention matrices are not stored, as with
FlashAttention-style kernels (Dao et al. 2022), the default attention path of
PyTorch's scaled_dot_product_attention on recent GPUs and of Megatron-LM. A
one-device profile such as GPT-2 (1.5B) at batch 16 x 1024 tokens on an 80 GB
device is only possible so (24 GB of state + 43 GB of activations; 143 GB of
activations with the matrices stored)."""

MFU_SANITY_LIMIT = 0.75
"""An MFU above this is flagged: published large training runs report 0.3-0.6
(Chowdhery et al. 2022, PaLM, Table 3: 46.2 %; Llama Team 2024, The Llama 3
Herd of Models, Table 4: 38-43 %)."""

BATCH_SANITY_TOLERANCE = 1.05
"""A global batch is flagged above this multiple of the workload's largest
reported batch: sources round their figures (Llama 2's "4M tokens" at 4096
tokens per sequence is 976.6 sequences; 1024 sequences are 4.19M tokens)."""


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
    recompute: str = "selective"
    activations: str = "none"  # "derived", "given" or "none" (not counted)

    def model_attributes(self) -> dict[str, float]:
        """The derived attributes of :class:`~mlsysim.engine.equations.Inputs` (see :func:`derive_inputs`)."""
        return {name: getattr(self, name) for name in DERIVED_ATTRIBUTES}

    def derives(self, name: str) -> bool:
        """Whether the input ``name`` was derived (not given)."""
        return name in self.origins


NO_JOB = Job()
"""Nothing derived, no activations counted."""

_GIVEN_ACTIVATIONS = Job(activations="given")


def plain_job(values: Checked) -> Job:
    """The :class:`Job` of inputs that derive nothing (activations given or not counted)."""
    return NO_JOB if values.get("activation_memory") is None else _GIVEN_ACTIVATIONS


def warn_measured(scenario: DataParallelScaleOutScenario, changes: Mapping[str, object]) -> None:
    """Warn when ``variant(workload=...)`` carries a measured step_time/training_time to another workload.

    A measured one-device profile belongs to the workload it was measured
    on; the figures derived from ``mfu`` or ``training_tokens`` are derived
    again instead, and need no warning.
    """
    import warnings

    from mlsysim.core.exceptions import MlsysimWarning
    from mlsysim.models.types import Workload

    new = changes.get("workload")
    if isinstance(new, str):
        try:
            from mlsysim.models.registry import Models

            new = Models.get(new.strip())
        except UnknownNameError:
            return  # the check reports it
    if not isinstance(new, Workload) or new == scenario.workload:
        return
    carried = [
        name
        for name in ("step_time", "training_time")
        if name not in changes
        and not scenario.job.derives(name)
        and getattr(scenario, name) is not None
    ]
    if carried:
        warnings.warn(
            MlsysimWarning(
                f"{' and '.join(carried)} measured for {scenario.workload.name} "
                f"{'are' if len(carried) > 1 else 'is'} carried unchanged to {new.name}; "
                "give the figures measured for it, or derive them: step_time=none with mfu= "
                "and node= (or accelerator=), training_time=none with training_tokens="
            ),
            stacklevel=3,
        )


# -- presets ------------------------------------------------------------------------------


def _registry(kind: str) -> tuple[Registry, type]:
    from mlsysim.hardware.registry import Hardware, Systems
    from mlsysim.hardware.types import Accelerator, Fabric, Node

    return {
        "node": (Systems.Nodes, Node),
        "fabric": (Systems.Fabrics, Fabric),
        "accelerator": (Hardware, Accelerator),
    }[kind]


def _entry_key(kind: str, entry: object) -> str:
    """The registry name of an entry (``DGX_H100``), or its display name."""
    registry, _ = _registry(kind)
    for path, value in registry.walk():
        if value is entry or value == entry:
            return str(path.rsplit(".", 1)[-1])
    return str(getattr(entry, "name", entry))


def _lookup(kind: str, value: object) -> object:
    """A node, fabric or accelerator registry entry, given as itself or by name (bare errors)."""
    registry, cls = _registry(kind)
    if isinstance(value, str):
        try:
            value = registry.get(value.strip().split(".")[-1])
        except UnknownNameError as exc:
            raise InputError(str(exc)) from None
    if not isinstance(value, cls):
        example = next(name for name, _ in registry.walk())
        raise InputError(
            f"expected a {cls.__name__} registry entry or its name (e.g. {example!r}), got {value!r}"
        )
    return value


def check_node(value: object) -> Node:
    """A node registry entry (``Systems.Nodes.DGX_H100`` or ``"DGX_H100"``)."""
    return cast("Node", _lookup("node", value))


def check_fabric(value: object) -> Fabric:
    """A fabric registry entry (``Systems.Fabrics.InfiniBand_NDR`` or ``"InfiniBand_NDR"``)."""
    return cast("Fabric", _lookup("fabric", value))


def check_accelerator(value: object) -> Accelerator:
    """An accelerator registry entry (``Hardware.Cloud.H100`` or ``"H100"``)."""
    return cast("Accelerator", _lookup("accelerator", value))


def check_mfu(value: object) -> float:
    """Model FLOPs utilisation: a plain number in (0, 1]."""
    if isinstance(value, (int, float, np.floating)) and not isinstance(value, bool):
        x = float(value)
        if 0.0 < x <= 1.0:
            return x
    raise InputError(
        f"expected the model FLOPs utilisation, a number in (0, 1] (e.g. 0.4), got {value!r}"
    )


def parse_mfu(text: str) -> float:
    """``"0.4"`` -> 0.4 (the check reports anything else)."""
    try:
        return float(text)
    except ValueError:
        raise InputError(f"expected a number in (0, 1] (e.g. 0.4), got {text!r}") from None


def preset_name(kind: str, entry: object) -> str:
    """The registry name of a ``node``, ``fabric`` or ``accelerator`` entry (``"DGX_H100"``)."""
    return _entry_key(kind, entry)


def _label(kind: str, entry: object) -> str:
    return f"{kind} {_entry_key(kind, entry)}"


def _node_figures(node: Node) -> dict[str, Value]:
    """The inputs a node fills: devices, the link inside, its NICs, its accelerator, its price."""
    figures = {
        "devices_per_node": node.accelerators_per_node,
        "intra_bandwidth": node.intra_node_bw,
        "intra_latency": getattr(node, "intra_latency", None),
        "nics_per_node": node.nics_per_node,
        "accelerator": node.accelerator,
        "node_hour_rate": node_hour_rate(node),
    }
    return {k: v for k, v in figures.items() if v is not None}


def node_hour_rate(node: Node) -> Quantity | None:
    """The price of one hour of ``node`` where the price registry has one, else None."""
    price = getattr(node, "price", None)
    return None if price is None else price.rate


def _fabric_figures(fabric: Fabric) -> dict[str, Value]:
    return {"inter_bandwidth": fabric.bandwidth, "inter_latency": fabric.latency}


# -- the model's figures -------------------------------------------------------------------


def has_shape(workload: Workload) -> bool:
    """Whether a workload states layers, hidden size, heads and sequence length."""
    return workload_facts(workload).shape


class _Facts(NamedTuple):
    """What the model reads from a workload's description, computed once per workload object."""

    shape: bool
    flops_per_sample: float | None
    activation_per_sample: Mapping[str, float]
    """Activation bytes of one sample, per recompute mode (empty without a shape)."""
    parameters: float
    gradient_bytes: Mapping[str, float]
    """:meth:`~mlsysim.Workload.gradient_bytes` per precision."""


_FACTS: dict[int, tuple[Workload, _Facts]] = {}
"""Per workload object (by identity; workloads are immutable)."""


def workload_facts(workload: Workload) -> _Facts:
    """What the model reads from ``workload`` (cached per object: workloads are immutable)."""
    entry = _FACTS.get(id(workload))
    if entry is not None and entry[0] is workload:
        return entry[1]
    layers, hidden, heads, seq_len = (
        getattr(workload, name, None) for name in ("layers", "hidden_dim", "heads", "seq_len")
    )
    activations: dict[str, float] = {}
    if layers is not None and hidden is not None and heads is not None and seq_len is not None:
        activations = {
            mode: float(activation_bytes(layers, seq_len, 1, hidden, heads, mode))
            for mode in RECOMPUTE_MODES
        }
    shape = bool(activations)
    facts = _Facts(
        shape,
        _flops_per_sample(workload),
        activations,
        workload.parameter_count(),
        {precision: workload.gradient_bytes(precision) for precision in BYTES_PER_ELEMENT},
    )
    if len(_FACTS) > 1024:
        _FACTS.clear()
    _FACTS[id(workload)] = (workload, facts)  # the entry keeps the object, so its id stays its own
    return facts


def flops_per_sample(workload: Workload) -> float | None:
    """Training FLOPs of one sample: the transformer formula from its shape, or 3 x a stated forward cost.

    None when the workload states neither (see :mod:`mlsysim.physics.compute`).
    """
    return workload_facts(workload).flops_per_sample


def _flops_per_sample(workload: Workload) -> float | None:
    layers, hidden, seq_len = (getattr(workload, n, None) for n in ("layers", "hidden_dim", "seq_len"))
    if layers is not None and hidden is not None and seq_len is not None:
        return float(
            transformer_flops_per_sample(workload.parameter_count(), layers, hidden, seq_len)
        )
    forward = getattr(workload, "forward_flops_per_sample", None)
    if forward is not None:
        return float(cnn_flops_per_sample(to_canonical(forward, "compute")))
    return None


def peak_flops(accelerator: Accelerator, precision: str) -> float:
    """The accelerator's dense peak at ``precision`` in flop/s; an error at ``precision`` when unknown."""
    try:
        rate = accelerator.peak_flops(precision)
    except InputError as exc:
        raise InputError(
            f"{exc.message}; mfu needs it to derive step_time", loc=("precision",)
        ) from None
    return to_canonical(rate, "compute_rate")


# -- resolution ----------------------------------------------------------------------------

DERIVABLE = ("step_time", "training_time", "devices_per_node", "intra_bandwidth")
"""Required inputs that a preset or a derivation may supply."""

SOURCES = ("node", "fabric", "accelerator", "mfu", "training_tokens", "training_samples")
"""Inputs whose presence asks for a derivation (besides a workload with a shape)."""


def normalize_given(given: Mapping[str, object]) -> dict[str, object]:
    """The inputs as given, with a fabric given to ``inter_bandwidth`` moved to ``fabric``.

    ``inter_bandwidth=Systems.Fabrics.InfiniBand_NDR`` (or ``"InfiniBand_NDR"``)
    means the fabric: its bandwidth and its latency.
    """
    from mlsysim.hardware.types import Fabric

    link = given.get("inter_bandwidth")
    if isinstance(link, str):
        try:
            link = check_fabric(link)
        except InputError:
            return dict(given)  # a bandwidth as text, checked by its field
    if not isinstance(link, Fabric):
        return dict(given)
    out = dict(given)
    if out.get("fabric") is not None:
        raise InputError(
            "a fabric is given both as inter_bandwidth and as fabric; give it once",
            loc=("inter_bandwidth",),
        )
    out["fabric"] = link
    del out["inter_bandwidth"]
    return out


def wants_derivation(values: Checked) -> bool:
    """Whether :func:`resolve` has anything to do for these checked inputs."""
    workload = values.get("workload")
    return (workload is not None and has_shape(workload)) or any(
        values.get(name) is not None for name in SOURCES
    )


def resolve(out: dict[str, Any]) -> Job:
    """Fill, in place, the inputs a scenario leaves to its presets and derivations; return the :class:`Job`.

    ``out`` holds checked inputs (each checked on its own by its field); an
    input that is not None was given and is never replaced. Raises an
    :class:`InputError` located at an input when two inputs contradict each
    other or a derivation lacks a source.
    """
    origins: dict[str, str] = {}

    def fill(name: str, value: Value, origin: str) -> None:
        if out.get(name) is None and value is not None:
            out[name] = value
            origins[name] = origin

    fabric, node = out.get("fabric"), out.get("node")
    if fabric is not None:
        for name, value in _fabric_figures(fabric).items():
            fill(name, value, _label("fabric", fabric))
    if node is not None:
        label = _label("node", node)
        for name, value in _node_figures(node).items():
            fill(name, value, label)
        nic = getattr(node, "nic_fabric", None)
        if nic is not None:
            fill("inter_bandwidth", node.nic_bandwidth, f"{label} (its NICs)")
            fill("inter_latency", nic.latency, f"{label} (its NICs)")
    accelerator = out.get("accelerator")
    if accelerator is not None:
        origin = origins.get("accelerator", _label("accelerator", accelerator))
        fill("device_memory", accelerator.memory.capacity, origin)
        fill("memory_bandwidth", accelerator.memory.bandwidth, origin)

    figures = _derive_job(out, origins)
    return Job(origins=origins, **figures)


def _derive_job(out: dict[str, Any], origins: dict[str, str]) -> dict[str, Any]:
    """Step time, training time and activation memory, where they are derived (updates ``out``)."""
    workload = out.get("workload")
    recompute = out.get("recompute") or DEFAULT_RECOMPUTE
    figures: dict[str, Any] = {"recompute": recompute}
    if workload is None:
        return figures  # the scenario reports the missing workload
    batch = out.get("per_device_batch")
    facts = workload_facts(workload)
    fps = facts.flops_per_sample
    if fps is not None:
        figures["flops_per_sample"] = fps
    if facts.shape:
        figures["sequence_length"] = float(workload.seq_len)

    mfu = out.get("mfu")
    if mfu is not None:
        if out.get("step_time") is not None:
            raise InputError(
                "give either a measured step_time or mfu (step time derived from FLOPs), "
                "not both; clear one (step_time=none)",
                loc=("step_time",),
            )
        accelerator = out.get("accelerator")
        if accelerator is None:
            raise InputError(
                "deriving step_time needs the accelerator's peak FLOPs: give node= or accelerator=",
                loc=("mfu",),
            )
        if fps is None:
            raise InputError(
                f"{workload.name} states neither a transformer shape (layers, hidden_dim, "
                "seq_len) nor forward_flops_per_sample, so its FLOPs are unknown; give step_time",
                loc=("mfu",),
            )
        if batch is not None:
            peak = peak_flops(accelerator, out.get("precision") or "fp16")
            figures["peak_flops"] = peak
            out["step_time"] = quantity(step_time_from_flops(fps, batch, peak, mfu), "s")
            origins["step_time"] = "mfu"

    tokens, samples = out.get("training_tokens"), out.get("training_samples")
    if tokens is not None or samples is not None:
        n_samples = _job_samples(out, workload, tokens, samples)
        figures["samples"] = n_samples
        step = out.get("step_time")
        if step is None and batch is not None:
            raise InputError(
                "required to derive training_time: give step_time, or mfu with node= or accelerator=",
                loc=("step_time",),
            )
        if batch is not None:
            t1 = to_canonical(step, "time")
            out["training_time"] = quantity(one_device_training_time(n_samples, t1, batch), "s")
            origins["training_time"] = (
                "training_tokens" if tokens is not None else "training_samples"
            )

    if out.get("activation_memory") is not None:
        figures["activations"] = "given"
    elif facts.shape and batch is not None:
        per_sample = facts.activation_per_sample[recompute]
        figures["activation_memory_per_sample"] = per_sample
        figures["activations"] = "derived"
        out["activation_memory"] = quantity(per_sample * batch, "byte")
        origins["activation_memory"] = f"recompute={recompute}"
    return figures


def _job_samples(
    out: Checked, workload: Workload, tokens: Value, samples: Value
) -> float:
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
    if not has_shape(workload):
        raise InputError(
            f"{workload.name} has no sequence length to turn tokens into samples; "
            "give training_samples",
            loc=("training_tokens",),
        )
    seq_len = float(getattr(workload, "seq_len"))  # noqa: B009 - a transformer's, checked above
    return float(samples_from_tokens(to_canonical(tokens, "tokens"), seq_len))


# -- the same derivation on arrays ---------------------------------------------------------


DERIVED_TARGETS = ("step_time", "training_time", "activation_memory")
"""Model inputs :func:`derive_inputs` fills where they are NaN."""


def derive_inputs(x: Inputs) -> Inputs:
    """Fill ``step_time``, ``training_time`` and ``activation_memory`` where they are NaN ("derive here").

    ``x`` is an :class:`~mlsysim.engine.equations.Inputs` whose figures may be
    numpy arrays (a sweep's block): a target is NaN where the layout derives
    it, a number where it was given (or swept). The formulas and their order
    are those of :func:`resolve`, so a sweep's row equals the scalar solve of
    the same layout:

        step_time = F b / (P u)                   (mfu u)
        training_time = S T1 / b,  S = D / s      (tokens D, or samples S)
        activation_memory = a_1 b                 (a_1 bytes per sample; 0 without a shape)
    """
    if _any_nan(x.step_time):
        x.step_time = _fill(
            x.step_time,
            lambda: step_time_from_flops(
                x.flops_per_sample, x.per_device_batch, x.peak_flops, x.mfu
            ),
        )
    if _any_nan(x.training_time):

        def training_time() -> Num:
            if _all_nan(x.training_tokens):
                samples = x.training_samples
            else:
                samples = samples_from_tokens(x.training_tokens, x.sequence_length)
            return one_device_training_time(samples, x.step_time, x.per_device_batch)

        x.training_time = _fill(x.training_time, training_time)
    if _any_nan(x.activation_memory):
        per_sample = x.activation_memory_per_sample
        x.activation_memory = _fill(
            x.activation_memory,
            lambda: 0.0 if _all_nan(per_sample) else per_sample * x.per_device_batch,
        )
    return x


def _fill(target: Num, formula: Callable[[], Num]) -> Num:
    """``formula()`` where ``target`` is NaN, ``target`` elsewhere."""
    if _all_nan(target):
        return formula()
    return np.where(np.isnan(target), formula(), target)


def _any_nan(value: Num) -> bool:
    return bool(np.any(np.isnan(value)))


def _all_nan(value: Num) -> bool:
    return bool(np.all(np.isnan(value)))


AXIS_NEEDS = {
    "mfu": "step_time",
    "training_tokens": "training_time",
    "training_samples": "training_time",
}
"""A swept source -> the input it derives, which the base scenario must derive too."""


def check_axes(job: Job, axes: tuple[str, ...]) -> None:
    """A sweep axis over ``mfu``/``training_tokens``/``training_samples`` needs a scenario that derives from them."""
    for name in axes:
        target = AXIS_NEEDS.get(name)
        if target is not None and job.origins.get(target) != name and target not in axes:
            raise InputError(
                f"sweep axis {name}: the scenario does not derive {target} from {name}; "
                f"clear {target} and give {name} (e.g. --set {target}=none --set {name}=...)",
                field=name,
            )


def sweep_base(job: Job) -> dict[str, float]:
    """Model inputs of a sweep group: the derived figures, and NaN for each target it derives."""
    base = job.model_attributes()
    for target in DERIVED_TARGETS:
        if job.derives(target):
            base[target] = math.nan
    return base


# -- notes ---------------------------------------------------------------------------------


def memory_note(job: Job, zero_stage: int) -> str:
    """What ``memory_per_device`` includes."""
    state = f"training state (16 B/param, ZeRO stage {zero_stage})"
    if job.activations == "derived":
        return (
            f"memory_per_device = {state} + activations of the transformer layers "
            f"(recompute={job.recompute}; Korthikanti et al. 2022; embeddings and logits not counted)"
        )
    if job.activations == "given":
        return f"memory_per_device = {state} + activation_memory as given"
    return (
        f"memory_per_device = {state} only: activations not counted "
        "(the workload states no transformer shape; give activation_memory)"
    )


def sanity_notes(values: Checked, job: Job) -> tuple[str, ...]:
    """Warnings about a layout that the model computes but that would not run as planned.

    ``values`` are the scenario's checked, resolved inputs.
    """
    notes = []
    mfu = values.get("mfu")
    if mfu is not None and mfu > MFU_SANITY_LIMIT:
        notes.append(
            f"mfu {mfu:g} is above {MFU_SANITY_LIMIT:g}: published large training runs "
            "report 0.3-0.6 (PaLM 46%, Llama 3 38-43%); the step time is likely optimistic"
        )
    workload = values["workload"]
    n = values["devices_per_node"] * values["nodes"]
    memory = values.get("device_memory")
    if memory is not None:
        capacity = to_canonical(memory, "data")
        sharded = float(training_state_bytes(workload.parameter_count(), 3, n))
        if sharded > capacity:
            notes.append(
                f"the training state does not fit even with ZeRO-3 over {n} devices "
                f"({sharded / 1e9:.4g} GB > {capacity / 1e9:.4g} GB per device): this job needs "
                "tensor or pipeline parallelism, which this tool does not model"
            )
    batch = batch_note(values)
    if batch is not None:
        notes.append(batch)
    scale = cluster_note(n)
    if scale is not None:
        notes.append(scale)
    return tuple(notes)


def batch_note(values: Checked) -> str | None:
    """The note for a global batch beyond the largest the workload's sources report; else None.

    Global batch B = per_device_batch x devices x accumulation_steps, in
    samples (sequences), against ``Workload.largest_reported_batch_samples()``
    (with :data:`BATCH_SANITY_TOLERANCE` for the sources' rounding).
    """
    workload = values["workload"]
    reported = workload.largest_reported_batch_samples()
    if reported is None:
        return None
    n = values["devices_per_node"] * values["nodes"]
    global_batch = values["per_device_batch"] * n * values.get("accumulation_steps", 1)
    if global_batch <= reported * BATCH_SANITY_TOLERANCE:
        return None
    figure = workload.largest_reported_batch
    stated = f"{reported:.7g} samples"
    if figure.dimensionality == quantity(1, "token").dimensionality:
        tokens = float(figure.to("token").magnitude)
        stated += f" = {tokens / 1e6:g}M tokens / {workload.seq_len} per sequence"
    cited = _short_source(workload.largest_reported_batch_source)
    what = workload.largest_reported_batch_note.split(":", 1)[0].strip()
    why = "; ".join(part for part in (cited, what) if part)
    return (
        f"global batch {global_batch:g} samples is beyond the largest reported for "
        f"{workload.name}: {stated}{f' ({why})' if why else ''}; "
        "convergence at this batch is unproven (more steps or a loss of quality)"
    )


def _short_source(source: str) -> str:
    """A source in a few words: the quoted title and what follows it in parentheses dropped."""
    return re.sub(r",? '[^']*'(?: \([^)]*\))?", "", source).strip()


def origins_notes(job: Job) -> tuple[str, ...]:
    """One note per preset or derivation: which inputs it filled."""
    by_origin: dict[str, list[str]] = {}
    for name, origin in job.origins.items():
        if name == "activation_memory":
            continue  # said by memory_note
        by_origin.setdefault(origin, []).append(name)
    return tuple(f"from {origin}: {', '.join(names)}" for origin, names in by_origin.items())


__all__ = [
    "RECOMPUTE_MODES",
    "Job",
    "check_accelerator",
    "check_fabric",
    "check_mfu",
    "check_node",
    "derive_inputs",
    "flops_per_sample",
    "resolve",
]


# -- explain -------------------------------------------------------------------------------

_ACTIVATION_EQUATIONS = {
    "none": ("L s b h (34 + 5 a s / h)", "{L} x {s} x {b} x {h} x (34 + 5 x {a} x {s} / {h})"),
    "selective": ("34 L s b h", "34 x {L} x {s} x {b} x {h}"),
    "full": ("2 L s b h", "2 x {L} x {s} x {b} x {h}"),
}


def explain_rows(
    values: Checked, job: Job, part: str = "time"
) -> list[tuple[str, str, str, str]]:
    """The derivation of the derived inputs: (what, equation, numbers, value) rows for ``explain``.

    ``part="time"``: step time and training time (before the model's steps);
    ``part="memory"``: the activations (beside the memory step). ``values``
    are the scenario's checked, resolved inputs. Operands are printed so
    that they recompute the printed value (x, /, +, parentheses).
    """
    rows: list[tuple[str, str, str, str]] = []
    if part == "memory":
        return _activation_rows(values, job)
    w = values["workload"]
    b = values["per_device_batch"]
    if job.derives("step_time"):
        f = job.flops_per_sample
        if getattr(w, "layers", None) is not None:
            n, s_, layers, h = w.parameter_count(), w.seq_len, w.layers, w.hidden_dim
            rows.append(
                (
                    "training FLOPs per sample (Kaplan et al. 2020; Narayanan et al. 2021)",
                    "F = 6 N s + 12 L h s^2",
                    f"6 x {n:.6g} x {s_} + 12 x {layers} x {h} x {s_} x {s_}",
                    f"{f:.6g} flop",
                )
            )
        else:
            forward = to_canonical(w.forward_flops_per_sample, "compute")
            rows.append(
                (
                    "training FLOPs per sample (forward + backward, Kaplan et al. 2020)",
                    "F = 3 F_forward",
                    f"3 x {forward:.6g}",
                    f"{f:.6g} flop",
                )
            )
        rows.append(
            (
                f"dense peak of {values['accelerator'].name} at {values['precision']}",
                "P (registry, no sparsity)",
                "",
                f"{job.peak_flops / 1e12:.6g} Tflop/s",
            )
        )
        t1 = to_canonical(values["step_time"], "time")
        rows.append(
            (
                "step_time, one device (model FLOPs utilisation u; Chowdhery et al. 2022)",
                "T1 = F b / (P u)",
                f"{f:.6g} x {b} / ({job.peak_flops:.6g} x {values['mfu']:g})",
                f"{t1:.6g} s",
            )
        )
    if job.derives("training_time"):
        t1 = to_canonical(values["step_time"], "time")
        if job.origins["training_time"] == "training_tokens":
            tokens = to_canonical(values["training_tokens"], "tokens")
            rows.append(
                (
                    "samples in the job (tokens / sequence length)",
                    "S = D / s",
                    f"{tokens:.6g} / {job.sequence_length:g}",
                    f"{job.samples:.6g}",
                )
            )
        total = to_canonical(values["training_time"], "time")
        rows.append(
            (
                "training_time, one device",
                "T_train = S T1 / b",
                f"{job.samples:.6g} x {t1:.6g} s / {b}",
                f"{total / 3600:.6g} h",
            )
        )
    return rows


def _activation_rows(values: Checked, job: Job) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []
    w, b = values["workload"], values["per_device_batch"]
    if job.activations == "derived":
        equation, numbers = _ACTIVATION_EQUATIONS[job.recompute]
        memory = to_canonical(values["activation_memory"], "data")
        rows.append(
            (
                f"activation memory, recompute={job.recompute} "
                "(Korthikanti et al. 2022: 16-bit, transformer layers only)",
                f"A_act = {equation}",
                numbers.format(L=w.layers, s=w.seq_len, b=b, h=w.hidden_dim, a=w.heads),
                f"{memory / 1e9:.6g} GB",
            )
        )
    return rows
