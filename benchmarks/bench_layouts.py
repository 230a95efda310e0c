"""Benchmark of the layout search (``mlsysim.planning.layouts.best_layout``): layouts per second.

Run:

    python benchmarks/bench_layouts.py               # Llama-3 70B on 1..64 DGX H100 nodes
    python benchmarks/bench_layouts.py --nodes 1024  # 1..1,024 nodes

The space: nodes 1..N (8 H100s each) x t in 1, 2, 4, 8 x p in the divisors of
80 up to 80 x v in 1, 2, 4 x micro-batch 1, 2, 4 x micro-batches 1..64 x ZeRO
stage 0-3 x recompute none/selective/full, Llama-3 70B on 8,192-token
sequences, 80 GB per device, global batch free. Layouts per second count
every layout of the grid (those the rules or the memory reject included).
Prints the median of ``--repeats`` runs and the machine's load; not a timed
test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from mlsysim.planning.layouts import best_layout, grid_size

LLAMA3_70B = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
DGX_H100 = dict(devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.73, memory_bandwidth=3.35e12,
                intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    axes = {
        "devices": [8.0 * n for n in range(1, args.nodes + 1)],
        "tensor_parallel": [1.0, 2.0, 4.0, 8.0],
        "pipeline_parallel": [1.0, 2.0, 4.0, 5.0, 8.0, 10.0, 16.0, 20.0, 40.0, 80.0],
        "pipeline_chunks": [1.0, 2.0, 4.0],
        "micro_batch": [1.0, 2.0, 4.0],
        "micro_batches": [float(m) for m in range(1, 65)],
        "zero_stage": [0.0, 1.0, 2.0, 3.0],
        "recompute": [0.0, 1.0, 2.0],
    }
    size = grid_size(axes)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        best = best_layout(axes, workload=LLAMA3_70B, cluster=DGX_H100, memory_capacity=80e9)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"layouts: {size:,}  kept: {best.kept:,}  median {median:.2f} s  -> {size / median / 1e6:.2f} M layouts/s")
    print(f"best: {best.layout}  {best.seconds_per_sequence * 1e3:.2f} ms per sequence, "
          f"update {best.update_time:.2f} s, memory {best.memory_bytes / 1e9:.1f} GB")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
