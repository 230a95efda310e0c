"""Running a plan's blocks: in this process, on a pool of local processes, or on a Dask cluster.

Each task reduces a few contiguous blocks of the space to a
:class:`~mlsysim.planning.reduce.Partial`; the caller merges them as they
arrive (in any order: :func:`~mlsysim.planning.reduce.merge` is associative
and commutative). Ctrl-C (``KeyboardInterrupt``) stops the pool or cancels
the cluster's tasks and returns what was merged so far, marked incomplete.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from mlsysim.core.exceptions import InputError, MissingDependencyError, MlsysimError
from mlsysim.planning.reduce import Criteria, Partial, merge, reduce_blocks
from mlsysim.planning.space import Block, Space

if TYPE_CHECKING:
    from distributed import Client, Future

Scheduler: TypeAlias = "str | Client"
"""Where a plan runs on Dask: a scheduler address (``"tcp://host:8786"``) or a client."""

Progress = Callable[[int, int], None]

TASKS_PER_WORKER = 8
"""Tasks per worker: enough to balance the load and show progress, few enough to keep overhead low."""


@dataclass
class Outcome:
    """The merged reduction, whether every block was reduced, and each process's peak memory."""

    partial: Partial
    complete: bool
    peak_rss: dict[str, int] = field(default_factory=dict)
    """Peak resident memory in bytes per process that reduced blocks (``"main"``, ``"pid 123"``, ...)."""


def peak_rss_bytes() -> int:
    """This process's peak resident set size, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def tasks(blocks: list[Block], workers: int) -> list[list[Block]]:
    """The blocks in consecutive groups, about :data:`TASKS_PER_WORKER` groups per worker."""
    if not blocks:
        return []
    per_task = max(1, math.ceil(len(blocks) / (max(workers, 1) * TASKS_PER_WORKER)))
    return [blocks[i : i + per_task] for i in range(0, len(blocks), per_task)]


def run(
    space: Space,
    criteria: Criteria,
    *,
    chunk_rows: int,
    workers: int = 1,
    scheduler: Scheduler | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """Reduce every block of ``space``: here (``workers=1``), on ``workers`` processes, or on Dask."""
    groups = tasks(space.blocks(chunk_rows), 1 if scheduler is None and workers == 1 else workers)
    if scheduler is not None:
        results = _dask(space, criteria, groups, scheduler)
    elif workers > 1:
        results = _pool(space, criteria, groups, workers)
    else:
        results = ((reduce_blocks(space, criteria, g), "main", peak_rss_bytes()) for g in groups)
    return _gather(Partial(criteria), results, space.size, progress)


def _gather(
    state: Partial,
    results: Iterator[tuple[Partial, str, int]],
    total: int,
    progress: Progress | None,
) -> Outcome:
    peaks: dict[str, int] = {"main": peak_rss_bytes()}
    complete = False
    try:
        for part, where, peak in results:
            state = merge(state, part)
            peaks[where] = max(peaks.get(where, 0), peak)
            if progress is not None:
                progress(state.evaluated, total)
        complete = True
    except KeyboardInterrupt:
        pass
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # stops the workers (the generators below clean up in their finally)
    peaks["main"] = max(peaks["main"], peak_rss_bytes())
    return Outcome(state, complete, peaks)


# -- local processes --------------------------------------------------------------------


class _WorkerState(TypedDict, total=False):
    space: Space
    criteria: Criteria


_WORKER: _WorkerState = {}


def _init_worker(space: Space, criteria: Criteria) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    _WORKER["space"], _WORKER["criteria"] = space, criteria


def _pool_task(blocks: list[Block]) -> tuple[Partial, str, int]:
    part = reduce_blocks(_WORKER["space"], _WORKER["criteria"], blocks)
    return part, f"pid {os.getpid()}", peak_rss_bytes()


def _pool(
    space: Space, criteria: Criteria, groups: list[list[Block]], workers: int
) -> Iterator[tuple[Partial, str, int]]:
    """Tasks on ``workers`` fresh processes (spawned: no inherited threads or locks).

    A worker that cannot start or dies ends the run with an error instead of
    a hang; an interruption terminates every worker before returning.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures import Future as PoolFuture
    from concurrent.futures.process import BrokenProcessPool

    pool: ProcessPoolExecutor | None = None
    pending: set[PoolFuture[tuple[Partial, str, int]]] = set()
    finished = False
    try:  # an interruption while the pool starts must stop it too
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(space, criteria),
        )
        pending = {pool.submit(_pool_task, g) for g in groups}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
        finished = True
    except BrokenProcessPool:
        raise MlsysimError(
            "plan: a worker process failed to start or died; a script that calls "
            "plan(workers=N) must do so under `if __name__ == '__main__':`, or use workers=1"
        ) from None
    finally:
        if pool is not None:
            if not finished:
                for future in pending:
                    future.cancel()
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()  # interrupted: stop the workers now, not after their task
            pool.shutdown(wait=True, cancel_futures=True)


# -- Dask ---------------------------------------------------------------------------------


def _dask_task(space: Space, criteria: Criteria, blocks: list[Block]) -> tuple[Partial, str, int]:
    part = reduce_blocks(space, criteria, blocks)
    return part, f"pid {os.getpid()}", peak_rss_bytes()


def dask_client(scheduler: object) -> tuple[Client, bool]:
    """A ``dask.distributed.Client`` for ``scheduler`` (an address or a client), and whether we opened it."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise MissingDependencyError(
            'a plan on a Dask cluster needs dask.distributed: pip install "mlsysim[dask]"'
        ) from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str):
        raise InputError(
            f"scheduler: expected an address like 'tcp://host:8786' or a dask Client, got {scheduler!r}",
            field="scheduler",
        )
    try:
        return Client(scheduler, timeout="10s", set_as_default=False), True
    except (OSError, TimeoutError) as exc:
        raise InputError(
            f"scheduler {scheduler!r}: cannot reach the Dask scheduler ({exc})", field="scheduler"
        ) from None


def _dask(
    space: Space, criteria: Criteria, groups: list[list[Block]], scheduler: Scheduler
) -> Iterator[tuple[Partial, str, int]]:
    from dask.distributed import as_completed

    client, owned = dask_client(scheduler)
    futures: list[Future] = []
    try:
        [shared] = client.scatter([space], broadcast=True, hash=False)
        futures = client.map(
            _dask_task, [shared] * len(groups), [criteria] * len(groups), groups, pure=False
        )
        for future in as_completed(futures, loop=client.loop):
            yield future.result()
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
        if owned:
            client.close()
