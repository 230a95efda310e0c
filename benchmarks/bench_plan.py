"""Benchmark of the streamed ``mlsysim.plan``: layouts per second, peak memory, agreement with a brute force.

Run:

    python benchmarks/bench_plan.py                  # the full space: 536,870,912 layouts
    python benchmarks/bench_plan.py --nodes 256      # a smaller space (33.5 million)

The space is nodes 1..4096 x accumulation 1..64 x devices per node 1/2/4/8 x
16 fabrics (inter-node bandwidths 10..800 Gbps) x 4 precisions x 8
per-device batch sizes of the four-node GPT-2 scenario (32 USD per node-hour),
with objective cost, deadline 0.5 h, minimum efficiency 0.5 and a global batch
of at most 65,536. It is planned with 2 local worker processes and on a local
Dask cluster of 2 worker processes (``LocalCluster``), and the best cost and
the Pareto front are checked against a brute force: the seed equations
written out below on flat numpy arrays, chunk by chunk, with its own
dominance filter (nothing of mlsysim's plan code).

Prints the median of ``--repeats`` runs, the peak resident memory of the main
process and of every worker, and the machine's load (``os.getloadavg``): on a
shared machine the figures are depressed. Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from mlsysim import Q_, Scenarios, plan
from mlsysim.planning.run import peak_rss_bytes

BASE = Scenarios.Gpt2DataParallelFourNodes10GbE
PRECISIONS = ["fp32", "fp16", "bf16", "fp8"]
BANDWIDTHS_GBPS = np.linspace(10, 800, 16)
LIMITS = {
    "objective": "cost",
    "deadline": Q_(0.5, "hour"),
    "min_efficiency": 0.5,
    "max_global_batch": 65_536,
}


def axes(nodes: int) -> dict:
    return {
        "nodes": range(1, nodes + 1),
        "accumulation_steps": range(1, 65),
        "devices_per_node": [1, 2, 4, 8],
        "inter_bandwidth": [Q_(float(b), "Gbps") for b in BANDWIDTHS_GBPS],
        "precision": PRECISIONS,
        "per_device_batch": [1, 2, 4, 8, 16, 32, 64, 128],
    }


def timed(repeats: int, **kwargs: object) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = plan(BASE, **kwargs)
        times.append(time.perf_counter() - started)
    return times, result


def report(label: str, times: list[float], p: object) -> None:
    size = p.size  # type: ignore[attr-defined]
    median = statistics.median(times)
    print(f"{label}: {size:,} layouts")
    print(f"  runs (s): {', '.join(f'{t:.2f}' for t in times)}")
    print(f"  median {median:.2f} s -> {size / median / 1e6:.1f} M layouts/s")
    for where, peak in sorted(p.peak_rss.items()):  # type: ignore[attr-defined]
        print(f"  peak RSS {where}: {peak / 2**20:,.0f} MiB")


# -- brute force over the seed equations ---------------------------------------------------


def brute_force(nodes: int, chunk_nodes: int = 16) -> dict:
    """Best cost (with the plan's tie rule) and the Pareto front, from the seed equations.

    Seed model (every optional term neutral): n = d N; f(k) = 2 (k - 1) / k;
    intra = G f(d) / B_intra; inter = G f(n) / B_inter when N > 1 (the second
    ring over all n devices, on the inter-node link), else 0; compute = A T1;
    update = compute + intra + inter; speedup = n compute / update;
    training = T_train / speedup; cost = training [h] N rate.
    """
    t1 = BASE.step_time.to("s").magnitude
    t_train = BASE.training_time.to("s").magnitude
    b_intra = BASE.intra_bandwidth.to("B/s").magnitude
    rate = BASE.node_hour_rate.to("USD/hour").magnitude
    b_inter = np.asarray([Q_(float(b), "Gbps").to("B/s").magnitude for b in BANDWIDTHS_GBPS])
    batches = np.asarray([1, 2, 4, 8, 16, 32, 64, 128], dtype=float)
    a = np.arange(1, 65, dtype=float)
    d = np.asarray([1, 2, 4, 8], dtype=float)
    shape = (nodes, 64, 4, 16, 4, 8)
    best = (np.inf, np.inf, -1)
    front_t, front_c, front_i = np.empty(0), np.empty(0), np.empty(0, dtype=np.int64)
    for p_index, precision in enumerate(PRECISIONS):
        g = BASE.workload.gradient_bytes(precision)
        for start in range(0, nodes, chunk_nodes):
            big_n = np.arange(start + 1, min(start + chunk_nodes, nodes) + 1, dtype=float)
            nn = big_n[:, None, None, None]
            aa = a[None, :, None, None]
            dd = d[None, None, :, None]
            bi = b_inter[None, None, None, :]
            n = dd * nn
            intra = g * np.where(dd > 1, 2.0 * (dd - 1) / dd, 0.0) / b_intra
            inter = np.where(nn > 1, g * (2.0 * (n - 1) / n) / bi, 0.0)
            compute = aa * t1
            update = compute + intra + inter
            speedup = n * compute / update
            efficiency = speedup / n
            training_h = t_train / speedup / 3600.0
            cost = training_h * nn * rate
            ok = (training_h <= 0.5) & (efficiency >= 0.5)
            ok = ok & np.ones_like(cost, dtype=bool)
            # per-device batch: only the global batch limit depends on it
            glob = batches[None, None, None, None, :] * (n * aa)[..., None]
            full_ok = ok[..., None] & (glob <= 65_536)
            if not full_ok.any():
                continue
            where = np.nonzero(full_ok)
            t = np.broadcast_to(training_h[..., None], full_ok.shape)[where]
            c = np.broadcast_to(cost[..., None], full_ok.shape)[where]
            coords = list(where)
            coords[0] = coords[0] + start
            index = np.ravel_multi_index(
                (
                    coords[0],
                    coords[1],
                    coords[2],
                    coords[3],
                    np.full_like(coords[0], p_index),
                    coords[4],
                ),
                shape,
            )
            order = np.lexsort((index, t, c))
            i = order[0]
            best = min(best, (float(c[i]), float(t[i]), int(index[i])))
            front_t, front_c, front_i = _front(
                np.concatenate([front_t, t]),
                np.concatenate([front_c, c]),
                np.concatenate([front_i, index]),
            )
    return {"best": best, "front": set(front_i.tolist()), "front_points": (front_t, front_c)}


def _front(t: np.ndarray, c: np.ndarray, i: np.ndarray) -> tuple:
    """Non-dominated points (time, cost minimized; equal points all kept), quadratic-free."""
    order = np.lexsort((c, t))
    t, c, i = t[order], c[order], i[order]
    keep = np.zeros(t.size, dtype=bool)
    lowest = np.inf  # least cost at a strictly smaller time
    k = 0
    while k < t.size:
        j = k
        while j < t.size and t[j] == t[k]:
            j += 1
        group_min = c[k]
        if group_min < lowest:
            keep[k:j] = c[k:j] == group_min
            lowest = group_min
        k = j
    return t[keep], c[keep], i[keep]


def dask_cluster(workers: int) -> tuple[object, object]:
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit=0,
    )
    return cluster, Client(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nodes", type=int, default=4096, help="nodes 1..N (4096: 536.9 M layouts)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--no-brute-force", action="store_true")
    args = parser.parse_args()
    ax = axes(args.nodes)
    print(f"load average before: {os.getloadavg()} on {os.cpu_count()} cores")

    times, local = timed(args.repeats, workers=args.workers, **LIMITS, **ax)
    report(f"plan, {args.workers} local worker processes", times, local)
    print(local.summary())  # type: ignore[attr-defined]

    if not args.no_dask:
        cluster, client = dask_cluster(args.workers)
        try:
            times, on_dask = timed(args.repeats, scheduler=client, **LIMITS, **ax)
            report(f"plan, local Dask cluster of {args.workers} workers", times, on_dask)
            same = (
                on_dask.best_row == local.best_row  # type: ignore[attr-defined]
                and on_dask.summary() == local.summary()  # type: ignore[attr-defined]
            )
            print(f"  same plan as the local workers: {same}")
        finally:
            client.close()  # type: ignore[attr-defined]
            cluster.close()  # type: ignore[attr-defined]

    if not args.no_brute_force:
        started = time.perf_counter()
        brute = brute_force(args.nodes)
        elapsed = time.perf_counter() - started
        front = {local.pareto.grid_index(i) for i in range(len(local.pareto))}  # type: ignore[attr-defined]
        cost = float(local.best.result.cost)  # type: ignore[attr-defined]
        print(f"brute force over the seed equations: {elapsed:.1f} s")
        print(
            f"  best cost: plan {cost:.6f} USD (row {local.best_row}), "  # type: ignore[attr-defined]
            f"brute force {brute['best'][0]:.6f} USD (row {brute['best'][2]}); "
            f"relative difference {abs(cost - brute['best'][0]) / brute['best'][0]:.2g}"
        )
        print(
            f"  Pareto front: plan {len(front)} layouts, brute force {len(brute['front'])}; "
            f"identical: {front == brute['front']}"
        )
    print(f"peak RSS of this process: {peak_rss_bytes() / 2**20:,.0f} MiB")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
