"""What the model reads from a workload and an accelerator: FLOPs, shape, activations, peak.

Computed once per workload object (workloads are immutable) and shared by the
field table, the derivations and explain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import nested_setting
from mlsysim.core.units import to_canonical
from mlsysim.physics.activations import RECOMPUTE_MODES, activation_bytes
from mlsysim.physics.compute import cnn_flops_per_sample, transformer_flops_per_sample
from mlsysim.physics.precision import BYTES_PER_ELEMENT

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator
    from mlsysim.models.types import TransformerWorkload, Workload

DEFAULT_RECOMPUTE = "selective"
"""Activations counted by default: the attention matrices are not stored, as with
FlashAttention-style kernels (Dao et al. 2022), the default attention path of
PyTorch's scaled_dot_product_attention on recent GPUs and of Megatron-LM. A
one-device profile such as GPT-2 (1.5B) at batch 16 x 1024 tokens on an 80 GB
device is only possible so (24 GB of state + 43 GB of activations; 143 GB of
activations with the matrices stored)."""

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



SHAPE_EXAMPLES = {"layers": "32", "hidden_dim": "4096", "heads": "32", "seq_len": "4096"}
"""What a transformer needs for its FLOPs, activations and layouts, each with an example value."""


def shape_gap(workload: object) -> str:
    """What a transformer workload lacks of :data:`SHAPE_EXAMPLES` and how to give it (``""``: nothing, or not a
    transformer): a registry model whose training length is not published says so, with its context window."""
    if not hasattr(workload, "seq_len"):
        return ""
    missing = [name for name in SHAPE_EXAMPLES if getattr(workload, name, None) is None]
    if not missing:
        return ""
    window = getattr(workload, "context_window", None)
    why = (f" (the length it was trained at is not stated; {window:,} tokens is its context window)"
           if "seq_len" in missing and window else "")
    name = getattr(workload, "name", "the workload")
    return (f"{name} has no {', '.join(missing)}{why}: give it, "
            f"{nested_setting('workload', missing[0], SHAPE_EXAMPLES[missing[0]])}")


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
    sequence_length: float
    """Tokens per sample of a transformer (NaN without a shape)."""


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
        float(seq_len) if shape else math.nan,  # type: ignore[arg-type]
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
        active = moe_numbers(workload)["active_parameters"]  # a mixture of experts computes with these
        used = workload.parameter_count() if active != active else active
        return float(transformer_flops_per_sample(used, layers, hidden, seq_len, attention_width(workload)))
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


SHAPE_FIELDS = {"layers": "layers", "hidden": "hidden_dim", "heads": "heads", "seq_len": "seq_len",
                "vocab": "vocab_size"}
"""The layout inputs a transformer workload gives, by the workload's own attribute names."""


def workload_shape(workload: Workload) -> dict[str, float]:
    """The ``workload`` inputs of :func:`~mlsysim.physics.layout.layout_figures` from a registry workload.

    Raises :class:`InputError` naming the first missing figure (layouts need a
    transformer's layers, hidden size, heads, sequence length and vocabulary).
    """
    shape = {"parameters": to_canonical(workload.parameters, "count")}
    for name, attribute in SHAPE_FIELDS.items():
        value = getattr(workload, attribute, None)
        if value is None:
            raise InputError(
                f"{workload.name} has no {attribute}; a parallel layout needs a transformer's layers, "
                "hidden_dim, heads, seq_len and vocab_size",
                field="workload",
            )
        shape[name] = float(value)
    return shape


MOE_NUMBERS = ("experts", "experts_per_token", "expert_ffn_hidden", "shared_experts", "shared_expert_ffn_hidden",
               "moe_share", "expert_parameters", "active_parameters")
"""A mixture of experts' model numbers (:func:`moe_numbers`; experts 0 for a dense model)."""

MLA_NUMBERS = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
"""Multi-head latent attention's widths (NaN for multi-head or grouped-query attention)."""

