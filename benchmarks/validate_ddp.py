"""Repeat ``mlsysim validate ddp`` and summarise predicted vs measured update time.

Usage: python benchmarks/validate_ddp.py [--repeats 5] [--nproc 2] [--model mlp|gpt ...]

Each repetition is one full validation (AllReduce sweep, one-device step time,
real DDP run). Prints one Markdown row per repetition and the median relative
error, the figures quoted in docs/calibration.md.
"""

from __future__ import annotations

import argparse
import os
import statistics

from mlsysim.calibrate.ddp import validate_ddp
from mlsysim.calibrate.networks import DEFAULT_BATCH, ModelSpec
from mlsysim.calibrate.torch_measure import Launch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
        "| run | load | T1 (ms) | AllReduce busbw (GB/s) | predicted (ms) | measured (ms) | error |"
    )
    print("|---|---|---|---|---|---|---|")
    errors = []
    for i in range(args.repeats):
        load = os.getloadavg()[0]
        v = validate_ddp(spec, Launch(nproc=args.nproc), batch=batch, steps=args.steps)
        errors.append(v.relative_error)
        print(
            f"| {i + 1} | {load:.2f} | {v.step_time.to('ms').magnitude:.2f} "
            f"| {v.fit.bus_bandwidth.to('GB/s').magnitude:.3f} "
            f"| {v.predicted_update_time.to('ms').magnitude:.2f} "
            f"| {v.measured_update_time.to('ms').magnitude:.2f} | {v.relative_error:+.1%} |",
            flush=True,
        )
    print(
        f"\nmedian relative error {statistics.median(errors):+.1%}, "
        f"range {min(errors):+.1%} .. {max(errors):+.1%}"
    )


if __name__ == "__main__":
    main()
