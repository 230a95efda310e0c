"""Errors of the fused-attention and memory-bound kernel models on every shipped table.

    python benchmarks/bench_kernels_attention.py

Prints, for each attention and memory table, its split (fit: the constants were fitted on
it; holdout: never), its rows and the median and worst relative error of the predicted
time (predicted - measured) / measured, then the same by split and the subsets that
matter for training: bf16 at 2k tokens and more, forward and backward apart. Attention
tables that measure one call with several libraries are also scored on the fastest row
of each call (the model prices the fastest fused kernel).
"""

from __future__ import annotations

import time

import numpy as np

from mlsysim.kernels.attention_fit import fastest_rows
from mlsysim.kernels.tables import tables
from mlsysim.validation.kernels_attention import RowErrors, attention_errors, memory_errors, summary


def line(label: str, errors: np.ndarray) -> str:
    median, worst, signed = summary(errors)
    return f"{label:<48} {len(errors):>5} {median:>8.1%} {worst:>8.1%} {signed:>+8.1%}"


def header(title: str) -> None:
    print(f"\n{title}")
    print(f"{'':<48} {'rows':>5} {'median':>8} {'worst':>8} {'signed':>8}")


def pooled(results: list[RowErrors], split: str, keep=None) -> np.ndarray:
    parts = []
    for r in results:
        if r.table.split != split:
            continue
        mask = np.ones(len(r.measured), dtype=bool) if keep is None else keep(r)
        parts.append(r.errors[mask])
    return np.concatenate(parts) if parts else np.zeros(0)


def main() -> None:
    start = time.perf_counter()
    attention = attention_errors(tables(kind="attention"))
    fastest = attention_errors(fastest_rows(t) for t in tables(kind="attention"))
    memory = memory_errors(tables(kind="memory"))

    header("attention tables (all rows | fastest row per call)")
    for all_rows, best in zip(attention, fastest, strict=True):
        label = f"{all_rows.table.name.removeprefix('attention_').removesuffix('.json')} [{all_rows.table.split}]"
        print(line(label, all_rows.errors))
        if len(best.measured) != len(all_rows.measured):
            print(line("   fastest library per call", best.errors))

    def training(r: RowErrors, direction: str) -> np.ndarray:
        c = r.table.columns
        return ((c["seq_len"] >= 2048) & np.isin(c["format"], ["bf16", "fp16"]) & (c["direction"] == direction))

    header("attention by split (fastest row per call)")
    for split in ("fit", "holdout"):
        rows = pooled(fastest, split)
        if rows.size:
            print(line(f"{split}: all", rows))
        for direction in ("forward", "backward", "forward+backward"):
            subset = pooled(fastest, split, lambda r, d=direction: training(r, d))
            if subset.size:
                print(line(f"{split}: bf16/fp16, seq >= 2k, {direction}", subset))
        long = pooled(fastest, split, lambda r: r.table.columns["seq_len"] < 2048)
        if long.size:
            print(line(f"{split}: seq < 2k (short sequences)", long))

    header("memory-bound kernel tables")
    for r in memory:
        print(line(f"{r.table.name.removeprefix('memory_').removesuffix('.json')} [{r.table.split}]", r.errors))
    header("memory-bound by split")
    for split in ("fit", "holdout"):
        rows = pooled(memory, split)
        if rows.size:
            print(line(f"{split}: all", rows))
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
