"""Speed of ``mlsysim ui`` (issue 15). Run: ``python benchmarks/bench_ui.py`` (about a minute).

Prints medians (with min and max) of:

* **start to usable page**: from launching ``mlsysim ui --no-browser --port 0`` as a
  new process to the moment the page and everything it loads on opening has
  been answered over HTTP (the page, its script, style and Plotly.js, then the
  registry, evaluate, sweep, explain and plan requests the page makes); and,
  when Debian's chromium and chromedriver are installed, to the moment a
  headless Chromium (started beforehand, so its own start is not counted) shows
  the figures and the three charts (``<body data-ready="true">``);
* **server time of one update**: what the server spends on one change of an
  input: the ``evaluate`` handler alone, and all four requests a change makes
  (evaluate, sweep, explain, plan), called in-process on fresh inputs; plus one
  ``evaluate`` round trip over HTTP to a running server.

Medians, not means: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlsysim.ui import api  # noqa: E402

STATE = "scenario=Gpt2DataParallelOneNode&nodes=4&inter_bandwidth=10%20Gbps"
PAGE_LOAD = (
    "/?" + STATE,
    "/static/app.css",
    "/static/app.js",
    "/static/plotly.min.js",
    "/api/registry",
    "/api/evaluate?" + STATE,
    "/api/sweep?" + STATE,
    "/api/explain?" + STATE,
    "/api/plan?" + STATE,
)


def report(label: str, seconds: list[float], unit: str) -> None:
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    med = statistics.median(seconds) * scale
    print(
        f"{label:<58} median {med:9.3f} {unit}   "
        f"(min {min(seconds) * scale:.3f}, max {max(seconds) * scale:.3f}, n={len(seconds)})"
    )


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlsysim", "ui", "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("mlsysim ui: serving "):
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split()[3].split("?")[0].rstrip("/")


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return bytes(answer.read())


def http_start_times(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        proc, root = start_server()
        for path in PAGE_LOAD:
            fetch(root + path)
        out.append(time.perf_counter() - start)
        proc.terminate()
        proc.wait(timeout=10)
    return out


def browser() -> object | None:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        return None
    from tests.ui.chromium import headless_chromium

    return headless_chromium(chromium, driver, profile_prefix="mlsysim-bench-")


def browser_start_times(runs: int) -> list[float]:
    driver = browser()
    if driver is None:
        print("(no chromium/chromedriver: browser figure skipped)")
        return []
    out = []
    try:
        for _ in range(runs):
            driver.get("about:blank")  # type: ignore[attr-defined]
            start = time.perf_counter()
            proc, root = start_server()
            driver.get(f"{root}/?{STATE}")  # type: ignore[attr-defined]
            while not driver.execute_script(  # type: ignore[attr-defined]
                "return document.body.dataset.ready === 'true' && document.body.dataset.busy === 'false'"
                " && ['scaling','breakdown','plan'].every(n => document.querySelector(`[data-plot=${n}] .main-svg`))"
            ):
                time.sleep(0.01)
            out.append(time.perf_counter() - start)
            proc.terminate()
            proc.wait(timeout=10)
    finally:
        driver.quit()  # type: ignore[attr-defined]
    return out


def update_times(runs: int) -> tuple[list[float], list[float]]:
    one, four = [], []
    for i in range(runs):
        request = api.params_of(
            {
                "scenario": "Gpt2DataParallelOneNode",
                "nodes": str(2 + i % 60),
                "inter_bandwidth": "10 Gbps",
            }
        )
        start = time.perf_counter()
        api.evaluate(request)
        one.append(time.perf_counter() - start)
        start = time.perf_counter()
        api.evaluate(request)
        api.sweep_payload(request)
        api.explain_payload(request)
        api.plan_payload(request)
        four.append(time.perf_counter() - start)
    return one, four


def http_update_times(runs: int) -> list[float]:
    proc, root = start_server()
    out = []
    try:
        fetch(f"{root}/api/evaluate?{STATE}")
        for i in range(runs):
            url = f"{root}/api/evaluate?scenario=Gpt2DataParallelOneNode&nodes={2 + i % 60}&inter_bandwidth=10%20Gbps"
            start = time.perf_counter()
            fetch(url)
            out.append(time.perf_counter() - start)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="server starts per figure")
    parser.add_argument("--updates", type=int, default=200, help="updates per figure")
    args = parser.parse_args()
    api.registry_payload()  # warm imports, as a running server is
    api.plan_payload(api.params_of({"scenario": "Gpt2DataParallelOneNode"}))
    report("start to usable page, over HTTP (all it loads)", http_start_times(args.runs), "s")
    shown = browser_start_times(args.runs)
    if shown:
        report("start to usable page, headless Chromium (figures+charts)", shown, "s")
    one, four = update_times(args.updates)
    report("one update: evaluate handler, in-process", one, "ms")
    report("one update: evaluate+sweep+explain+plan, in-process", four, "ms")
    report("one update: evaluate over HTTP (round trip)", http_update_times(args.updates), "ms")


if __name__ == "__main__":
    main()
