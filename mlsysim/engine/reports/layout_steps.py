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

from typing import NamedTuple

from mlsysim.core.formatting import fmt_bytes, fmt_num, fmt_rate, fmt_time
from mlsysim.engine.reports.operator_steps import operator_rows
from mlsysim.physics._array import Num
from mlsysim.physics.activations import recomputed_modules
from mlsysim.physics.collectives import (
    CURVE_EQUATION,
    Wire,
    all_reduce_wires,
    all_to_all_wire,
    fastest,
    gather_wires,
    send_recv_wire,
)
from mlsysim.physics.context_parallel import ACTIVATION_BYTES as KV_BYTES
from mlsysim.physics.context_parallel import kv_passes
from mlsysim.physics.experts import ACTIVATION_BYTES as TOKEN_BYTES
from mlsysim.physics.experts import (
    all_to_alls_per_layer,
)
from mlsysim.physics.layout import (
    COMPUTE_EQUATION,
    UPDATE_EQUATION,
    LayoutFigures,
    LayoutTerms,
)
from mlsysim.physics.multi_token import MTP_WEIGHT_EQUATION
from mlsysim.physics.operators import Experts, dense_mlp_parameters
from mlsysim.physics.pipeline import BUBBLE_EQUATION, P2P_EQUATION
from mlsysim.physics.pipeline_layout import (
    STAGE_LAYERS_EQUATION,
    parse_pipeline_layout,
    rank_layers,
)
from mlsysim.physics.records import Cluster, Layout, LinkCurves, ModelShape, Rates
from mlsysim.physics.sharding import GATHER_EQUATION, LAYERWISE_EQUATION
from mlsysim.physics.terms import shape_attention_width, shape_mtp_weight, used_parameters

Step = tuple[str, str, str, str]

UPDATE_EQUATION_SPLIT = (
    "T = m t_c + m t_tp + m t_cp + m t_ep + (p-1)/v (t_c + t_tp + t_cp + t_ep) + T_p2p + m T_zero3 + T_data + T_opt"
)
"""The update with context and expert parallelism's exposed terms (:data:`~mlsysim.physics.layout.UPDATE_EQUATION`
where there are none: cp = 1 and no experts)."""


def _n(x: object) -> str:
    return fmt_num(float(x))  # type: ignore[arg-type]


class Priced(NamedTuple):
    """What a layout was priced from (its records), with the mixture of experts where the layout puts it and
    the name of the linear layers' format (None: not known), as the derivation reads them."""

    shape: ModelShape
    cluster: Cluster
    layout: Layout
    rates: Rates
    moe: Experts | None
    matmul_format: str | None


def priced(figures: LayoutFigures, matmul_format: str | None = None) -> Priced:
    """The records of ``figures`` (one layout, scalars) as :class:`Priced`."""
    return Priced(*figures.records, figures.terms.experts.experts, matmul_format)


