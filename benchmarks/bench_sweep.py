"""Benchmark of ``mlsysim.sweep``: configurations per second, peak memory, agreement with the scalar solve.

Run (one core, as measured in docs/planning.md):

    taskset -c 0 python benchmarks/bench_sweep.py

The sweep covers 1000 node counts x 100 inter-node bandwidths x 10
accumulation steps x 10 devices per node = 10 million layouts of the
four-node GPT-2 scenario, and builds every scalar result column. The
baseline is a bare numpy pass over the seed formulas on flat arrays of the
same inputs (no validation, no table, only the seed's result fields).
Not a timed test: it prints figures, it does not fail on them.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import time
import tracemalloc

import numpy as np

from mlsysim import Q_, Scenarios, sweep
from mlsysim.engine.results import SEED_FIELDS, text_labels

BASE = Scenarios.Gpt2DataParallelFourNodes10GbE


def axes(rows: int) -> dict:
    """Axes of about ``rows`` layouts: 1000 x 100 x 10 x 10 at 10 million."""
    scale = (rows / 10_000_000) ** 0.5
    nodes = max(1, round(1000 * scale))
    bandwidths = max(1, round(100 * scale))
    return {
        "nodes": range(1, nodes + 1),
        "inter_bandwidth": [Q_(b, "Gbps") for b in np.linspace(10, 800, bandwidths)],
        "accumulation_steps": range(1, 11),
        "devices_per_node": range(1, 11),
    }


def time_sweep(ax: dict, repeats: int, **kwargs) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        table = sweep(BASE, **ax, **kwargs)
        times.append(time.perf_counter() - started)
        size = len(table)
        del table
    return times, size


def peak_traced(ax: dict) -> int:
    tracemalloc.start()
    table = sweep(BASE, **ax)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del table
    return peak


def bare_numpy(ax: dict, repeats: int) -> list[float]:
    """The seed equations on flat float arrays: the floor of what numpy can do."""
    g = BASE.workload.gradient_bytes(BASE.precision)
    t1, t_train = 1.8, 25 * 3600.0
    b_intra, rate = 450e9, 32.0
    grids = np.meshgrid(
        np.asarray(ax["nodes"], dtype=float),
        np.asarray([q.to("B/s").magnitude for q in ax["inter_bandwidth"]]),
        np.asarray(ax["accumulation_steps"], dtype=float),
        np.asarray(ax["devices_per_node"], dtype=float),
        indexing="ij",
    )
    big_n, b_inter, a, d = (x.reshape(-1).copy() for x in grids)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        n = d * big_n
        intra_time = g * (2.0 * (d - 1) / d) / b_intra
        inter_time = g * (2.0 * (n - 1) / n) * (big_n > 1) / b_inter
        communication = intra_time + inter_time
        compute = a * t1
        update = compute + communication
        speedup = n * compute / update
        efficiency = speedup / n
        training = t_train / speedup
        cost = training / 3600.0 * big_n * rate
        times.append(time.perf_counter() - started)
        del n, intra_time, inter_time, communication, compute, update, speedup, efficiency
        del training, cost
    return times


def max_relative_difference(ax: dict, samples: int, seed: int = 0) -> tuple[float, int]:
    """Largest |sweep - scalar| / |scalar| over every numeric result field of random rows."""
    table = sweep(BASE, **ax)
    rng = np.random.default_rng(seed)
    worst = 0.0
    rows = rng.choice(len(table), size=min(samples, len(table)), replace=False)
    numeric = [
        *(name for name in SEED_FIELDS if name not in text_labels()),
        "speedup",
        "efficiency",
        "compute_share",
        "communication_share",
        "communication_overhead",
        "cost",
        "n_devices",
        "global_batch",
    ]
    numeric = list(dict.fromkeys(numeric))
    for i in rows:
        result = table.scenario(int(i)).result
        for field in numeric:
            expected = getattr(result, field)
            expected = float(getattr(expected, "magnitude", expected))
            got = float(table[field][i])
            if expected != got:
                worst = max(worst, abs(got - expected) / abs(expected))
    return worst, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="layouts per sweep")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--samples", type=int, default=2000, help="rows checked against the scalar solve"
    )
    args = parser.parse_args()
    ax = axes(args.rows)

    times, size = time_sweep(ax, args.repeats)
    median = statistics.median(times)
    print(f"sweep, every result column: {size:,} layouts")
    print(f"  runs (s): {', '.join(f'{t:.3f}' for t in times)}")
    print(
        f"  median {median:.3f} s -> {size / median / 1e6:.2f} M configurations/s "
        f"(best {size / min(times) / 1e6:.2f} M/s)"
    )
    few, _ = time_sweep(ax, args.repeats, fields=("efficiency", "training_time", "cost"))
    print(
        f"sweep, 3 result columns: median {statistics.median(few):.3f} s -> "
        f"{size / statistics.median(few) / 1e6:.2f} M configurations/s"
    )
    base = bare_numpy(ax, args.repeats)
    print(
        f"bare numpy, seed formulas on flat arrays: median {statistics.median(base):.3f} s -> "
        f"{size / statistics.median(base) / 1e6:.2f} M configurations/s"
    )
    peak = peak_traced(ax)
    print(
        f"peak traced memory of one sweep (tracemalloc): {peak / 2**30:.2f} GiB "
        f"({peak / size:.0f} bytes per layout)"
    )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"peak resident memory of this process: {rss / 2**30:.2f} GiB")
    worst, checked = max_relative_difference(ax, args.samples)
    print(
        f"max relative difference, sweep vs scalar solve over {checked} random rows: "
        f"{worst:.3g}{' (identical)' if worst == 0 else ''}"
    )
    if not math.isfinite(worst) or worst > 1e-12:
        print("WARNING: sweep and scalar solve differ by more than 1e-12")


if __name__ == "__main__":
    main()
