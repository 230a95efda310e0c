"""``explain()``: the derivation of a result, equation by equation, numbers and units substituted.

Each step is (what, equation in symbols, equation with numbers, value). The
symbolic equations are the physics modules' own (``RING_FACTOR_EQUATION`` beside
:func:`~mlsysim.physics.collectives.ring_allreduce_factor`, ...), the numbers
are the model's operands and the values are the figures the model computed,
never re-derived here; ``tests/engine/test_explain.py`` recomputes every
printed right-hand side from its printed operands. Steps of the opt-in model
appear only where the choice is switched on; the seed's steps always appear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, cast

from mlsysim.core.formatting import fmt_bytes, fmt_num, fmt_rate, fmt_time
from mlsysim.core.units import to_canonical
from mlsysim.engine.inputs.defaults import defaults_in_effect
from mlsysim.engine.inputs.fields import FIELDS, GROUPS
from mlsysim.engine.model.equations import UPDATE_TERMS
from mlsysim.engine.reports.bands import (
    DIFFICULTY_FORMULA,
    difficulty,
    has_interval,
    interval_source,
    layout_band,
    result_nodes,
    score_band,
    scores,
)
from mlsysim.engine.reports.explain_job import explain_rows
from mlsysim.engine.reports.headline import headline
from mlsysim.engine.reports.whole_run_steps import whole_run_steps
from mlsysim.physics.collectives import (
    BUCKETS_EQUATION,
    INTER_NODE_EQUATIONS,
    INTRA_NODE_EQUATION,
    RING_FACTOR_EQUATION,
    ring_allreduce_factor,
)
from mlsysim.physics.memory import (
    GRADIENT_BYTES,
    OPTIMIZER_BYTES,
    STATE_EQUATIONS,
    WEIGHT_BYTES,
    ZERO3_VOLUME_EQUATION,
    communication_volume_factor,
)
from mlsysim.physics.optimizer import OPTIMIZER_BYTES_PER_PARAMETER, OPTIMIZER_EQUATION
from mlsysim.physics.overlap import EXPOSED_EQUATION, INTERFERENCE_EQUATION
from mlsysim.physics.precision import BYTES_PER_ELEMENT
from mlsysim.physics.synchronization import JITTER_EQUATION, STRAGGLER_EQUATION

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.inputs.defaults import Default
    from mlsysim.engine.inputs.derivation import Checked
    from mlsysim.engine.model.equations import Figures
    from mlsysim.engine.reports.view import ResultView


class _Steps:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, what: str, equation: str, numbers: str, value: str) -> None:
        self.rows.append((what, equation, numbers, value))


def explain_result(
    result: ResultView,
    *,
    format: str = "text",
    title: str | None = None,
    description: str | None = None,
) -> str:
    """Render the derivation of ``result`` as ``"text"``, ``"markdown"`` or ``"json"``."""
    renderers = {"text": _render_text, "markdown": _render_markdown, "json": _render_json}
    if format not in renderers:
        from mlsysim.core.exceptions import InputError

        raise InputError(
            f"expected one of {', '.join(renderers)}, got {format!r}", loc=("format",)
        )
    inputs = result.inputs
    steps = _derive(result, inputs)
    head = _heading(result, inputs, title, description)
    return renderers[format](head, steps)


_GROUP_ORDER = {group: i for i, group in enumerate(GROUPS)}


class _Heading(NamedTuple):
    """What an explanation says before its derivation."""

    title: str
    description: str | None
    inputs: dict[str, tuple[str, str]]
    """Each input shown (``"nodes (N)"``): its value as text and its label (with where it came from)."""
    groups: dict[str, list[str]]
    """The inputs shown, by the group of the field table they belong to."""
    defaults: tuple[Default, ...]
    model: str
    """The modeling choices in one line."""
    result: ResultView


def _heading(r: ResultView, i: Checked, title: str | None, description: str | None) -> _Heading:
    """Title, the inputs as the field table labels them, and the model's choices."""
    a = i["assumptions"]
    inputs: dict[str, tuple[str, str]] = {}
    groups: dict[str, list[str]] = {}
    for name, f in sorted(FIELDS.items(), key=lambda item: _GROUP_ORDER[item[1].group]):
        if name not in i or name == "assumptions":
            continue
        value = i[name]
        if value is None and not f.seed:
            continue
        if name == "zero_stage" and value == 0:
            continue
        if name == "activation_memory" and r.figures.layout is not None:
            continue  # a parallel layout computes its activations per stage
        key = f"{name} ({f.symbol})" if f.symbol else name
        origin = r.job.origins.get(name) if r.job is not None else None
        inputs[key] = (_input_text(name, value), f.label + (f"  [from {origin}]" if origin else ""))
        groups.setdefault(GROUPS[f.group], []).append(key)
    model = _model_line(a)
    if r.figures.layout is not None:
        model = "parallel layout (tensor, pipeline, sharded data parallelism; docs/parallelism.md); " + model
    return _Heading(title or "Data-parallel scale-out", description, inputs, groups, defaults_in_effect(i), model, r)


