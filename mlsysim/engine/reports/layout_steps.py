"""The derivation of one parallel layout's update, step by step, for ``explain()`` to print.

Each step is ``(what, equation in symbols, equation with numbers, value)``, the
shape of the rows of :mod:`mlsysim.engine.reports.explain`. The symbolic equations are
the physics modules' own (``TP_TIME_EQUATION`` beside
:func:`~mlsysim.physics.tensor_parallel.tp_time_per_micro_batch`, ...), the
operands are the layout's inputs and the values are the figures
:func:`~mlsysim.physics.layout.layout_figures` computed (its ``parts``),
never re-derived here; ``tests/engine/test_layout_steps.py`` recomputes every
printed right-hand side from its printed operands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsysim.core.formatting import fmt_bytes, fmt_num, fmt_rate, fmt_time
from mlsysim.engine.reports.operator_steps import operator_rows
from mlsysim.physics.layout import (
    ADAM_BYTES_PER_PARAMETER,
    COMPUTE_EQUATION,
    UPDATE_EQUATION,
    LayoutFigures,
)
from mlsysim.physics.pipeline import BUBBLE_EQUATION, P2P_EQUATION
from mlsysim.physics.sharding import GATHER_EQUATION, LAYERWISE_EQUATION

Step = tuple[str, str, str, str]


def _n(x: object) -> str:
    return fmt_num(float(x))  # type: ignore[arg-type]


def layout_steps(inputs: Mapping[str, Any], figures: LayoutFigures) -> list[Step]:
    """The derivation of ``figures`` (one layout, scalars) from the ``inputs`` it was computed with.

    ``inputs`` are the keyword arguments of :func:`~mlsysim.physics.layout.layout_figures`
    (missing optional ones take its defaults). Steps of terms that are zero
    for the layout (no pipeline, no ZeRO-3, ...) are left out.
    """
    i = {**_DEFAULTS, **inputs}
    f, q = figures, figures.parts
    t, p, v = float(i["tensor_parallel"]), float(i["pipeline_parallel"]), float(i["pipeline_chunks"])
    b, m = float(i["micro_batch"]), float(i["micro_batches"])
    steps: list[Step] = []
    add = steps.append

    L, ls = float(i["layers"]), float(q.stage_layers)
    if p > 1:
        add(("layers of the slowest stage", "L_s = max(L_first, L_last, ceil(rest / stages))",
             _stage_operands(i, L, p), _n(ls)))
    add(("parameters per device", "psi = N (L_s / L) / t",
         f"{_n(i['parameters'])} x ({_n(ls)} / {_n(L)}) / {_n(t)}", _n(q.parameters_per_device)))
    add(("model FLOPs per sequence", "F = 6 N s + 12 L h s^2",
         f"6 x {_n(i['parameters'])} x {_n(i['seq_len'])} + 12 x {_n(i['layers'])} x {_n(i['hidden'])} x "
         f"{_n(i['seq_len'])} x {_n(i['seq_len'])}", _n(q.flops_per_sample)))
    given = float(i["device_step_time"]) == float(i["device_step_time"])
    if given:
        add(("compute per micro-batch", "t_c = T1 (L_s / L) / t",
             f"{fmt_time(i['device_step_time'])} x ({_n(ls)} / {_n(L)}) / {_n(t)}", fmt_time(q.micro_batch_time)))
    else:
        if float(q.recompute_flops_per_sample) > 0:
            attention = f"4 x {_n(L)} x {_n(i['hidden'])} x {_n(i['seq_len'])} x {_n(i['seq_len'])}"
            if i.get("recompute") == "full":
                add(("recomputed FLOPs per sequence (full)", "F_re = 2 (N - V h) s + 4 L h s^2",
                     f"2 x ({_n(i['parameters'])} - {_n(i['vocab'])} x {_n(i['hidden'])}) x {_n(i['seq_len'])} + "
                     f"{attention}", _n(q.recompute_flops_per_sample)))
            else:
                add(("recomputed FLOPs per sequence (selective)", "F_re = 4 L h s^2", attention,
                     _n(q.recompute_flops_per_sample)))
    if not given and float(i["matmul_ceiling"]) == float(i["matmul_ceiling"]):  # priced operator by operator
        steps += _operator_steps(i, q)
    elif not given:
        add(("matrix products per micro-batch", "b (F + F_re) (L_s / L) / (t u P)",
             f"{_n(b)} x ({_n(q.flops_per_sample)} + {_n(q.recompute_flops_per_sample)}) x ({_n(ls)} / {_n(L)}) / "
             f"({_n(t)} x {_n(i['math_efficiency'])} x {_n(i['peak_flops'])})", fmt_time(q.matmul_time)))
        add(("element-wise per micro-batch", "L_s n_pass a_layer / B_mem",
             f"{_n(ls)} x {_n(q.elementwise_passes)} x {fmt_bytes(q.stored_bytes)} / "
             f"{fmt_rate(i['memory_bandwidth'])}", fmt_time(q.elementwise_time)))
        add(("compute per micro-batch", COMPUTE_EQUATION,
             f"{fmt_time(q.matmul_time)} + {fmt_time(q.elementwise_time)}", fmt_time(q.micro_batch_time)))
    add(("compute", "m t_c", f"{_n(m)} x {fmt_time(q.micro_batch_time)}", fmt_time(f.compute_time)))
    if t > 1:
        add(("one tensor-parallel all-reduce", "2 (t-1) alpha + M f(t) / B_tp",
             f"2 x ({_n(t)} - 1) x {fmt_time(q.tensor_latency)} + {fmt_bytes(2 * b * i['seq_len'] * i['hidden'])} x "
             f"2 x ({_n(t)} - 1) / {_n(t)} / {fmt_rate(q.tensor_rate)}", fmt_time(q.tensor_collective_time)))
        add(("tensor-parallel time", "m T_tp = m L_s c t_ar,  c = 4 (6 with full recompute)",
             f"{_n(ls)} x {_n(q.tensor_collectives)} x {fmt_time(q.tensor_collective_time)} x "
             f"{_n(m)}", fmt_time(f.tensor_time)))
    if p > 1:
        add(("bubble", BUBBLE_EQUATION, f"({_n(p)} - 1) / ({_n(v)} x {_n(m)})", _n(f.bubble_fraction)))
        add(("bubble time", "(p-1)/v (t_c + t_tp)",
             f"({_n(p)} - 1) / {_n(v)} x ({fmt_time(q.micro_batch_time)} + {fmt_time(q.tensor_micro_batch_time)})",
             fmt_time(f.bubble_time)))
        add(("stage-to-stage transfers", P2P_EQUATION,
             f"2 x ({_n(v)} x {_n(m)} + {_n(p)} - 1) x ({fmt_time(q.pipeline_latency)} + {fmt_bytes(q.pipeline_message)} / "
             f"{fmt_rate(q.pipeline_rate)})", fmt_time(f.pipeline_time)))
    k = float(q.shard_group)
    if float(i["zero_stage"]) >= 3:
        add(("one layer's gather over the shard group", GATHER_EQUATION,
             f"({_n(k)} - 1) x {fmt_time(q.shard_latency)} + "
             f"{fmt_bytes(i['gradient_bytes'] * q.parameters_per_device / ls)} x "
             f"({_n(k)} - 1) / {_n(k)} / {fmt_rate(q.shard_rate)}",
             fmt_time(q.layer_gather_time)))
        c, tf, tb, rg = q.layer_gather_time, q.layer_forward_time, q.layer_backward_time, i["backward_gathers"]
        rest = ls - 1
        add(("exposed ZeRO-3 per micro-step", LAYERWISE_EQUATION,
             f"{fmt_time(c)} + {_n(rest)} x max(0, {fmt_time(c)} - {fmt_time(tf)}) + {_n(rg)} x {fmt_time(c)} + "
             f"{_n(rest)} x max(0, {_n(rg)} x {fmt_time(c)} + {fmt_time(c)} - {fmt_time(tb)}) + {fmt_time(c)}",
             fmt_time(q.zero3_micro_step_time)))
        add(("sharding time", "m T_zero3", f"{_n(m)} x {fmt_time(q.zero3_micro_step_time)}",
             fmt_time(f.sharding_time)))
    if float(f.data_time) > 0:
        add(("gradient synchronisation", "c_rs + c_ar - hidden + c_ag",
             f"{fmt_time(q.scatter_time)} + {fmt_time(q.replica_time)} - {fmt_time(q.hidden_time)} + "
             f"{fmt_time(q.scatter_time)}", fmt_time(f.data_time)))
    if float(i["optimizer_bytes"]) > 0:
        add(("optimizer step", "psi' x beta / B_mem",
             f"{_n(q.parameters_per_device)} / {_n(k if float(i['zero_stage']) >= 1 else 1)} x "
             f"{_n(i['optimizer_bytes'])} / {fmt_rate(i['memory_bandwidth'])}", fmt_time(f.optimizer_time)))
    add(("update", UPDATE_EQUATION,
         " + ".join(fmt_time(x) for x in (f.compute_time, f.tensor_time, f.bubble_time, f.pipeline_time,
                                          f.sharding_time, f.data_time, f.optimizer_time)),
         fmt_time(f.update_time)))
    add(("memory", "state + activations + buffers",
         f"{fmt_bytes(f.state_bytes)} + {fmt_bytes(f.activation_bytes)} + {fmt_bytes(f.buffer_bytes)}",
         fmt_bytes(f.memory_bytes)))
    add(("MFU", "B F / (T n P)",
         f"{_n(b)} x {_n(m)} x {_n(f.data_parallel)} x {_n(q.flops_per_sample)} / ({fmt_time(f.update_time)} x "
         f"{_n(i['devices'])} x {_n(i['peak_flops'])})", _n(f.mfu)))
    return steps


def _operator_steps(i: Mapping[str, Any], q: Any) -> list[Step]:
    """t_c of one micro-batch on the slowest stage, class by class (``LayoutParts.operators``)."""
    peak = float(i["peak_flops"])
    matmul_peak, attention = float(i["matmul_peak"]), float(i["attention_ceiling"])
    ceiling = float(i["matmul_ceiling"])
    return operator_rows(
        q.operators,
        matmul_format=str(i.get("matmul_format") or "at matmul_peak"),
        matmul_peak=matmul_peak if matmul_peak == matmul_peak else peak,
        matmul_ceiling=ceiling,
        attention_peak=peak,
        attention_ceiling=attention if attention == attention else ceiling,
        flash_attention=bool(i.get("flash_attention")),
        fmt_time=fmt_time,
        total="t_c",
        total_value=float(q.micro_batch_time),
        scope=f"one micro-batch of b = {_n(i['micro_batch'])} samples on the slowest stage's {_n(q.stage_layers)} layers, "
              f"1/{_n(i['tensor_parallel'])} of each",
        layers="L_s",
    )


def _stage_operands(i: Mapping[str, Any], layers: float, p: float) -> str:
    """The operands of the slowest stage's layers: the given first/last counts, the rest over the other stages."""
    given = [float(i[name]) for name in ("first_stage_layers", "last_stage_layers") if float(i[name]) == float(i[name])]
    rest = f"ceil(({_n(layers)}{''.join(f' - {_n(c)}' for c in given)}) / {_n(p - len(given))})"
    return f"max({', '.join([*(_n(c) for c in given), rest])})" if given else rest


_DEFAULTS: dict[str, Any] = {
    "tensor_parallel": 1.0, "pipeline_parallel": 1.0, "pipeline_chunks": 1.0, "micro_batch": 1.0,
    "micro_batches": 1.0, "zero_stage": 0.0, "shard_group": 0.0, "backward_gathers": 1.0, "data_overlap": 1.0,
    "intra_latency": 0.0, "inter_latency": 0.0, "gradient_bytes": 2.0, "device_step_time": float("nan"),
    "first_stage_layers": float("nan"), "last_stage_layers": float("nan"),
    "optimizer_bytes": ADAM_BYTES_PER_PARAMETER, "matmul_ceiling": float("nan"), "matmul_peak": float("nan"),
    "attention_ceiling": float("nan"),
}
"""The defaults of :func:`~mlsysim.physics.layout.layout_figures`' optional inputs."""