def layout_steps(figures: LayoutFigures, matmul_format: str | None = None,
                 pipeline_layout: str | None = None) -> list[Step]:
    """The derivation of ``figures`` (one layout, scalars) from the records it was priced from.

    ``matmul_format`` names the linear layers' format in the operator rows. Steps of terms that are zero
    for the layout (no pipeline, no ZeRO-3, ...) are left out; context
    parallelism (cp > 1) and a mixture of experts add their own steps
    (:func:`_context_steps`, :func:`_expert_steps`), a dense layout with cp = 1 prints as before.
    """
    i = priced(figures, matmul_format)
    f, q = figures, figures.terms
    t, p, v = float(i.layout.tensor_parallel), float(i.layout.pipeline_parallel), float(i.layout.pipeline_chunks)
    b, m = float(i.layout.micro_batch), float(i.layout.micro_batches)
    cp = float(i.layout.context_parallel)
    moe = i.moe
    split = cp > 1 or moe is not None  # the update has t_cp and t_ep terms
    tcp = f"{_n(t)}" if cp == 1 else f"{_n(t)} x {_n(cp)}"  # the devices one sequence's work is split over
    steps: list[Step] = []
    add = steps.append

    L, ls = float(i.shape.layers), float(q.stage.layers)
    if p > 1 and pipeline_layout is not None:
        steps += _custom_stage_steps(i, pipeline_layout, int(p), ls)
    else:
        steps += _stage_steps(i, L, p, ls)
    if moe is None:
        add(("parameters per device", "psi = N (L_s / L) / t",
             f"{_n(i.shape.parameters)} x ({_n(ls)} / {_n(L)}) / {_n(t)}", _n(q.sharding.parameters)))
    else:
        n_e, ep, etp = float(i.shape.expert_parameters), float(moe.parallel), float(moe.tensor)
        add(("parameters per device (dense over t, the routed experts over ep x etp)",
             "psi = (N - N_e) (L_s / L) / t + N_e (L_s / L) / (ep etp)",
             f"({_n(i.shape.parameters)} - {_n(n_e)}) x ({_n(ls)} / {_n(L)}) / {_n(t)} + {_n(n_e)} x ({_n(ls)} / "
             f"{_n(L)}) / ({_n(ep)} x {_n(etp)})", _n(q.sharding.parameters)))
    used, width = _flop_shape(i)
    if used is None and width is None:
        add(("model FLOPs per sequence", "F = 6 N s + 12 L h s^2",
             f"6 x {_n(i.shape.parameters)} x {_n(i.shape.seq_len)} + 12 x {_n(i.shape.layers)} x {_n(i.shape.hidden)} x "
             f"{_n(i.shape.seq_len)} x {_n(i.shape.seq_len)}", _n(q.compute.flops_per_sample)))
    else:
        add(("model FLOPs per sequence (N_act: the parameters a token uses; h_att: the attention's width)",
             "F = 6 N_act s + 12 L h_att s^2",
             f"6 x {used or _n(i.shape.parameters)} x {_n(i.shape.seq_len)} + 12 x {_n(i.shape.layers)} x "
             f"{width or _n(i.shape.hidden)} x {_n(i.shape.seq_len)} x {_n(i.shape.seq_len)}", _n(q.compute.flops_per_sample)))
    given = float(i.rates.device_step_time) == float(i.rates.device_step_time)
    if given:
        add(("compute per micro-batch", "t_c = T1 (L_s / L) / t" if cp == 1 else "t_c = T1 (L_s / L) / (t cp)",
             f"{fmt_time(i.rates.device_step_time)} x ({_n(ls)} / {_n(L)}) / ({tcp})" if cp > 1 else
             f"{fmt_time(i.rates.device_step_time)} x ({_n(ls)} / {_n(L)}) / {_n(t)}", fmt_time(q.compute.micro_batch_time)))
    elif float(i.rates.matmul_ceiling) == float(i.rates.matmul_ceiling) and float(q.compute.recompute_flops_per_sample) > 0:
        # the operators price the recomputed forward (a step from mfu holds it in u)
        attention = f"4 x {_n(L)} x {_n(i.shape.hidden)} x {_n(i.shape.seq_len)} x {_n(i.shape.seq_len)}"
        if i.layout.recompute == "full":
            add(("recomputed FLOPs per sequence (full)",
                 "F_re = 2 (N - V h) s + 4 L h s^2" if used is None else "F_re = 2 (N_act - V h) s + 4 L h s^2",
                 f"2 x ({used or _n(i.shape.parameters)} - {_n(i.shape.vocab)} x {_n(i.shape.hidden)}) x "
                 f"{_n(i.shape.seq_len)} + {attention}", _n(q.compute.recompute_flops_per_sample)))
        else:
            rerun = recomputed_modules(i.layout.recompute, i.layout.recompute_modules)
            parts = [("4 L h s^2", attention)] if "core_attn" in rerun else []
            if "mlp" in rerun:
                parts.append(("2 L N_mlp s", f"2 x {_n(L)} x {_n(dense_mlp_parameters(i.shape))} x {_n(i.shape.seq_len)}"))
            add((f"recomputed FLOPs per sequence (selective: {', '.join(sorted(rerun))}"
                 + ("; N_mlp the dense MLP's parameters per layer)" if "mlp" in rerun else ")"),
                 "F_re = " + " + ".join(e for e, _ in parts), " + ".join(o for _, o in parts),
                 _n(q.compute.recompute_flops_per_sample)))
    if not given and float(i.rates.matmul_ceiling) == float(i.rates.matmul_ceiling):  # priced operator by operator
        steps += _operator_steps(i, q)
    elif not given:
        add(("compute per micro-batch (u = mfu, the model FLOPs utilisation a run reports: the recomputed forward "
             "and the element-wise work are inside it, nothing added)",
             COMPUTE_EQUATION if cp == 1 else COMPUTE_EQUATION.replace("(t u P)", "(t cp u P)"),
             f"{_n(b)} x {_n(q.compute.flops_per_sample)} x ({_n(ls)} / {_n(L)}) / "
             f"({tcp} x {_n(i.rates.math_efficiency)} x {_n(i.cluster.peak_flops)})", fmt_time(q.compute.micro_batch_time)))
    add(("compute", "m t_c", f"{_n(m)} x {fmt_time(q.compute.micro_batch_time)}", fmt_time(f.compute_time)))
    if t > 1 and q.tensor.measured:
        steps += _tensor_curve_steps(i, q)
        add(("tensor-parallel time", "m T_tp = m L_s c t_ar,  c = 4 (5 rerunning the MLP, 6 with full recompute)",
             f"{_n(ls)} x {_n(q.tensor.collectives)} x {fmt_time(q.tensor.collective_time)} x "
             f"{_n(m)}", fmt_time(f.tensor_time)))
    elif t > 1:
        add(("one tensor-parallel all-reduce", "2 (t-1) alpha + M f(t) / B_tp",
             f"2 x ({_n(t)} - 1) x {fmt_time(q.tensor.latency)} + "
             f"{fmt_bytes(2 * b * i.shape.seq_len / cp * i.shape.hidden)} x "
             f"2 x ({_n(t)} - 1) / {_n(t)} / {fmt_rate(q.tensor.rate)}", fmt_time(q.tensor.collective_time)))
        add(("tensor-parallel time", "m T_tp = m L_s c t_ar,  c = 4 (5 rerunning the MLP, 6 with full recompute)",
             f"{_n(ls)} x {_n(q.tensor.collectives)} x {fmt_time(q.tensor.collective_time)} x "
             f"{_n(m)}", fmt_time(f.tensor_time)))
    if cp > 1:
        steps += _context_steps(i, f)
    if moe is not None:
        steps += _expert_steps(i, f)
    if p > 1:
        add(("bubble", BUBBLE_EQUATION, f"({_n(p)} - 1) / ({_n(v)} x {_n(m)})", _n(f.bubble_fraction)))
        if split:
            add(("bubble time", "(p-1)/v (t_c + t_tp + t_cp + t_ep)",
                 f"({_n(p)} - 1) / {_n(v)} x ({fmt_time(q.compute.micro_batch_time)} + {fmt_time(q.tensor.micro_batch_time)}"
                 f" + {fmt_time(q.context.micro_batch_time)} + {fmt_time(q.experts.micro_batch_time)})",
                 fmt_time(f.bubble_time)))
        else:
            add(("bubble time", "(p-1)/v (t_c + t_tp)",
                 f"({_n(p)} - 1) / {_n(v)} x ({fmt_time(q.compute.micro_batch_time)} + "
                 f"{fmt_time(q.tensor.micro_batch_time)})", fmt_time(f.bubble_time)))
        if q.pipeline.measured:
            curves = _curves(i)
            crosses = t * p > float(q.stage.domain)
            add(_curve_step(f"one stage-to-stage send/recv of {fmt_bytes(q.pipeline.message)}"
                            + (" across domains" if crosses else " inside the domain"), curves,
                            send_recv_wire(curves, q.pipeline.message, crosses), i, q, float(q.pipeline.send_time)))
            add(("stage-to-stage transfers", "T_p2p = 2 (v m + p - 1) t_sr",
                 f"2 x ({_n(v)} x {_n(m)} + {_n(p)} - 1) x {fmt_time(q.pipeline.send_time)}", fmt_time(f.pipeline_time)))
        else:
            add(("stage-to-stage transfers", P2P_EQUATION,
                 f"2 x ({_n(v)} x {_n(m)} + {_n(p)} - 1) x ({fmt_time(q.pipeline.latency)} + "
                 f"{fmt_bytes(q.pipeline.message)} / {fmt_rate(q.pipeline.rate)})", fmt_time(f.pipeline_time)))
    k = float(q.sharding.group)
    if float(i.layout.zero_stage) >= 3 and q.sharding.measured:
        curves = _curves(i)
        layer = float(i.layout.gradient_bytes) * float(q.sharding.parameters) / ls
        add(_gather_step("one layer's all-gather over the shard group", curves, layer, k,
                         float(q.sharding.group_per_domain), i, q, float(q.sharding.layer_gather_time)))
    elif float(i.layout.zero_stage) >= 3:
        add(("one layer's gather over the shard group", GATHER_EQUATION,
             f"({_n(k)} - 1) x {fmt_time(q.sharding.latency)} + "
             f"{fmt_bytes(i.layout.gradient_bytes * q.sharding.parameters / ls)} x "
             f"({_n(k)} - 1) / {_n(k)} / {fmt_rate(q.sharding.rate)}",
             fmt_time(q.sharding.layer_gather_time)))
    if float(i.layout.zero_stage) >= 3:
        c, tf, tb, rg = q.sharding.layer_gather_time, q.sharding.layer_forward_time, q.sharding.layer_backward_time, i.layout.backward_gathers
        rest = ls - 1
        add(("exposed ZeRO-3 per micro-step", LAYERWISE_EQUATION,
             f"{fmt_time(c)} + {_n(rest)} x max(0, {fmt_time(c)} - {fmt_time(tf)}) + {_n(rg)} x {fmt_time(c)} + "
             f"{_n(rest)} x max(0, {_n(rg)} x {fmt_time(c)} + {fmt_time(c)} - {fmt_time(tb)}) + {fmt_time(c)}",
             fmt_time(q.sharding.micro_step_time)))
        add(("sharding time", "m T_zero3", f"{_n(m)} x {fmt_time(q.sharding.micro_step_time)}",
             fmt_time(f.sharding_time)))
    experts = _expert_gradients(i, f) if moe is not None else None
    if float(f.data_time) > 0:
        steps += _data_curve_steps(i, q)
        expert_sync = ("", "")  # the experts' reduction in the sum: its symbol and its time
        if experts is not None and experts.sync > 0:
            expert_sync = (" + c_e", f" + {fmt_time(experts.sync)}")
        if experts is not None and experts.sync > 0 and q.data.measured_experts:
            add(_gather_step("the experts' gradient reduction over the d_e ranks that hold the same experts (a "
                             "reduce-scatter and an all-gather: 2 x the one)", _curves(i), experts.gradient,
                             experts.group, float(q.data.experts_per_domain), i, q, experts.sync, twice=True))
        if experts is not None and experts.sync > 0 and not q.data.measured_experts:
            add(("the experts' gradient reduction over the d_e ranks that hold the same experts "
                 "(a reduce-scatter and an all-gather)", "c_e = 2 c(G_e, d_e)",
                 f"2 x (({_n(experts.group)} - 1) x {fmt_time(experts.latency)} + {fmt_bytes(experts.gradient)} x "
                 f"({_n(experts.group)} - 1) / {_n(experts.group)} / {fmt_rate(experts.rate)})",
                 fmt_time(experts.sync)))
        add(("gradient synchronisation", f"c_rs + c_ar{expert_sync[0]} - hidden + c_ag",
             f"{fmt_time(q.data.scatter_time)} + {fmt_time(q.data.replica_time)}{expert_sync[1]} - "
             f"{fmt_time(q.data.hidden_time)} + {fmt_time(q.data.scatter_time)}", fmt_time(f.data_time)))
    if float(i.layout.optimizer_bytes) > 0:
        if experts is not None and float(i.layout.zero_stage) >= 1:
            add(("optimizer step", "(psi_dense / k + psi_e / d_e) x beta / B_mem",
                 f"({_n(experts.dense)} / {_n(k)} + {_n(experts.parameters)} / {_n(experts.group)}) x "
                 f"{_n(i.layout.optimizer_bytes)} / {fmt_rate(i.cluster.memory_bandwidth)}", fmt_time(f.optimizer_time)))
        else:
            add(("optimizer step", "psi' x beta / B_mem",
                 f"{_n(q.sharding.parameters)} / {_n(k if float(i.layout.zero_stage) >= 1 else 1)} x "
                 f"{_n(i.layout.optimizer_bytes)} / {fmt_rate(i.cluster.memory_bandwidth)}", fmt_time(f.optimizer_time)))
    terms = (f.compute_time, f.tensor_time, *((f.context_time, f.expert_time) if split else ()), f.bubble_time,
             f.pipeline_time, f.sharding_time, f.data_time, f.optimizer_time)
    add(("update", UPDATE_EQUATION_SPLIT if split else UPDATE_EQUATION, " + ".join(fmt_time(x) for x in terms),
         fmt_time(f.update_time)))
    add(("memory", "state + activations + buffers",
         f"{fmt_bytes(f.state_bytes)} + {fmt_bytes(f.activation_bytes)} + {fmt_bytes(f.buffer_bytes)}",
         fmt_bytes(f.memory_bytes)))
    add(("MFU", "B F / (T n P)",
         f"{_n(b)} x {_n(m)} x {_n(f.data_parallel)} x {_n(q.compute.flops_per_sample)} / ({fmt_time(f.update_time)} x "
         f"{_n(i.cluster.devices)} x {_n(i.cluster.peak_flops)})", _n(f.mfu)))
    return steps