DEFAULTS_TITLE = "Defaults in effect (today's practice or the seed contract; give the input to change it)"


def _model_line(a: Assumptions) -> str:
    """The modeling choices in one line: the seed's, or every assumption that differs from it
    (read from the Assumptions fields themselves, so a new option shows without a change here)."""
    if a.is_seed():
        return "seed: flat ring over all n devices, full line rate, no overlap, no synchronisation cost"
    parts = []
    for name, value in a.changed().items():
        if name == "measured_links":
            continue
        parts.append(f"{name}={_choice_text(value)}")
    line = ", ".join(parts) if parts else "seed values"
    if a.measured_links:
        line += f"; measured (achieved) bandwidth, no efficiency applied: {', '.join(a.measured_links)}"
    return line


def _choice_text(value: object) -> str:
    from mlsysim.core.units import Quantity, kind_of

    if isinstance(value, Quantity):
        kind = kind_of(value)
        x = to_canonical(value, kind)
        return fmt_time(x) if kind == "time" else fmt_bytes(x) if kind == "data" else f"{value:~P}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _input_text(name: str, value: object) -> str:
    """An input as a reader expects it: the unit its field is shown in (its kind writes it)."""
    f = FIELDS[name]
    return f.kinds.text(f, value)


@dataclass(frozen=True)
class _Context:
    """The inputs of a derivation as plain floats, shared by its sections."""

    r: ResultView
    i: Checked
    a: Assumptions
    d: int
    big_n: int
    acc: int
    n: int
    g: float  # gradient bytes moved per AllReduce (G_c: x 1.5 under ZeRO-3)
    t1: float
    zero: int
    buckets_sym: str
    buckets_num: str


def _context(r: ResultView, i: Checked) -> _Context:
    a = i["assumptions"]
    zero = i.get("zero_stage") or 0
    f = r.figures
    g = f.gradient_bytes * communication_volume_factor(zero)
    return _Context(
        r=r,
        i=i,
        a=a,
        d=i["devices_per_node"],
        big_n=i["nodes"],
        acc=i["accumulation_steps"],
        n=r.n_devices,
        g=float(g),
        t1=float(r.model_inputs.step_time),
        zero=zero,
        buckets_sym=" x m" if a.overlap else "",
        buckets_num=f" x {f.buckets.number:g}" if a.overlap else "",
    )


