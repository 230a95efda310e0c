"""Measure AllReduce and step times on this machine with torch.distributed.

Processes are started the way ``torchrun`` starts them (torch's elastic
launcher, c10d rendezvous), so each worker sees ``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``; with ``nnodes > 1`` the
same command run on every node, with the same ``rdzv_endpoint``, joins one
job. When this process was itself started by ``torchrun`` (those variables are
set), the work runs here, as one rank of that job.

AllReduce is timed as nccl-tests times it (nccl-tests, src/common.cu): for
each message size, warm-up iterations, then timed iterations; each timed
iteration starts after a barrier (so that rank skew is not counted as
communication) and takes the time of the slowest rank, and the median of
those is the size's time (nccl-tests averages; the median is robust to the
scheduling hiccups of shared CPUs).
"""

from __future__ import annotations

import math
import os
import socket
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

from mlsysim.calibrate.fit import CollectiveFit, fit_collective
from mlsysim.calibrate.networks import (
    ModelSpec,
    build,
    parameter_count,
    require_torch,
    training_step,
)
from mlsysim.core.exceptions import InputError
from mlsysim.core.validation import check_positive_int

if TYPE_CHECKING:
    from multiprocessing.context import SpawnProcess
    from multiprocessing.queues import Queue

    import torch

T = TypeVar("T")

BACKENDS = ("gloo", "nccl")

