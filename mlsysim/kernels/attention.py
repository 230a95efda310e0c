"""One fused attention call (FlashAttention, cuDNN) on one accelerator, forward or backward.

:func:`attention` answers a :class:`~mlsysim.kernels.result.KernelEstimate` (time, efficiency,
binding term); :func:`attention_time` is the SI-level form the engine calls on arrays. The
model is :func:`mlsysim.physics.attention.fused_attention_time`; its constants (per
architecture: the head-dim overhead D_0 and the floor; per architecture, format and
direction: the scale a, the loop overhead L_0 and the ceiling c) are fitted on the
attention tables (``mlsysim/data/kernels/attention_*.json``) by
:func:`mlsysim.kernels.attention_fit.fit_attention` and shipped in
``mlsysim/data/kernel_fits/attention.json``. They price the fastest fused kernel the
tables measure on the architecture (FlashAttention-2 on Ampere; FlashAttention-3 and
cuDNN on Hopper; cuDNN on Blackwell), not a particular library.

>>> from mlsysim.kernels.attention import attention
>>> one = attention("H100", batch=2, heads=16, seq_len=8192, head_dim=128, causal=False)
>>> one.bound, round(float(one.time.to("ms").magnitude), 2)
('compute', 1.72)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import cast

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.hardware.types import Accelerator
from mlsysim.kernels._accelerator import (
    accelerator_entry,
    accelerator_name,
    compute_unit_count,
    memory_bandwidth,
    peak_flops,
)
from mlsysim.kernels.fit_documents import AttentionFit
from mlsysim.kernels.result import KernelEstimate
from mlsysim.physics._array import Num, is_array, where
from mlsysim.physics.attention import DIRECTIONS, Direction, attention_flops, fused_attention_time
from mlsysim.physics.bounds import KernelTime

FIT_FILE = "attention.json"
"""The shipped fit, in ``mlsysim/data/kernel_fits``."""

ATTENTION_FORMATS: Mapping[str, str] = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "mxfp8": "mxfp8"}
"""The formats an attention call may run in, each with the class whose constants it uses: fp16 and
bf16 run at one tensor-core rate with the same kernels (their peak is the format's own)."""

ELEMENT_BYTES: Mapping[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "mxfp8": 1.0}
"""Bytes of one Q, K, V or O element in each format (mxfp8's block scales left out)."""

HOW_TO_SUPPLY = ("supply one: an attention table (batch, heads, seq_len, head_dim, causal, format, direction, "
                 "time or tflops) in the kernel tables format, `mlsysim calibrate kernels FILE`")


@dataclass(frozen=True)
class AttentionConstants:
    """The fitted constants of one architecture, format and direction (the physics module's symbols)."""

    scale: float
    """a: the efficiency reached on large head dims and long loops."""
    loop_overhead: float
    """L_0: a work unit's fixed start and end, in key tiles of its loop."""
    ceiling: float
    """c: the best efficiency measured (F / (t P)); no prediction is faster."""
    head_overhead: float
    """D_0: the non-tensor-core work per score, in FLOPs' worth of time (per architecture)."""
    floor: float
    """t_0: the per-kernel floor, seconds (per architecture)."""


@cache
def shipped_attention_fit() -> AttentionFit:
    """The shipped fit (``mlsysim/data/kernel_fits/attention.json``)."""
    text = files("mlsysim.data").joinpath("kernel_fits").joinpath(FIT_FILE).read_text(encoding="utf-8")
    return cast(AttentionFit, dict(json.loads(text)))


def group_key(fmt: str, direction: str) -> str:
    """How the fit file names a group: ``"bf16 forward"``."""
    return f"{ATTENTION_FORMATS[fmt]} {direction}"


def _architecture(accelerator: Accelerator) -> str:
    if not accelerator.architecture:
        raise InputError(f"{accelerator.name} states no architecture, and attention constants are per "
                         f"architecture; {HOW_TO_SUPPLY}", field="accelerator")
    return accelerator.architecture


def attention_constants(accelerator: Accelerator, fmt: str, direction: str,
                        fit: AttentionFit | None = None) -> AttentionConstants | None:
    """The constants of the accelerator's architecture in ``fmt`` and ``direction``; None where no group covers them."""
    architecture = (fit or shipped_attention_fit())["architectures"].get(_architecture(accelerator))
    if architecture is None:
        return None
    group = architecture["groups"].get(group_key(fmt, direction))
    if group is None:
        return None
    return AttentionConstants(
        scale=float(group["scale"]["value"]), loop_overhead=float(group["loop_overhead"]["value"]),
        ceiling=float(group["ceiling"]["value"]), head_overhead=float(architecture["head_overhead"]["value"]),
        floor=float(architecture["floor"]["value"]))


def _missing(accelerator: Accelerator, fmt: str, direction: str, fit: AttentionFit | None) -> InputError:
    architecture = _architecture(accelerator)
    known = (fit or shipped_attention_fit())["architectures"].get(architecture)
    covered = ", ".join(known["groups"]) if known else "nothing"
    return InputError(f"no attention table covers {accelerator_name(accelerator)} ({architecture}) in {fmt} "
                      f"{direction} (covered on {architecture}: {covered}); {HOW_TO_SUPPLY}", field="format")


def _check_words(fmt: str, direction: str) -> None:
    if fmt not in ATTENTION_FORMATS:
        raise InputError(f"format {fmt!r} is not an attention format; expected one of "
                         f"{', '.join(ATTENTION_FORMATS)}", field="format")
    if direction not in DIRECTIONS:
        raise InputError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}", field="direction")


