"""Build step of the attention and memory-bound kernel constants, and their errors on the tables.

``python -m mlsysim.validation.kernels_attention`` fits the constants on the shipped ``fit``
tables (:func:`mlsysim.kernels.memory.fit_memory`, then
:func:`mlsysim.kernels.attention_fit.fit_attention`) and writes
``mlsysim/data/kernel_fits/memory.json`` and ``attention.json``; ``--check`` only
compares them with the shipped files. :func:`attention_errors` and :func:`memory_errors`
price every row of a set of tables through the public kernel functions and give the
relative error of each (fit and holdout alike): the benchmark
``benchmarks/bench_kernels_attention.py`` and the tests read them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlsysim.kernels.attention import attention_time
from mlsysim.kernels.attention_fit import fit_attention
from mlsysim.kernels.fit_documents import AttentionFit, MemoryFit
from mlsysim.kernels.memory import fit_memory, memory_time
from mlsysim.kernels.tables import KernelTable, shipped_tables

FITS = Path(__file__).resolve().parents[1] / "data" / "kernel_fits"
"""Where the build step writes."""


@dataclass(frozen=True)
class RowErrors:
    """Each row of one table: what it measured, what the model says, (predicted - measured) / measured."""

    table: KernelTable
    measured: np.ndarray
    predicted: np.ndarray

    @property
    def errors(self) -> np.ndarray:
        return (self.predicted - self.measured) / self.measured


def build(tables: Iterable[KernelTable] | None = None) -> tuple[MemoryFit, AttentionFit]:
    """(memory fit, attention fit) on ``tables`` (default: the shipped ones)."""
    chosen = list(shipped_tables() if tables is None else tables)
    memory = fit_memory(chosen)
    return memory, fit_attention(chosen, memory)


def attention_errors(tables: Iterable[KernelTable], fit: AttentionFit | None = None) -> list[RowErrors]:
    """Every attention table's rows priced by :func:`mlsysim.kernels.attention.attention_time`."""
    out = []
    for table in tables:
        if table.kind != "attention":
            continue
        c = table.columns
        predicted = np.empty(len(table))
        for fmt, direction in sorted(set(zip(c["format"], c["direction"], strict=True))):
            take = (c["format"] == fmt) & (c["direction"] == direction)
            kernel = attention_time(
                table.accelerator, batch=c["batch"][take], heads=c["heads"][take], seq_len=c["seq_len"][take],
                head_dim=c["head_dim"][take], kv_heads=c.get("kv_heads", c["heads"])[take],
                kv_len=c.get("kv_len", c["seq_len"])[take], head_dim_v=c.get("head_dim_v", c["head_dim"])[take],
                causal=c["causal"][take] > 0, format=str(fmt), direction=str(direction), fit=fit)
            predicted[take] = kernel.time
        out.append(RowErrors(table, table.time, predicted))
    return out


def memory_errors(tables: Iterable[KernelTable], fit: MemoryFit | None = None) -> list[RowErrors]:
    """Every memory table's rows priced by :func:`mlsysim.kernels.memory.memory_time`."""
    return [RowErrors(t, t.time, np.asarray(memory_time(t.accelerator, t.columns["bytes"], fit=fit).time))
            for t in tables if t.kind == "memory"]


def summary(errors: np.ndarray) -> tuple[float, float, float]:
    """(median |error|, worst |error|, median signed error)."""
    return float(np.median(np.abs(errors))), float(np.max(np.abs(errors))), float(np.median(errors))


def _dump(document: Mapping[str, object]) -> str:
    return json.dumps(document, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped fits instead of writing")
    args = parser.parse_args(argv)
    memory, attention = build()
    stale = []
    for name, document in (("memory.json", memory), ("attention.json", attention)):
        path = FITS / name
        text = _dump(document)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)} (run python -m mlsysim.validation.kernels_attention)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