def _derive(r: ResultView, i: Checked) -> list[tuple[str, str, str, str]]:
    """Every step of the derivation, section by section."""
    s, c = _Steps(), _context(r, i)
    if r.job is not None:
        s.rows += explain_rows(i, r.job)  # step and training time derived from the model
    if r.figures.layout is not None:  # a parallel layout: its own derivation
        from mlsysim.engine.reports.explain_layout import layout_rows

        s.rows += layout_rows(r) + whole_run_steps(r)  # the whole run too, where modeled
        if has_interval(r):
            _interval_steps(s, c)
        return s.rows
    for section in (_gradient_steps, _intra_steps, _inter_steps, _update_steps, _scaling_steps):
        section(s, c)
    if r.job is not None:  # the activations, just before the memory they are part of
        at = next((k for k, row in enumerate(s.rows) if row[0] == "memory"), len(s.rows))
        s.rows[at:at] = explain_rows(i, r.job, part="memory")
    s.rows += whole_run_steps(r)  # failures, checkpoints, energy: where modeled
    return s.rows


def _gradient_steps(s: _Steps, c: _Context) -> None:
    """Devices, gradient bytes, the ZeRO-3 volume, the ring factors."""
    r, i, d, big_n, n, zero = c.r, c.i, c.d, c.big_n, c.n, c.zero
    prec, w = i["precision"], i["workload"]
    g = r.figures.gradient_bytes
    s.add("devices", "n = d x N", f"{d} x {big_n}", str(n))
    if w.model_size is not None and prec in ("fp16", "bf16"):
        s.add("gradient bytes", "G = model_size (stated, 16-bit)", "", fmt_bytes(g))
    else:
        s.add(
            "gradient bytes",
            "G = parameters x bytes_per_element(precision)",
            f"{w.parameter_count():.6g} x {BYTES_PER_ELEMENT[prec]:g} B",
            fmt_bytes(g),
        )
    if zero == 3:
        factor = communication_volume_factor(zero)
        s.add("ZeRO-3 volume", ZERO3_VOLUME_EQUATION, f"{factor:g} x {fmt_bytes(g)}", fmt_bytes(c.g))
    for k, label in ((d, "d"), (n, "n")):
        s.add(
            f"ring factor f({label})",
            RING_FACTOR_EQUATION,
            f"2 x ({k} - 1) / {k}",
            fmt_num(ring_allreduce_factor(k)),
        )


def _intra_steps(s: _Steps, c: _Context) -> None:
    """Bytes and time of the AllReduce stage inside a node."""
    f, d = c.r.figures, c.d
    e_i = c.r.choices.intra_efficiency  # 1 for a measured link
    bytes_eq, steps_sym = INTRA_NODE_EQUATION
    s.add(
        "intra bytes",
        bytes_eq,
        f"{fmt_bytes(c.g)} x {fmt_num(f.intra_cost.volume)}",
        fmt_bytes(f.intra_bytes),
    )
    _time_step(
        s,
        c,
        "intra",
        (steps_sym, f"2 x {d - 1}", float(c.r.model_inputs.intra_latency)),
        ("intra_bytes", fmt_bytes(f.intra_bytes)),
        [("B_intra", fmt_rate(c.r.model_inputs.intra_bandwidth), True), ("e_intra", f"{e_i:g}", e_i != 1)],
    )


def _inter_steps(s: _Steps, c: _Context) -> None:
    """Bytes and time of the AllReduce stage across nodes, with the algorithm used."""
    r, a, d, big_n, n = c.r, c.a, c.d, c.big_n, c.n
    f, x = r.figures, r.model_inputs
    e_o = r.choices.inter_efficiency  # 1 for a measured link
    alg = r.inter_algorithm
    if big_n == 1:
        s.add("inter bytes and time", "N = 1: no inter-node stage", "", "0 B, 0 ms")
        return
    bytes_eq, steps_sym, volume_sym = INTER_NODE_EQUATIONS[alg]
    if alg == "ring":
        bytes_num = f"{fmt_bytes(c.g)} x {fmt_num(ring_allreduce_factor(n))}"
        steps = 2 * (n - 1)
        volume_num = fmt_bytes(f.inter_bytes)
    elif alg == "hierarchical":
        bytes_num = f"({fmt_bytes(c.g)} / {d}) x {fmt_num(ring_allreduce_factor(big_n))}"
        steps = 2 * (big_n - 1)
        volume_num = f"{fmt_bytes(c.g)} x {fmt_num(ring_allreduce_factor(big_n))}"
    else:
        bytes_num = f"2 x {fmt_bytes(c.g)} / {d}"
        steps = 2 * math.ceil(math.log2(big_n))
        volume_num = f"2 x {fmt_bytes(c.g)}"
    s.add("inter bytes", bytes_eq, bytes_num, fmt_bytes(f.inter_bytes))
    k = int(x.nics_per_node)
    _time_step(
        s,
        c,
        "inter",
        (steps_sym, str(steps), float(x.inter_latency)),
        (volume_sym, volume_num),
        [
            ("min(k, d)", str(min(k, d)), k != 1),
            ("tau", f"{x.inter_transport:g}", x.inter_transport != 1),
            ("B_inter", fmt_rate(x.inter_bandwidth), True),
            ("e_inter", f"{e_o:g}", e_o != 1),
        ],
    )
    if a.algorithm == "auto":
        s.add("algorithm", "auto: the fastest of ring, hierarchical, tree for the message size", "", alg)


