"""The derivation of the derived inputs as explain prints it: FLOPs, step time, training time, activations."""

from __future__ import annotations

from mlsysim.core.units import to_canonical
from mlsysim.engine.inputs.derivation import Checked, Job, operator_formats
from mlsysim.engine.inputs.workload_figures import moe_numbers
from mlsysim.engine.reports.operator_steps import operator_rows

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
            active = moe_numbers(w)["active_parameters"]
            if active == active or getattr(w, "attention", "mha") == "mla":  # a mixture of experts, latent attention
                used = active if active == active else n
                width = (f"({w.heads} x ({w.qk_nope_head_dim} + {w.qk_rope_head_dim} + {w.v_head_dim}) / 2)"
                         if getattr(w, "attention", "mha") == "mla" else f"{h}")
                rows.append(
                    (
                        "training FLOPs per sample (Kaplan et al. 2020; Narayanan et al. 2021; N_act: the parameters "
                        "a token uses, h_att: the attention's width)",
                        "F = 6 N_act s + 12 L h_att s^2",
                        f"6 x {used:.6g} x {s_} + 12 x {layers} x {width} x {s_} x {s_}",
                        f"{f:.6g} flop",
                    )
                )
            else:
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
        recomputed = job.recompute_flops_per_sample
        fused = values["flash_attention"] == 1
        moved = job.elementwise_bytes_fused if fused else job.elementwise_bytes_per_sample
        if recomputed > 0:
            rows.append(
                (
                    f"FLOPs recomputed per sample, recompute={job.recompute} (Korthikanti et al. 2022)",
                    "F_re = 2 (N - V h) s + 4 L h s^2" if job.recompute == "full" else "F_re = 4 L h s^2",
                    "",
                    f"{recomputed:.6g} flop",
                )
            )
        bandwidth = values["memory_bandwidth"]
        if job.operators is not None:
            rows += _operator_step_rows(values, job, t1)
        elif moved > 0 and bandwidth is not None:
            rows.append(
                (
                    "element-wise bytes per sample (norms, softmax, dropout, activations; "
                    + ("attention fused" if fused else "attention not fused: flash_attention=1 fuses it")
                    + ")",
                    "E = L n_pass a_layer(b = 1)",
                    "",
                    f"{moved:.6g} B",
                )
            )
            elementwise = f" + {b} x {moved:.6g} / {to_canonical(bandwidth, 'bandwidth'):.6g}"
        else:
            elementwise = ""
        if job.operators is None:
            rows.append(
                (
                    "step_time, one device (u: the math-kernel efficiency of the matrix products, "
                    "not a job's MFU)",
                    "T1 = b (F + F_re) / (P u) + b E / B_mem",
                    f"{b} x ({f:.6g} + {recomputed:.6g}) / ({job.peak_flops:.6g} x {values['mfu']:g})"
                    + elementwise,
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


def _operator_step_rows(values: Checked, job: Job, t1: float) -> list[tuple[str, str, str, str]]:
    """The step of one device priced operator by operator (``job.operators``), class by class, then T1,
    then the kernel efficiency it implies (the u of a step from ``mfu`` that would give the same T1)."""
    assert job.operators is not None and job.kernels is not None
    accelerator = values["accelerator"]
    _, sixteen = operator_formats(values)
    attention_peak = to_canonical(accelerator.peak_flops(sixteen), "compute_rate")
    b = values["per_device_batch"]
    rows = operator_rows(
        job.operators,
        matmul_format=job.matmul_format,
        matmul_peak=job.matmul_peak,
        matmul_ceiling=job.matmul_ceiling,
        attention_peak=attention_peak,
        flash_attention=values["flash_attention"] == 1,
        kernels=job.kernels,
        bandwidth=to_canonical(values["memory_bandwidth"] or accelerator.memory.bandwidth, "bandwidth"),
        fmt_time=lambda x: f"{x:.6g} s",
        total="T1",
        total_value=t1,
        scope=f"one step of b = {b} samples on one device",
        expert_ceiling=job.expert_ceiling,
    )
    f, recomputed = job.flops_per_sample, job.recompute_flops_per_sample
    rows.append(
        (
            "kernel efficiency the step implies (the mfu that would give the same T1; not the job's MFU)",
            "u = b (F + F_re) / (P T1)",
            f"{b} x ({f:.6g} + {recomputed:.6g}) / ({job.peak_flops:.6g} x {t1:.6g})",
            f"{b * (f + recomputed) / (job.peak_flops * t1):.6g}",
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