def _flop_shape(i: Priced) -> tuple[str | None, str | None]:
    """N_act (a mixture of experts' active parameters) and h_att (multi-head latent attention's width) as
    printed operands, or None where F uses N and h."""
    active = float(i.shape.active_parameters)
    used = _n(active) if active == active else None
    mla = i.shape.mla
    width = (f"({_n(i.shape.heads)} x ({_n(mla.nope)} + {_n(mla.rope)} + {_n(mla.value)}) / 2)"
             if mla is not None else None)
    return used, width


def _domain_words(group: float, domain: float) -> str:
    return (f"inside the scale-up domain of {_n(domain)} devices" if group <= domain
            else f"across scale-up domains of {_n(domain)} devices, over the NICs")


def context_link(figures: LayoutFigures) -> tuple[float, float, float, bool]:
    """(ring size t cp, its rate B_cp, its latency alpha, inside the scale-up domain) of the context-parallel
    ring: the cp ranks after the t tensor ranks (Megatron-Core's order), as
    :func:`~mlsysim.physics.layout.layout_figures` places it."""
    lay, cluster = figures.records.layout, figures.records.cluster
    span = float(lay.tensor_parallel) * float(lay.context_parallel)
    inside = span <= float(figures.terms.stage.domain)
    latency = cluster.intra_latency if inside else cluster.inter_latency
    return span, float(figures.terms.context.rate), float(latency), inside