def _update_steps(s: _Steps, c: _Context) -> None:
    """Communication, compute, overlap, synchronisation, and the update time."""
    r, a, acc, n, t1 = c.r, c.a, c.acc, c.n, c.t1
    f = r.figures
    comm = f.communication_time
    s.add(
        "communication",
        "communication_time = intra_time + inter_time",
        f"{fmt_time(f.intra_time)} + {fmt_time(f.inter_time)}",
        fmt_time(comm),
    )
    compute = f.compute_time
    s.add("compute", "compute_time = A x T1", f"{acc} x {fmt_time(t1)}", fmt_time(compute))
    exposed = f.exposed_communication_time
    if a.overlap:
        b = f.buckets
        t_b = a.backward_fraction * t1
        s.add(
            "buckets",
            BUCKETS_EQUATION,
            f"ceil({fmt_bytes(c.g)} / {fmt_bytes(b.size)})",
            f"{b.number:g}",
        )
        s.add(
            "backward time",
            "T_b = backward_fraction x T1  (the last micro-step's backward pass)",
            f"{a.backward_fraction:.6g} x {fmt_time(t1)}",
            fmt_time(t_b),
        )
        s.add(
            "overlap",
            EXPOSED_EQUATION,
            f"max({fmt_time(b.last_time)}, {fmt_time(comm)} - {fmt_time(t_b)} x (1 - {fmt_bytes(b.size)} / {fmt_bytes(c.g)}), "
            f"{fmt_time(b.time)} + {fmt_time(b.last_time)} - {fmt_time(t_b)} x {fmt_bytes(b.last_size)} / {fmt_bytes(c.g)})"
            if b.number >= 2
            else f"max({fmt_time(b.last_time)}, {fmt_time(comm)} - {fmt_time(t_b)} x (1 - {fmt_bytes(b.size)} / {fmt_bytes(c.g)}))",
            fmt_time(exposed),
        )
        s.add(
            "hidden",
            "hidden = communication_time - exposed",
            f"{fmt_time(comm)} - {fmt_time(exposed)}",
            fmt_time(f.hidden_communication_time),
        )
    _cost_steps(s, c)
    overhead = a.update_overhead_seconds() if n > 1 else 0.0
    jitter = a.choices.host_jitter
    if jitter:
        cv_t1 = f"({a.straggler_cv:g} x {fmt_time(t1)})"
        share = float(c.r.model_inputs.input_pipeline)  # p of the input pipeline (1: real data)
        pj = fmt_time(jitter) if share == 1 else f"({share:g} x {fmt_time(jitter)})"
        s.add(
            "synchronization",
            JITTER_EQUATION,
            f"sqrt({cv_t1} x {cv_t1} + {pj} x {pj}) x sqrt({acc}) "
            f"x sqrt(2 x ln({n})) + {fmt_time(overhead)}",
            fmt_time(f.synchronization_time),
        )
    elif a.straggler_cv or a.update_overhead_seconds():
        s.add(
            "synchronization",
            STRAGGLER_EQUATION,
            f"{a.straggler_cv:g} x {fmt_time(t1)} x sqrt({acc}) x sqrt(2 x ln({n})) + {fmt_time(overhead)}",
            fmt_time(f.synchronization_time),
        )
    _update_step(s, f)


