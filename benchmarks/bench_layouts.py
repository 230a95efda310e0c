"""Benchmark of the layout search (``mlsysim.planning.layouts.best_layout``) and of one layout's result.

Run:

    python benchmarks/bench_layouts.py               # Llama-3 70B on 1..64 DGX H100 nodes
    python benchmarks/bench_layouts.py --nodes 1024  # 1..1,024 nodes
    python benchmarks/bench_layouts.py --pricing operators --no-result
    python benchmarks/bench_layouts.py --space moe --no-result   # DeepSeek-V3: cp, ep, etp axes too

The space: nodes 1..N (8 H100s each) x t in 1, 2, 4, 8 x p in the divisors of
80 up to 80 x v in 1, 2, 4 x micro-batch 1, 2, 4 x micro-batches 1..64 x ZeRO
stage 0-3 x recompute none/selective/full, Llama-3 70B on 8,192-token
sequences, 80 GB per device, global batch free. Layouts per second count
every layout of the grid (those the rules or the memory reject included).
``--pricing``: t_c from FLOPs at u = 0.73 (``flops``), operator by operator
(``operators``: the figures :func:`~mlsysim.planning.layouts.scenario_search_inputs`
takes from a scenario whose step comes from the operators, Llama-3 70B on DGX
H100 with its fitted bf16 ceiling), or both.

``--space moe``: DeepSeek-V3 (MoE, multi-head latent attention, fp8 products) on
16..256 HGX H800 nodes (step 16) x t in 1, 2, 4, 8 x cp in 1, 2 x p in 1, 2, 4,
8, 16 x v in 1, 2 x ep in 1, 8, 16, 32, 64, 128, 256 x etp in 1, 2 x
micro-batch 1, 2 x micro-batches 8..128 (step 8) x ZeRO 0, 1, 3 x recompute
none/selective/full, always priced from the operators
(:func:`~mlsysim.planning.layouts.scenario_search_inputs` of the report's
layout, ``expert_overlap`` 1), 80 GB per device.

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
import os
import statistics
import time
from typing import Any

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.physics.matmul import _shape_times
from mlsysim.physics.records import records_from
from mlsysim.planning.layouts import best_layout, grid_size, scenario_search_inputs

LLAMA3_70B = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
DGX_H100 = dict(devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.73, memory_bandwidth=3.35e12,
                intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0)
OPERATOR_FIGURES = ("matmul_ceiling", "matmul_peak", "attention_ceiling")


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


def search_moe(args: argparse.Namespace) -> None:
    axes = {
        "devices": [8.0 * n for n in range(16, 257, 16)],
        "tensor_parallel": [1.0, 2.0, 4.0, 8.0],
        "context_parallel": [1.0, 2.0],
        "pipeline_parallel": [1.0, 2.0, 4.0, 8.0, 16.0],
        "pipeline_chunks": [1.0, 2.0],
        "expert_parallel": [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
        "expert_tensor_parallel": [1.0, 2.0],
        "micro_batch": [1.0, 2.0],
        "micro_batches": [float(m) for m in range(8, 129, 8)],
        "zero_stage": [0.0, 1.0, 3.0],
        "recompute": [0.0, 1.0, 2.0],
    }
    inputs = scenario_search_inputs(deepseek_v3())
    size = grid_size(axes)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        best = best_layout(axes, **inputs._asdict())
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"[moe, operators] layouts: {size:,}  kept: {best.kept:,}  median {median:.2f} s  "
          f"-> {size / median / 1e6:.2f} M layouts/s (load {os.getloadavg()[0]:.1f})")
    print(f"[moe, operators] best: {best.layout}  {best.seconds_per_sequence * 1e3:.2f} ms per sequence, "
          f"update {best.update_time:.2f} s, memory {best.memory_bytes / 1e9:.1f} GB")


def search(args: argparse.Namespace, pricing: str) -> None:
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
    records = records_from(**LLAMA3_70B, **DGX_H100, sequence_parallel=True, flash_attention=True)
    if pricing == "operators":
        found = scenario_search_inputs(scenario()).records
        shape, rates = found.shape, found.rates
        records = records._replace(
            shape=records.shape._replace(kv_heads=shape.kv_heads, ffn_hidden=shape.ffn_hidden,
                          gated_mlp=shape.gated_mlp),
            cluster=records.cluster._replace(compute_units=found.cluster.compute_units),
            layout=records.layout._replace(cast_bytes=found.layout.cast_bytes,
                           fused_elementwise=found.layout.fused_elementwise),
            rates=records.rates._replace(**{name: getattr(rates, name) for name in OPERATOR_FIGURES}),
        )
    size = grid_size(axes)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        best = best_layout(axes, records=records, memory_capacity=80e9)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"[{pricing}] layouts: {size:,}  kept: {best.kept:,}  median {median:.2f} s  "
          f"-> {size / median / 1e6:.2f} M layouts/s (load {os.getloadavg()[0]:.1f})")
    print(f"[{pricing}] best: {best.layout}  {best.seconds_per_sequence * 1e3:.2f} ms per sequence, "
          f"update {best.update_time:.2f} s, memory {best.memory_bytes / 1e9:.1f} GB")


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
    parser.add_argument("--pricing", choices=("flops", "operators", "both"), default="both")
    parser.add_argument("--space", choices=("dense", "moe"), default="dense",
                        help="dense: Llama-3 70B on DGX H100; moe: DeepSeek-V3 on HGX H800 with cp, ep, etp")
    parser.add_argument("--no-result", action="store_true", help="skip the one-layout result timings")
    args = parser.parse_args()
    if args.space == "moe":
        search_moe(args)
    else:
        for pricing in ("flops", "operators"):
            if args.pricing in (pricing, "both"):
                search(args, pricing)
    if not args.no_result:
        results(args.repeats)


if __name__ == "__main__":
    main()
