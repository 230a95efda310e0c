"""Search over parallel layouts (t, cp, p, v, ep, etp, d, sharding, micro-batch, accumulation, recompute) on numpy arrays.

A pure function of the workload, the cluster and the candidate values of each
axis: every combination is priced by
:func:`mlsysim.physics.layout.layout_figures` (the same formulas as one
layout), kept when it obeys the layout rules
(:func:`mlsysim.physics.layout.layout_mask`), fits the device memory and,
when a global batch is given, makes exactly that batch (b m d = B, Megatron's
semantics, d = devices / (t cp p)); the best is the one with the least time per sequence (update
time / (b m d)), ties going to the first in grid order. The grid is walked in
chunks so that memory stays bounded however large the space.

Not wired to scenarios: the caller passes SI floats (seconds, bytes, bytes/s,
FLOP/s), as the physics functions take them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.presets import node_figures
from mlsysim.engine.inputs.workload_figures import SHAPE_FIELDS, workload_shape
from mlsysim.physics.layout import LayoutFigures, layout_figures, layout_mask
from mlsysim.physics.records import LayoutRecords, with_fields

if TYPE_CHECKING:
    pass

RECOMPUTE_CODES = ("none", "selective", "full")
"""Recomputation modes by code (the ``recompute`` axis holds their indices)."""

AXES = ("devices", "tensor_parallel", "context_parallel", "pipeline_parallel", "pipeline_chunks", "expert_parallel",
        "expert_tensor_parallel", "micro_batch", "micro_batches", "zero_stage", "recompute")
"""The axes of a layout search, in grid order (the last varies fastest)."""

AXIS_DEFAULTS: dict[str, tuple[float, ...]] = {
    "context_parallel": (1.0,), "expert_parallel": (1.0,), "expert_tensor_parallel": (1.0,),
}
"""The axes a search may leave out, and the one value each then takes (no context or expert parallelism)."""

CHUNK = 1 << 18
"""Layouts priced per numpy pass: small enough to stay in cache, large enough to amortise the calls."""


class BestLayout(NamedTuple):
    """The best layout of a search: its axis values, its time per sequence, and how many layouts were kept."""

    grid_index: int
    """Position in the grid (C order over :data:`AXES`); -1 when no layout is kept."""
    layout: dict[str, float | str]
    seconds_per_sequence: float
    update_time: float
    memory_bytes: float
    kept: int
    searched: int


def full_axes(axes: dict[str, Sequence[float]]) -> dict[str, Sequence[float]]:
    """``axes`` with every axis of :data:`AXES`: those of :data:`AXIS_DEFAULTS` left out take their one value."""
    missing = [name for name in AXES if name not in axes and name not in AXIS_DEFAULTS]
    if missing:
        raise InputError(f"a layout search needs candidate values of {', '.join(missing)}", field=missing[0])
    return {name: axes[name] if name in axes else AXIS_DEFAULTS[name] for name in AXES}


def grid_size(axes: dict[str, Sequence[float]]) -> int:
    """Number of layouts in the grid of ``axes`` (every axis of :data:`AXES`; see :func:`full_axes`)."""
    axes = full_axes(axes)
    return int(np.prod([len(axes[name]) for name in AXES]))


def _unravel(axes: dict[str, Sequence[float]], flat: np.ndarray[Any, Any]) -> dict[str, np.ndarray[Any, Any]]:
    shape = tuple(len(axes[name]) for name in AXES)
    idx = np.unravel_index(flat, shape)
    return {name: np.asarray(axes[name], dtype=float)[i] for name, i in zip(AXES, idx, strict=True)}


def layout_objective(
    values: dict[str, np.ndarray[Any, Any]],
    *,
    records: LayoutRecords,
    memory_capacity: float,
    global_batch: float | None = None,
    checked: bool = False,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Seconds per sequence of each layout (inf where it is not kept), its update time and its memory.

    ``values`` holds one array per axis of :data:`AXES` (``recompute`` as codes; those of
    :data:`AXIS_DEFAULTS` may be left out): each row's values replace the fields of ``records``'
    layout (and the cluster's ``devices``); ``checked`` says the rows already obey the layout rules.
    """
    n = len(values["devices"])
    ones = np.ones(n)
    values = {**{name: ones for name in AXIS_DEFAULTS}, **values}
    seconds = np.full(n, np.inf)
    update = np.full(n, np.inf)
    memory = np.full(n, np.inf)
    mask = np.ones(n, dtype=bool) if checked else _mask(values, records)
    d = values["devices"] / (values["tensor_parallel"] * values["context_parallel"] * values["pipeline_parallel"])
    samples = values["micro_batch"] * values["micro_batches"] * d
    if global_batch is not None:
        mask &= np.abs(samples - global_batch) < 0.5
    for code, mode in enumerate(RECOMPUTE_CODES):
        rows = np.flatnonzero(mask & (values["recompute"] == code))
        if rows.size == 0:
            continue
        layout = with_fields(records.layout, {"recompute": mode, **{name: values[name][rows] for name in LAYOUT_AXES}})
        cluster = with_fields(records.cluster, {"devices": values["devices"][rows]})
        f = layout_figures(records.shape, cluster, layout, records.rates)
        fits = np.asarray(f.memory_bytes) <= memory_capacity
        kept = rows[fits]
        update[kept] = np.asarray(f.update_time)[fits]
        memory[kept] = np.asarray(f.memory_bytes)[fits]
        seconds[kept] = update[kept] / samples[kept]
    return seconds, update, memory


