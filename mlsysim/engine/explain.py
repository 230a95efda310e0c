"""``explain()``: the derivation of a result, equation by equation, numbers and units substituted.

Each step is (what, equation in symbols, equation with numbers, value). Steps
of the opt-in model appear only where the choice is switched on; the seed's
steps always appear, so the seed's derivation reads exactly as SPEC section 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mlsysim.core.units import to_canonical
from mlsysim.core.validation import BYTES_PER_ELEMENT
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.physics.collectives import bucket_layout, ring_allreduce_factor


def fmt_bytes(x: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.6g} {unit}"
    return f"{x:.6g} B"


def fmt_time(x: float) -> str:
    if x == 0:
        return "0 ms"
    if abs(x) >= 3600 * 10:
        return f"{x / 3600:.6g} h"
    if abs(x) >= 10:
        return f"{x:.6g} s"
    if abs(x) >= 1e-3:
        return f"{x * 1e3:.6g} ms"
    return f"{x * 1e6:.6g} us"


def fmt_rate(x: float) -> str:
    return f"{x / 1e9:.6g} GB/s"


def fmt_num(x: float) -> str:
    return f"{x:.6g}"


class _Steps:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, what: str, equation: str, numbers: str, value: str) -> None:
        self.rows.append((what, equation, numbers, value))


def explain_result(
    result: DataParallelScaleOutResult,
    *,
    format: str = "text",
    title: str | None = None,
    description: str | None = None,
) -> str:
    """Render the derivation of ``result`` as ``"text"`` or ``"markdown"``."""
    if format not in ("text", "markdown"):
        from mlsysim.core.exceptions import InputError

        raise InputError(f"format: expected 'text' or 'markdown', got {format!r}", field="format")
    inputs = result.inputs
    if not inputs:
        raise ValueError("this result carries no inputs to explain")
    steps = _derive(result, inputs)
    head = _heading(result, inputs, title, description)
    return _render_markdown(head, steps) if format == "markdown" else _render_text(head, steps)


def _heading(
    r: DataParallelScaleOutResult, i: Any, title: str | None, description: str | None
) -> dict[str, Any]:
    a = i["assumptions"]
    inputs = {
        "workload": f"{i['workload'].name} ({to_canonical(i['workload'].parameters, 'count'):.6g} parameters)",
        "precision": i["precision"],
        "step_time (T1, one device, one step)": fmt_time(to_canonical(i["step_time"], "time")),
        "training_time (one device, whole run)": fmt_time(to_canonical(i["training_time"], "time")),
        "per_device_batch (b)": str(i["per_device_batch"]),
        "devices_per_node (d)": str(i["devices_per_node"]),
        "nodes (N)": str(i["nodes"]),
        "intra_bandwidth (B_intra, per direction)": fmt_rate(
            to_canonical(i["intra_bandwidth"], "bandwidth")
        ),
        "inter_bandwidth (B_inter, per direction)": "none"
        if i["inter_bandwidth"] is None
        else fmt_rate(to_canonical(i["inter_bandwidth"], "bandwidth")),
        "accumulation_steps (A)": str(i["accumulation_steps"]),
        "node_hour_rate": "none"
        if i["node_hour_rate"] is None
        else f"{to_canonical(i['node_hour_rate'], 'money_rate'):.6g} USD/hour",
    }
    if i.get("nics_per_node") is not None:
        inputs["nics_per_node (k)"] = str(i["nics_per_node"])
    for key in ("intra_latency", "inter_latency"):
        if i.get(key) is not None:
            inputs[f"{key} (alpha)"] = fmt_time(to_canonical(i[key], "time"))
    if i.get("zero_stage"):
        inputs["zero_stage"] = str(i["zero_stage"])
    if i.get("device_memory") is not None:
        inputs["device_memory"] = fmt_bytes(to_canonical(i["device_memory"], "data"))
    if i.get("activation_memory") is not None:
        inputs["activation_memory"] = fmt_bytes(to_canonical(i["activation_memory"], "data"))
    if a.is_seed():
        model = (
            "seed (SPEC section 4): flat ring, full line rate, no overlap, no synchronisation cost"
        )
    else:
        model = (
            f"algorithm={a.algorithm}, intra_efficiency={a.intra_efficiency:g}, "
            f"inter_efficiency={a.inter_efficiency:g}, overlap={a.overlap}"
            + (
                f" (buckets of {fmt_bytes(to_canonical(a.bucket_size, 'data'))}, backward {a.backward_fraction:.3g} of a step)"
                if a.overlap
                else ""
            )
            + f", update_overhead={fmt_time(a.update_overhead_seconds())}, straggler_cv={a.straggler_cv:g}"
        )
    name = title or "Data-parallel scale-out"
    return {
        "title": name,
        "description": description,
        "inputs": inputs,
        "model": model,
        "result": r,
    }


@dataclass(frozen=True)
class _Context:
    """The inputs of a derivation as plain floats, shared by its sections."""

    r: DataParallelScaleOutResult
    i: Any
    a: Any
    d: int
    big_n: int
    acc: int
    n: int
    g: float  # gradient bytes moved per AllReduce (x 1.5 under ZeRO-3)
    t1: float
    b_intra: float
    b_inter: float | None
    a_intra: float
    a_inter: float
    k: int
    zero: int
    buckets_sym: str
    buckets_num: str


def _context(r: DataParallelScaleOutResult, i: Any) -> _Context:
    a = i["assumptions"]
    zero = i.get("zero_stage") or 0
    g = r.raw("gradient_bytes") * (1.5 if zero == 3 else 1.0)
    buckets = bucket_layout(g, to_canonical(a.bucket_size, "data"))[0] if a.overlap else 1
    return _Context(
        r=r,
        i=i,
        a=a,
        d=i["devices_per_node"],
        big_n=i["nodes"],
        acc=i["accumulation_steps"],
        n=r.n_devices,
        g=g,
        t1=to_canonical(i["step_time"], "time"),
        b_intra=to_canonical(i["intra_bandwidth"], "bandwidth"),
        b_inter=None
        if i["inter_bandwidth"] is None
        else to_canonical(i["inter_bandwidth"], "bandwidth"),
        a_intra=0.0 if i.get("intra_latency") is None else to_canonical(i["intra_latency"], "time"),
        a_inter=0.0 if i.get("inter_latency") is None else to_canonical(i["inter_latency"], "time"),
        k=i.get("nics_per_node") or 1,
        zero=zero,
        buckets_sym=" x buckets" if a.overlap else "",
        buckets_num=f" x {buckets:g}" if a.overlap else "",
    )


def _derive(r: DataParallelScaleOutResult, i: Any) -> list[tuple[str, str, str, str]]:
    """Every step of the derivation, section by section."""
    s, c = _Steps(), _context(r, i)
    for section in (_gradient_steps, _intra_steps, _inter_steps, _update_steps, _scaling_steps):
        section(s, c)
    return s.rows


def _gradient_steps(s: _Steps, c: _Context) -> None:
    """Devices, gradient bytes, the ZeRO-3 volume, the ring factor."""
    r, i, d, big_n, n, zero = c.r, c.i, c.d, c.big_n, c.n, c.zero
    prec, w = i["precision"], i["workload"]
    params = to_canonical(w.parameters, "count")
    g = r.raw("gradient_bytes")
    s.add("devices", "n = d x N", f"{d} x {big_n}", str(n))
    if w.model_size is not None and prec in ("fp16", "bf16"):
        s.add("gradient bytes", "G = model_size (stated, 16-bit)", fmt_bytes(g), fmt_bytes(g))
    else:
        s.add(
            "gradient bytes",
            "G = parameters x bytes_per_element(precision)",
            f"{params:.6g} x {BYTES_PER_ELEMENT[prec]:g} B ({prec})",
            fmt_bytes(g),
        )
    if zero == 3:
        s.add(
            "ZeRO-3 volume",
            "G_c = 1.5 G (extra parameter all-gather; Rajbhandari et al. 2020, section 7)",
            f"1.5 x {fmt_bytes(g)}",
            fmt_bytes(1.5 * g),
        )
    s.add(
        "ring factor",
        "f(k) = 2(k-1)/k",
        f"f(d) = f({d}) = {fmt_num(ring_allreduce_factor(d))}; f(n) = f({n}) = {fmt_num(ring_allreduce_factor(n))}",
        "",
    )


def _intra_steps(s: _Steps, c: _Context) -> None:
    """Bytes and time of the AllReduce stage inside a node."""
    r, a, d, g, b_intra, a_intra = c.r, c.a, c.d, c.g, c.b_intra, c.a_intra
    e_i = a.intra_efficiency
    s.add(
        "intra bytes",
        "intra_bytes = G x f(d)",
        f"{fmt_bytes(g)} x {fmt_num(ring_allreduce_factor(d))}",
        fmt_bytes(r.raw("intra_bytes")),
    )
    _time_step(
        s,
        c,
        "intra",
        ("2(d-1)", f"2 x {d - 1}", a_intra),
        ("intra_bytes", fmt_bytes(r.raw("intra_bytes"))),
        [("B_intra", fmt_rate(b_intra), True), ("e_intra", f"{e_i:g}", e_i != 1)],
    )


def _inter_steps(s: _Steps, c: _Context) -> None:
    """Bytes and time of the AllReduce stage across nodes, per algorithm."""
    r, a, d, big_n, n, g, k = c.r, c.a, c.d, c.big_n, c.n, c.g, c.k
    b_inter, a_inter = c.b_inter, c.a_inter
    e_o = a.inter_efficiency
    alg = r.inter_algorithm
    if big_n == 1:
        s.add("inter bytes and time", "N = 1: no inter-node stage", "", "0 B, 0 ms")
    else:
        if alg == "ring":
            bytes_eq = "inter_bytes = G x f(n)  (flat ring over all n devices)"
            bytes_num = f"{fmt_bytes(g)} x {fmt_num(ring_allreduce_factor(n))}"
            steps_sym, steps = "2(n-1)", 2 * (n - 1)
            volume_sym, volume_num = "inter_bytes", fmt_bytes(r.raw("inter_bytes"))
        elif alg == "hierarchical":
            bytes_eq = "inter_bytes = (G / d) x f(N)  (each device's shard, ring over nodes)"
            bytes_num = f"({fmt_bytes(g)} / {d}) x {fmt_num(ring_allreduce_factor(big_n))}"
            steps_sym, steps = "2(N-1)", 2 * (big_n - 1)
            volume_sym = "G f(N)"
            volume_num = f"{fmt_bytes(g)} x {fmt_num(ring_allreduce_factor(big_n))}"
        else:
            bytes_eq = "inter_bytes = 2 G / d  (shard up and down a double binary tree)"
            bytes_num = f"2 x {fmt_bytes(g)} / {d}"
            steps_sym, steps = "2 ceil(log2 N)", 2 * math.ceil(math.log2(big_n))
            volume_sym, volume_num = "2 G", f"2 x {fmt_bytes(g)}"
        s.add("inter bytes", bytes_eq, bytes_num, fmt_bytes(r.raw("inter_bytes")))
        _time_step(
            s,
            c,
            "inter",
            (steps_sym, str(steps), a_inter),
            (volume_sym, volume_num),
            [
                ("min(k, d)", str(min(k, d)), k != 1),
                ("B_inter", fmt_rate(b_inter), True),
                ("e_inter", f"{e_o:g}", e_o != 1),
            ],
        )
        if a.algorithm == "auto":
            s.add(
                "algorithm",
                "auto: the fastest of ring, hierarchical, tree for the message size",
                "",
                alg,
            )


def _update_steps(s: _Steps, c: _Context) -> None:
    """Communication, compute, overlap, synchronisation, and the update time."""
    r, a, acc, n, t1 = c.r, c.a, c.acc, c.n, c.t1
    comm = r.raw("communication_time")
    s.add(
        "communication",
        "communication_time = intra_time + inter_time",
        f"{fmt_time(r.raw('intra_time'))} + {fmt_time(r.raw('inter_time'))}",
        fmt_time(comm),
    )
    compute = r.raw("compute_time")
    s.add("compute", "compute_time = A x T1", f"{acc} x {fmt_time(t1)}", fmt_time(compute))
    exposed = r.raw("exposed_communication_time")
    if a.overlap:
        s.add(
            "overlap",
            "exposed = max(c(r), C - T_b (1 - b/G), c(b) + c(r) - T_b r/G), T_b = backward_fraction x T1 (last micro-step only)",
            f"m = {r.figures.buckets.count:g} buckets of b = {fmt_bytes(r.figures.buckets.size)}, last r = "
            f"{fmt_bytes(r.figures.buckets.last_size)}; c(b) = {fmt_time(r.figures.buckets.time)}, "
            f"c(r) = {fmt_time(r.figures.buckets.last_time)}, C = {fmt_time(comm)}, "
            f"T_b = {a.backward_fraction:.3g} x {fmt_time(t1)}",
            f"exposed {fmt_time(exposed)}, hidden {fmt_time(r.raw('hidden_communication_time'))}",
        )
    sync = r.raw("synchronization_time")
    if a.straggler_cv or a.update_overhead_seconds():
        s.add(
            "synchronization",
            "sync = c x T1 x sqrt(A) x sqrt(2 ln n) + overhead  (0 for n = 1)",
            f"{a.straggler_cv:g} x {fmt_time(t1)} x sqrt({acc}) x sqrt(2 ln {n}) + {fmt_time(a.update_overhead_seconds() if n > 1 else 0.0)}",
            fmt_time(sync),
        )
        s.add(
            "update",
            "update_time = compute_time + exposed_communication + sync",
            f"{fmt_time(compute)} + {fmt_time(exposed)} + {fmt_time(sync)}",
            fmt_time(r.raw("update_time")),
        )
    elif a.overlap:
        s.add(
            "update",
            "update_time = compute_time + exposed_communication",
            f"{fmt_time(compute)} + {fmt_time(exposed)}",
            fmt_time(r.raw("update_time")),
        )
    else:
        s.add(
            "update",
            "update_time = compute_time + communication_time",
            f"{fmt_time(compute)} + {fmt_time(comm)}",
            fmt_time(r.raw("update_time")),
        )


def _scaling_steps(s: _Steps, c: _Context) -> None:
    """Speedup, efficiency, batch, training time, cost, memory and the bottleneck."""
    r, i, big_n, acc, n, zero = c.r, c.i, c.big_n, c.acc, c.n, c.zero
    comm, compute = r.raw("communication_time"), r.raw("compute_time")
    s.add(
        "speedup",
        "speedup = n x compute_time / update_time",
        f"{n} x {fmt_time(compute)} / {fmt_time(r.raw('update_time'))}",
        fmt_num(r.speedup),
    )
    s.add(
        "efficiency",
        "efficiency = speedup / n",
        f"{fmt_num(r.speedup)} / {n}",
        fmt_num(r.efficiency),
    )
    s.add(
        "overhead",
        "communication_overhead = communication_time / compute_time",
        f"{fmt_time(comm)} / {fmt_time(compute)}",
        fmt_num(r.communication_overhead),
    )
    s.add(
        "global batch",
        "global_batch = b x n x A",
        f"{i['per_device_batch']} x {n} x {acc}",
        str(r.global_batch),
    )
    t_train = to_canonical(i["training_time"], "time")
    s.add(
        "training time",
        "training_time = T_train(1 device) / speedup",
        f"{fmt_time(t_train)} / {fmt_num(r.speedup)}",
        f"{r.raw('training_time') / 3600:.6g} h",
    )
    if r.cost is None:
        s.add("cost", "cost = hours x N x node_hour_rate", "no node_hour_rate given", "none")
    else:
        rate = to_canonical(i["node_hour_rate"], "money_rate")
        s.add(
            "cost",
            "cost = hours x N x node_hour_rate",
            f"{r.raw('training_time') / 3600:.6g} h x {big_n} x {rate:.6g} USD/h",
            f"{r.cost:.6g} USD",
        )
    if r.device_memory is not None or zero or i.get("activation_memory") is not None:
        s.add(
            "memory",
            "memory = training state (16 B/param, ZeRO stage sharding; Rajbhandari et al. 2020) + activations",
            f"ZeRO stage {zero} over {n} devices",
            fmt_bytes(r.raw("memory_per_device"))
            + ("" if r.fits is None else (" (fits)" if r.fits else " (does NOT fit)")),
        )
    s.add(
        "bottleneck",
        "largest of compute, exposed intra, exposed inter, synchronization",
        "",
        r.bottleneck,
    )


def _time_step(
    s: _Steps,
    c: _Context,
    link: str,
    latency: tuple[str, str, float],
    volume: tuple[str, str],
    rate: list[tuple[str, str, bool]],
) -> None:
    """One stage's time, ``t = steps alpha [x buckets] + volume / rate``, in symbols and numbers.

    ``latency`` is (steps in symbols, in numbers, alpha), ``volume`` (symbol, number),
    ``rate`` the factors of the denominator as (symbol, number, shown?).
    """
    steps_sym, steps, alpha = latency
    factors = [(sym, num) for sym, num, shown in rate if shown]
    rate_sym = " ".join(sym for sym, _ in factors)
    rate_num = " x ".join(num for _, num in factors)
    if len(factors) > 1:
        rate_sym, rate_num = f"({rate_sym})", f"({rate_num})"
    lat_sym = f"{steps_sym} alpha_{link}{c.buckets_sym} + " if alpha else ""
    lat_num = f"{steps} x {fmt_time(alpha)}{c.buckets_num} + " if alpha else ""
    s.add(
        f"{link} time",
        f"{link}_time = {lat_sym}{volume[0]} / {rate_sym}",
        f"{lat_num}{volume[1]} / {rate_num}",
        fmt_time(c.r.raw(f"{link}_time")),
    )


def _render_text(head: dict[str, Any], rows: list[tuple[str, str, str, str]]) -> str:
    out = [head["title"]]
    if head["description"]:
        out.append(head["description"])
    out.append("")
    out.append("Inputs")
    width = max(len(k) for k in head["inputs"])
    out += [f"  {k.ljust(width)}  {v}" for k, v in head["inputs"].items()]
    out.append("")
    out.append(f"Model: {head['model']}")
    out.append("")
    out.append("Derivation")
    for idx, (what, eq, numbers, value) in enumerate(rows, 1):
        out.append(f"  {idx:2d}. {what}: {eq}")
        if numbers:
            out.append(f"        = {numbers}")
        if value:
            out.append(f"        = {value}")
    trace = head["result"].constraint_trace
    if trace:
        out.append("")
        out.append("Notes")
        out += [f"  - {note}" for note in trace]
    return "\n".join(out) + "\n"


def _render_markdown(head: dict[str, Any], rows: list[tuple[str, str, str, str]]) -> str:
    out = [f"## {head['title']}", ""]
    if head["description"]:
        out += [head["description"], ""]
    out += ["| input | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in head["inputs"].items()]
    out += [
        "",
        f"**Model:** {head['model']}",
        "",
        "| # | quantity | equation | numbers | value |",
        "|---|---|---|---|---|",
    ]
    for idx, (what, eq, numbers, value) in enumerate(rows, 1):
        out.append(
            f"| {idx} | {what} | `{eq}` | {numbers} | **{value}** |"
            if value
            else f"| {idx} | {what} | `{eq}` | {numbers} | |"
        )
    trace = head["result"].constraint_trace
    if trace:
        out += ["", "**Notes**", ""] + [f"- {note}" for note in trace]
    return "\n".join(out) + "\n"
