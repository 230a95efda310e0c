"""Benchmark of the layout search (``mlsysim.plan`` over layout axes) and of one layout's result.

Run:

    python benchmarks/bench_layouts.py               # Llama-3 70B on 1..64 DGX H100 nodes
    python benchmarks/bench_layouts.py --nodes 1024  # 1..1,024 nodes
    python benchmarks/bench_layouts.py --pricing operators --no-result
    python benchmarks/bench_layouts.py --space moe --no-result   # DeepSeek-V3: cp, ep, etp axes too
    python benchmarks/bench_layouts.py --workers 2   # the plan's blocks on two processes
    python benchmarks/bench_layouts.py --no-search   # one layout's result only

The space: nodes 1..N (8 H100s each) x t in 1, 2, 4, 8 x p in the divisors of
80 up to 80 x v in 1, 2, 4 x micro-batch 1, 2, 4 x micro-batches 1..64 x ZeRO
stage 0-3 x recompute none/selective/full, Llama-3 70B on 8,192-token
sequences, 80 GB per device, global batch free, ``objective="time"``. Layouts
per second count every layout of the grid (those the rules or the memory reject
included). ``--pricing``: the step from the model FLOPs at ``mfu`` 0.73
(``flops``), operator by operator (``operators``: the fitted bf16 ceiling of the
H100, each layout's kernels at its own t, b and stage), or both.

``--space moe``: DeepSeek-V3 (MoE, multi-head latent attention, fp8 products) on
16..256 HGX H800 nodes (step 16) x t in 1, 2, 4, 8 x cp in 1, 2 x p in 1, 2, 4,
8, 16 x v in 1, 2 x ep in 1, 8, 16, 32, 64, 128, 256 x etp in 1, 2 x
micro-batch 1, 2 x micro-batches 8..128 (step 8) x ZeRO 0, 1, 3 x recompute
none/selective/full, priced from the operators (the report's layout,
``expert_overlap`` 1), 80 GB per device.

Then (unless ``--no-result``) one layout's ``scenario.result``: Llama-3 70B,
t 8 p 4, 4 DGX H100 nodes, 32 micro-batches, with the step from the operators
and from ``mfu`` 0.45: the result evaluated afresh (the scenario's checked
inputs kept, its kept result dropped) and ``variant(accumulation_steps=m).result``
(the check of the changed input included); for the operators, also with
the per-shape cache of matrix-product times emptied before each result. Prints medians of ``--repeats``
runs and the machine's load; not a timed test.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from typing import Any

import mlsysim
from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.physics.matmul import _shape_times
from mlsysim.planning.layouts import axes_of, describe_layout


def scenario(**changes: Any) -> DataParallelScaleOutScenario:
    """Llama-3 70B, t 8 p 4 on 4 DGX H100 nodes: its step from the operators unless ``mfu`` is given."""
    inputs: dict[str, Any] = dict(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=4,
        fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=32,
        training_tokens=Q_(1e12, "token"), device_memory=Q_(80, "GB"), tensor_parallel=8, pipeline_parallel=4,
        sequence_parallel=1, flash_attention=1,
    )
    return DataParallelScaleOutScenario(**{**inputs, **changes})


def deepseek_v3() -> DataParallelScaleOutScenario:
    """DeepSeek-V3 on 256 HGX H800 nodes as its report trains it (PP 16, EP 64, ZeRO-1, DualPipe)."""
    return DataParallelScaleOutScenario(
        workload=Models.Language.DeepSeek_V3, node=Systems.Nodes.HGX_H800, nodes=256, precision="bf16",
        matmul_format="fp8", per_device_batch=1, accumulation_steps=120, pipeline_parallel=16,
        expert_parallel=64, zero_stage=1, flash_attention=1, recompute="none", expert_overlap=1,
        training_tokens=Q_(14.8e12, "token"),
    )


RECOMPUTE = ["none", "selective", "full"]


def timed_plan(
    args: argparse.Namespace, base: DataParallelScaleOutScenario, axes: dict[str, list[Any]]
) -> tuple[mlsysim.Plan, float]:
    """The last of ``--repeats`` runs of ``plan(base, objective="time", **axes)`` on ``--workers`` and
    their median wall time in seconds."""
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        plan = mlsysim.plan(base, objective="time", workers=args.workers, **axes)
        times.append(time.perf_counter() - start)
    return plan, statistics.median(times)


def search(args: argparse.Namespace, label: str, base: DataParallelScaleOutScenario, axes: dict[str, list[Any]]) -> None:
    """The median time of ``plan(base, objective="time", **axes)`` over ``--repeats`` runs, and its best layout."""
    size = math.prod(len(values) for values in axes.values())
    plan, median = timed_plan(args, base, axes)
    best = plan.best.result.figures
    assert best.layout is not None
    print(f"[{label}] layouts: {size:,}  feasible: {plan.feasible_count:,}  median {median:.2f} s  "
          f"-> {size / median / 1e6:.2f} M layouts/s (workers={args.workers}, load {os.getloadavg()[0]:.1f})")
    print(f"[{label}] best: {describe_layout(axes_of(best.layout))}, "
          f"{float(best.update_time) / float(best.global_batch) * 1e3:.2f} ms per sequence, "
          f"update {float(best.layout.update_time):.2f} s, memory {float(best.layout.memory_bytes) / 1e9:.1f} GB")


def dense_axes(nodes: int) -> dict[str, list[Any]]:
    return {
        "nodes": list(range(1, nodes + 1)),
        "tensor_parallel": [1, 2, 4, 8],
        "pipeline_parallel": [1, 2, 4, 5, 8, 10, 16, 20, 40, 80],
        "pipeline_chunks": [1, 2, 4],
        "per_device_batch": [1, 2, 4],
        "accumulation_steps": list(range(1, 65)),
        "zero_stage": [0, 1, 2, 3],
        "recompute": RECOMPUTE,
    }


MOE_AXES: dict[str, list[Any]] = {
    "nodes": list(range(16, 257, 16)),
    "tensor_parallel": [1, 2, 4, 8],
    "context_parallel": [1, 2],
    "pipeline_parallel": [1, 2, 4, 8, 16],
    "pipeline_chunks": [1, 2],
    "expert_parallel": [1, 8, 16, 32, 64, 128, 256],
    "expert_tensor_parallel": [1, 2],
    "per_device_batch": [1, 2],
    "accumulation_steps": list(range(8, 129, 8)),
    "zero_stage": [0, 1, 3],
    "recompute": RECOMPUTE,
}


def results(repeats: int) -> None:
    number = 500
    for name, base in (("operators", scenario()), ("mfu 0.45", scenario(mfu=0.45))):
        base.result  # noqa: B018 - warm
        private = base.__pydantic_private__
        assert private is not None
        fresh, variants = [], []
        for _ in range(max(repeats, 7)):
            start = time.perf_counter()
            for _ in range(number):
                private["_result"] = None
                base.result  # noqa: B018
            fresh.append((time.perf_counter() - start) / number)
            start = time.perf_counter()
            for i in range(number):
                base.variant(accumulation_steps=16 + 4 * (i % 8)).result  # noqa: B018
            variants.append((time.perf_counter() - start) / number)
        cold = []
        if name == "operators":  # the per-shape cache of matmul times emptied before each result
            for _ in range(max(repeats, 7)):
                start = time.perf_counter()
                for _ in range(number):
                    _shape_times.cache_clear()
                    private["_result"] = None
                    base.result  # noqa: B018
                cold.append((time.perf_counter() - start) / number)
        t_c = base.result.figures.layout.terms.compute.micro_batch_time
        print(f"[{name}] scenario.result (t 8 p 4, 4 nodes; t_c {t_c * 1e3:.2f} ms): median "
              f"{statistics.median(fresh) * 1e6:.1f} us; variant(accumulation_steps).result "
              f"{statistics.median(variants) * 1e6:.1f} us"
              + (f"; with the shape cache emptied {statistics.median(cold) * 1e6:.1f} us" if cold else "")
              + f" (load {os.getloadavg()[0]:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pricing", choices=("flops", "operators", "both"), default="both")
    parser.add_argument("--space", choices=("dense", "moe"), default="dense",
                        help="dense: Llama-3 70B on DGX H100; moe: DeepSeek-V3 on HGX H800 with cp, ep, etp")
    parser.add_argument("--no-result", action="store_true", help="skip the one-layout result timings")
    parser.add_argument("--no-search", action="store_true", help="only the one-layout result timings")
    args = parser.parse_args()
    if args.no_search:
        pass
    elif args.space == "moe":
        search(args, "moe, operators", deepseek_v3(), MOE_AXES)
    else:
        for pricing, base in (("flops", scenario(mfu=0.73)), ("operators", scenario())):
            if args.pricing in (pricing, "both"):
                search(args, pricing, base, dense_axes(args.nodes))
    if not args.no_result:
        results(args.repeats)


if __name__ == "__main__":
    main()
