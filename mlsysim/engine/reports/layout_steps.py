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
from mlsysim.physics.layout import COMPUTE_EQUATION, UPDATE_EQUATION, LayoutFigures
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

    add(("parameters per device", "psi = N / (t p)", f"{_n(i['parameters'])} / ({_n(t)} x {_n(p)})",
         _n(q.parameters_per_device)))
    add(("model FLOPs per sequence", "F = 6 N s + 12 L h s^2",
         f"6 x {_n(i['parameters'])} x {_n(i['seq_len'])} + 12 x {_n(i['layers'])} x {_n(i['hidden'])} x "
         f"{_n(i['seq_len'])} x {_n(i['seq_len'])}", _n(q.flops_per_sample)))
    given = float(i["device_step_time"]) == float(i["device_step_time"])
    if given:
        add(("compute per micro-batch", "t_c = T1 / (t p)",
             f"{fmt_time(i['device_step_time'])} / ({_n(t)} x {_n(p)})", fmt_time(q.micro_batch_time)))
    else:
        add(("matrix products per micro-batch", "b (F + F_re) / (t p u P)",
             f"{_n(b)} x ({_n(q.flops_per_sample)} + {_n(q.recompute_flops_per_sample)}) / "
             f"({_n(t)} x {_n(p)} x {_n(i['math_efficiency'])} x {_n(i['peak_flops'])})", fmt_time(q.matmul_time)))
        add(("element-wise per micro-batch", "(L/p) n_pass a_layer / B_mem",
             f"{_n(i['layers'])} / {_n(p)} x {_n(q.elementwise_passes)} x {fmt_bytes(q.stored_bytes)} / "
             f"{fmt_rate(i['memory_bandwidth'])}", fmt_time(q.elementwise_time)))
        add(("compute per micro-batch", COMPUTE_EQUATION,
             f"{fmt_time(q.matmul_time)} + {fmt_time(q.elementwise_time)}", fmt_time(q.micro_batch_time)))
    add(("compute", "m t_c", f"{_n(m)} x {fmt_time(q.micro_batch_time)}", fmt_time(f.compute_time)))
    if t > 1:
        add(("one tensor-parallel all-reduce", "2 (t-1) alpha + M f(t) / B_tp",
             f"2 x ({_n(t)} - 1) x {fmt_time(q.tensor_latency)} + {fmt_bytes(2 * b * i['seq_len'] * i['hidden'])} x "
             f"2 x ({_n(t)} - 1) / {_n(t)} / {fmt_rate(q.tensor_rate)}", fmt_time(q.tensor_collective_time)))
        add(("tensor-parallel time", "m T_tp = m (L/p) c t_ar,  c = 4 (6 with full recompute)",
             f"{_n(i['layers'])} / {_n(p)} x {_n(q.tensor_collectives)} x {fmt_time(q.tensor_collective_time)} x "
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
             f"{fmt_bytes(i['gradient_bytes'] * q.parameters_per_device / (i['layers'] / p))} x "
             f"({_n(k)} - 1) / {_n(k)} / {fmt_rate(q.shard_rate)}",
             fmt_time(q.layer_gather_time)))
        c, tf, tb, rg = q.layer_gather_time, q.layer_forward_time, q.layer_backward_time, i["backward_gathers"]
        rest = float(i["layers"]) / p - 1
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
    add(("optimizer step", "psi' x 28 B / B_mem",
         f"{_n(q.parameters_per_device)} / {_n(k if float(i['zero_stage']) >= 1 else 1)} x 28 / "
         f"{fmt_rate(i['memory_bandwidth'])}", fmt_time(f.optimizer_time)))
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


_DEFAULTS: dict[str, Any] = {
    "tensor_parallel": 1.0, "pipeline_parallel": 1.0, "pipeline_chunks": 1.0, "micro_batch": 1.0,
    "micro_batches": 1.0, "zero_stage": 0.0, "shard_group": 0.0, "backward_gathers": 1.0, "data_overlap": 1.0,
    "intra_latency": 0.0, "inter_latency": 0.0, "gradient_bytes": 2.0, "device_step_time": float("nan"),
}
"""The defaults of :func:`~mlsysim.physics.layout.layout_figures`' optional inputs."""
