"""Benchmark of ``mlsysim.plan`` over parallel layouts through the scenario engine: layouts per second.

Run:

    python benchmarks/bench_layout_plan.py               # Llama-3 70B on 16..64 DGX H100 nodes
    python benchmarks/bench_layout_plan.py --workers 2

The space: t in 1, 2, 4, 8 x p in 1, 2, 4, 5, 8, 10, 16, 20 x v in 1, 2, 4 x
micro-batches (accumulation_steps) 1..128 x nodes 16, 32, 64 x ZeRO stage
0-3 (147,456 layouts), Llama-3 70B on DGX H100 nodes with InfiniBand NDR,
MFU 0.45, sequence parallelism, no optimizer step. Every layout of the grid counts (those the
layout rules or the memory reject included); a small space, where a plan's
fixed costs (checking the axes, the best rows' scenarios) show. The larger
spaces are ``bench_layouts.py``. Prints the median of
``--repeats`` runs and the machine's load; not a timed test.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models, Systems

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_layouts import timed_plan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    base = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=64,
        fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=32, mfu=0.45,
        training_tokens=Q_(1e12, "token"), device_memory=Q_(80, "GB"), node_hour_rate=Q_(98, "USD/hour"), assumptions=Assumptions(overlap=True),
        tensor_parallel=2, sequence_parallel=1,
    )
    axes = {
        "tensor_parallel": [1, 2, 4, 8],
        "pipeline_parallel": [1, 2, 4, 5, 8, 10, 16, 20],
        "pipeline_chunks": [1, 2, 4],
        "accumulation_steps": list(range(1, 129)),
        "nodes": [16, 32, 64],
        "zero_stage": [0, 1, 2, 3],
    }
    size = 1
    for values in axes.values():
        size *= len(values)
    plan, median = timed_plan(args, base, axes)
    print(f"{size:,} layouts, {plan.feasible_count:,} feasible: median {median:.3f} s, "
          f"{size / median / 1e6:.2f} M layouts/s (workers={args.workers}, load {os.getloadavg()[0]:.1f})")
    print(plan.why())


if __name__ == "__main__":
    main()