SHAPE_NUMBERS = ("layers", "hidden", "heads", "seq_len", "vocab", "kv_heads", "ffn_hidden", "gated_mlp", "head_dim",
                 *MOE_NUMBERS, *MLA_NUMBERS, "mtp_layers", "recompute_code")
"""The model numbers :func:`shape_numbers` gives (:class:`~mlsysim.engine.model.equations.Inputs` attributes)."""


def moe_numbers(workload: object) -> dict[str, float]:
    """A mixture of experts' model numbers: E, k, f_e, S, f_s, the share of MoE layers M / L, the routed
    experts' parameters M E P(f_e) and the active parameters (stated, else counted from the shape:
    :func:`mlsysim.models.moe.parameter_counts`); experts 0 and the rest NaN for a dense model."""
    from mlsysim.models.moe import mlp_parameters, moe_layers, parameter_counts

    out = dict.fromkeys(MOE_NUMBERS, math.nan)
    experts = getattr(workload, "experts", None)
    if experts is None:
        out["experts"] = 0.0
        return out
    w = cast("TransformerWorkload", workload)
    for name in ("experts", "experts_per_token", "expert_ffn_hidden", "shared_experts", "shared_expert_ffn_hidden"):
        value = getattr(w, name, None)
        out[name] = math.nan if value is None else float(value)
    if out["shared_experts"] != out["shared_experts"]:
        out["shared_experts"] = 0.0
    moe = moe_layers(w)
    out["moe_share"] = moe / float(cast(int, w.layers))
    out["expert_parameters"] = float(moe * experts * mlp_parameters(w, cast(int, w.expert_ffn_hidden)))
    stated = w.active_parameters
    out["active_parameters"] = to_canonical(stated, "count") if stated is not None else parameter_counts(w)[1]
    return out


def attention_width(workload: object) -> float:
    """h_att = a (d_qk + d_v) / 2: the hidden size for multi-head attention, wider for multi-head latent."""
    if getattr(workload, "attention", "mha") != "mla":
        return float(getattr(workload, "hidden_dim", math.nan) or math.nan)
    nope, rope, value = (float(getattr(workload, n)) for n in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    return float(getattr(workload, "heads")) * (nope + rope + value) / 2.0  # noqa: B009 - a transformer's


def shape_numbers(workload: object, recompute: str) -> dict[str, float]:
    """A workload's transformer shape as model numbers (NaN where not stated; vocabulary 0),
    and the code of the recompute mode: what a parallel layout reads (the shape kept per
    workload object, as :func:`workload_facts` keeps its figures)."""
    key = (id(workload), recompute)
    found = _SHAPES.get(key)
    if found is not None and found[0] is workload:
        return dict(found[1])
    shape = {
        name: float(value) if (value := getattr(workload, attribute, None)) is not None else math.nan
        for name, attribute in SHAPE_FIELDS.items()
    }
    if shape["vocab"] != shape["vocab"]:
        shape["vocab"] = 0.0
    for name in ("kv_heads", "ffn_hidden"):
        value = getattr(workload, name, None)
        shape[name] = math.nan if value is None else float(value)
    shape["gated_mlp"] = 1.0 if getattr(workload, "gated_mlp", None) else 0.0
    head_dim = getattr(workload, "head_dim", None)
    shape["head_dim"] = math.nan if head_dim is None else float(head_dim)
    shape.update(moe_numbers(workload))
    mla = getattr(workload, "attention", "mha") == "mla"
    for name in MLA_NUMBERS:
        value = getattr(workload, name, None) if mla else None
        shape[name] = math.nan if value is None else float(value)
    shape["mtp_layers"] = float(getattr(workload, "mtp_layers", None) or 0)
    shape["recompute_code"] = float(RECOMPUTE_MODES.index(recompute))
    if len(_SHAPES) > 1024:
        _SHAPES.clear()
    _SHAPES[key] = (workload, shape)  # the entry keeps the object, so its id stays its own
    return dict(shape)


_SHAPES: dict[tuple[int, str], tuple[object, dict[str, float]]] = {}
