"""The first prediction interval under assumptions never seen before, in a fresh process (issue 39).

Run: ``python benchmarks/bench_interval.py [--runs 7]``

Each run starts a new interpreter that imports mlsysim, builds the four-node GPT-2 scenario
under realistic assumptions with a straggler CV no stored band holds (a new value every run,
so nothing can have been kept from a run before) and asks ``result.interval("efficiency")``.
Printed: the whole process's wall time, the time from the import of mlsysim to the interval,
and the interval call alone; the target is 2 s for the process. Each run also checks that no
module of ``mlsysim.validation`` was imported (the interval comes from the stored bands).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import ROOT, byte_code_cache_env, report  # noqa: E402

SCRIPT = """
import json, sys, time
start = time.perf_counter()
from mlsysim import Assumptions, Scenarios
new = Assumptions.realistic().variant(straggler_cv={cv!r})
result = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(assumptions=new).result
asked = time.perf_counter()
result.interval("efficiency")
done = time.perf_counter()
print(json.dumps({{"after_import": done - start, "interval": done - asked,
                  "validation": sorted(m for m in sys.modules if m.startswith("mlsysim.validation"))}}))
"""

TARGET_S = 2.0
"""Issue 39: the first interval under new assumptions within 2 s of a fresh process."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = byte_code_cache_env() or dict(os.environ)
    whole, after_import, interval = [], [], []
    for run in range(args.runs + 1):  # the first warms the file and byte-code caches
        script = SCRIPT.format(cv=0.0123 + 0.0007 * run)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT, env=env
        )
        elapsed = time.perf_counter() - start
        figures = json.loads(done.stdout)
        if figures["validation"]:
            raise SystemExit(f"the interval imported {figures['validation']}")
        if run:
            whole.append(elapsed)
            after_import.append(figures["after_import"])
            interval.append(figures["interval"])
    report("fresh process, import to exit", whole, "s", TARGET_S)
    report("import mlsysim .. interval", after_import, "s")
    report("result.interval('efficiency') alone", interval, "ms")
    print("mlsysim.validation imported: never")


if __name__ == "__main__":
    main()
