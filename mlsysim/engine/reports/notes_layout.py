"""The ``constraint_trace`` of a parallel layout: its layout, the terms that limit it, its memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlsysim.engine.model.equations import one_device_reference
from mlsysim.engine.reports.layout_steps import context_link, expert_link
from mlsysim.engine.reports.notes import origins_notes, sanity_notes

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView


def layout_notes(r: ResultView) -> tuple[str, ...]:
    """Short notes on a layout: t, p, v, d and sharding; its largest terms; memory; the sanity notes."""
    f, x, c = r.figures, r.model_inputs, r.choices
    layout = f.layout
    assert layout is not None
    a = layout.records.layout
    t, p, v, d = int(a.tensor_parallel), int(a.pipeline_parallel), int(a.pipeline_chunks), int(f.data_parallel)
    g = int(x.devices_per_node)
    k = int(layout.terms.sharding.group)
    sharding = (
        "no sharding" if c.zero_stage == 0
        else f"ZeRO-{c.zero_stage} over {k} ranks" + (f" (HSDP: {d // k} replicas)" if k < d else "")
    )
    cp = int(float(a.context_parallel))
    moe = layout.terms.experts.experts
    ep, etp = (1, 1) if moe is None else (int(float(moe.parallel)), int(float(moe.tensor)))
    experts = (f" ep={ep}" if ep > 1 else "") + (f" etp={etp}" if etp > 1 else "")
    notes = [
        f"layout: t={t}" + (f" cp={cp}" if cp > 1 else "") + f" p={p}" + (f" (v={v})" if v > 1 else "")
        + f" d={d}{experts}, {sharding}, "
        f"{int(x.accumulation_steps)} micro-batches of {int(x.per_device_batch)} per update",
    ]
    t1 = float(x.step_time)
    if float(one_device_reference(t1, layout)) < t1:
        notes.append(
            "the layout's kernels do a micro-batch's work faster than one device runs the whole model alone"
            + (" (the experts' grouped products see ep times the tokens each, and each expert's weights are cast "
               "once for all of them)" if ep > 1 else "")
            + ": the speedup and efficiency are measured against one device running the layout's kernels"
        )
    m = int(x.accumulation_steps)
    if p > 1 and m < p:
        notes.append(
            f"fewer micro-batches ({m}) than pipeline stages ({p}): fill and drain dominate, the bubble is "
            f"{(p - 1) / (v * m):.3g}x the compute (a batch-size ramp-up runs so; raise accumulation_steps to "
            f"{p} or more for a pipeline that keeps its stages busy)"
        )
    stage_layers = float(layout.terms.stage.layers)
    layers = float(layout.records.shape.layers)
    if p > 1 and stage_layers * p != layers:
        notes.append(
            f"uneven stages: the slowest holds {stage_layers:g} of {layers:g} layers (an even cut would be "
            f"{layers / p:.4g}); every stage waits for it"
        )
    if c.sharding_rate > 0 or c.pipeline_rate > 0:
        rates = [f"{name} {rate / 1e9:.3g} GB/s" for name, rate in
                 (("sharding_rate", c.sharding_rate), ("pipeline_rate", c.pipeline_rate)) if rate > 0]
        notes.append(
            "an implementation's achieved rate replaces the links' (assumptions): " + ", ".join(rates)
        )
    if t > 1:
        notes.append(
            "tensor-parallel collectives on the intra-node link" if t <= g
            else f"tensor_parallel {t} > {g} devices per node: its all-reduces cross the inter-node link"
        )
    notes.extend(_link_notes(r))
    update = float(f.update_time)
    terms = {
        "compute": float(f.compute_time), "tensor-parallel collectives": float(f.tensor_parallel_time),
        "context-parallel ring": float(f.context_parallel_time), "expert all-to-alls": float(f.expert_parallel_time),
        "pipeline bubble": float(f.bubble_time), "stage transfers": float(f.pipeline_transfer_time),
        "ZeRO-3 gathers": float(f.sharding_time), "gradient synchronisation": float(f.data_parallel_time),
        "optimizer step": float(f.optimizer_time), "synchronization": float(f.synchronization_time),
    }
    shares = ", ".join(f"{name} {value / update:.1%}" for name, value in terms.items() if value > 0)
    notes.append(f"update time: {shares}")
    notes.append(f"bottleneck: {r.bottleneck}")
    memory = (
        f"memory_per_device (first stage) = state {float(f.state_memory) / 1e9:.4g} GB + activations "
        f"{float(f.stage_activation_memory) / 1e9:.4g} GB + gather buffers {float(f.gather_buffer_memory) / 1e9:.4g} GB"
    )
    if r.fits is not None:
        memory += f": {'fits' if r.fits else 'does NOT fit'} in {float(f.device_memory) / 1e9:.4g} GB"
    notes.append(memory)
    notes.extend(origins_notes(r.job))
    notes.extend(n for n in sanity_notes(r.inputs, r.job) if not n.startswith("global batch"))
    return tuple(notes)


def _link_notes(r: ResultView) -> list[str]:
    """Which link the context-parallel ring and the expert-parallel all-to-alls span: inside the scale-up
    (NVLink) domain of D devices, or across it over the NICs."""
    f = r.figures
    layout = f.layout
    assert layout is not None
    a = layout.records.layout
    domain = float(layout.terms.stage.domain)
    notes = []
    cp = float(a.context_parallel)
    if cp > 1:
        span, rate, _, inside = context_link(layout)
        where = (f"inside the NVLink domain of {domain:g} devices" if inside
                 else f"across NVLink domains of {domain:g} devices, over the NICs")
        gather = float(a.context_all_gather) > 0
        kind, beyond = ("all-gather", "the local block's attention") if gather else ("ring", "the attention")
        notes.append(f"context-parallel {kind} (t x cp = {span:g} devices) {where}: {rate / 1e9:.4g} GB/s per "
                     f"device, exposed {float(f.context_parallel_time) * 1e3:.4g} ms per update beyond {beyond}")
    moe = layout.terms.experts.experts
    if moe is not None and float(moe.parallel) > 1:
        ep, etp = float(moe.parallel), float(moe.tensor)
        link = expert_link(layout)
        if ep * etp <= domain:
            where = f"inside the NVLink domain of {domain:g} devices"
        else:
            where = (f"across NVLink domains of {domain:g} devices: {link.local:g} of the {ep:g} ranks share the "
                     f"device's domain, {link.outside:.1%} of each all-to-all goes over the NICs "
                     f"({link.nic_rate / 1e9:.4g} GB/s per device"
                     + ("; hierarchical dispatch: once per remote domain holding a token's experts)"
                        if float(moe.hierarchical) > 0 else ")"))
        overlap = float(a.expert_overlap) > 0
        notes.append(f"expert all-to-alls (ep x etp = {ep * etp:g} devices) {where}; "
                     + ("overlapped with another micro-batch's compute" if overlap else "not overlapped"))
    return notes