def _pass_time(entry: Accelerator, constants: AttentionConstants, fmt: str, code: Direction, *, batch: Num,
               heads: Num, kv_heads: Num, seq_q: Num, seq_k: Num, head_dim: Num, head_dim_v: Num,
               causal: Num) -> KernelTime:
    return fused_attention_time(
        batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq_q, seq_k=seq_k, head_dim=head_dim,
        head_dim_v=head_dim_v, causal=causal, direction=float(code), element_bytes=ELEMENT_BYTES[fmt],
        peak_flops=peak_flops(entry, fmt), bandwidth=memory_bandwidth(entry),
        compute_units=compute_unit_count(entry), scale=constants.scale, head_overhead=constants.head_overhead,
        loop_overhead=constants.loop_overhead, ceiling=constants.ceiling, floor=constants.floor)


def attention_time(
    accelerator: Accelerator | str,
    *,
    batch: Num,
    heads: Num,
    seq_len: Num,
    head_dim: Num,
    kv_heads: Num | None = None,
    kv_len: Num | None = None,
    head_dim_v: Num | None = None,
    causal: Num = True,
    format: str = "bf16",
    direction: str = "forward",
    fit: AttentionFit | None = None,
) -> KernelTime:
    """SI level: the time of one call (or of many: numbers may be numpy arrays); parameters as :func:`attention`.

    ``forward+backward`` uses its own constants where a table measured the two passes together,
    else the sum of the forward and backward calls.
    """
    _check_words(format, direction)
    entry = accelerator_entry(accelerator)
    shape = {"batch": batch, "heads": heads, "kv_heads": heads if kv_heads is None else kv_heads,
             "seq_q": seq_len, "seq_k": seq_len if kv_len is None else kv_len, "head_dim": head_dim,
             "head_dim_v": head_dim if head_dim_v is None else head_dim_v, "causal": causal}
    constants = attention_constants(entry, format, direction, fit)
    if constants is not None:
        return _pass_time(entry, constants, format, DIRECTIONS[direction], **shape)
    forward = attention_constants(entry, format, "forward", fit)
    backward = attention_constants(entry, format, "backward", fit)
    if direction != "forward+backward" or forward is None or backward is None:
        raise _missing(entry, format, direction, fit)
    first = _pass_time(entry, forward, format, Direction.FORWARD, **shape)
    second = _pass_time(entry, backward, format, Direction.BACKWARD, **shape)
    time = first.time + second.time
    flops = attention_flops(shape["batch"], shape["heads"], shape["seq_q"], shape["seq_k"], shape["head_dim"],
                            shape["head_dim_v"], shape["causal"], float(Direction.FORWARD_BACKWARD))
    bound = where(first.time >= second.time, first.bound, second.bound)
    code = np.asarray(bound).astype(int) if is_array(bound) else int(bound)
    return KernelTime(time, flops / (time * peak_flops(entry, format)), code)


def _check_shape(values: Mapping[str, Num | None]) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not np.all(np.isfinite(np.asarray(value, dtype=float))) or not np.all(
                np.asarray(value, dtype=float) > 0):
            raise InputError(f"{name} must be a positive number, got {value!r}", field=name)


def attention(
    accelerator: Accelerator | str,
    *,
    batch: Num,
    heads: Num,
    seq_len: Num,
    head_dim: Num,
    kv_heads: Num | None = None,
    kv_len: Num | None = None,
    head_dim_v: Num | None = None,
    causal: bool = True,
    format: str = "bf16",
    direction: str = "forward",
    fit: AttentionFit | None = None,
) -> KernelEstimate:
    """One fused attention call: ``batch`` sequences of ``seq_len`` queries over ``kv_len`` keys.

    ``heads`` query heads share ``kv_heads`` key/value heads (grouped-query attention;
    default: as many), each of ``head_dim`` (queries and keys) and ``head_dim_v`` (values,
    default ``head_dim``; multi-head latent attention: 192 and 128); ``causal`` masks the
    keys after each query (aligned to the last keys); ``format`` one of
    :data:`ATTENTION_FORMATS`; ``direction`` ``forward``, ``backward`` or
    ``forward+backward``. ``fit``: constants fitted on a user's own tables
    (:func:`mlsysim.kernels.attention_fit.fit_attention`); default the shipped fit. A shape,
    format or accelerator no table covers is an :class:`~mlsysim.core.exceptions.InputError`
    naming the missing table.
    """
    _check_shape({"batch": batch, "heads": heads, "seq_len": seq_len, "head_dim": head_dim, "kv_heads": kv_heads,
                  "kv_len": kv_len, "head_dim_v": head_dim_v})
    if not isinstance(causal, (bool, np.bool_)):
        raise InputError(f"causal must be true or false, got {causal!r}", field="causal")
    entry = accelerator_entry(accelerator)
    kernel = attention_time(entry, batch=batch, heads=heads, seq_len=seq_len, head_dim=head_dim,
                            kv_heads=kv_heads, kv_len=kv_len, head_dim_v=head_dim_v, causal=bool(causal),
                            format=format, direction=direction, fit=fit)
    mask = "causal" if causal else "full"
    what = (f"{direction} {mask} attention on {accelerator_name(entry)} in {format} (batch {batch}, "
            f"heads {heads}, seq_len {seq_len}, head_dim {head_dim})")
    return KernelEstimate.of(what, kernel)
