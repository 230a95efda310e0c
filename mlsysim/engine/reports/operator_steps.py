"""The steps of a compute time priced operator by operator, as ``explain()`` prints them.

A step from the operators (:mod:`mlsysim.physics.operators`) is the sum of four classes of
kernels, each priced by the device's measured kernel models (:mod:`mlsysim.kernels`):

* matrix products of the linear layers: T_mm = F_mm / (e P_f), e the efficiency their kernels
  reach, FLOP-weighted over the step's products: the in-training ceiling c_f of the format times
  what the shapes leave of it (the launch and fill floor, tiles, split-K, waves,
  :func:`mlsysim.physics.gemm.gemm_time`); the output layer at the 16-bit peak, a mixture of
  experts' routed experts as grouped kernels;
* the attention core in 16 bits: T_att = F_att / (e_16 P_16), e_16 the fused kernels' measured
  efficiency (:func:`mlsysim.physics.attention.fused_attention_time`), or unfused, two batched
  products per head and the scores through memory;
* casts to a low-precision format (only where there are any) and memory-bound element-wise work:
  T = n t_0 + bytes / (f B_mem), n kernels each paying the measured floor t_0, the bytes at the
  measured share f of the memory bandwidth (:func:`mlsysim.physics.streaming.memory_kernel_time`);

then their sum, T1 (one device's step) or t_c (one micro-batch on a layout's slowest stage). The
FLOPs, bytes, kernel counts and times are the physics' own figures
(:class:`~mlsysim.physics.operators.OperatorTimes`), never re-derived here; the efficiencies are
the ones those figures imply, printed so that every right-hand side recomputes from its operands
(``tests/engine/test_explain.py``, ``tests/engine/test_layout_steps.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from mlsysim.core.formatting import fmt_rate
from mlsysim.physics.operators import FUSED_ELEMENTWISE_SHARE, OperatorTimes
from mlsysim.physics.records import KernelConstants

Row = tuple[str, str, str, str]


def _g(x: float) -> str:
    return f"{x:.6g}"


def _efficiency(flops: float, time: float, peak: float) -> float:
    """e = F / (T P), from F as printed (6 digits), so that the printed F / (e P) gives T back."""
    return float(_g(flops)) / (time * peak)


def _streaming_row(what: str, symbol: str, seconds: float, moved: float, count: float, kernels: KernelConstants,
                   bandwidth: float, fmt_time: Callable[[float], str]) -> Row:
    floor, fraction = float(kernels.memory_floor), float(kernels.memory_fraction)
    return (
        what,
        f"{symbol} = n t_0 + bytes / (f B_mem)",
        f"{_g(count)} x {fmt_time(floor)} + {_g(moved)} B / ({fraction:g} x {fmt_rate(bandwidth)})",
        fmt_time(seconds),
    )


def operator_rows(
    ops: OperatorTimes,
    *,
    matmul_format: str,
    matmul_peak: float,
    matmul_ceiling: float,
    attention_peak: float,
    flash_attention: bool,
    kernels: KernelConstants,
    bandwidth: float,
    fmt_time: Callable[[float], str],
    total: str,
    total_value: float,
    scope: str,
    layers: str = "L",
    expert_ceiling: float = float("nan"),
) -> list[Row]:
    """The rows of one compute time priced operator by operator (see the module docstring).

    ``ops``: the classes' figures; ``matmul_peak`` P_f and ``matmul_ceiling`` c_f: the linear layers'
    format; ``attention_peak`` P_16: the 16-bit peak of the attention core; ``kernels`` the device's
    measured kernels and ``bandwidth`` its memory's; ``total``: the name of the sum (``T1`` or ``t_c``)
    and ``total_value`` its value (seconds); ``scope``: what the figures cover; ``layers``: the symbol
    of the layers they cover (``L``, or ``L_s`` on a pipeline stage); ``expert_ceiling`` c_e: a mixture of
    experts' routed experts' ceiling (NaN: the linear layers').
    """
    rows: list[Row] = []
    mm_time, mm_flops = float(ops.matmul_time), float(ops.matmul_flops)
    att_time, att_flops = float(ops.attention_time), float(ops.attention_flops)
    cast_time, mem_time = float(ops.cast_time), float(ops.memory_time)
    experts = (f"; the routed experts' grouped kernels at c_e = {expert_ceiling:g}"
               if expert_ceiling == expert_ceiling else "")
    rows.append((
        f"matrix products of the linear layers, {matmul_format} ({scope}; F_mm: their FLOPs, recomputation "
        f"included; e: their kernels' efficiency, FLOP-weighted: the in-training ceiling c_f = {matmul_ceiling:g} "
        "times what the shapes leave (launch and fill floor, tiles, split-K, waves), the output layer at the "
        f"16-bit peak{experts}; F in flop, P in flop/s)",
        "T_mm = F_mm / (e P_f)",
        f"{_g(mm_flops)} / ({_g(_efficiency(mm_flops, mm_time, matmul_peak))} x {_g(matmul_peak)})",
        fmt_time(mm_time),
    ))
    if att_flops > 0:
        what = ("fused, causal: the forward and backward kernels (and the forward again where recomputed), e_16 "
                "their measured efficiency" if flash_attention else
                "unfused: two batched products per head and the scores through memory, e_16 what they reach")
        rows.append((
            f"attention core, 16-bit ({what}; F in flop, P in flop/s)",
            "T_att = F_att / (e_16 P_16)",
            f"{_g(att_flops)} / ({_g(_efficiency(att_flops, att_time, attention_peak))} x {_g(attention_peak)})",
            fmt_time(att_time),
        ))
    if cast_time > 0:
        rows.append(_streaming_row(
            f"casts to {matmul_format} (each linear layer's operands scaled and cast: n memory-bound kernels)",
            "T_cast", cast_time, float(ops.cast_bytes), float(ops.cast_kernels), kernels, bandwidth, fmt_time))
    if mem_time > 0:
        rows.append(_streaming_row(
            "memory-bound element-wise work (norms, activation functions, dropout, residual adds, rotary "
            f"embeddings, the softmax where unfused; bytes = {layers} n_pass a_layer, x {FUSED_ELEMENTWISE_SHARE:g} "
            "bytes and kernels with fused_elementwise)",
            "T_mem", mem_time, float(ops.memory_bytes), float(ops.memory_kernels), kernels, bandwidth, fmt_time))
    terms = [("T_mm", mm_time), ("T_att", att_time)] + ([("T_cast", cast_time)] if cast_time > 0 else []) + [
        ("T_mem", mem_time)]
    terms = [(name, value) for name, value in terms if value > 0 or name in ("T_mm", "T_mem")]
    rows.append((
        f"{total}: the operator classes in sequence ({scope})",
        f"{total} = " + " + ".join(name for name, _ in terms),
        " + ".join(fmt_time(value) for _, value in terms),
        fmt_time(total_value),
    ))
    return rows