def _context_steps(i: Priced, f: LayoutFigures) -> list[Step]:
    """Ring attention's key/value blocks (:mod:`~mlsysim.physics.context_parallel`), per layer and micro-batch."""
    q = f.terms
    t, cp, b, s = float(i.layout.tensor_parallel), float(i.layout.context_parallel), float(i.layout.micro_batch), float(i.shape.seq_len)
    kv = float(i.shape.kv_heads) if float(i.shape.kv_heads) == float(i.shape.kv_heads) else float(i.shape.heads)
    ls = float(q.stage.layers)
    span, rate, latency, inside = context_link(f)
    attention = float(q.compute.operators.attention_time) / ls if float(q.compute.operators.attention_time) > 0 else (
        12.0 * b * s * s * float(i.shape.hidden) / (t * cp) / (float(i.rates.math_efficiency) * float(i.cluster.peak_flops)))
    n_kv = kv_passes(str(i.layout.recompute), i.layout.recompute_modules)
    head_dim = float(i.shape.hidden) / float(i.shape.heads)
    gather = float(i.layout.context_all_gather) > 0
    if gather:
        exposed = (f"context-parallel all-gathers per micro-batch, exposed beyond the local block's attention "
                   f"(t_att,layer / cp; the keys and values of the other cp - 1 blocks gathered, the gradients "
                   f"reduce-scattered); the group of {_n(span)} devices runs {_domain_words(span, float(q.stage.domain))} "
                   f"at B_cp; n_kv = {_n(n_kv)} passes{' (the forward recomputed)' if n_kv > 3 else ''}")
        equation = "t_cp = L_s max(0, n_kv (cp - 1) (M_kv / B_cp + alpha) - t_att,layer / cp)"
        covered = f"{fmt_time(attention)} / {_n(cp)}"
    else:
        exposed = (f"context-parallel ring per micro-batch, exposed beyond each layer's attention (t_att,layer); the "
                   f"ring of {_n(span)} devices runs {_domain_words(span, float(q.stage.domain))} at B_cp; n_kv = "
                   f"{_n(n_kv)} block passes{' (the forward recomputed)' if n_kv > 3 else ''}")
        equation = "t_cp = L_s max(0, n_kv (cp - 1) (M_kv / B_cp + alpha) - t_att,layer)"
        covered = fmt_time(attention)
    block = ("keys and values of one ring block (one layer, one device)", "M_kv = 2 b (s / cp) a_kv d B_act / t",
             f"2 x {_n(b)} x ({_n(s)} / {_n(cp)}) x {_n(kv)} x {_n(head_dim)} x {_n(KV_BYTES)} / {_n(t)}",
             fmt_bytes(q.context.message))
    total = ("context-parallel time", "m t_cp", f"{_n(i.layout.micro_batches)} x {fmt_time(q.context.micro_batch_time)}",
             fmt_time(f.context_time))
    if q.context.measured:
        return [block, *_context_curve_steps(i, f, gather, n_kv, span, covered, exposed), total]
    return [
        block,
        (exposed, equation,
         f"{_n(ls)} x max(0, {_n(n_kv)} x ({_n(cp)} - 1) x ({fmt_bytes(q.context.message)} / {fmt_rate(rate)} + "
         f"{fmt_time(latency) if latency else '0 ms'}) - {covered})",
         fmt_time(q.context.micro_batch_time)),
        total,
    ]