def _cost_steps(s: _Steps, c: _Context) -> None:
    """The opt-in costs beyond the seed (docs/model.md section 2.9), each when it is on."""
    r, a, i = c.r, c.a, c.i
    f, x = r.figures, r.model_inputs
    if i.get("optimizer") is not None:
        beta = OPTIMIZER_BYTES_PER_PARAMETER[i["optimizer"]]
        s.add(
            "optimizer step",
            f"{OPTIMIZER_EQUATION}; {i['optimizer']}: beta = {beta:g} B read + written per parameter",
            f"{x.parameters:.6g} x {beta:g} B / {fmt_rate(x.memory_bandwidth)}",
            fmt_time(f.optimizer_time),
        )
    elif f.optimizer_time:
        s.add("optimizer step", "t_opt = optimizer_step_time (given)", "", fmt_time(f.optimizer_time))
    if a.interference:
        s.add(
            "interference",
            INTERFERENCE_EQUATION,
            f"{a.interference:g} x {fmt_time(f.hidden_communication_time)}",
            fmt_time(f.interference_time),
        )
    if a.bucket_copies:
        s.add(
            "bucket copies",
            "copies = 4 G / B_mem  (gradients into DDP's buckets and back, read + write; 0 for n = 1)",
            f"4 x {fmt_bytes(f.gradient_bytes)} / {fmt_rate(x.memory_bandwidth)}" if c.n > 1 else "",
            fmt_time(f.bucket_copy_time),
        )
    if f.first_bucket_time:
        s.add(
            "first bucket",
            "first = L_intra + L_inter  (DDP's capped first bucket: one more collective, exposed)",
            "",
            fmt_time(f.first_bucket_time),
        )
    if f.extra_time:
        s.add(
            "extra",
            "extra_time = t_opt + interference + copies",
            f"{fmt_time(f.optimizer_time)} + {fmt_time(f.interference_time)} + {fmt_time(f.bucket_copy_time)}",
            fmt_time(f.extra_time),
        )


def _update_step(s: _Steps, f: Figures) -> None:
    """``update_time`` as the sum of :data:`UPDATE_TERMS` (the terms that are not zero)."""
    terms = [t for t in UPDATE_TERMS if t == "compute_time" or getattr(f, t) != 0]
    if terms == ["compute_time", "exposed_communication_time"] and (
        f.exposed_communication_time == f.communication_time
    ):
        names = ["compute_time", "communication_time"]  # no overlap: the seed's equation
    else:
        names = terms
    s.add(
        "update",
        "update_time = " + " + ".join(names),
        " + ".join(fmt_time(getattr(f, t)) for t in names),
        fmt_time(f.update_time),
    )


