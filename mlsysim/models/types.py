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
    check_positive_int,
    check_positive_quantity,
)
from mlsysim.physics.precision import BYTES_PER_ELEMENT, check_precision

_check_data = check_positive_quantity("data")
_check_count = check_positive_quantity("count")


def _check_parameters(value: object) -> Quantity:
    """A parameter count: a Quantity in ``param``, or a plain positive number of parameters."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = quantity(float(value), "param")
    return _check_count(value)


ParameterCount = Annotated[Quantity, PlainValidator(as_pydantic(_check_parameters))]


def _check_flop_count(value: object) -> Quantity:
    """A number of floating-point operations: a finite Quantity in ``flop`` above zero."""
    if (
        isinstance(value, Quantity)
        and value.dimensionality == _FLOP_DIMENSION
        and math.isfinite(float(value.magnitude))
        and value.magnitude > 0
    ):
        return value
    raise InputError(
        "expected a number of floating-point operations above zero "
        f"({examples([('7.6e9', 'flop')])}), got {value!r}"
    )


_FLOP_DIMENSION = quantity(1, "flop").dimensionality

_BATCH_UNITS = ("sample", "token")
_TOKEN_DIMENSION = quantity(1, "token").dimensionality


def _check_batch_size(value: object) -> Quantity:
    """A batch size: a finite Quantity in ``sample`` or ``token`` above zero."""
    if (
        isinstance(value, Quantity)
        and any(value.dimensionality == quantity(1, u).dimensionality for u in _BATCH_UNITS)
        and math.isfinite(float(value.magnitude))
        and value.magnitude > 0
    ):
        return value
    raise InputError(
        "expected a batch size in samples or tokens above zero "
        f"({examples([('8192', 'sample'), ('4e6', 'token')])}), got {value!r}"
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
    vocab_size: Annotated[int | None, _optional(check_positive_int)] = None
    kv_heads: Annotated[int | None, _optional(check_positive_int)] = None
    """Key/value heads of grouped-query attention (Ainslie et al. 2023); None: as many as ``heads``."""
    ffn_hidden: Annotated[int | None, _optional(check_positive_int)] = None
    """Inner width of the MLP; None: derived from the parameter count (what the layers hold beyond attention)."""
    gated_mlp: bool | None = None
    """A gated MLP (SwiGLU: three matrices h x f; Shazeer 2020); None or False: two matrices."""

    @model_validator(mode="after")
    def _kv_heads_divide_heads(self) -> TransformerWorkload:
        if self.kv_heads is not None and self.heads is not None and self.heads % self.kv_heads:
            raise InputError(
                f"kv_heads ({self.kv_heads}) must divide heads ({self.heads}): each key/value head "
                "serves a whole group of query heads",
                field="kv_heads",
            )
        return self


def workload_of(value: object) -> Workload:
    """Check that ``value`` is a Workload."""
    if isinstance(value, Workload):
        return value
    raise InputError(
        f"expected a mlsysim.Workload (e.g. mlsysim.Models.Language.GPT2), got {value!r}"
    )
