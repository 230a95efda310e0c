"""Instructions per solve and per ``variant(...).result``, counted by valgrind: a figure the load
of a shared machine does not move.

    git worktree add --detach /tmp/before <commit>
    python benchmarks/bench_instructions.py /tmp/before .

For each checkout and each case, runs the probe under ``valgrind --tool=callgrind`` twice,
with 0 and with 4,000 calls after a warm-up of 50, and prints the difference per call (the
imports and the warm-up cancel out). Cases: ``solve`` and ``variant`` (seed assumptions,
as ``bench_compare.py``), ``rsolve`` and ``rvariant`` (realistic). About 30 s per run
(valgrind runs Python ~50 times slower); needs valgrind on the PATH.
Instructions are not time (a cache miss costs more than an addition), so read them
beside ``bench_compare.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_compare import SETUP  # noqa: E402

PROBE = SETUP + r"""
realistic = Assumptions.realistic()
one_realistic = one.variant(assumptions=realistic)
f = {
    "solve": lambda: m.solve(*args),
    "variant": lambda: one.variant(nodes=4, inter_bandwidth=Q_(10, "Gbps")).result,
    "rsolve": lambda: m.solve(*args, assumptions=realistic),
    "rvariant": lambda: one_realistic.variant(nodes=4, inter_bandwidth=Q_(10, "Gbps")).result,
}[sys.argv[2]]
for _ in range(50 + int(sys.argv[3])):
    f()
"""
CASES = ("solve", "variant", "rsolve", "rvariant")
CALLS = 4000


def instructions(tree: str, case: str, calls: int) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            PROBE,
            tree,
            case,
            str(calls),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main(trees: list[str]) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    for case in CASES:
        for tree in trees:
            per_call = (instructions(tree, case, CALLS) - instructions(tree, case, 0)) / CALLS
            print(f"{tree} {case} {per_call:,.0f} instructions per call", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