def _scaling_steps(s: _Steps, c: _Context) -> None:
    """Speedup, efficiency, batch, training time, cost, memory and the bottleneck."""
    r, i, big_n, acc, n, zero = c.r, c.i, c.big_n, c.acc, c.n, c.zero
    f, x = r.figures, r.model_inputs
    if f.optimizer_time:
        s.add(
            "speedup",
            "speedup = n x (compute_time + t_opt) / update_time  (one device also steps its optimizer)",
            f"{n} x ({fmt_time(f.compute_time)} + {fmt_time(f.optimizer_time)}) / {fmt_time(f.update_time)}",
            fmt_num(f.speedup),
        )
    else:
        s.add(
            "speedup",
            "speedup = n x compute_time / update_time",
            f"{n} x {fmt_time(f.compute_time)} / {fmt_time(f.update_time)}",
            fmt_num(f.speedup),
        )
    s.add("efficiency", "efficiency = speedup / n", f"{fmt_num(f.speedup)} / {n}", fmt_num(f.efficiency))
    s.add(
        "overhead",
        "communication_overhead = communication_time / compute_time",
        f"{fmt_time(f.communication_time)} / {fmt_time(f.compute_time)}",
        fmt_num(f.communication_overhead),
    )
    s.add(
        "global batch",
        "global_batch = b x n x A",
        f"{i['per_device_batch']} x {n} x {acc}",
        str(r.global_batch),
    )
    s.add(
        f"training time on {n} devices",
        "training_time = T_train(one device) / speedup",
        f"{fmt_time(x.training_time)} / {fmt_num(f.speedup)}",
        f"{f.training_time / 3600:.6g} h",
    )
    if r.cost is None:
        s.add("cost", "cost = training_time x N x node_hour_rate", "no node_hour_rate given", "none")
    else:
        s.add(
            "cost",
            "cost = training_time x N x node_hour_rate",
            f"{f.training_time / 3600:.6g} h x {big_n} x {x.node_hour_rate:.6g} USD/h",
            f"{r.cost:.6g} USD",
        )
    if r.device_memory is not None or zero or i.get("activation_memory") is not None:
        state = (
            STATE_EQUATIONS[zero]
            .replace(" psi", " x psi")
            .replace("w", f"{WEIGHT_BYTES:g} B")
            .replace("g", f"{GRADIENT_BYTES:g} B")
            .replace("K", f"{OPTIMIZER_BYTES:g} B")
            .replace("psi", f"{x.parameters:.6g}")
            .replace("n", str(n))
        )
        s.add(
            "memory",
            f"memory = {STATE_EQUATIONS[zero]} + activations  (ZeRO stage {zero}; "
            "w = g = 2 B, K = 12 B per parameter; Rajbhandari et al. 2020)",
            f"{state} + {fmt_bytes(x.activation_memory)}",
            fmt_bytes(f.memory_per_device)
            + ("" if r.fits is None else (" (fits)" if r.fits else " (does NOT fit)")),
        )
    s.add(
        "bottleneck",
        "largest of compute, exposed intra, exposed inter, synchronization",
        "",
        r.bottleneck,
    )
    if has_interval(c.r):
        _interval_steps(s, c)


def _interval_steps(s: _Steps, c: _Context) -> None:
    """The 80% prediction interval (normalised conformal, from out-of-family residuals; a
    parallel layout's from the model-parallel runs' held-out errors)."""
    r = c.r
    if r.figures.layout is not None:
        rho_lo, rho_hi = layout_band(c.a, 0.8)
        u_low, u_high = (cast("Quantity", u) for u in r.interval("update_time"))
        update = r.figures.update_time * 1e3
        s.add(
            "80% interval",
            "update_time x [rho_lo, rho_hi]: split-conformal quantiles of T_measured / T_predicted "
            f"({interval_source(r)})",
            f"{update:.6g} ms x [{rho_lo:.4f}, {rho_hi:.4f}]",
            f"update_time {u_low.to('ms').magnitude:.6g} - {u_high.to('ms').magnitude:.6g} ms",
        )
        e_low, e_high = r.interval("efficiency")
        s.add(
            "80% interval",
            "efficiency x T / T_interval (and so speedup, training time, cost)",
            "",
            f"efficiency {e_low:.4g} - {e_high:.4g}",
        )
        return
    z_lo, z_hi = score_band(c.a, 0.8)
    scale = float(difficulty(r.efficiency, result_nodes(r)))
    e_low, e_high = r.interval("efficiency")
    s.add(
        "80% interval",
        f"efficiency + [z_lo, z_hi] x s, s = {DIFFICULTY_FORMULA}: conformal quantiles of "
        f"(measured - predicted) / s ({scores(c.a).source}), clipped to [0.001, 1]",
        f"{fmt_num(r.efficiency)} + [{z_lo:+.4f}, {z_hi:+.4f}] x {scale:.4f}",
        f"efficiency {e_low:.4g} - {e_high:.4g}",
    )
    u_low, u_high = (cast("Quantity", u) for u in r.interval("update_time"))
    s.add(
        "80% interval",
        "update_time x e / e_interval (and so speedup, training time, cost)",
        "",
        f"update_time {u_low.to('ms').magnitude:.6g} - {u_high.to('ms').magnitude:.6g} ms",
    )


