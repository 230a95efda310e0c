"""Benchmark of reading and fitting large nccl-tests logs: seconds per log size.

Run:

    python benchmarks/bench_nccl.py            # 1 MB, 10 MB, 50 MB logs
    python benchmarks/bench_nccl.py --mb 50 --repeat 3

Each log is one all_reduce_perf run on 8 ranks with as many data rows as fit
in the size (sizes cycling over 8 B .. 8 GiB, times from the alpha-beta line
with 5% multiplicative noise): the hostile case of the reliability audit
(a 4,000-row log took 220 s with the former all-vertices fit, and a 50 MB
one asked for 233 GiB). Prints the median wall time of parsing and of the
whole ``from_nccl_tests`` (parse + fit), and the peak Python memory of one
fit. Not a timed test: it prints figures, it does not fail on them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from mlsysim.calibrate import from_nccl_tests
from mlsysim.calibrate.nccl_tests import parse_nccl_tests

HEADER = "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"


def make_log(megabytes: float, seed: int = 0) -> str:
    """An all_reduce_perf log of about ``megabytes`` MB."""
    rng = np.random.default_rng(seed)
    lines = ["$ ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8\n", HEADER]
    lines += [f"#  Rank  {r} Group  0 Pid 1 on host device  {r} [0x00] NVIDIA H100\n" for r in range(8)]
    lines.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
    row_bytes = 120
    rows = int(megabytes * 1e6 / row_bytes)
    sizes = 8 * 2 ** (np.arange(rows) % 31)
    times = (20e-6 + sizes * 1.75 / 400e9) * rng.lognormal(0.0, 0.05, rows) * 1e6
    for size, t in zip(sizes.tolist(), times.tolist(), strict=True):
        algbw = size / t / 1e3
        busbw = algbw * 1.75
        lines.append(
            f"{size:>12} {size // 4:>12}     float     sum      -1 {t:8.2f} {algbw:7.2f} {busbw:7.2f}      0 "
            f"{t:8.2f} {algbw:7.2f} {busbw:7.2f}      0\n"
        )
    lines.append("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 300.0\n")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, nargs="*", default=[1, 10, 50])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for mb in args.mb:
            text = make_log(mb)
            path = Path(folder) / f"log_{mb:g}MB.txt"
            path.write_text(text)
            rows = len(parse_nccl_tests(text)[0].rows)
            parse_times, total_times = [], []
            for _ in range(args.repeat):
                start = time.perf_counter()
                parse_nccl_tests(text)
                parse_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                fit = from_nccl_tests(path)
                total_times.append(time.perf_counter() - start)
            tracemalloc.start()
            from_nccl_tests(path)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(
                f"{len(text) / 1e6:6.1f} MB, {rows:>9,} rows: parse {statistics.median(parse_times):6.2f} s, "
                f"parse + fit {statistics.median(total_times):6.2f} s (median of {args.repeat}), "
                f"peak {peak / 2**20:,.0f} MiB; fitted {fit.bus_bandwidth:.4g~P}, {fit.latency:.4g~P}"
            )


if __name__ == "__main__":
    main()
