"""explain() of a parallel layout: the layout's derivation, then the scenario's figures built on it.

The rows of one layout's update come from :func:`mlsysim.engine.reports.layout_steps.layout_steps`
(each term with its numbers, the physics' own figures); this module adds what the
scenario puts around them: the synchronisation cost, the scenario's update time,
speedup, efficiency, global batch, training time, cost and the bottleneck.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from mlsysim.core.formatting import fmt_num, fmt_time
from mlsysim.engine.model.equations import one_device_reference
from mlsysim.engine.reports.layout_steps import layout_steps
from mlsysim.physics.optimizer import optimizer_step_time
from mlsysim.physics.synchronization import JITTER_EQUATION, STRAGGLER_EQUATION

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView

Row = tuple[str, str, str, str]


def layout_rows(r: ResultView) -> list[Row]:
    """Every step of a layout scenario's derivation (``r.figures.layout`` is not None)."""
    f = r.figures
    assert f.layout is not None
    layout, cluster = f.layout.records.layout, f.layout.records.cluster
    matmul_format = r.job.matmul_format if r.job is not None and r.job.matmul_format else None
    rows = [
        row
        for row in layout_steps(f.layout, matmul_format, cast("str | None", r.inputs.get("pipeline_layout")))
        if not (row[0] == "optimizer step" and math.isinf(float(cluster.memory_bandwidth)))
        and not (row[0] == "MFU" and math.isnan(float(f.layout.mfu)))
    ]
    n, big_n = r.n_devices, r.inputs["nodes"]
    d, m, b = float(f.data_parallel), float(layout.micro_batches), float(layout.micro_batch)
    t1 = float(r.model_inputs.step_time)
    reference = float(one_device_reference(t1, f.layout))
    given_opt = float(f.optimizer_time) - float(f.layout.optimizer_time)
    terms = [("layout update", float(f.layout.update_time))]
    if given_opt:
        share = given_opt / float(r.model_inputs.optimizer_step_time)
        rows.append(("given optimizer step", "optimizer_step_time x psi' / N",
                     f"{fmt_time(r.model_inputs.optimizer_step_time)} x {fmt_num(share)}", fmt_time(given_opt)))
        terms.append(("optimizer_step_time share", given_opt))
    if f.synchronization_time:
        rows.append(_synchronization_row(r, m))
        terms.append(("synchronization_time", float(f.synchronization_time)))
    if len(terms) > 1:
        rows.append(("update time", "update_time = " + " + ".join(name for name, _ in terms),
                     " + ".join(fmt_time(v) for _, v in terms), fmt_time(f.update_time)))
    x = r.model_inputs
    one_opt = float(x.optimizer_step_time + optimizer_step_time(x.parameters, x.optimizer_bytes, x.memory_bandwidth))
    step, symbol = (t1, "T1") if reference == t1 else (reference, "T_ref")
    if reference != t1:
        layout = f.layout.records.layout
        rows.append((
            "one-device reference: the layout's kernels do the work faster than one device running the whole "
            "model, so the speedup is measured against one device running them",
            "T_ref = min(T1, t_c t cp L / L_s)",
            f"min({fmt_time(t1)}, {fmt_time(f.layout.terms.compute.micro_batch_time)} x {fmt_num(layout.tensor_parallel)}"
            f" x {fmt_num(layout.context_parallel)} x {fmt_num(f.layout.records.shape.layers)} / "
            f"{fmt_num(f.layout.terms.stage.layers)})", fmt_time(reference)))
    if one_opt:
        speedup = ("speedup", f"speedup = d (m {symbol} + t_opt,1) / update_time  (samples per second over one "
                   "device's; t_opt,1 = N beta / B_mem + optimizer_step_time)",
                   f"{fmt_num(d)} x ({fmt_num(m)} x {fmt_time(step)} + {fmt_time(one_opt)}) / {fmt_time(f.update_time)}",
                   fmt_num(f.speedup))
    else:
        speedup = ("speedup", f"speedup = m d {symbol} / update_time  (samples per second over one device's)",
                   f"{fmt_num(m)} x {fmt_num(d)} x {fmt_time(step)} / {fmt_time(f.update_time)}", fmt_num(f.speedup))
    rows += [
        speedup,
        ("efficiency", "efficiency = speedup / n", f"{fmt_num(f.speedup)} / {n}", fmt_num(f.efficiency)),
        ("global batch", "global_batch = b m d", f"{fmt_num(b)} x {fmt_num(m)} x {fmt_num(d)}", str(r.global_batch)),
        (f"training time on {n} devices", "training_time = T_train(one device) x update_time / (d (m T1 + t_opt,1))"
         if one_opt else "training_time = T_train(one device) x update_time / (m d T1)",
         f"{fmt_time(r.model_inputs.training_time)} x {fmt_time(f.update_time)} / ({fmt_num(d)} x ({fmt_num(m)} x "
         f"{fmt_time(t1)} + {fmt_time(one_opt)}))", f"{f.training_time / 3600:.6g} h"),
    ]
    if r.cost is None:
        rows.append(("cost", "cost = training_time x N x node_hour_rate", "no node_hour_rate given", "none"))
    else:
        rows.append(("cost", "cost = training_time x N x node_hour_rate",
                     f"{f.training_time / 3600:.6g} h x {big_n} x {r.model_inputs.node_hour_rate:.6g} USD/h",
                     f"{r.cost:.6g} USD"))
    rows.append(("bottleneck", "largest of compute, exposed intra, exposed inter, synchronization", "",
                 r.bottleneck))
    return rows


def _synchronization_row(r: ResultView, m: float) -> Row:
    """The straggler wait and update overhead, with the micro-batch time t_c in place of T1."""
    f, c, n = r.figures, r.choices, r.n_devices
    assert f.layout is not None
    t_c = fmt_time(f.layout.terms.compute.micro_batch_time)
    overhead = fmt_time(c.update_overhead if n > 1 else 0.0)
    if c.host_jitter:
        share = float(r.model_inputs.input_pipeline)
        jitter = fmt_time(c.host_jitter) if share == 1 else f"({share:g} x {fmt_time(c.host_jitter)})"
        cv_t = f"({c.straggler_cv:g} x {t_c})"
        numbers = f"sqrt({cv_t} x {cv_t} + {jitter} x {jitter}) x sqrt({fmt_num(m)}) x sqrt(2 x ln({n})) + {overhead}"
        equation = JITTER_EQUATION
    else:
        numbers = f"{c.straggler_cv:g} x {t_c} x sqrt({fmt_num(m)}) x sqrt(2 x ln({n})) + {overhead}"
        equation = STRAGGLER_EQUATION
    equation = equation.replace("T1", "t_c").replace("sqrt(A)", "sqrt(m)")
    return ("synchronization", equation, numbers, fmt_time(f.synchronization_time))