LAYOUT_AXES = tuple(name for name in AXES if name not in ("devices", "recompute"))
"""The axes that are fields of the :class:`~mlsysim.physics.records.Layout` record (devices: the cluster's)."""


class SearchInputs(NamedTuple):
    """The keyword arguments of :func:`best_layout` (and :func:`layout_objective`) for a scenario's layouts."""

    records: LayoutRecords
    memory_capacity: float


def scenario_search_inputs(scenario: Any) -> SearchInputs:
    """What :func:`best_layout` needs to price a scenario's layouts as the scenario prices its own: the
    records of its layout (the shape; the node, links, latencies; the layout's modes, optimizer and
    gradient bytes; the rates: the operator model's figures when the step comes from the operators, so
    each layout's t_c is priced operator by operator at its own t, b and stage), whose axis fields each
    searched layout replaces. A layout the search keeps then has the figures of
    ``scenario.variant(**layout).result.figures.layout`` (one rule for one layout and many;
    ``tests/planning/test_layouts.py``). The scenario must price its layout from FLOPs or the operators
    (a measured ``step_time`` is one micro-batch size's).
    """
    figures = scenario.result.figures
    if figures.layout is None:
        raise InputError("the scenario has no parallel layout to search around", field="workload")
    records = figures.layout.records
    if records.rates.device_step_time == records.rates.device_step_time:
        raise InputError(
            "a measured step_time prices one micro-batch size; give mfu, or neither, to search layouts",
            field="step_time",
        )
    memory = float(figures.device_memory)
    return SearchInputs(records, memory if memory == memory else math.inf)


def _mask(values: dict[str, np.ndarray[Any, Any]], records: LayoutRecords) -> Any:
    """:func:`~mlsysim.physics.layout.layout_mask` of the rows of ``values`` (every axis of :data:`STRUCTURE`)."""
    shape, layout = records.shape, records.layout
    return layout_mask(
        devices=values["devices"], tensor_parallel=values["tensor_parallel"],
        pipeline_parallel=values["pipeline_parallel"], heads=shape.heads, layers=shape.layers,
        micro_batches=values["micro_batches"], pipeline_chunks=values["pipeline_chunks"],
        context_parallel=values["context_parallel"], seq_len=shape.seq_len,
        experts=0.0 if shape.moe is None else shape.moe.experts, expert_parallel=values["expert_parallel"],
        expert_tensor_parallel=values["expert_tensor_parallel"], shard_group=layout.shard_group,
        first_stage_layers=layout.first_stage_layers, last_stage_layers=layout.last_stage_layers,
    )


STRUCTURE = ("devices", "tensor_parallel", "context_parallel", "pipeline_parallel", "pipeline_chunks",
             "expert_parallel", "expert_tensor_parallel", "micro_batches")
"""The axes the layout rules read; the others (micro-batch, ZeRO stage, recompute) never make a layout invalid."""


