"""Repeat ``mlsysim validate ddp`` and summarise predicted vs measured update time.

Usage: python benchmarks/validate_ddp.py [--repeats 5] [--nproc 2] [--model mlp|gpt ...]

Each repetition is one full validation (AllReduce sweep, one-device step time,
real DDP run). Two predictions are compared with the measured DDP update:

* ``model``: the prediction of ``mlsysim validate ddp`` (the fitted link, overlap
  as :func:`mlsysim.calibrate.ddp.default_overlap` decides, the wait for the
  slower rank at the measured step-time variation);
* ``+ DDP work``: the same with DDP's own general work switched on
  (``Assumptions(bucket_copies=True, first_bucket_size=1 MiB)``): gradients
  copied into the flat buckets and back, 4 G bytes at this machine's memory
  copy bandwidth (measured here with a 256 MiB tensor copy, read + write), and
  the first bucket capped at 1 MiB (torch.distributed's
  ``_DEFAULT_FIRST_BUCKET_BYTES``), one more AllReduce startup.

Prints one Markdown row per repetition and the median relative errors, the
figures quoted in docs/calibration.md and docs/model.md. The machine is shared:
the load average is printed per run, and single runs are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from mlsysim.calibrate.ddp import validate_ddp
from mlsysim.calibrate.networks import DEFAULT_BATCH, ModelSpec
from mlsysim.calibrate.torch_measure import Launch

FIRST_BUCKET_MIB = 1.0
"""torch.distributed's ``_DEFAULT_FIRST_BUCKET_BYTES`` (1 MiB): DDP's first bucket is capped."""


def copy_bandwidth(mib: int = 256, repeats: int = 5) -> float:
    """Memory bandwidth of a tensor copy on this machine, bytes/s (read + write, median)."""
    import torch

    n = mib * 2**20 // 4
    source, target = torch.ones(n), torch.empty(n)
    target.copy_(source)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        target.copy_(source)
        times.append(time.perf_counter() - start)
    return 2 * n * 4 / statistics.median(times)


def with_ddp_work(v: Any, memory_bandwidth: float) -> Any:
    """The prediction of ``v`` with DDP's bucket copies and 1 MiB first bucket."""
    from mlsysim import Q_
    from mlsysim.calibrate.ddp import predict, robust_cv

    return predict(
        v.fit, v.parameters, v.step_time, batch=v.batch, overlap=v.overlap,
        straggler_cv=robust_cv(v.local_step_times), memory_bandwidth=Q_(memory_bandwidth, "B/s"),
        bucket_copies=True, first_bucket_size=Q_(FIRST_BUCKET_MIB, "MiB"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    spec = ModelSpec.sized(args.model)
    batch = args.batch or DEFAULT_BATCH[spec.name]
    print(f"{spec.describe()}, batch {batch}, {args.nproc} gloo processes, {os.cpu_count()} cores")
    print(
        "| run | load | T1 (ms) | AllReduce busbw (GB/s) | copy bw (GB/s) | model (ms) "
        "| + DDP work (ms) | measured (ms) | error model | error + DDP work |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    errors, ddp_errors = [], []
    for i in range(args.repeats):
        load = os.getloadavg()[0]
        v = validate_ddp(spec, Launch(nproc=args.nproc), batch=batch, steps=args.steps)
        memory = copy_bandwidth()
        ddp = with_ddp_work(v, memory)
        measured = v.measured_update_time.to("ms").magnitude
        predicted_ddp = ddp.update_time.to("ms").magnitude
        ddp_error = predicted_ddp / measured - 1.0
        errors.append(v.relative_error)
        ddp_errors.append(ddp_error)
        print(
            f"| {i + 1} | {load:.2f} | {v.step_time.to('ms').magnitude:.2f} "
            f"| {v.fit.bus_bandwidth.to('GB/s').magnitude:.3f} | {memory / 1e9:.2f} "
            f"| {v.predicted_update_time.to('ms').magnitude:.2f} | {predicted_ddp:.2f} "
            f"| {measured:.2f} | {v.relative_error:+.1%} | {ddp_error:+.1%} |",
            flush=True,
        )
    for label, values in (("model", errors), ("+ DDP work", ddp_errors)):
        print(
            f"{label}: median relative error {statistics.median(values):+.1%}, "
            f"range {min(values):+.1%} .. {max(values):+.1%}"
        )


if __name__ == "__main__":
    main()
