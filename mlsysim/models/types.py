"""Workload types: what the model needs to know about a network being trained."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated

from pydantic import PlainValidator, model_validator

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import examples
from mlsysim.core.units import Quantity, quantity, to_canonical
from mlsysim.core.validation import (
    Validated,
    as_pydantic,
    check_nonnegative_int,
    check_positive_int,
    check_positive_quantity,
)
from mlsysim.models.moe import moe_layer_count, parameter_counts
from mlsysim.physics.precision import BYTES_PER_ELEMENT, check_precision

_check_data = check_positive_quantity("data")
_check_count = check_positive_quantity("count")


def _check_parameters(value: object) -> Quantity:
    """A parameter count: a Quantity in ``param``, or a plain positive number of parameters."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = quantity(float(value), "param")
    return _check_count(value)


ParameterCount = Annotated[Quantity, PlainValidator(as_pydantic(_check_parameters))]


def _positive_in(units: tuple[str, ...], what: str, shown: list[tuple[str, str]]) -> Callable[[object], Quantity]:
    """Validator of ``what``: a finite Quantity above zero in the dimension of one of ``units`` (the error
    shows the examples ``shown``)."""
    dimensions = [quantity(1, u).dimensionality for u in units]

    def check(value: object) -> Quantity:
        if (
            isinstance(value, Quantity)
            and any(value.dimensionality == d for d in dimensions)
            and math.isfinite(float(value.magnitude))
            and value.magnitude > 0
        ):
            return value
        raise InputError(f"expected {what} above zero ({examples(shown)}), got {value!r}")

    return check


_TOKEN_DIMENSION = quantity(1, "token").dimensionality

_check_flop_count = _positive_in(("flop",), "a number of floating-point operations", [("7.6e9", "flop")])
_check_batch_size = _positive_in(
    ("sample", "token"), "a batch size in samples or tokens", [("8192", "sample"), ("4e6", "token")]
)


def _optional(check: Callable[[object], object]) -> PlainValidator:
    """Validator for an optional field: None, or a value that passes ``check``."""
    return PlainValidator(as_pydantic(lambda v: None if v is None else check(v)))


class Workload(Validated):
    """A model being trained, described by its parameter count.

    ``model_size``, when given, is the size of the weights in a 16-bit format
    (fp16/bf16) as the source states it, and is used as the gradient size at
    those precisions. ``forward_flops_per_sample``, when
    given, is the compute of one forward pass over one sample, in
    floating-point operations (a multiply-add counts as two).
    ``largest_reported_batch``, when given, is the largest global batch a
    published source trained this model at (or showed it trains at without
    loss of quality), in samples or tokens as the source states it, with
    ``largest_reported_batch_source`` and ``largest_reported_batch_note``
    saying where and what; a batch beyond it is a sanity note, not an error.

    >>> from mlsysim import Workload, Q_
    >>> w = Workload(name="x", parameters=Q_(7e9, "param"))
    >>> w.size_in_bytes("bf16")
    <Quantity(1.4e+10, 'byte')>
    """

    name: str
    parameters: ParameterCount
    model_size: Annotated[Quantity | None, _optional(_check_data)] = None
    architecture: str | None = None
    description: str = ""
    source: str = ""
    note: str = ""
    forward_flops_per_sample: Annotated[Quantity | None, _optional(_check_flop_count)] = None
    largest_reported_batch: Annotated[Quantity | None, _optional(_check_batch_size)] = None
    largest_reported_batch_source: str = ""
    largest_reported_batch_note: str = ""

    @model_validator(mode="after")
    def _batch_in_tokens_needs_a_sequence_length(self) -> Workload:
        batch = self.largest_reported_batch
        in_tokens = batch is not None and batch.dimensionality == _TOKEN_DIMENSION
        if in_tokens and getattr(self, "seq_len", None) is None:
            raise InputError(
                "largest_reported_batch in tokens needs the workload's seq_len "
                "(a TransformerWorkload); give it in samples otherwise",
                field="largest_reported_batch",
            )
        return self

    def largest_reported_batch_samples(self) -> float | None:
        """The largest global batch the sources report for this model, in samples (sequences).

        None when the workload states none. A figure in tokens is divided by
        ``seq_len`` (the training context length): GPT-3's 3.2e6 tokens at
        2048 tokens per sequence are 1562.5 sequences.
        """
        batch = self.largest_reported_batch
        if batch is None:
            return None
        if batch.dimensionality == _TOKEN_DIMENSION:
            seq_len = getattr(self, "seq_len", None)
            assert seq_len is not None  # checked at construction
            return float(batch.to("token").magnitude) / float(seq_len)
        return float(batch.to("sample").magnitude)

    def parameter_count(self) -> float:
        """The number of parameters as a float."""
        return to_canonical(self.parameters, "count")

    def gradient_bytes(self, precision: str) -> float:
        """Bytes of one full gradient (or weight copy) at ``precision``, as a float.

        G = parameters x bytes_per_element(precision); if ``model_size`` is stated
        and the precision is fp16 or bf16, G = model_size.
        """
        key = check_precision(precision)
        if self.model_size is not None and key in ("fp16", "bf16"):
            return to_canonical(self.model_size, "data")
        return self.parameter_count() * BYTES_PER_ELEMENT[key]

    def size_in_bytes(self, precision: str = "fp16") -> Quantity:
        """The size of the weights at ``precision``, as a Quantity in bytes."""
        return quantity(self.gradient_bytes(precision), "byte")