def best_layout(
    axes: dict[str, Sequence[float]],
    *,
    records: LayoutRecords,
    memory_capacity: float,
    global_batch: float | None = None,
    chunk: int = CHUNK,
) -> BestLayout:
    """The layout of least time per sequence in the grid of ``axes`` (see the module docstring).

    ``records``: the shape, the cluster, the layout whose axis fields each searched layout replaces
    (its modes: sequence parallelism, fused attention), the rates. ``axes``: candidate values of every
    name in :data:`AXES` (``recompute`` as codes into :data:`RECOMPUTE_CODES`).

    The rules are applied first to the grid of the :data:`STRUCTURE` axes
    (chunk by chunk); only the combinations they keep are crossed with the
    micro-batch, ZeRO stage and recompute axes and priced. The best is the
    least time per sequence, ties going to the smallest grid index (C order
    over :data:`AXES`), as a walk through the whole grid would find it.
    The axes of :data:`AXIS_DEFAULTS` may be left out (one value each: 1).
    """
    axes = full_axes(axes)
    shape = tuple(len(axes[name]) for name in AXES)
    total = int(np.prod(shape))
    structure_shape = tuple(len(axes[name]) for name in STRUCTURE)
    structure_total = int(np.prod(structure_shape))
    inner = (len(axes["micro_batch"]), len(axes["zero_stage"]), len(axes["recompute"]))
    inner_idx = np.unravel_index(np.arange(int(np.prod(inner))), inner)
    arrays = {name: np.asarray(axes[name], dtype=float) for name in AXES}
    best_key: tuple[float, int] = (np.inf, -1)
    best_update, best_memory, kept = np.inf, np.inf, 0
    step = max(1, chunk // max(1, inner_idx[0].size))
    for start in range(0, structure_total, step):
        flat = np.arange(start, min(start + step, structure_total))
        sidx = np.unravel_index(flat, structure_shape)
        svals = {name: arrays[name][i] for name, i in zip(STRUCTURE, sidx, strict=True)}
        ok = np.flatnonzero(_mask(svals, records))
        if ok.size == 0:
            continue
        outer = np.repeat(ok, inner_idx[0].size)
        rep = np.tile(np.arange(inner_idx[0].size), ok.size)
        index_of = {name: sidx[k][outer] for k, name in enumerate(STRUCTURE)}
        index_of["micro_batch"] = inner_idx[0][rep]
        index_of["zero_stage"] = inner_idx[1][rep]
        index_of["recompute"] = inner_idx[2][rep]
        values = {name: arrays[name][index_of[name]] for name in AXES}
        seconds, update, memory = layout_objective(
            values, records=records, memory_capacity=memory_capacity, global_batch=global_batch, checked=True,
        )
        finite = np.isfinite(seconds)
        kept += int(finite.sum())
        if not finite.any():
            continue
        ties = np.flatnonzero(seconds == seconds.min())
        grid_index = np.ravel_multi_index(tuple(index_of[name][ties] for name in AXES), shape)
        i = int(ties[np.argmin(grid_index)])
        key = (float(seconds[i]), int(grid_index.min()))
        if key < best_key:
            best_key, best_update, best_memory = key, float(update[i]), float(memory[i])
    best_value, best_index = best_key
    layout: dict[str, float | str] = {}
    if best_index >= 0:
        values = _unravel(axes, np.array([best_index]))
        layout = {name: float(values[name][0]) for name in AXES}
        layout["recompute"] = RECOMPUTE_CODES[int(layout["recompute"])]
    return BestLayout(best_index, layout, best_value, best_update, best_memory, kept, total)


TERM_PHRASES = {
    "compute_time": "compute",
    "tensor_time": "tensor-parallel collectives",
    "context_time": "context-parallel ring transfers",
    "expert_time": "expert all-to-alls",
    "bubble_time": "pipeline bubble",
    "pipeline_time": "stage-to-stage transfers",
    "sharding_time": "exposed ZeRO-3 gathers",
    "data_time": "gradient synchronisation",
    "optimizer_time": "optimizer step",
}
"""How :func:`why_better` names each time term of :class:`~mlsysim.physics.layout.LayoutFigures`."""


def axes_of(figures: LayoutFigures) -> dict[str, Any]:
    """A priced layout's values on the axes of :data:`AXES` (``recompute`` by name), its modes, HSDP shard
    group and mixture of experts: what :func:`describe_layout` and :func:`why_better` read."""
    lay, cluster = figures.records.layout, figures.records.cluster
    values: dict[str, Any] = {name: getattr(lay, name) for name in AXES if hasattr(lay, name)}
    values.update(devices=cluster.devices, shard_group=lay.shard_group, sequence_parallel=lay.sequence_parallel,
                  moe=figures.terms.experts.experts)
    return values


def describe_layout(layout: dict[str, Any]) -> str:
    """A layout in a few symbols: ``t=8 p=4 (v=2) d=16 ZeRO-1 b=1 m=32 recompute=selective``
    (``t=8 SP`` with sequence parallelism, ``ZeRO-3 (HSDP k=8)`` with a shard group smaller than d;
    ``cp=2`` with context parallelism, ``ep=64`` (``etp=2``) with expert parallelism, read from the
    axes of :data:`AXES` or from a scenario's ``layout_arguments`` and its ``moe``)."""
    t, p = int(layout["tensor_parallel"]), int(layout["pipeline_parallel"])
    cp = _count(layout.get("context_parallel"))
    moe = layout.get("moe")
    ep = _count(layout.get("expert_parallel", None if moe is None else moe.parallel))
    etp = _count(layout.get("expert_tensor_parallel", None if moe is None else moe.tensor))
    d = int(round(float(layout["devices"]) / (t * cp * p)))
    v = int(layout.get("pipeline_chunks", 1))
    zero = int(layout.get("zero_stage", 0))
    parts = [f"t={t}", *([f"cp={cp}"] if cp > 1 else []), f"p={p}" + (f" (v={v})" if v > 1 else ""), f"d={d}"]
    if ep > 1 or etp > 1:
        parts.append(f"ep={ep}" + (f" etp={etp}" if etp > 1 else ""))
    k = float(layout.get("shard_group", 0) or 0)
    hsdp = f" (HSDP k={int(k)})" if zero and k == k and 0 < k < d else ""
    parts.append(f"ZeRO-{zero}{hsdp}" if zero else "no sharding")
    sp = float(layout.get("sequence_parallel", 0) or 0)
    if sp == sp and sp > 0:
        parts[0] += " SP"
    parts.append(f"b={int(layout.get('micro_batch', 1))} m={int(layout.get('micro_batches', 1))}")
    recompute = layout.get("recompute", "none")
    if recompute != "none":
        parts.append(f"recompute={recompute}")
    return " ".join(parts)


def _count(value: Any) -> int:
    """A layout's degree of parallelism: 1 when not given (None or NaN)."""
    number = 1.0 if value is None else float(value)
    return int(number) if number == number and number >= 1 else 1


def _term_note(term: str, layout: dict[str, Any], figures: Any, devices_per_node: float) -> str:
    if term == "tensor_time":
        t = int(layout["tensor_parallel"])
        return f"t={t} " + ("inside the node" if t <= devices_per_node else "across nodes")
    if term == "bubble_time":
        return f"p={int(layout['pipeline_parallel'])}: {float(figures.bubble_fraction):.0%} bubble"
    if term == "context_time":
        return f"cp={_count(layout.get('context_parallel'))}"
    if term == "expert_time":
        moe = layout.get("moe")
        ep = _count(layout.get("expert_parallel", None if moe is None else moe.parallel))
        domain = float(figures.terms.stage.domain)  # the scale-up domain: the node, or an NVL72 rack
        return f"ep={ep} " + ("inside the NVLink domain" if ep <= domain else "across the NVLink domains")
    if term == "sharding_time":
        return f"ZeRO-{int(layout.get('zero_stage', 0))}"
    return describe_layout(layout).split(" ")[0] if term == "compute_time" else ""


def why_better(
    best: dict[str, Any],
    best_figures: Any,
    other: dict[str, Any],
    other_figures: Any,
    devices_per_node: float,
) -> str:
    """One sentence saying why ``best`` beats ``other``: the term it saves most on and the one it pays most for.

    ``best_figures`` and ``other_figures`` are the layouts' :class:`~mlsysim.physics.layout.LayoutFigures`
    (scalars). Both are compared per update.
    """
    diffs = {term: float(getattr(other_figures, term)) - float(getattr(best_figures, term)) for term in TERM_PHRASES}
    gain = max(diffs, key=lambda k: diffs[k])
    cost = min(diffs, key=lambda k: diffs[k])
    head = (
        f"{describe_layout(best)} takes {float(best_figures.update_time):.3g} s per update against "
        f"{float(other_figures.update_time):.3g} s for {describe_layout(other)}"
    )
    note = _term_note(gain, best, best_figures, devices_per_node)
    sentence = f"{head}: it saves {diffs[gain]:.3g} s of {TERM_PHRASES[gain]}" + (f" ({note})" if note else "")
    if diffs[cost] < -1e-9 * float(best_figures.update_time):  # not a rounding difference
        cost_note = _term_note(cost, best, best_figures, devices_per_node)
        sentence += f" and pays {-diffs[cost]:.3g} s more of {TERM_PHRASES[cost]}" + (
            f" ({cost_note})" if cost_note else ""
        )
    return sentence + "."


__all__ = [
    "SHAPE_FIELDS",
    "best_layout",
    "describe_layout",
    "full_axes",
    "grid_size",
    "layout_objective",
    "node_figures",
    "scenario_search_inputs",
    "why_better",
    "workload_shape",
]



def rules_arguments(records: LayoutRecords) -> dict[str, Any]:
    """The keyword arguments of :func:`~mlsysim.physics.layout.layout_mask` for the layout of ``records``
    (floats, or arrays broadcast over the records' rows): the structure only, nothing priced."""
    shape, cluster, layout = records.shape, records.cluster, records.layout
    return dict(
        devices=cluster.devices, tensor_parallel=layout.tensor_parallel,
        pipeline_parallel=layout.pipeline_parallel, heads=shape.heads, layers=shape.layers,
        micro_batches=layout.micro_batches, pipeline_chunks=layout.pipeline_chunks,
        context_parallel=layout.context_parallel, seq_len=shape.seq_len,
        experts=0.0 if shape.moe is None else shape.moe.experts, expert_parallel=layout.expert_parallel,
        expert_tensor_parallel=layout.expert_tensor_parallel, shard_group=layout.shard_group,
        first_stage_layers=layout.first_stage_layers, last_stage_layers=layout.last_stage_layers,
    )