def _context_curve_steps(i: Priced, f: LayoutFigures, gather: bool, n_kv: float, span: float, covered: str,
                         exposed: str) -> list[Step]:
    """The passes of the key/value blocks by the measured curves, and what they leave exposed."""
    q = f.terms
    curves, cp, ls = _curves(i), float(i.layout.context_parallel), float(q.stage.layers)
    message, one_pass = float(q.context.message), float(q.context.pass_time)
    if gather:
        per_domain = max(1.0, float(q.stage.domain) / float(i.layout.tensor_parallel))
        rows = [_gather_step("one pass: the all-gather of the cp blocks over the cp ranks", curves, cp * message, cp,
                             per_domain, i, q, one_pass)]
    else:
        crosses = span > float(q.stage.domain)
        wire = send_recv_wire(curves, message, crosses)
        sr = float(fastest(curves, [wire], float(i.cluster.intra_bandwidth), float(q.stage.nic_share))[0])
        rows = [_curve_step("one ring step: a send/recv of M_kv to the next rank"
                            + (" across domains" if crosses else ""), curves, wire, i, q, sr),
                ("one pass of the ring: cp - 1 steps", "t_pass = (cp - 1) t_sr", f"({_n(cp)} - 1) x {fmt_time(sr)}",
                 fmt_time(one_pass))]
    cover = "t_att,layer / cp" if gather else "t_att,layer"
    rows.append((exposed.replace(" at B_cp", " by the measured curves"),
                 f"t_cp = L_s max(0, n_kv t_pass - {cover})",
                 f"{_n(ls)} x max(0, {_n(n_kv)} x {fmt_time(one_pass)} - {covered})",
                 fmt_time(q.context.micro_batch_time)))
    return rows


class ExpertLink(NamedTuple):
    """One all-to-all of a layout's expert parallelism, as :func:`~mlsysim.physics.layout.layout_figures`
    prices it (:mod:`~mlsysim.physics.experts`)."""

    message: float
    """M_a2a: bytes one device sends in one dispatch (or combine)."""
    local: float
    """q: the group's ranks in the device's scale-up domain."""
    nic_rate: float
    """B_nic,dev: the device's share of its domain's NICs."""
    nics: float
    """NICs of one scale-up domain."""
    latency: float
    time: float
    """t_a2a."""
    inside: float
    """s_in: the share of M_a2a over NVLink."""
    outside: float
    """s_out: the share of M_a2a over the NICs."""


def expert_link(figures: LayoutFigures) -> ExpertLink:
    """The all-to-all of the layout's mixture of experts (there is one)."""
    i = priced(figures)
    q, moe = figures.terms, i.moe
    assert moe is not None
    domain = float(q.stage.domain)
    ep, etp = float(moe.parallel), float(moe.tensor)
    nics = float(i.cluster.nics_per_node) * domain / float(i.cluster.devices_per_node)
    nic_rate = float(i.cluster.nic_bandwidth) * min(nics, domain) / domain
    latency = float(i.cluster.intra_latency if ep * etp <= domain else i.cluster.inter_latency)
    # the message, the ranks in the domain and the time: the layout's own (its terms), not recomputed
    return ExpertLink(float(q.experts.message), float(q.experts.local), nic_rate, nics, latency,
                      float(q.experts.all_to_all_time), float(q.experts.inside_share), float(q.experts.outside_share))


def _g(x: Num) -> str:
    return f"{float(x):.6g}"


def _dispatch_shares(moe: Experts, ep: float, a: ExpertLink) -> list[Step]:
    """The shares of an all-to-all over NVLink and the NICs: flat, or hierarchical (once per remote domain)."""
    q = a.local
    if ep <= q:
        return []
    if not float(moe.hierarchical) > 0:
        return [
            ("share of each all-to-all over the NICs (flat: each of a token's k copies to its expert's device)",
             "s_out = (ep - q) / ep", f"({_n(ep)} - {_n(q)}) / {_n(ep)}", _g(a.outside)),
            ("share over NVLink", "s_in = (q - 1) / ep", f"({_n(q)} - 1) / {_n(ep)}", _g(a.inside)),
        ]
    experts, k = float(moe.experts), int(round(float(moe.top_k)))
    n = ep / q
    per = experts / n
    missed = " x ".join(f"({_g(experts - per - j)} / {_g(experts - j)})" for j in range(k))
    return [
        (f"a remote domain holds none of a token's k experts (E / n of the E in each of the n = ep / q = {_g(n)} "
         "domains; drawn without replacement)", "m = C(E - E / n, k) / C(E, k)", missed,
         _g(1.0 - a.outside * k / (n - 1.0))),
        ("share of each all-to-all over the NICs (hierarchical dispatch: a token crosses once per remote domain "
         "holding any of its experts, DeepEP / DeepSeek-V3)", "s_out = (n - 1) (1 - m) / k",
         f"({_g(n)} - 1) x (1 - {_g(1.0 - a.outside * k / (n - 1.0))}) / {k}", _g(a.outside)),
        ("share over NVLink (forwarded to the experts' devices in their domain)", "s_in = (q - 1) / q",
         f"({_n(q)} - 1) / {_n(q)}", _g(a.inside)),
    ]


