"""How a parallel layout reads: a few symbols (:func:`describe_layout`) and why one beats another
(:func:`why_better`), from the terms of their priced updates.

The search over layouts is :func:`mlsysim.plan` (docs/planning.md): the layout rules first, on the axes
they read, then only the layouts they keep priced by the scenario's own equations. This module also
gives the physics' inputs of registry entries (:func:`workload_shape`, :func:`node_figures`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mlsysim.engine.inputs.presets import node_figures
from mlsysim.engine.inputs.workload_figures import SHAPE_FIELDS, workload_shape
from mlsysim.physics.layout import LayoutFigures

AXES = ("devices", "tensor_parallel", "context_parallel", "pipeline_parallel", "pipeline_chunks", "expert_parallel",
        "expert_tensor_parallel", "micro_batch", "micro_batches", "zero_stage", "recompute")
"""A layout's degrees, as the physics names them (the cluster's devices, the layout's fields)."""


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


LayoutAxes = Mapping[str, "float | int | str | bool | np.ndarray | None"]
"""A layout's values by the names of :data:`AXES` (``recompute`` by name; any may be left out: its default),
and ``shard_group`` (the HSDP group, 0 or NaN: all of d) and ``sequence_parallel``."""


def axes_of(figures: LayoutFigures) -> dict[str, float | str | bool | np.ndarray]:
    """A priced layout's values on the axes of :data:`AXES` (``recompute`` by name), its HSDP shard group
    and sequence parallelism: what :func:`describe_layout` and :func:`why_better` read."""
    lay = figures.records.layout
    values: dict[str, float | str | bool | np.ndarray] = {name: getattr(lay, name) for name in AXES[1:]}
    values.update(devices=figures.records.cluster.devices, shard_group=lay.shard_group,
                  sequence_parallel=lay.sequence_parallel)
    return values


def describe_layout(layout: LayoutAxes) -> str:
    """A layout in a few symbols: ``t=8 p=4 (v=2) d=16 ZeRO-1 b=1 m=32 recompute=selective``
    (``t=8 SP`` with sequence parallelism, ``ZeRO-3 (HSDP k=8)`` with a shard group smaller than d;
    ``cp=2`` with context parallelism, ``ep=64`` (``etp=2``) with expert parallelism)."""
    t, cp, p = _degree(layout, "tensor_parallel"), _degree(layout, "context_parallel"), _degree(layout, "pipeline_parallel")
    ep, etp = _degree(layout, "expert_parallel"), _degree(layout, "expert_tensor_parallel")
    d = int(round(_number(layout, "devices", 1.0) / (t * cp * p)))
    v, zero = _degree(layout, "pipeline_chunks"), int(_number(layout, "zero_stage", 0.0))
    parts = [f"t={t}", *([f"cp={cp}"] if cp > 1 else []), f"p={p}" + (f" (v={v})" if v > 1 else ""), f"d={d}"]
    if ep > 1 or etp > 1:
        parts.append(f"ep={ep}" + (f" etp={etp}" if etp > 1 else ""))
    k = _number(layout, "shard_group", 0.0)
    hsdp = f" (HSDP k={int(k)})" if zero and 0 < k < d else ""
    parts.append(f"ZeRO-{zero}{hsdp}" if zero else "no sharding")
    if _number(layout, "sequence_parallel", 0.0) > 0:
        parts[0] += " SP"
    parts.append(f"b={_degree(layout, 'micro_batch')} m={_degree(layout, 'micro_batches')}")
    recompute = layout.get("recompute", "none")
    if recompute != "none":
        parts.append(f"recompute={recompute}")
    return " ".join(parts)


def _number(layout: LayoutAxes, name: str, default: float) -> float:
    """One of a layout's values as a float: ``default`` when left out or not given (None, NaN)."""
    value = layout.get(name)
    if value is None or isinstance(value, str):
        return default
    number = float(value)
    return number if number == number else default


def _degree(layout: LayoutAxes, name: str) -> int:
    """A layout's degree (of parallelism, chunks, micro-batches): 1 when not given or below 1."""
    return max(1, int(_number(layout, name, 1.0)))


def _term_note(term: str, layout: LayoutAxes, figures: LayoutFigures, devices_per_node: float) -> str:
    degree = {"tensor_time": "tensor_parallel", "context_time": "context_parallel", "expert_time": "expert_parallel",
              "bubble_time": "pipeline_parallel"}
    if term in degree:
        n = _degree(layout, degree[term])
        if term == "tensor_time":
            return f"t={n} " + ("inside the node" if n <= devices_per_node else "across nodes")
        if term == "bubble_time":
            return f"p={n}: {float(figures.bubble_fraction):.0%} bubble"
        if term == "expert_time":
            domain = float(figures.terms.stage.domain)  # the scale-up domain: the node, or an NVL72 rack
            return f"ep={n} " + ("inside the NVLink domain" if n <= domain else "across the NVLink domains")
        return f"cp={n}"
    if term == "sharding_time":
        return f"ZeRO-{int(_number(layout, 'zero_stage', 0.0))}"
    return describe_layout(layout).split(" ")[0] if term == "compute_time" else ""


def why_better(
    best: LayoutAxes,
    best_figures: LayoutFigures,
    other: LayoutAxes,
    other_figures: LayoutFigures,
    devices_per_node: float,
    other_scale: float = 1.0,
) -> str:
    """One sentence saying why ``best`` beats ``other``: the term it saves most on and the one it pays most for.

    ``best_figures`` and ``other_figures`` are the layouts' :class:`~mlsysim.physics.layout.LayoutFigures`
    (scalars). Both are compared per update, the other's times multiplied by ``other_scale`` (the ratio of
    the best's samples per update to the other's: the time of the same samples).
    """
    diffs = {
        term: float(getattr(other_figures, term)) * other_scale - float(getattr(best_figures, term))
        for term in TERM_PHRASES
    }
    gain = max(diffs, key=lambda k: diffs[k])
    cost = min(diffs, key=lambda k: diffs[k])
    head = (
        f"{describe_layout(best)} takes {float(best_figures.update_time):.3g} s per update against "
        f"{float(other_figures.update_time) * other_scale:.3g} s for {describe_layout(other)}"
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
    "axes_of",
    "describe_layout",
    "node_figures",
    "why_better",
    "workload_shape",
]
