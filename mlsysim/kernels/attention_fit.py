"""Fit the fused-attention constants on attention tables (the shipped ones, or a user's own).

Per architecture, on the rows of its ``fit`` tables (holdout tables are never fitted on),
the model of :mod:`mlsysim.physics.attention` in logarithms,

    log(t - t_0) = log(F_exec / P) - log q_wave - log a + log(1 + D_0 / f) + log(1 + L_0 / L),

is linear in -log a once D_0 and L_0 are fixed (where a table measures one shape with several
libraries, only the fastest row counts: the model prices the fastest fused kernel): a grid over D_0 (one per architecture)
and L_0 (one per format and direction) with -log a the mean residual of each group
minimises the squared log error. The ceiling c of a group is the best efficiency
F / (t P) its rows measure, and the floor t_0 of an architecture the smallest floor the
memory-bound fit (:func:`mlsysim.kernels.memory.fit_memory`) found on its accelerators.
Bounds: 0 < a <= 1, 0 <= D_0 <= :data:`HEAD_OVERHEAD_MAX`, 0 <= L_0 <= :data:`LOOP_OVERHEAD_MAX`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.kernels._accelerator import accelerator_entry, compute_unit_count, peak_flops
from mlsysim.kernels.attention import ATTENTION_FORMATS, group_key
from mlsysim.kernels.fit_documents import (
    ArchitectureFit,
    AttentionArchitecture,
    AttentionFit,
    AttentionGroup,
    MemoryFit,
)
from mlsysim.kernels.memory import significant
from mlsysim.kernels.tables import KernelTable
from mlsysim.physics.attention import (
    DIRECTIONS,
    TILE,
    attention_flops,
    packed_tiles,
    pair_flops,
    wave_efficiency,
)

HEAD_OVERHEAD_MAX = 1024.0
"""Upper bound of D_0: 1024 FLOPs per score, above the 512 an exponential costs on Blackwell with none of
it hidden (8192 dense bf16 FLOPs per SM and clock against 16 exponentials: Zadouri et al. 2026, section 2)."""

LOOP_OVERHEAD_MAX = 16.0
"""Upper bound of L_0, in key tiles (a loop start and end worth more than 16 tiles would be a different kernel)."""

HEAD_OVERHEAD_GRID = np.arange(0.0, HEAD_OVERHEAD_MAX + 1.0, 4.0)
LOOP_OVERHEAD_GRID = np.arange(0.0, LOOP_OVERHEAD_MAX + 1e-9, 1.0 / 16.0)


@dataclass(frozen=True)
class AttentionRows:
    """What the fit needs of each measured row (numpy arrays, one entry a row)."""

    table: np.ndarray
    """The table's file name."""
    group: np.ndarray
    """``"bf16 forward"``: the format class and direction."""
    seconds: np.ndarray
    at_peak: np.ndarray
    """F_exec / P: the executed FLOPs at the format's peak, seconds."""
    per_pair: np.ndarray
    """f: tensor-core FLOPs per score."""
    mean_loop: np.ndarray
    """L: executed tiles per work unit."""
    waves: np.ndarray
    """q_wave."""
    efficiency: np.ndarray
    """F / (t P): the measured efficiency by the benchmarks' FLOP convention."""


SHAPE_COLUMNS = ("batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "head_dim_v", "causal", "format",
                 "direction")
"""What makes two rows the same call (the columns a table has of these)."""


def fastest_rows(table: KernelTable) -> KernelTable:
    """The table with one row per call: the fastest library's where several measured it."""
    keys = [tuple(table.columns[c][i] for c in SHAPE_COLUMNS if c in table.columns) for i in range(len(table))]
    best: dict[tuple[object, ...], int] = {}
    for i, key in enumerate(keys):
        if key not in best or table.time[i] < table.time[best[key]]:
            best[key] = i
    keep = np.zeros(len(table), dtype=bool)
    keep[list(best.values())] = True
    return KernelTable(table.name, table.kind, table.split, table.accelerator, table.source,
                       {name: column[keep] for name, column in table.columns.items()})


def attention_rows(tables: Iterable[KernelTable]) -> dict[str, AttentionRows]:
    """The rows of the attention tables given, by their accelerator's architecture."""
    parts: dict[str, list[dict[str, np.ndarray]]] = {}
    for table in tables:
        if table.kind != "attention":
            continue
        entry = accelerator_entry(table.accelerator)
        columns = table.columns
        seq_q = columns["seq_len"]
        seq_k = columns.get("kv_len", seq_q)
        head_dim = columns["head_dim"]
        head_dim_v = columns.get("head_dim_v", head_dim)
        causal = columns["causal"] > 0
        batch, heads = columns["batch"], columns["heads"]
        direction = np.array([float(DIRECTIONS[d]) for d in columns["direction"]])
        peak = np.array([peak_flops(entry, f) for f in columns["format"]])
        tiles, units = packed_tiles(batch, heads, columns.get("kv_heads", heads), seq_q, seq_k, causal, direction)
        per_pair = pair_flops(head_dim, head_dim_v, direction)
        flops = attention_flops(batch, heads, seq_q, seq_k, head_dim, head_dim_v, causal, direction)
        parts.setdefault(str(entry.architecture), []).append({
            "table": np.full(len(table), table.name, dtype=object),
            "group": np.array([group_key(f, d) for f, d in zip(columns["format"], columns["direction"], strict=True)],
                              dtype=object),
            "seconds": table.time,
            "at_peak": np.asarray(tiles * TILE * TILE * per_pair / peak),
            "per_pair": np.asarray(per_pair),
            "mean_loop": np.asarray(tiles / units),
            "waves": np.asarray(wave_efficiency(units, compute_unit_count(entry))),
            "efficiency": np.asarray(flops / (table.time * peak)),
        })
    return {arch: AttentionRows(**{k: np.concatenate([p[k] for p in group]) for k in group[0]})
            for arch, group in parts.items()}