class TransformerWorkload(Workload):
    """A transformer, with its shape (all optional; the count of parameters is what the model uses)."""

    layers: Annotated[int | None, _optional(check_positive_int)] = None
    hidden_dim: Annotated[int | None, _optional(check_positive_int)] = None
    heads: Annotated[int | None, _optional(check_positive_int)] = None
    seq_len: Annotated[int | None, _optional(check_positive_int)] = None
    """Tokens per training sequence: the length the model was (or is to be) trained at, not its context window."""
    context_window: Annotated[int | None, _optional(check_positive_int)] = None
    """The longest sequence the released model takes (its context window), where the source states one: a fact
    about the model, not read by the step (Mixtral 8x22B: 65,536, its training length not published)."""
    vocab_size: Annotated[int | None, _optional(check_positive_int)] = None
    kv_heads: Annotated[int | None, _optional(check_positive_int)] = None
    """Key/value heads of grouped-query attention (Ainslie et al. 2023); None: as many as ``heads``."""
    ffn_hidden: Annotated[int | None, _optional(check_positive_int)] = None
    """Inner width of the MLP; None: derived from the parameter count (what the layers hold beyond attention)."""
    gated_mlp: bool | None = None
    """A gated MLP (SwiGLU: three matrices h x f; Shazeer 2020); None or False: two matrices."""
    head_dim: Annotated[int | None, _optional(check_positive_int)] = None
    """Width of one attention head; None: hidden_dim / heads. Qwen3 uses 128 at hidden 4096 and
    64 heads (queries 8192 wide); Mixtral's and Llama's equal hidden_dim / heads."""
    tied_embeddings: bool | None = None
    """The output layer shares the input embedding's matrix (GPT-2, BERT); None or False: untied."""

    mtp_layers: Annotated[int | None, _optional(check_nonnegative_int)] = None
    """Multi-token-prediction modules D (DeepSeek-V3: 1): each a transformer block, a projection and the shared
    output head, run on the last pipeline stage (:mod:`mlsysim.physics.multi_token`); None or 0: none. Not in
    the model FLOPs (MFU)."""

    # -- mixture of experts (Shazeer et al. 2017; Fedus et al. 2022) --------------------------
    experts: Annotated[int | None, _optional(check_positive_int)] = None
    """Routed experts per MoE layer; None: a dense model (every layer an MLP of ``ffn_hidden``)."""
    experts_per_token: Annotated[int | None, _optional(check_positive_int)] = None
    """Routed experts each token is sent to (top-k), at most ``experts``."""
    expert_ffn_hidden: Annotated[int | None, _optional(check_positive_int)] = None
    """Inner width of one routed expert (an MLP, gated like the dense MLP when ``gated_mlp``)."""
    shared_experts: Annotated[int | None, _optional(check_nonnegative_int)] = None
    """Always-active shared experts per MoE layer (DeepSeekMoE); None or 0: none."""
    shared_expert_ffn_hidden: Annotated[int | None, _optional(check_positive_int)] = None
    """Inner width of ONE shared expert; None: ``expert_ffn_hidden``."""
    dense_layers: Annotated[int | None, _optional(check_nonnegative_int)] = None
    """The first k layers are dense (an MLP of ``ffn_hidden``); None: 0 (DeepSeek-V3: 3)."""
    moe_layer_frequency: Annotated[int | None, _optional(check_positive_int)] = None
    """Of the layers after ``dense_layers``, every n-th is MoE, counted from the first of them
    (0, n, 2n, ...); the others are dense. None: 1, all of them (Mixtral, Qwen3, DeepSeek-V3)."""
    active_parameters: Annotated[Quantity | None, _optional(_check_parameters)] = None
    """Parameters used per token as the source states them (a count like ``parameters``)."""

    # -- attention: multi-head (with grouped-query) or multi-head latent (DeepSeek-V2) --------
    attention: str = "mha"
    """``"mha"``: multi-head attention (grouped-query with ``kv_heads``); ``"mla"``: multi-head
    latent attention (DeepSeek-AI 2024, DeepSeek-V2), with the five ranks and widths below."""
    kv_lora_rank: Annotated[int | None, _optional(check_positive_int)] = None
    """MLA: width of the compressed key/value latent (DeepSeek-V3: 512)."""
    q_lora_rank: Annotated[int | None, _optional(check_positive_int)] = None
    """MLA: width of the compressed query latent (DeepSeek-V3: 1536)."""
    qk_rope_head_dim: Annotated[int | None, _optional(check_positive_int)] = None
    """MLA: per-head width of the rotary (decoupled) part of queries and keys (DeepSeek-V3: 64)."""
    qk_nope_head_dim: Annotated[int | None, _optional(check_positive_int)] = None
    """MLA: per-head width of the non-rotary part of queries and keys (DeepSeek-V3: 128)."""
    v_head_dim: Annotated[int | None, _optional(check_positive_int)] = None
    """MLA: per-head width of the values (DeepSeek-V3: 128)."""

    @model_validator(mode="after")
    def _kv_heads_divide_heads(self) -> TransformerWorkload:
        if self.kv_heads is not None and self.heads is not None and self.heads % self.kv_heads:
            raise InputError(
                f"kv_heads ({self.kv_heads}) must divide heads ({self.heads}): each key/value head "
                "serves a whole group of query heads",
                field="kv_heads",
            )
        return self

    @model_validator(mode="after")
    def _experts_are_consistent(self) -> TransformerWorkload:
        moe_fields = ("experts_per_token", "expert_ffn_hidden", "shared_experts",
                      "shared_expert_ffn_hidden", "dense_layers", "moe_layer_frequency")
        if self.experts is None:
            for name in moe_fields:
                if getattr(self, name) is not None:
                    raise InputError(
                        f"{name} describes a mixture of experts; give experts (routed experts per "
                        "MoE layer) too", field=name)
            return self
        for name in ("experts_per_token", "expert_ffn_hidden"):
            if getattr(self, name) is None:
                raise InputError(f"a mixture of experts needs {name} (experts is {self.experts})",
                                 field=name)
        assert self.experts_per_token is not None
        if self.experts_per_token > self.experts:
            raise InputError(
                f"experts_per_token ({self.experts_per_token}) must be at most experts "
                f"({self.experts}): a token is sent to k of the routed experts",
                field="experts_per_token")
        if self.shared_expert_ffn_hidden is not None and not self.shared_experts:
            raise InputError("shared_expert_ffn_hidden is the width of a shared expert; "
                             "give shared_experts (at least 1) too", field="shared_expert_ffn_hidden")
        if self.layers is not None and (self.dense_layers or 0) >= self.layers:
            raise InputError(
                f"dense_layers ({self.dense_layers}) must be below layers ({self.layers}): "
                "a mixture of experts has at least one MoE layer", field="dense_layers")
        if self.layers is not None and self.ffn_hidden is None:
            dense = self.layers - moe_layer_count(self.layers, self.dense_layers, self.moe_layer_frequency)
            if dense:
                raise InputError(
                    f"{dense} of the {self.layers} layers are dense: give ffn_hidden, "
                    "the width of their MLP", field="ffn_hidden")
        return self

    @model_validator(mode="after")
    def _active_parameters_within_the_total(self) -> TransformerWorkload:
        if self.active_parameters is not None and self.active_parameters > self.parameters:
            raise InputError(
                f"active_parameters ({self.active_parameters:~P}) must be at most parameters "
                f"({self.parameters:~P})", field="active_parameters")
        return self

    @model_validator(mode="after")
    def _attention_kind_and_its_widths(self) -> TransformerWorkload:
        if self.attention not in ATTENTION_KINDS:
            raise InputError(
                f"expected one of {', '.join(ATTENTION_KINDS)}, got {self.attention!r}",
                field="attention")
        given = [name for name in MLA_FIELDS if getattr(self, name) is not None]
        if self.attention == "mla":
            missing = [name for name in MLA_FIELDS if getattr(self, name) is None]
            if missing:
                raise InputError(
                    f"multi-head latent attention needs {', '.join(MLA_FIELDS)}; "
                    f"{', '.join(missing)} missing", field=missing[0])
            for name in ("kv_heads", "head_dim"):
                if getattr(self, name) is not None:
                    raise InputError(
                        f"{name} is for attention='mha'; multi-head latent attention's widths are "
                        "qk_nope_head_dim, qk_rope_head_dim and v_head_dim", field=name)
        elif given:
            raise InputError(f"{given[0]} is a width of multi-head latent attention; "
                             "set attention='mla' too", field=given[0])
        return self

    @model_validator(mode="after")
    def _counts_agree_with_the_shape(self) -> TransformerWorkload:
        """Refuse stated parameter counts that a complete shape contradicts (issue 40: DeepSeek-V3 with 300B
        active parameters printed an MFU of 293%): beyond :data:`PARAMETER_COUNT_TOLERANCE` of the count
        :func:`~mlsysim.models.moe.parameter_counts` makes, the figures describe two different models."""
        try:
            total, active = parameter_counts(self)
        except InputError:  # a shape too incomplete to count: nothing to compare
            return self
        stated = {"parameters": self.parameters, "active_parameters": self.active_parameters}
        for name, counted in (("parameters", total), ("active_parameters", active)):
            value = stated[name]
            if value is None or name == "active_parameters" and self.experts is None:
                continue
            given = to_canonical(value, "count")
            if abs(given - counted) > PARAMETER_COUNT_TOLERANCE * counted:
                raise InputError(
                    f"{name} ({given:.4g}) disagrees with the shape, which counts {counted:.4g}"
                    + (" used per token" if name == "active_parameters" else "")
                    + f" (layers, widths, {'experts, ' if self.experts else ''}vocabulary; embeddings "
                    f"{'tied' if self.tied_embeddings else 'untied'}; biases and norms not counted): more than "
                    f"{PARAMETER_COUNT_TOLERANCE:.0%} apart, they describe two different models; correct one "
                    + ("(tied_embeddings=True where the output layer shares the embedding)"
                       if name == "parameters" and not self.tied_embeddings else "of them"),
                    field=name,
                )
        return self

    def is_moe(self) -> bool:
        """Whether the model is a mixture of experts (``experts`` given)."""
        return self.experts is not None


PARAMETER_COUNT_TOLERANCE = 0.10
"""How far a stated parameter count may be from the shape's count (:func:`~mlsysim.models.moe.parameter_counts`).
The registry's stated counts are within 1.5% of it (DeepSeek-V3: 37B active stated, 37.55B counted; Mixtral
8x22B: 141B stated, 140.6B counted); sources round to two significant figures (a "7B" model of 6.74B is 3.9%
off) and the count leaves out biases, norms and modules outside the layers (DeepSeek-V3's multi-token
prediction, 2% of its total). Beyond 10% the figures describe two different models."""


ATTENTION_KINDS = ("mha", "mla")
"""Attention kinds: multi-head (grouped-query with kv_heads) and multi-head latent."""

MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
"""The widths multi-head latent attention needs, all together."""


def workload_of(value: object) -> Workload:
    """Check that ``value`` is a Workload."""
    if isinstance(value, Workload):
        return value
    raise InputError(
        f"expected a mlsysim.Workload (e.g. mlsysim.Models.Language.GPT2), got {value!r}"
    )
