"""The steps of a compute time priced operator by operator, as ``explain()`` prints them.

A step from the operators (:mod:`mlsysim.physics.operators`) is the sum of four
classes, each at the bound that sets it (roofline: FLOPs over the achieved rate,
or bytes over the memory bandwidth):

* matrix products of the linear layers: T_mm = F_mm / (e P_f), e = c_f q, with
  c_f the fitted (or assumed) ceiling of the format f and q what the products'
  shapes leave of it (tile, wave and K / (K + K_0) factors,
  :func:`mlsysim.physics.matmul.matmul_efficiency`), here the FLOP-weighted
  factor of all the products of the step (the output layer's at the 16-bit peak; a
  mixture of experts' routed experts at their own ceiling c_e, their c_e / c_f in q);
* the attention core in 16 bits: T_att = F_att / (e_16 P_16) (fused: e_16 =
  c_16 x the fused kernels' share);
* casts to a low-precision format (only where there are any): T_cast = bytes / B_mem;
* memory-bound element-wise work: T_mem = bytes / B_mem;

then their sum, T1 (one device's step) or t_c (one micro-batch on a layout's
slowest stage). The FLOPs, bytes and times are the physics' own figures
(:class:`~mlsysim.physics.operators.OperatorTimes`), never re-derived here; the
shape factor q and the bandwidth are the ones those figures imply, printed so
that every right-hand side recomputes from its operands
(``tests/engine/test_explain.py``, ``tests/engine/test_layout_steps.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from mlsysim.core.formatting import fmt_rate
from mlsysim.physics.operators import FUSED_ATTENTION_SHARE, FUSED_ELEMENTWISE_SHARE, OperatorTimes

Row = tuple[str, str, str, str]


def _g(x: float) -> str:
    return f"{x:.6g}"


def _factor(flops: float, time: float, ceiling: float, peak: float) -> float:
    """q = F / (T c P), from F as printed (6 digits), so that the printed F / (c q P) gives T back."""
    return float(_g(flops)) / (time * ceiling * peak)


def operator_rows(
    ops: OperatorTimes,
    *,
    matmul_format: str,
    matmul_peak: float,
    matmul_ceiling: float,
    attention_peak: float,
    attention_ceiling: float,
    flash_attention: bool,
    fmt_time: Callable[[float], str],
    total: str,
    total_value: float,
    scope: str,
    layers: str = "L",
    expert_ceiling: float = float("nan"),
) -> list[Row]:
    """The rows of one compute time priced operator by operator (see the module docstring).

    ``ops``: the classes' figures; ``matmul_peak`` P_f and ``matmul_ceiling`` c_f: the
    linear layers' format; ``attention_peak`` P_16 and ``attention_ceiling`` c_16: the
    16-bit format of the attention core; ``total``: the name of the sum (``T1`` or
    ``t_c``) and ``total_value`` its value (seconds), the time the model used;
    ``scope``: what the figures cover (``"one step of b samples"``); ``layers``: the symbol of the
    layers they cover (``L``, or ``L_s`` on a pipeline stage); ``expert_ceiling`` c_e: a mixture of experts'
    routed experts' ceiling (NaN: a dense model).
    """
    rows: list[Row] = []
    mm_time, mm_flops = float(ops.matmul_time), float(ops.matmul_flops)
    att_time, att_flops = float(ops.attention_time), float(ops.attention_flops)
    cast_time, cast_bytes = float(ops.cast_time), float(ops.cast_bytes)
    mem_time, mem_bytes = float(ops.memory_time), float(ops.memory_bytes)
    q = _factor(mm_flops, mm_time, matmul_ceiling, matmul_peak)
    experts = (f", the routed experts' products at their ceiling c_e = {expert_ceiling:g} (expert_ceiling: "
               "c_e / c_f of theirs in q)") if expert_ceiling == expert_ceiling else ""
    rows.append((
        f"matrix products of the linear layers, {matmul_format} ({scope}; F_mm: their FLOPs, recomputation "
        "included; q: the shapes' tile, wave and K/(K+K_0) factors, FLOP-weighted, the output layer at the "
        f"16-bit peak{experts}; F in flop, P in flop/s)",
        "T_mm = F_mm / (e P_f),  e = c_f q",
        f"{_g(mm_flops)} / ({matmul_ceiling:g} x {_g(q)} x {_g(matmul_peak)})",
        fmt_time(mm_time),
    ))
    if flash_attention:
        what, equation = ("fused, causal: half the matrix, the backward 2.5 forwards; "
                          f"q = {FUSED_ATTENTION_SHARE:g}, the fused kernels' share of the ceiling"), \
            "T_att = F_att / (e_16 P_16),  e_16 = c_16 q"
    else:
        what, equation = ("unfused: two batched products per head, q their shapes' factors",
                          "T_att = F_att / (e_16 P_16),  e_16 = c_16 q")
    if att_flops > 0:
        # fused: the physics' own share (T_att = F_att / (c_16 share P_16) exactly)
        q_att = FUSED_ATTENTION_SHARE if flash_attention else _factor(att_flops, att_time, attention_ceiling,
                                                                      attention_peak)
        rows.append((
            f"attention core, 16-bit ({what}; F in flop, P in flop/s)",
            equation,
            f"{_g(att_flops)} / ({attention_ceiling:g} x {_g(q_att)} x {_g(attention_peak)})",
            fmt_time(att_time),
        ))
    if cast_time > 0:
        rows.append((
            f"casts to {matmul_format} (each linear layer's operands scaled and cast; memory-bound)",
            "T_cast = bytes_cast / B_mem",
            f"{_g(cast_bytes)} B / {fmt_rate(cast_bytes / cast_time)}",
            fmt_time(cast_time),
        ))
    if mem_time > 0:
        rows.append((
            "memory-bound element-wise work (norms, activation functions, dropout, residual adds, rotary "
            "embeddings, the softmax where unfused)",
            f"T_mem = bytes_mem / B_mem,  bytes_mem = {layers} n_pass a_layer "
            f"(x {FUSED_ELEMENTWISE_SHARE:g} with fused_elementwise)",
            f"{_g(mem_bytes)} B / {fmt_rate(mem_bytes / mem_time)}",
            fmt_time(mem_time),
        ))
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
