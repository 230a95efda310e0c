"""Compare solve and variant().result between two checkouts, in CPU time (robust on a shared machine).

    git worktree add --detach /tmp/before <commit>
    python benchmarks/bench_compare.py /tmp/before .

Each checkout runs in its own process, alternately, three times; each figure is the
minimum over 7 repeats of 1,000 calls, in microseconds of ``time.process_time``
(CPU time of this process, so other load on the machine inflates it less than wall
time). Prints one line per run: ``<tree> solve <us> variant+result <us>``.
"""

from __future__ import annotations

import subprocess
import sys

SETUP = r"""
import sys
sys.path.insert(0, sys.argv[1])
from mlsysim import Assumptions, Models, Q_, Scenarios
from mlsysim.solvers import DataParallelScaleOutModel
m = DataParallelScaleOutModel()
args = (Models.Language.GPT2, "fp16", Q_(1.8, "s"), Q_(25, "hour"), 16, 8, 4, Q_(450, "GB/s"),
        Q_(10, "Gbps"), 1, Q_(32, "USD/hour"))
one = Scenarios.Gpt2DataParallelOneNode
"""
"""What every probe starts with: the checkout named first on its command line imported, the seed's
four-node solve's arguments ``args`` and the one-node GPT-2 scenario ``one``
(``bench_instructions.py`` too)."""

PROBE = SETUP + r"""
import time, timeit
def best(fn):
    return min(timeit.repeat(fn, number=1000, repeat=7, timer=time.process_time)) / 1000 * 1e6
print(f"{sys.argv[1]} solve {best(lambda: m.solve(*args)):.1f} us "
      f"variant+result {best(lambda: one.variant(nodes=4, inter_bandwidth=Q_(10, 'Gbps')).result):.1f} us")
"""


def main(trees: list[str]) -> None:
    for _ in range(3):
        for tree in trees:
            subprocess.run([sys.executable, "-c", PROBE, tree], check=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
