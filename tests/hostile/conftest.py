"""Shared helpers of the hostile-input suite: per-case time and memory bounds, fuzz counts."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from mlsysim.core.exceptions import MlsysimError

EXAMPLES = int(os.environ.get("MLSYSIM_FUZZ_EXAMPLES", "150"))
"""Examples per fuzzer (raise with MLSYSIM_FUZZ_EXAMPLES=5000 for a longer run)."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

CASE_SECONDS = 10
"""Wall-clock bound of one case (generous: shared, loaded machines)."""
CASE_MEGABYTES = 64
"""Bound on the Python memory one case may allocate at its peak."""

RUNS: dict[str, int] = {}
"""Cases run per fuzzer in this session (printed at the end with -s, for the closing note)."""


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the main thread when the block runs longer than ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def ours_or_valid(name: str, function: Callable[[], Any], check: Callable[[Any], None]) -> Any:
    """Run one case: our error (an MlsysimError), or a result that passes ``check``; bounded.

    Any other exception, a case over :data:`CASE_SECONDS` or over :data:`CASE_MEGABYTES`
    fails the test.
    """
    RUNS[name] = RUNS.get(name, 0) + 1
    tracemalloc.start()
    try:
        with time_limit(CASE_SECONDS):
            try:
                result = function()
            except MlsysimError:
                return None
        check(result)
        return result
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < CASE_MEGABYTES * 2**20, f"{name}: one case allocated {peak / 2**20:.0f} MiB"


@pytest.fixture(scope="session", autouse=True)
def _report_runs() -> Iterator[None]:
    yield
    if RUNS:
        print("\nhostile fuzz cases run:", ", ".join(f"{k} {v}" for k, v in sorted(RUNS.items())))


@pytest.fixture(scope="session")
def gpt2_scenario() -> Any:
    from mlsysim import Scenarios

    return Scenarios.Gpt2DataParallelFourNodes10GbE
