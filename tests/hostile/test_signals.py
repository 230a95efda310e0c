"""Signals on a real ``mlsysim sweep ... --csv`` process: a clear exit, no temporary file left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIG_SWEEP = [
    sys.executable, "-m", "mlsysim", "sweep", "Gpt2DataParallelOneNode",
    "--set", "inter_bandwidth=100 Gbps", "--axis", "nodes=1..400",
    "--axis", "accumulation_steps=1..1000", "--rows", "0",
]  # fmt: skip
"""400,000 rows: the CSV takes about a second to write, long enough to be interrupted."""


def _interrupt_while_writing(tmp_path: Path, signum: int) -> tuple[int, str]:
    target = tmp_path / "big.csv"
    target.write_text("previous contents\n")
    process = subprocess.Popen(
        [*BIG_SWEEP, "--csv", str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".big.csv.*.tmp")):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the temporary file never appeared: {process.stderr.read()}")
            time.sleep(0.02)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert list(tmp_path.iterdir()) == [target], (
        f"a temporary file was left behind (status {process.returncode}, stderr {err!r})"
    )
    assert target.read_text() == "previous contents\n"
    return process.returncode, err


@pytest.mark.parametrize(
    "signum, code, word",
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)"),
     (signal.SIGHUP, 129, "terminated (SIGHUP)")],
)  # fmt: skip
def test_signal_during_the_csv_write(tmp_path, signum, code, word):
    returncode, err = _interrupt_while_writing(tmp_path, signum)
    assert returncode == code, err
    assert err.strip().splitlines()[-1] == f"mlsysim: {word}"
