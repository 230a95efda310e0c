"""Speed figures of mlsysim (issue 6). Run: ``python benchmarks/bench.py`` (under a minute).

Prints, for each figure, the median, min and max over repeated runs:

* ``import mlsysim`` and ``mlsysim --help`` / ``mlsysim list`` as whole processes;
* ``DataParallelScaleOutModel().solve(...)`` on fresh inputs (new Quantities each
  call, so no cache can answer);
* ``scenario.variant(nodes=..., inter_bandwidth=...).result`` (validation included);
* the same two with ``Assumptions.realistic()``;
* the sweep throughput, when ``benchmarks/bench_sweep.py`` exists (``--sweep``).

Medians, not means: this machine is shared and noisy. Targets (issue 6):
import <= 0.5 s, CLI <= 0.6 s, solve <= 30 us, variant+result <= 60 us; (issue 20)
``--version`` and ``--help`` <= 0.15 s, ``list`` <= 0.25 s, the first ``run`` <= 0.4 s;
(issue 30) the first ``run`` within 10 times ``python -c pass``.

The commands run as a user's do after their first start: with Python's byte-code
cache (``pip install`` compiles it; a checkout writes it at the first import). Where
the environment turns the cache off (``PYTHONDONTWRITEBYTECODE``, as some sandboxes
do), the commands get a cache folder of their own under the temporary directory
(``PYTHONPYCACHEPREFIX``), filled by a first, untimed run. ``--compile-each-start``
keeps the environment as it is: every start then compiles mlsysim's sources again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


ENV: dict[str, str] | None = None
"""The environment of the timed commands (None: this process's own)."""


def byte_code_cache_env() -> dict[str, str] | None:
    """This environment, with a byte-code cache where it turns Python's off (see the top)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault(
        "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "mlsysim-bench-pycache")
    )
    return env


def process_times(argv: list[str], runs: int) -> list[float]:
    # warm the file cache (and the byte-code cache, where there is one)
    subprocess.run(argv, capture_output=True, check=True, cwd=ROOT, env=ENV)
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, cwd=ROOT, env=ENV)
        out.append(time.perf_counter() - start)
    return out


def report(label: str, seconds: list[float], unit: str, target: float | None = None) -> None:
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    med = statistics.median(seconds)
    verdict = (
        ""
        if target is None
        else ("  ok" if med <= target else f"  ABOVE target {target * scale:g} {unit}")
    )
    print(
        f"{label:<48} median {med * scale:9.3f} {unit}   min {min(seconds) * scale:9.3f}   "
        f"max {max(seconds) * scale:9.3f}   (n={len(seconds)}){verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=15, help="process runs per whole-process figure"
    )
    parser.add_argument("--sweep", action="store_true", help="also run benchmarks/bench_sweep.py")
    parser.add_argument(
        "--compile-each-start",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE where it is set (every start compiles the sources)",
    )
    parser.add_argument(
        "--start-only", action="store_true", help="only the whole-process figures (no solver loops)"
    )
    args = parser.parse_args()
    global ENV
    ENV = None if args.compile_each_start else byte_code_cache_env()
    print(
        "byte-code cache: "
        + (
            "off (PYTHONDONTWRITEBYTECODE)"
            if os.environ.get("PYTHONDONTWRITEBYTECODE") and ENV is None
            else f"on ({(ENV or os.environ).get('PYTHONPYCACHEPREFIX') or '__pycache__'})"
        )
    )

    python = sys.executable
    cli = shutil.which("mlsysim", path=str(Path(python).parent)) or "mlsysim"
    report(
        "python -c 'import mlsysim'",
        process_times([python, "-c", "import mlsysim"], args.runs),
        "s",
        0.5,
    )
    report("mlsysim --version", process_times([cli, "--version"], args.runs), "s", 0.15)
    report("mlsysim --help", process_times([cli, "--help"], args.runs), "s", 0.15)
    report("mlsysim list", process_times([cli, "list"], args.runs), "s", 0.25)
    first_run = process_times([cli, "run", "Gpt2DataParallelOneNode"], args.runs)
    report("mlsysim run Gpt2DataParallelOneNode", first_run, "s", 0.4)
    first_use = "import mlsysim; mlsysim.Scenarios.Gpt2DataParallelOneNode.result"
    report(
        "python -c '<import, then first result>'",
        process_times([python, "-c", first_use], args.runs),
        "s",
    )
    floor = process_times([python, "-c", "pass"], args.runs)
    report("python -c 'pass' (interpreter floor)", floor, "s")
    ratio = statistics.median(first_run) / statistics.median(floor)
    print(
        f"{'first run / interpreter floor':<48} {ratio:5.1f} x   (issue 30 goal: 10 x; "
        "side by side with an older checkout: benchmarks/bench_start.py)"
    )
    if args.start_only:
        return

    from mlsysim import Q_, Assumptions, Scenarios
    from mlsysim.solvers import DataParallelScaleOutModel

    case = Scenarios.Gpt2DataParallelOneNode
    model = DataParallelScaleOutModel()
    ms, gbps = Q_(1, "s").units, Q_(1, "Gbps").units
    number = 2000

    def fresh_inputs(count: int) -> list[tuple]:
        """Distinct Quantity objects per call, built before timing: no cache can answer."""
        return [
            (
                Q_(1.8 + i * 1e-9, ms),
                1 + i % 64,
                Q_(100.0 + i, gbps),
                Q_(450.0 + i * 1e-6, "GB/s"),
                Q_(25.0 + i * 1e-9, "hour"),
            )
            for i in range(count)
        ]

    def time_solve(assumptions: Assumptions | None) -> list[float]:
        out = []
        for _ in range(15):
            batch = fresh_inputs(number)
            start = time.perf_counter()
            for step, nodes, inter, intra, total in batch:
                model.solve(
                    case.workload,
                    "fp16",
                    step,
                    total,
                    16,
                    8,
                    nodes,
                    intra,
                    inter,
                    1,
                    case.node_hour_rate,
                    assumptions=assumptions,
                )
            out.append((time.perf_counter() - start) / number)
        return out

    def time_variant(base) -> list[float]:  # noqa: ANN001
        out = []
        for _ in range(15):
            batch = fresh_inputs(number)
            start = time.perf_counter()
            for _step, nodes, inter, _intra, _total in batch:
                base.variant(nodes=nodes, inter_bandwidth=inter).result  # noqa: B018
            out.append((time.perf_counter() - start) / number)
        return out

    realistic = Assumptions.realistic()
    report("solve(...) fresh inputs, seed", time_solve(None), "us", 30e-6)
    report("variant(nodes, inter_bandwidth).result, seed", time_variant(case), "us", 60e-6)
    report("solve(...) fresh inputs, realistic", time_solve(realistic), "us")
    report(
        "variant(...).result, realistic", time_variant(case.variant(assumptions=realistic)), "us"
    )
    start = time.perf_counter()
    q = Q_(1.0, "ms")
    n = 200_000
    for _ in range(n):
        q.__class__(1.0, q._units)
    print(
        f"{'floor: one pint Quantity(1.0, units)':<48} {((time.perf_counter() - start) / n) * 1e6:.3f} us"
    )

    sweep_script = ROOT / "benchmarks" / "bench_sweep.py"
    if args.sweep and sweep_script.exists():
        subprocess.run([python, str(sweep_script)], check=True)


if __name__ == "__main__":
    main()