def _check_formats(tables: list[KernelTable]) -> None:
    for table in tables:
        unknown = sorted({f for f in table.columns["format"]} - set(ATTENTION_FORMATS))
        if unknown:
            raise InputError(f"{table.name}: attention format {unknown[0]!r} is not one of "
                             f"{', '.join(ATTENTION_FORMATS)}", field="format")


def fit_architecture(rows: AttentionRows, floor: float) -> ArchitectureFit:
    """D_0, and per group a, L_0 and c, minimising the squared log error (the module's procedure)."""
    residual = (np.log(np.maximum(rows.seconds - floor, 0.5 * rows.seconds))
                - np.log(rows.at_peak) + np.log(rows.waves))
    groups = sorted(set(rows.group))
    loop_terms = np.log1p(LOOP_OVERHEAD_GRID[:, None] / rows.mean_loop[None, :])
    best: tuple[float, float, dict[str, tuple[float, float]]] = (np.inf, 0.0, {})
    for head_overhead in HEAD_OVERHEAD_GRID:
        target = residual - np.log1p(head_overhead / rows.per_pair)
        total, chosen = 0.0, {}
        for group in groups:
            take = rows.group == group
            deviation = target[take][None, :] - loop_terms[:, take]
            minus_log_scale = np.maximum(deviation.mean(axis=1), 0.0)  # a <= 1
            error = ((deviation - minus_log_scale[:, None]) ** 2).sum(axis=1)
            at = int(np.argmin(error))
            total += float(error[at])
            chosen[group] = (float(np.exp(-minus_log_scale[at])), float(LOOP_OVERHEAD_GRID[at]))
        if total < best[0]:
            best = (total, float(head_overhead), chosen)
    _, head_overhead, chosen = best
    fitted_groups: dict[str, AttentionGroup] = {}
    for group in groups:
        take = rows.group == group
        scale, loop_overhead = chosen[group]
        fmt, direction = group.split(" ", 1)
        fitted_groups[group] = {
            "format": fmt, "direction": direction,
            "scale": {"value": significant(scale), "bound": [0.0, 1.0],
                      "what": "a: efficiency on large head dims and long loops, of the format's dense peak"},
            "loop_overhead": {"value": significant(loop_overhead), "bound": [0.0, LOOP_OVERHEAD_MAX],
                              "what": "L_0: a work unit's start and end, in key tiles of its loop"},
            "ceiling": {"value": significant(float(rows.efficiency[take].max())),
                        "what": "c: the best efficiency F / (t P) of these rows; no prediction is faster"},
            "tables": sorted(set(rows.table[take])),
            "rows": int(take.sum()),
        }
    return {"head_overhead": {"value": significant(head_overhead), "bound": [0.0, HEAD_OVERHEAD_MAX],
                              "what": "D_0: non-tensor-core work per score (exponential, rescale, mask), in FLOPs' "
                                      "worth of time at the peak"},
            "groups": fitted_groups}


def fit_attention(tables: Iterable[KernelTable], memory_fit: MemoryFit) -> AttentionFit:
    """The constants of every architecture the ``fit`` attention tables cover (the attention.json format).

    ``memory_fit`` (:func:`mlsysim.kernels.memory.fit_memory`'s answer) gives each
    architecture's floor: the smallest per-kernel floor of its accelerators (0 where none of
    them has a memory table).
    """
    chosen = [fastest_rows(t) for t in tables if t.kind == "attention" and t.split == "fit"]
    _check_formats(chosen)
    floors: dict[str, list[tuple[float, str]]] = {}
    for name, entry in memory_fit["accelerators"].items():
        architecture = str(accelerator_entry(name).architecture)
        floors.setdefault(architecture, []).append((float(entry["floor"]["value"]), name))
    architectures: dict[str, AttentionArchitecture] = {}
    for architecture, rows in sorted(attention_rows(chosen).items()):
        floor, source = min(floors.get(architecture, [(0.0, "none")]))
        fitted = fit_architecture(rows, floor)
        architectures[architecture] = AttentionArchitecture(
            head_overhead=fitted["head_overhead"], groups=fitted["groups"],
            floor={"value": significant(floor), "unit": "s",
                   "what": f"t_0: the per-kernel floor, the memory-bound fit's floor of {source}"})
    return {"about": "Fused attention constants fitted by mlsysim.kernels.attention_fit.fit_attention on the "
                     "tables named (python -m mlsysim.validation.kernels_attention); the model is "
                     "mlsysim.physics.attention.fused_attention_time.",
            "tile": TILE, "architectures": architectures}