DEFAULT_WARMUP = 5
DEFAULT_ITERS = 20
"""nccl-tests' defaults: ``-w 5`` warm-up and ``-n 20`` timed iterations (src/common.cu)."""


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def threads_per_process(nproc: int, threads: int | None = None) -> int:
    """Intra-op threads for each of ``nproc`` processes: the cores shared out, at least 1.

    With as many processes as cores (K = 2 on a 2-core machine) each gets one
    thread, so that processes do not fight over cores.
    """
    if threads is not None:
        return _positive("threads", threads)
    return max(1, available_cores() // nproc)


def message_sizes(min_size: float, max_size: float, factor: float = 2.0) -> list[int]:
    """Sizes in bytes from ``min_size`` to ``max_size``, each ``factor`` times the last (nccl-tests ``-b -e -f``).

    Rounded down to whole fp32 elements (4 bytes), at least one element.
    """
    if not (min_size > 0 and max_size >= min_size and factor > 1):
        raise InputError(
            f"sizes: expected 0 < min <= max and factor > 1, got min={min_size:g} B, "
            f"max={max_size:g} B, factor={factor:g}",
            field="sizes",
        )
    sizes: list[int] = []
    size = float(min_size)
    while size <= max_size * (1 + 1e-9):
        elements = max(1, int(size) // 4)
        if not sizes or elements * 4 != sizes[-1]:
            sizes.append(elements * 4)
        size *= factor
    return sizes


@dataclass(frozen=True)
class Launch:
    """How to start the workers: processes per node, nodes, backend, threads per process.

    ``rdzv_endpoint`` (``host:port``) is needed when ``nnodes > 1``; one node
    uses a free local port.
    """

    nproc: int = 2
    nnodes: int = 1
    backend: str = "gloo"
    threads: int | None = None
    rdzv_endpoint: str | None = None

    def __post_init__(self) -> None:
        _positive("nproc", self.nproc)
        _positive("nnodes", self.nnodes)
        if self.nproc * self.nnodes < 2:
            raise InputError(
                f"nproc: a collective needs at least 2 ranks, got {self.nproc} process(es) on "
                f"{self.nnodes} node(s); use --nproc 2 or more",
                field="nproc",
            )
        if self.backend not in BACKENDS:
            raise InputError(
                f"backend: expected one of {', '.join(BACKENDS)}, got {self.backend!r}",
                field="backend",
            )
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise InputError(
                "rdzv_endpoint: several nodes need a rendezvous HOST:PORT that every node can reach",
                field="rdzv_endpoint",
            )
        if self.threads is not None:
            _positive("threads", self.threads)

    @property
    def threads_per_process(self) -> int:
        return threads_per_process(self.nproc, self.threads)


def under_torchrun() -> bool:
    """True when torchrun (or another torch launcher) started this process as one rank of a job."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def check_backend(backend: str) -> None:
    """NCCL needs CUDA GPUs and a torch build with NCCL; gloo is always there."""
    torch = require_torch()
    if backend == "nccl" and not (
        torch.cuda.is_available() and torch.distributed.is_nccl_available()
    ):
        raise InputError(
            "backend: nccl needs CUDA GPUs and a CUDA build of torch; use --backend gloo",
            field="backend",
        )


def launch(worker: Callable[..., T], launch: Launch, *args: object) -> dict[int, T]:
    """Run ``worker(*args)`` on every rank; the results of this node's ranks, by rank.

    Under torchrun the worker runs in this process and the dict has this rank only.
    One node (no ``rdzv_endpoint``) runs :func:`local_launch`: nothing listens
    beyond 127.0.0.1. Several nodes use torch's elastic launcher (c10d
    rendezvous at ``rdzv_endpoint``), whose stores listen on every interface,
    as they must for the other nodes to reach them.
    """
    check_backend(launch.backend)
    if under_torchrun():
        return {int(os.environ["RANK"]): worker(*args)}
    if launch.nnodes == 1 and not launch.rdzv_endpoint:
        return local_launch(worker, launch.nproc, *args)
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=launch.nnodes,
        max_nodes=launch.nnodes,
        nproc_per_node=launch.nproc,
        run_id=f"mlsysim-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint=launch.rdzv_endpoint or f"127.0.0.1:{free_port()}",
        max_restarts=0,
        monitor_interval=0.05,
    )
    results = elastic_launch(config, worker)(*args)
    return {int(rank): value for rank, value in results.items()}


LOOPBACK = "127.0.0.1"


def local_launch(worker: Callable[..., T], nproc: int, *args: object) -> dict[int, T]:
    """``worker(*args)`` on ``nproc`` spawned processes of this machine; results by rank.

    The job's key-value store (torch's ``TCPStore``, which has no
    authentication) is served by this process on a socket bound to 127.0.0.1
    (torch's own store would listen on every interface), and the workers join
    it as clients (``TORCHELASTIC_USE_AGENT_STORE``), with gloo and NCCL's
    sockets on the loopback interface (``GLOO_SOCKET_IFNAME``,
    ``NCCL_SOCKET_IFNAME``). Each worker sees the variables torchrun sets.
    """
    import multiprocessing
    import queue as queues
    from datetime import timedelta

    import torch.distributed as dist

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    processes: list[SpawnProcess] = []
    try:
        listener.bind((LOOPBACK, 0))
        listener.listen(128)
        port = int(listener.getsockname()[1])
        store = dist.TCPStore(
            LOOPBACK,
            port,
            is_master=True,
            master_listen_fd=listener.fileno(),
            wait_for_workers=False,
            timeout=timedelta(seconds=300),
        )
        listener.detach()  # the store owns the socket now
        env = {
            "MASTER_ADDR": LOOPBACK,
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(nproc),
            "LOCAL_WORLD_SIZE": str(nproc),
            "GROUP_RANK": "0",
            "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_RESTART_COUNT": "0",
            "GLOO_SOCKET_IFNAME": _loopback_interface(),
            "NCCL_SOCKET_IFNAME": _loopback_interface(),
        }
        context = multiprocessing.get_context("spawn")
        results: Queue[tuple[int, bool, object]] = context.Queue()
        for rank in range(nproc):
            process = context.Process(
                target=_run_rank, args=(worker, rank, env, results, args), daemon=True
            )
            process.start()
            processes.append(process)
        out: dict[int, T] = {}
        while len(out) < nproc:
            try:
                rank, ok, value = results.get(timeout=0.2)
            except queues.Empty:
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"a worker process exited with status {dead[0]}") from None
                continue
            if not ok:
                raise RuntimeError(f"rank {rank} failed: {value}")
            out[rank] = cast(T, value)  # ok: value is what worker returned
        for process in processes:
            process.join(timeout=30)
        del store
        return out
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        if listener.fileno() != -1:
            listener.close()


def _loopback_interface() -> str:
    """The loopback interface's name (``lo`` on Linux, ``lo0`` on macOS)."""
    names = [name for _, name in socket.if_nameindex()] if hasattr(socket, "if_nameindex") else []
    return next((n for n in names if n.startswith("lo")), "lo")


def _run_rank(
    worker: Callable[..., object],
    rank: int,
    env: dict[str, str],
    results: Queue[tuple[int, bool, object]],
    args: tuple[object, ...],
) -> None:
    """Body of one spawned worker: torchrun's variables, then ``worker(*args)``; the result goes back."""
    os.environ.update(env, RANK=str(rank), LOCAL_RANK=str(rank))
    try:
        results.put((rank, True, worker(*args)))
    except BaseException as exc:  # reported to the parent, which raises it
        results.put((rank, False, f"{type(exc).__name__}: {exc}"))


def free_port() -> int:
    """A TCP port on localhost that is free now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- inside a worker


def init_worker(backend: str, threads: int) -> tuple[ModuleType, torch.device, Callable[[], None]]:
    """Join the process group; returns (dist, device, synchronize)."""
    torch = require_torch()
    import torch.distributed as dist

    torch.set_num_threads(threads)
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
        return dist, device, torch.cuda.synchronize
    dist.init_process_group("gloo")
    return dist, torch.device("cpu"), lambda: None


def time_allreduce(
    dist: ModuleType,
    device: torch.device,
    sync: Callable[[], None],
    sizes: Sequence[int],
    warmup: int,
    iters: int,
) -> list[float]:
    """Median over ``iters`` of the slowest rank's time of one AllReduce, per size (seconds)."""
    torch = require_torch()
    medians = []
    for size in sizes:
        buffer = torch.ones(size // 4, dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(buffer)
        sync()
        dist.barrier()
        samples = torch.zeros(iters, dtype=torch.float64)
        for i in range(iters):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            sync()
            samples[i] = time.perf_counter() - start
        medians.append(statistics.median(slowest(dist, samples, device)))
    return medians


def slowest(dist: ModuleType, samples: torch.Tensor, device: torch.device) -> list[float]:
    """Element-wise maximum of ``samples`` over all ranks."""
    on_device = samples.to(device)
    dist.all_reduce(on_device, op=dist.ReduceOp.MAX)
    return [float(x) for x in on_device.cpu().tolist()]


def time_steps(
    step: Callable[[], None], sync: Callable[[], None], warmup: int, steps: int
) -> list[float]:
    """Seconds of each of ``steps`` calls of ``step``, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return times


class SweepResult(TypedDict):
    """What :func:`allreduce_worker` returns: per-size median seconds, world size, host name."""

    times: list[float]
    world_size: int
    host: str


@dataclass(frozen=True)
class SweepConfig:
    """What :func:`allreduce_worker` measures."""

    sizes: tuple[int, ...]
    warmup: int = DEFAULT_WARMUP
    iters: int = DEFAULT_ITERS
    backend: str = "gloo"
    threads: int = 1


def allreduce_worker(config: SweepConfig) -> SweepResult:
    """One rank of an AllReduce sweep: per-size median times (seconds) and the world size."""
    dist, device, sync = init_worker(config.backend, config.threads)
    try:
        times = time_allreduce(dist, device, sync, config.sizes, config.warmup, config.iters)
        return SweepResult(times=times, world_size=dist.get_world_size(), host=socket.gethostname())
    finally:
        dist.destroy_process_group()


# --------------------------------------------------------------------------- public entry points


def measure_allreduce(
    launch_config: Launch,
    sizes: Sequence[int],
    *,
    warmup: int = DEFAULT_WARMUP,
    iters: int = DEFAULT_ITERS,
) -> CollectiveFit | None:
    """Time AllReduce of each size over ``nproc * nnodes`` ranks and fit the alpha-beta line.

    Returns the fit on the node that holds rank 0, None on the others.
    """
    if len(sizes) < 2:
        raise InputError("sizes: need two or more message sizes to fit a line", field="sizes")
    config = SweepConfig(
        sizes=tuple(int(s) for s in sizes),
        warmup=_nonnegative("warmup", warmup),
        iters=_positive("iters", iters),
        backend=launch_config.backend,
        threads=launch_config.threads_per_process,
    )
    results = launch(allreduce_worker, launch_config, config)
    if 0 not in results:
        return None
    first = results[0]
    return fit_collective(
        config.sizes,
        first["times"],
        collective="all_reduce",
        ranks=first["world_size"],
        source=(
            f"torch.distributed {config.backend} on {first['host']}: {first['world_size']} "
            f"processes, {config.threads} thread(s) each, median of {config.iters} after "
            f"{config.warmup} warm-up"
        ),
    )


@dataclass(frozen=True)
class StepTiming:
    """Median seconds of one training step, with the steps it was taken over."""

    median: float
    times: tuple[float, ...]
    parameters: int
    threads: int

    @property
    def spread(self) -> float:
        """(max - min) / median of the timed steps."""
        return (max(self.times) - min(self.times)) / self.median if self.median > 0 else math.nan


def measure_step(
    spec: ModelSpec,
    batch: int,
    *,
    steps: int = 20,
    warmup: int = 3,
    threads: int | None = None,
    device: str = "cpu",
) -> StepTiming:
    """Time one training step of a built-in model in this process (one device)."""
    torch = require_torch()
    steps = _positive("steps", steps)
    warmup = _nonnegative("warmup", warmup)
    batch = _positive("batch", batch)
    count = threads_per_process(1, threads)
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        model, data = build(spec, batch, device=device)
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        times = time_steps(training_step(model, data), sync, warmup, steps)
    finally:
        torch.set_num_threads(before)
    return StepTiming(statistics.median(times), tuple(times), parameter_count(model), count)


def _positive(name: str, value: object) -> int:
    try:
        return check_positive_int(value)
    except InputError as exc:
        raise InputError(f"{name}: {exc}", field=name) from None


def _nonnegative(name: str, value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InputError(f"{name}: expected an integer at or above zero, got {value!r}", field=name)
