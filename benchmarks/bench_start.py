"""Start-up of the command line, two checkouts side by side (issue 30 item 12).

Run: ``python benchmarks/bench_start.py --before /tmp/before [--before-path DIR]``
(``--before``: a checkout of the older commit, put first on ``PYTHONPATH`` of its
commands; ``--before-path``: more folders for it, e.g. a ``pip install --target`` of a
dependency the older commit needs and this environment no longer has).

Each round runs every command once for each checkout and ``python -c pass`` (the
interpreter's floor), in turn, so a change of the machine's load falls on all of them
alike; prints the median, min and max of each, and the ratio of its median to the
floor's. The commands run as a user's do after their first start, with Python's
byte-code cache (as ``benchmarks/bench.py``: a cache folder of their own where the
environment turns the cache off), through the installed ``mlsysim`` script, their
output piped; ``run`` is also timed on a pseudo-terminal (``run (terminal)``), where
the table is printed by rich.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import ROOT, byte_code_cache_env  # noqa: E402

COMMANDS: dict[str, list[str]] = {
    "mlsysim --version": ["--version"],
    "mlsysim --help": ["--help"],
    "mlsysim list": ["list"],
    "mlsysim run Gpt2DataParallelOneNode": ["run", "Gpt2DataParallelOneNode"],
}
TERMINAL = "mlsysim run Gpt2DataParallelOneNode (terminal)"


def _on_terminal(argv: list[str], env: dict[str, str]) -> None:
    """Run ``argv`` with its output on a pseudo-terminal, read to the end."""
    import pty  # noqa: F401 - POSIX only; os.openpty is the part used

    master, child = os.openpty()
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=child, stderr=child, cwd=ROOT, env=env
    )
    os.close(child)
    while True:
        try:
            if not os.read(master, 1 << 16):
                break
        except OSError:  # the child closed the terminal
            break
    os.close(master)
    if process.wait() != 0:
        raise RuntimeError(f"{argv} failed on a terminal")


def _timed(argv: list[str], env: dict[str, str], terminal: bool = False) -> float:
    start = time.perf_counter()
    if terminal:
        _on_terminal(argv, env)
    else:
        subprocess.run(argv, capture_output=True, check=True, cwd=ROOT, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="rounds (each command once per round)")
    parser.add_argument("--before", type=Path, help="a checkout of the older commit")
    parser.add_argument(
        "--before-path", action="append", default=[], help="more PYTHONPATH folders for --before"
    )
    args = parser.parse_args()

    base = dict(byte_code_cache_env() or os.environ)
    base.pop("PYTHONPATH", None)
    python = sys.executable
    script = shutil.which("mlsysim", path=str(Path(python).parent)) or "mlsysim"
    checkouts: dict[str, dict[str, str]] = {"now": base}
    if args.before is not None:
        paths = [str(args.before.resolve()), *args.before_path]
        checkouts = {"before": {**base, "PYTHONPATH": os.pathsep.join(paths)}, **checkouts}

    cases: list[tuple[str, str, list[str], dict[str, str], bool]] = [
        ("floor", "python -c pass", [python, "-c", "pass"], base, False)
    ]
    for checkout, env in checkouts.items():
        for label, words in COMMANDS.items():
            cases.append((checkout, label, [script, *words], env, False))
        cases.append((checkout, TERMINAL, [script, *COMMANDS["mlsysim run Gpt2DataParallelOneNode"]], env, True))

    for _, _, argv, env, terminal in cases:  # untimed: fills the byte-code cache
        _timed(argv, env, terminal)
    times: dict[tuple[str, str], list[float]] = {(c, label): [] for c, label, *_ in cases}
    for round_ in range(args.runs):
        order = cases[round_ % len(cases) :] + cases[: round_ % len(cases)]
        for checkout, label, argv, env, terminal in order:
            times[checkout, label].append(_timed(argv, env, terminal))

    floor = statistics.median(times["floor", "python -c pass"])
    print(
        f"byte-code cache on ({base.get('PYTHONPYCACHEPREFIX') or '__pycache__'}); "
        f"{args.runs} rounds; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'':8}{'command':<52}{'median':>9}{'min':>9}{'max':>9}{'x floor':>9}")
    for (checkout, label), values in times.items():
        median = statistics.median(values)
        print(
            f"{checkout:<8}{label:<52}{median:9.3f}{min(values):9.3f}{max(values):9.3f}"
            f"{median / floor:9.1f}"
        )


if __name__ == "__main__":
    main()