def _time_step(
    s: _Steps,
    c: _Context,
    link: str,
    latency: tuple[str, str, float],
    volume: tuple[str, str],
    rate: list[tuple[str, str, bool]],
) -> None:
    """One stage's time, ``t = steps alpha [x m] + volume / rate``, in symbols and numbers.

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
        fmt_time(getattr(c.r.figures, f"{link}_time")),
    )


def _render_text(head: _Heading, rows: list[tuple[str, str, str, str]]) -> str:
    out = [head.title]
    if head.description:
        out.append(head.description)
    out.append(headline(head.result))
    out.append("")
    out.append("Inputs")
    width = max(len(k) for k in head.inputs)
    value_width = max(len(v) for v, _ in head.inputs.values())
    for group, keys in head.groups.items():
        out.append(f"  {group}")
        for k in keys:
            v, label = head.inputs[k]
            out.append(f"    {k.ljust(width)}  {v.ljust(value_width)}  {label}")
    if head.defaults:
        out += ["", DEFAULTS_TITLE]
        out += [f"  {d.field} = {d.value}: {d.meaning} ({d.source})" for d in head.defaults]
    out.append("")
    out.append(f"Model: {head.model}")
    out.append("")
    out.append("Derivation")
    for idx, (what, eq, numbers, value) in enumerate(rows, 1):
        out.append(f"  {idx:2d}. {what}: {eq}")
        if numbers:
            out.append(f"        = {numbers}")
        if value:
            out.append(f"        = {value}")
    trace = head.result.constraint_trace
    if trace:
        out.append("")
        out.append("Notes")
        out += [f"  - {note}" for note in trace]
    return "\n".join(out) + "\n"


def _render_markdown(head: _Heading, rows: list[tuple[str, str, str, str]]) -> str:
    out = [f"## {head.title}", ""]
    if head.description:
        out += [head.description, ""]
    out += [f"**{headline(head.result)}**", ""]
    out += ["| group | input | value | meaning |", "|---|---|---|---|"]
    out += [
        f"| {group} | {k} | {head.inputs[k][0]} | {head.inputs[k][1]} |"
        for group, keys in head.groups.items()
        for k in keys
    ]
    if head.defaults:
        out += ["", f"**{DEFAULTS_TITLE}**", "", "| input | default | meaning | source |", "|---|---|---|---|"]
        out += [f"| {d.field} | {d.value} | {d.meaning} | {d.source} |" for d in head.defaults]
    out += [
        "",
        f"**Model:** {head.model}",
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
    trace = head.result.constraint_trace
    if trace:
        out += ["", "**Notes**", ""] + [f"- {note}" for note in trace]
    return "\n".join(out) + "\n"


def _render_json(head: _Heading, rows: list[tuple[str, str, str, str]]) -> str:
    from mlsysim.core.jsonio import JSONValue, document, dumps

    body: dict[str, JSONValue] = {
        "scenario": head.title,
        "description": head.description,
        "inputs": {
            k: {"value": head.inputs[k][0], "meaning": head.inputs[k][1], "group": group}
            for group, keys in head.groups.items()
            for k in keys
        },
        "defaults": [
            {"input": d.field, "value": d.value, "meaning": d.meaning, "source": d.source}
            for d in head.defaults
        ],
        "model": head.model,
        "steps": [
            {"quantity": what, "equation": eq, "numbers": numbers, "value": value}
            for what, eq, numbers, value in rows
        ],
        "notes": list(head.result.constraint_trace),
    }
    return dumps(document("explanation", body), indent=2) + "\n"