def _expert_steps(i: Priced, f: LayoutFigures) -> list[Step]:
    """Expert parallelism's all-to-alls (:mod:`~mlsysim.physics.experts`), per MoE layer and micro-batch."""
    q, moe = f.terms, i.moe
    assert moe is not None
    ep, etp, domain = float(moe.parallel), float(moe.tensor), float(q.stage.domain)
    if ep <= 1:
        return []
    t, cp, b, s = float(i.layout.tensor_parallel), float(i.layout.context_parallel), float(i.layout.micro_batch), float(i.shape.seq_len)
    a = expert_link(f)
    ls, m = float(q.stage.layers), float(i.layout.micro_batches)
    n_a2a = all_to_alls_per_layer(str(i.layout.recompute))
    overlap = float(i.layout.expert_overlap) > 0
    cover = float(q.compute.micro_batch_time) / ls if overlap else 0.0
    tokens = f"{_n(b)} x {_n(s)}" if cp == 1 else f"{_n(b)} x {_n(s)} / {_n(cp)}"
    return [
        ("all-to-all message (what one device sends in one dispatch or combine; T = b s / cp tokens)",
         "M_a2a = (T / t) k h B_act etp",
         f"{tokens} / {_n(t)} x {_n(moe.top_k)} x {_n(i.shape.hidden)} x {_n(TOKEN_BYTES)} x {_n(etp)}",
         fmt_bytes(a.message)),
        (f"all-to-all ranks in the device's scale-up domain of D = {_n(domain)} devices (the other ep - q "
         "over the NICs)", "q = min(ep, max(1, D / etp))", f"min({_n(ep)}, max(1, {_n(domain)} / {_n(etp)}))",
         _n(a.local)),
        ("NIC bandwidth per device (its share of the domain's NICs)", "B_nic,dev = B_nic min(k_D, D) / D",
         f"{fmt_rate(i.cluster.nic_bandwidth)} x min({_n(a.nics)}, {_n(domain)}) / {_n(domain)}", fmt_rate(a.nic_rate)),
        *_dispatch_shares(moe, ep, a),
        _expert_curve_step(i, f, a) if q.experts.measured else
        ("one all-to-all (the share inside the domain over NVLink and the rest over the NICs, at once)",
         "t_a2a = max(s_in M_a2a / B_intra, s_out M_a2a / B_nic,dev) + (ep - 1) alpha",
         f"max({_g(a.inside)} x {fmt_bytes(a.message)} / {fmt_rate(i.cluster.intra_bandwidth)}, "
         f"{_g(a.outside)} x {fmt_bytes(a.message)} / {fmt_rate(a.nic_rate)}) + "
         f"({_n(ep)} - 1) x {fmt_time(a.latency) if a.latency else '0 ms'}", fmt_time(a.time)),
        (f"expert all-to-alls per micro-batch, exposed ({_n(n_a2a)} a layer: dispatch and combine, forward and "
         f"backward{', the forward recomputed' if n_a2a > 4 else ''}; sigma = the MoE share of the layers; "
         + ("overlapped with another micro-batch's layer compute t_c / L_s" if overlap else "not overlapped")
         + ")", "t_ep = L_s sigma max(0, n_a2a t_a2a - t_overlap)",
         f"{_n(ls)} x {_n(moe.share)} x max(0, {_n(n_a2a)} x {fmt_time(a.time)} - "
         f"{fmt_time(cover) if cover else '0 ms'})", fmt_time(q.experts.micro_batch_time)),
        ("expert-parallel time", "m t_ep", f"{_n(m)} x {fmt_time(q.experts.micro_batch_time)}",
         fmt_time(f.expert_time)),
    ]


def _expert_curve_step(i: Priced, f: LayoutFigures, a: ExpertLink) -> Step:
    """One all-to-all by the measured fits: NCCL's all-to-all curve, or DeepEP's normal kernels' fit (a
    hierarchical dispatch), the routing's shares of M_a2a on each link."""
    q, moe, curves = f.terms, i.moe, _curves(i)
    assert moe is not None
    up, out = float(i.cluster.intra_bandwidth), float(q.stage.nic_share)
    if float(moe.hierarchical) > 0:
        parts = [f"{_g(a.inside)} x {fmt_bytes(a.message)} / ({_g(curves.dispatch_efficiency)} x {fmt_rate(up)})"]
        if a.outside > 0:
            parts.append(f"{_g(a.outside)} x {fmt_bytes(a.message)} / ({_g(curves.dispatch_out_efficiency)} x "
                         f"{fmt_rate(out)})")
        transfer = f"max({', '.join(parts)})" if len(parts) > 1 else parts[0]
        return (f"one dispatch or combine by DeepEP's normal kernels (their fit on DeepEP's tables, "
                f"kernel_fits/dispatch.json; {curves.source.split(' (')[0]})",
                "t_a2a = a_d + max(s_in M_a2a / (e_d B_up), s_out M_a2a / (e_d,out B_out))",
                f"{fmt_time(curves.dispatch_latency)} + {transfer}", fmt_time(a.time))
    span = float(moe.parallel) * float(moe.tensor)
    wire = all_to_all_wire(curves, a.message, float(moe.parallel), a.inside, a.outside, span > float(q.stage.domain))
    return _curve_step("one all-to-all (s_in M_a2a over NVLink, s_out M_a2a over the NICs)", curves, wire, i, q, a.time)


