"""The figures README.md quotes about time and tests, measured, with the machine they ran on.

Run: ``python benchmarks/bench_readme.py [--runs 5] [--no-tests] [--write]``

Prints a Markdown block: the machine (CPU model, the logical CPUs this process may use and
the machine's count, memory, load average at the start, OS, Python, date, commit) and

* the first ``mlsysim run Gpt2DataParallelFourNodes10GbE`` of a fresh clone (the package
  copied to a new folder, no byte code yet: what a user's first run after ``pip install -e
  .`` pays), each of ``--runs`` times on a new copy, and the later runs of the same copy;
* ``python -c 'import mlsysim'``;
* the first ``result.interval()`` under assumptions no stored band holds, in a fresh process
  (:mod:`bench_interval`'s script);
* one result of a variant of the seed's one-node scenario in a running process (fresh inputs
  each time, so no cache answers; the median of 15 batches of 2,000), and the rate of a sweep
  of 10 million layouts (:mod:`bench_sweep`'s axes, every result column, the median of 3);
* README's test command without its ``pip install``: ``ruff check .``, ``mypy`` with an empty
  cache (a fresh clone's) and ``python -m pytest`` (the count of tests passed and skipped,
  and the time; ``--no-tests`` leaves the three out).

``--write`` puts the block into README.md between its two ``bench_readme`` markers. No test
depends on these times; ``tests/test_readme_figures.py`` checks only that README's block has
the rows this script writes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_interval import SCRIPT as INTERVAL_SCRIPT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN = "<!-- bench_readme: begin (python benchmarks/bench_readme.py --write) -->"
END = "<!-- bench_readme: end -->"
RUN = ["run", "Gpt2DataParallelFourNodes10GbE"]

FIRST_RUN = "`mlsysim run Gpt2DataParallelFourNodes10GbE`, first run of a fresh clone"
LATER_RUNS = "the same command, later runs"
IMPORT = "`python -c 'import mlsysim'`"
INTERVAL = "first `result.interval()` under assumptions never seen, fresh process"
RUFF = "`ruff check .`"
MYPY = "`mypy`, empty cache"
SOLVE = "`scenario.variant(nodes=..., inter_bandwidth=...).result`, seed model, in process"
SWEEP = "`mlsysim.sweep`, 10 million layouts, every result column"
PYTEST = "`python -m pytest`"
ROWS = (FIRST_RUN, LATER_RUNS, IMPORT, INTERVAL, SOLVE, SWEEP, RUFF, MYPY, PYTEST)
"""The rows of the block, in order (the test of README's block reads them)."""


@dataclass(frozen=True)
class Machine:
    cpu: str
    usable: int
    logical: int
    memory_gib: float
    load: float
    system: str
    python: str
    date: str
    commit: str

    def line(self) -> str:
        return (
            f"{self.cpu}, {self.usable} logical CPUs usable of {self.logical}, "
            f"{self.memory_gib:.0f} GiB, load average {self.load:.2f} at the start; {self.system}; "
            f"Python {self.python}; {self.date}; commit {self.commit}"
        )


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what platform says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def commit() -> str:
    """The checkout's commit (short), ``-dirty`` when it has changes; ``unknown`` outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def machine() -> Machine:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0
    return Machine(
        cpu=cpu_model(),
        usable=usable,
        logical=os.cpu_count() or 0,
        memory_gib=memory_gib(),
        load=os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"),
        system=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        commit=commit(),
    )


def clone_env(folder: Path) -> dict[str, str]:
    """This environment with ``folder`` first on the path and Python's byte code written beside
    the sources, as in a user's checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def fresh_clone(into: Path) -> Path:
    """A copy of the package in ``into`` without byte code (the sources and data of a clone)."""
    shutil.copytree(ROOT / "mlsysim", into / "mlsysim", ignore=shutil.ignore_patterns("__pycache__"))
    return into


def timed(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, done.stdout


def seconds(values: list[float]) -> str:
    """``0.71 s (0.69-0.75, median of 5)``; one value alone."""
    if len(values) == 1:
        return f"{values[0]:.2f} s"
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f}, median of {len(values)})"


def cli_runs(runs: int) -> tuple[list[float], list[float], list[float]]:
    """(first runs of fresh clones, later runs, ``import mlsysim``), each ``runs`` times."""
    cli = shutil.which("mlsysim", path=str(Path(sys.executable).parent))
    command = [cli] if cli else [sys.executable, "-m", "mlsysim"]
    first, later, imports = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="mlsysim-clone-") as tmp:
            folder = fresh_clone(Path(tmp))
            env = clone_env(folder)
            where = subprocess.run(
                [sys.executable, "-c", "import mlsysim; print(mlsysim.__file__)"],
                capture_output=True, text=True, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, check=True, cwd=folder,
            ).stdout.strip()
            if not where.startswith(str(folder)):
                raise SystemExit(f"the clone is not the package imported ({where})")
            first.append(timed([*command, *RUN], env, folder)[0])
            later.append(timed([*command, *RUN], env, folder)[0])
            imports.append(timed([sys.executable, "-c", "import mlsysim"], env, folder)[0])
    return first, later, imports


