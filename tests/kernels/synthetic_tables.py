"""Kernel tables made from the shipped models with one constant changed: what a user's own measurements would
be on a cluster whose kernels differ from the shipped fits in that constant alone (the round trips of
``mlsysim calibrate kernels`` and the cluster file)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np

from mlsysim.kernels._accelerator import accelerator_entry, memory_bandwidth
from mlsysim.kernels.attention import attention_time, shipped_attention_fit
from mlsysim.kernels.matmul import matmul_kernel_time, matmul_params, shipped_fit
from mlsysim.kernels.memory import shipped_memory_fit

SOURCE = {"title": "synthetic: the shipped model with one constant changed", "url": "tests/kernels/synthetic_tables.py",
          "date": "2026-01-01", "hardware": "none (computed)", "software": "mlsysim", "notes": "for the tests"}

SHAPES = list(itertools.product([512, 1024, 2048, 4096, 8192], [1024, 4096, 8192], [1024, 4096, 8192]))
"""Matrix products (m, n, k) of the synthetic matmul table."""


def table_document(kind: str, accelerator: str, columns: list[str], rows: list[list[object]],
                   units: dict[str, str], split: str = "fit") -> dict[str, object]:
    """A table in the kernel-table JSON format."""
    return {"kind": kind, "split": split, "accelerator": accelerator, "source": SOURCE, "units": units,
            "columns": columns, "rows": rows}


def write_json(path: Path, document: dict[str, object]) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def matmul_times(ceiling: float, accelerator: str = "A100", fmt: str = "bf16") -> list[float]:
    """Microseconds of each of :data:`SHAPES` with the architecture's ``fmt`` ceiling set to ``ceiling`` (the
    device's own cap lifted), the rest of the shipped fit kept."""
    base = shipped_fit()
    entry = accelerator_entry(accelerator)
    architecture = str(entry.architecture)
    fit = dataclasses.replace(
        base, ceilings={**base.ceilings, architecture: {**base.ceilings.get(architecture, {}), fmt: ceiling}},
        device_best={**base.device_best, entry.name: {**base.device_best.get(entry.name, {}), fmt: 1.0}})
    params = matmul_params(entry, fmt, fit=fit)
    return [float(matmul_kernel_time(params, m, n, k).time) * 1e6 for m, n, k in SHAPES]


def shape_efficiencies(ceiling: float) -> list[float]:
    """Each of :data:`SHAPES`' measured efficiency (FLOP/s over the A100's 312 TFLOP/s bf16 peak)."""
    return [2.0 * m * n * k / (t * 1e-6) / 312e12 for (m, n, k), t in zip(SHAPES, matmul_times(ceiling), strict=True)]


def matmul_csv(path: Path, ceiling: float = 0.75) -> Path:
    """An A100 bf16 matmul table as a user's CSV (``time [us]``)."""
    lines = ["m,n,k,format,time [us]"]
    lines += [f"{m},{n},{k},bf16,{t:.6f}" for (m, n, k), t in zip(SHAPES, matmul_times(ceiling), strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def memory_json(path: Path, fraction: float = 0.75, accelerator: str = "A100") -> Path:
    """A memory table: the shipped floor of ``accelerator``, its bandwidth at ``fraction`` of the peak."""
    floor = shipped_memory_fit()["accelerators"]["A100"]["floor"]["value"]
    peak = memory_bandwidth(accelerator_entry(accelerator))
    rows = [["copy", float(b), (floor + b / (fraction * peak)) * 1e6] for b in np.geomspace(1e5, 4e9, 24)]
    return write_json(path, table_document("memory", accelerator, ["kernel", "bytes", "time"], rows,
                                           {"bytes": "B", "time": "us"}))


def attention_json(path: Path, scale: float = 0.6, direction: str = "forward+backward") -> Path:
    """An A100 bf16 attention table with the Ampere scale a set to ``scale`` (the shipped group's other constants)."""
    fit = copy.deepcopy(dict(shipped_attention_fit()))
    fit["architectures"]["Ampere"]["groups"]["bf16 forward+backward"]["scale"]["value"] = scale
    rows = []
    for b, h, s, d, c in itertools.product([1, 4], [16, 32], [1024, 2048, 4096, 8192], [64, 128], [0, 1]):
        t = attention_time("A100", batch=b, heads=h, seq_len=s, head_dim=d, causal=bool(c),
                           direction="forward+backward", fit=fit).time
        rows.append([b, h, s, d, c, "bf16", direction, float(t) * 1e6])
    columns = ["batch", "heads", "seq_len", "head_dim", "causal", "format", "direction", "time"]
    return write_json(path, table_document("attention", "A100", columns, rows, {"time": "us"}))