class ExpertGradients(NamedTuple):
    """The routed experts' share of the training state and of the gradient synchronisation."""

    dense: float
    """psi_dense = (N - N_e) (L_s / L) / t."""
    parameters: float
    """psi_e = N_e (L_s / L) / (ep etp)."""
    group: float
    """d_e = t cp d / (ep etp): the ranks that hold the same experts."""
    gradient: float
    rate: float
    latency: float
    sync: float
    """c_e: their reduce-scatter and all-gather (0 where d_e = 1)."""


def _expert_gradients(i: Priced, f: LayoutFigures) -> ExpertGradients:
    """The experts' parameters and gradient reduction: the layout's own figures (its terms), not recomputed."""
    q = f.terms
    psi_e = float(q.sharding.expert_parameters)
    return ExpertGradients(float(q.sharding.dense_parameters), psi_e, float(q.data.expert_ranks),
                           float(i.layout.gradient_bytes) * psi_e, float(q.data.expert_rate),
                           float(q.data.expert_latency), float(q.data.expert_time))


def _operator_steps(i: Priced, q: LayoutTerms) -> list[Step]:
    """t_c of one micro-batch on the slowest stage, class by class (``ComputeTerm.operators``)."""
    peak = float(i.cluster.peak_flops)
    matmul_peak, attention_peak = float(i.rates.matmul_peak), float(i.rates.attention_peak)
    assert i.rates.kernels is not None
    return operator_rows(
        q.compute.operators,
        matmul_format=str(i.matmul_format or "at matmul_peak"),
        matmul_peak=matmul_peak if matmul_peak == matmul_peak else peak,
        matmul_ceiling=float(i.rates.matmul_ceiling),
        attention_peak=attention_peak if attention_peak == attention_peak else peak,
        flash_attention=bool(i.layout.flash_attention),
        kernels=i.rates.kernels,
        bandwidth=float(i.cluster.memory_bandwidth),
        fmt_time=fmt_time,
        total="t_c",
        total_value=float(q.compute.micro_batch_time),
        scope=f"one micro-batch of b = {_n(i.layout.micro_batch)} samples on the slowest stage's {_n(q.stage.layers)} layers, "
              f"1/{_n(i.layout.tensor_parallel)} of each",
        layers="L_s",
        expert_ceiling=float(i.moe.ceiling) if i.moe is not None else float("nan"),
    )


def _mtp_weight_step(i: Priced) -> tuple[float, Step]:
    """w of one MTP module and its step (:func:`~mlsysim.physics.multi_token.mtp_layer_weight`)."""
    shape = i.shape
    used, width, w = used_parameters(shape), shape_attention_width(shape), float(shape_mtp_weight(shape))
    h, vocab = _n(shape.hidden), _n(shape.vocab)
    return w, ("one multi-token-prediction module in average layers (its block, projection and output head)",
               MTP_WEIGHT_EQUATION,
               f"1 + (4 x {h} x {h} + 2 x {vocab} x {h}) / (2 x {_n(used)} / {_n(shape.layers)} + 4 x {_n(width)} x "
               f"{_n(shape.seq_len)})", _n(w))


def _custom_stage_steps(i: Priced, text: str, p: int, ls: float) -> list[Step]:
    """The fullest rank of a custom pipeline layout: each rank's layers (an MTP layer as w of them)."""
    layout = parse_pipeline_layout(text)
    steps: list[Step] = []
    w = 1.0
    if layout.mtp_layers:
        w, step = _mtp_weight_step(i)
        steps.append(step)
    ranks = rank_layers(layout, p, w)
    steps.append((f"layers of the slowest stage (the custom pipeline layout's fullest rank: {len(layout.stages)} "
                  f"stages on {p} ranks, stage i on rank i mod p)", STAGE_LAYERS_EQUATION,
                  f"max({', '.join(_n(r) for r in ranks)})", _n(ls)))
    return steps


def _stage_steps(i: Priced, L: float, p: float, ls: float) -> list[Step]:
    """The slowest stage's layers (p > 1), with the multi-token-prediction modules on the last stage where the
    workload has them (their weight w in average layers first, :mod:`mlsysim.physics.multi_token`)."""
    mtp = float(i.shape.mtp_layers)
    if mtp <= 0:
        return [("layers of the slowest stage", "L_s = max(L_first, L_last, ceil(rest / stages))",
                 _stage_operands(i, L, p), _n(ls))] if p > 1 else []
    w, step = _mtp_weight_step(i)
    steps: list[Step] = [step]
    if p <= 1:
        steps.append(("layers of the one stage, with the MTP modules", "L_s = L + D w",
                      f"{_n(L)} + {_n(mtp)} x {_n(w)}", _n(ls)))
        return steps
    last = float(i.layout.last_stage_layers)
    counts = (float(i.layout.first_stage_layers), last)
    given = [c for c in counts if c == c]
    rest = f"ceil(({_n(L)}{''.join(f' - {_n(c)}' for c in given)}) / {_n(p - len(given))})"
    last_stage = _n(last) if last == last else rest  # the last stage holds the rest where not given
    steps.append(("layers of the slowest stage, the MTP modules on the last",
                  "L_s = max(L_first, L_last, ceil(rest / stages), last stage + D w)",
                  f"max({', '.join([*(_n(c) for c in given), rest, f'{last_stage} + {_n(mtp)} x {_n(w)}'])})",
                  _n(ls)))
    return steps


def _stage_operands(i: Priced, layers: float, p: float) -> str:
    """The operands of the slowest stage's layers: the given first/last counts, the rest over the other stages."""
    counts = (float(i.layout.first_stage_layers), float(i.layout.last_stage_layers))
    given = [c for c in counts if c == c]
    rest = f"ceil(({_n(layers)}{''.join(f' - {_n(c)}' for c in given)}) / {_n(p - len(given))})"
    return f"max({', '.join([*(_n(c) for c in given), rest])})" if given else rest