def interval_runs(runs: int) -> list[float]:
    env = clone_env(ROOT)
    timed([sys.executable, "-c", INTERVAL_SCRIPT.format(cv=0.0111)], env)  # byte code written
    return [timed([sys.executable, "-c", INTERVAL_SCRIPT.format(cv=0.0123 + 0.0007 * i)], env)[0] for i in range(runs)]


SUMMARY = re.compile(r"(\d+) (passed|skipped|failed|errors?|xfailed|xpassed)")


def pytest_figure(env: dict[str, str]) -> str:
    """``2,156 passed, 4 skipped in 4.6 min`` from one run of the suite."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )
    elapsed = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    for line in done.stdout.splitlines():
        if line.startswith(("FAILED", "ERROR")):
            print(line, file=sys.stderr)  # a figure of a failing suite says which
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in SUMMARY.findall(last)}
    parts = [f"{counts[k]:,} {k}" for k in ("passed", "skipped", "failed", "error", "xfailed", "xpassed") if k in counts]
    return f"{', '.join(parts) or last} in {elapsed / 60:.1f} min"


def solve_figure(batches: int = 15, number: int = 2000) -> str:
    """The seed's one-node scenario, varied in nodes and inter-node bandwidth, solved (us)."""
    from mlsysim import Q_, Scenarios

    base = Scenarios.Gpt2DataParallelOneNode
    per_solve = []
    for batch in range(batches):
        inputs = [(1 + i % 64, Q_(100.0 + i + batch * 1e-6, "Gbps")) for i in range(number)]
        start = time.perf_counter()
        for nodes, inter in inputs:
            base.variant(nodes=nodes, inter_bandwidth=inter).result  # noqa: B018
        per_solve.append((time.perf_counter() - start) / number)
    return (
        f"{statistics.median(per_solve) * 1e6:.0f} us ({min(per_solve) * 1e6:.0f}-"
        f"{max(per_solve) * 1e6:.0f}, median of {batches} batches of {number:,})"
    )


def sweep_figure(repeats: int = 3) -> str:
    from bench_sweep import axes, time_sweep

    time_sweep(axes(100_000), 1)  # the first sweep of a process pays for its imports
    times, size = time_sweep(axes(10_000_000), repeats)
    rates = [size / t / 1e6 for t in times]
    return (
        f"{statistics.median(rates):.1f} million layouts/s ({min(rates):.1f}-{max(rates):.1f}, "
        f"median of {repeats})"
    )


def tool_figures(env: dict[str, str]) -> dict[str, str]:
    out = {RUFF: seconds([timed([sys.executable, "-m", "ruff", "check", "."], env)[0]])}
    with tempfile.TemporaryDirectory(prefix="mlsysim-mypy-") as cache:
        out[MYPY] = seconds([timed([sys.executable, "-m", "mypy", "--cache-dir", cache], env)[0]])
    out[PYTEST] = pytest_figure(env)
    return out


def block(found: Machine, figures: dict[str, str]) -> str:
    rows = "\n".join(f"| {name} | {figures.get(name, 'not measured')} |" for name in ROWS)
    return (
        f"{BEGIN}\n"
        f"Measured by `python benchmarks/bench_readme.py` on {found.line()}; one run of the "
        "tests, the other figures the median (and range) of several runs:\n\n"
        "| figure | measured |\n|---|---|\n"
        f"{rows}\n{END}"
    )


def write(text: str, readme: Path = README) -> None:
    """Put ``text`` (a block with its markers) in place of README's block."""
    current = readme.read_text(encoding="utf-8")
    if BEGIN not in current or END not in current:
        raise SystemExit(f"{readme} has no {BEGIN} ... {END} block")
    head, rest = current.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme.write_text(head + text + tail, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each timed command")
    parser.add_argument("--no-tests", action="store_true", help="leave out ruff, mypy and the test suite")
    parser.add_argument("--write", action="store_true", help="write the block into README.md")
    args = parser.parse_args()
    found = machine()
    first, later, imports = cli_runs(args.runs)
    figures = {
        FIRST_RUN: seconds(first),
        LATER_RUNS: seconds(later),
        IMPORT: seconds(imports),
        INTERVAL: seconds(interval_runs(args.runs)),
        SOLVE: solve_figure(),
        SWEEP: sweep_figure(),
    }
    if not args.no_tests:
        figures.update(tool_figures(clone_env(ROOT)))
    text = block(found, figures)
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