def _curves(i: Priced) -> LinkCurves:
    """The measured collective curves the layout was priced with (there are: a term says it was measured)."""
    assert i.rates.kernels is not None and i.rates.kernels.collectives is not None
    return i.rates.kernels.collectives


def _curve_step(what: str, curves: LinkCurves, wire: Wire, i: Priced, q: LayoutTerms, value: float,
                twice: bool = False) -> Step:
    """One collective by the measured curve (:func:`~mlsysim.physics.collectives.wire_time`) with its operands:
    the start a_0, the steps' latencies, the bytes on each link at their efficiency and rate, the fill at x."""
    up, out = float(i.cluster.intra_bandwidth), float(q.stage.nic_share)
    parts = []
    if float(wire.up_bytes) > 0 or not float(wire.out_bytes) > 0:
        parts.append(f"{fmt_bytes(wire.up_bytes)} / ({_g(wire.up_efficiency)} x {fmt_rate(up)})")
    if float(wire.out_bytes) > 0:
        parts.append(f"{fmt_bytes(wire.out_bytes)} / ({_g(curves.out_efficiency)} x {fmt_rate(out)})")
    transfer = f"max({', '.join(parts)})" if len(parts) > 1 else parts[0]
    latency = f"{fmt_time(curves.base_latency)}"
    if float(wire.up_steps) > 0:
        latency += f" + {_n(wire.up_steps)} x {fmt_time(curves.step_latency)}"
    if float(wire.out_steps) > 0:
        latency += f" + {_n(wire.out_steps)} x {fmt_time(curves.out_step_latency)}"
    x = fmt_bytes(wire.per_rank)
    operands = (f"{latency} + {transfer} / ({x} / ({x} + {fmt_bytes(curves.half_size)})) ** "
                f"{_g(curves.sharpness)}")
    equation = CURVE_EQUATION
    if twice:
        operands, equation = f"2 x ({operands})", f"2 ({CURVE_EQUATION})"
    return (f"{what} ({wire.algorithm}; the measured curve of {curves.source})", equation, operands,
            fmt_time(value))


def _gather_step(what: str, curves: LinkCurves, size: float, group: float, domain: float, i: Priced,
                 q: LayoutTerms, value: float, twice: bool = False) -> Step:
    """An all-gather (or reduce-scatter) of ``size`` bytes over ``group`` ranks by its fastest algorithm."""
    _, wire = fastest(curves, gather_wires(curves, size, group, domain), float(i.cluster.intra_bandwidth),
                      float(q.stage.nic_share))
    return _curve_step(f"{what}, {fmt_bytes(size)} over {_n(group)} ranks", curves, wire, i, q, value, twice)


def _tensor_curve_steps(i: Priced, q: LayoutTerms) -> list[Step]:
    """One tensor-parallel collective by the measured curves: an all-reduce of M, or with sequence parallelism
    a reduce-scatter and an all-gather of M (the same curve twice)."""
    curves, t = _curves(i), float(i.layout.tensor_parallel)
    message = 2.0 * float(i.layout.micro_batch) * float(q.stage.tokens) * float(i.shape.hidden)
    domain, value = float(q.stage.domain), float(q.tensor.collective_time)
    message_step = ("tensor-parallel message (16-bit activations of one micro-batch)", "M = 2 b (s / cp) h",
                    f"2 x {_n(i.layout.micro_batch)} x {_n(q.stage.tokens)} x {_n(i.shape.hidden)}", fmt_bytes(message))
    if i.layout.sequence_parallel:
        return [message_step, _gather_step("one tensor-parallel reduce-scatter and all-gather of M (sequence "
                                           "parallelism: 2 x the one)", curves, message, t, domain, i, q, value,
                                           twice=True)]
    _, wire = fastest(curves, all_reduce_wires(curves, message, t, domain), float(i.cluster.intra_bandwidth),
                      float(q.stage.nic_share))
    return [message_step, _curve_step(f"one tensor-parallel all-reduce of M over {_n(t)} ranks", curves, wire, i, q,
                                      value)]


def _data_curve_steps(i: Priced, q: LayoutTerms) -> list[Step]:
    """The gradient synchronisation's collectives the measured curves priced: the reduce-scatter over the shard
    group (ZeRO-1/2) and the AllReduce of the shard over the replicas."""
    curves = i.rates.kernels.collectives if i.rates.kernels is not None else None
    if curves is None:
        return []
    rows: list[Step] = []
    gradient = float(i.layout.gradient_bytes) * float(q.sharding.dense_parameters)
    k, r = float(q.sharding.group), float(q.sharding.replicas)
    if q.data.measured_scatter and float(q.data.scatter_time) > 0:
        rows.append(_gather_step("the gradients' reduce-scatter over the shard group (c_rs; the all-gather of the "
                                 "updated parameters c_ag takes as long)", curves, gradient, k,
                                 float(q.sharding.group_per_domain), i, q, float(q.data.scatter_time)))
    if q.data.measured_replica and float(q.data.replica_time) > 0:
        _, wire = fastest(curves, all_reduce_wires(curves, gradient / k, r, float(q.data.replicas_per_domain),
                                                   str(i.layout.algorithm)),
                          float(i.cluster.intra_bandwidth), float(q.stage.nic_share))
        rows.append(_curve_step(f"the AllReduce of the gradient shard, {fmt_bytes(gradient / k)} over the "
                                f"{_n(r)} replicas (c_ar)", curves, wire, i, q, float(q.data.replica_time)))
    return rows
