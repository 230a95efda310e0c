"""Close the loop: predict a DDP run from measurements, then run it and compare.

One job of K processes (started as torchrun starts them) does, in order:

1. an AllReduce sweep over message sizes up to twice the gradient
   (:func:`mlsysim.calibrate.torch_measure.time_allreduce`), fitted to the
   alpha-beta line;
2. S training steps of the model on every rank at once, *without* DDP: the
   one-device step time T1, measured under the same thread count and the same
   sharing of the machine as the DDP run;
3. S training steps of the same model wrapped in
   ``torch.nn.parallel.DistributedDataParallel`` (Li et al. 2020, VLDB): the
   measured update time is the median over steps of the slowest rank's step;
4. S steps of the wrapped model under ``no_sync()`` (DDP's hooks run, no
   gradient is reduced): DDP's own work without communication.

The terms (:meth:`DdpValidation.terms`) say which part misses: DDP's hooks
are ``no_sync - T1``; the bucket copies, the wait for the slower rank and the
exposed communication are ``DDP - no_sync`` (under ``no_sync()`` the reducer
copies nothing into its buckets).

The prediction is :class:`mlsysim.DataParallelScaleOutModel` with the model's
real parameter count in fp32, ``devices_per_node = K``, one node, and the
fitted link (:meth:`CollectiveFit.to_link`) as ``intra_bandwidth`` and
``intra_latency``; the overlap choice is explained at :func:`default_overlap`;
the wait for the slowest rank is the model's straggler term with the
coefficient of variation of the measured one-device steps
(:func:`robust_cv`), a measured input like T1, not a fitted one.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from mlsysim.calibrate.fit import CollectiveFit, fit_collective
from mlsysim.calibrate.networks import ModelSpec, build, parameter_count, training_step
from mlsysim.calibrate.torch_measure import (
    DEFAULT_ITERS,
    DEFAULT_WARMUP,
    Launch,
    init_worker,
    launch,
    message_sizes,
    slowest,
    time_allreduce,
    time_steps,
)
from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity, quantity

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue
    from mlsysim.engine.results import DataParallelScaleOutResult

MIN_SWEEP_SIZE = 1024
"""Smallest AllReduce message of the sweep, bytes (1 KiB)."""


class DdpMeasurements(TypedDict):
    """What rank 0 of :func:`ddp_worker` returns (times in seconds, sizes in bytes)."""

    sizes: list[int]
    sweep: list[float]
    local: list[float]
    updates: list[float]
    no_sync: list[float]
    parameters: int
    world_size: int


@dataclass(frozen=True)
class DdpConfig:
    """What one rank of :func:`ddp_worker` runs."""

    spec: ModelSpec
    batch: int
    steps: int
    warmup: int
    backend: str
    threads: int
    sweep_warmup: int = DEFAULT_WARMUP
    sweep_iters: int = DEFAULT_ITERS


def default_overlap(backend: str, nproc: int, threads: int, cores: int) -> bool:
    """Whether the prediction lets DDP hide bucket AllReduces under the backward pass.

    DDP launches each 25 MiB bucket's AllReduce as soon as its gradients are
    ready (Li et al. 2020, section 3.2.3). On GPUs with NCCL the collective
    runs beside the backward kernels, so it overlaps: True. With gloo on CPUs
    the reduction is done by CPU threads (memory copies, TCP, the sum); when
    the processes' compute threads already take every core (K x threads >=
    cores, as K = 2 processes of 1 thread on 2 cores), there is no idle core
    for it and the communication adds to the step: False. With spare cores
    gloo's threads run beside the backward pass: True.
    """
    return backend == "nccl" or nproc * threads < cores


def ddp_worker(config: DdpConfig) -> DdpMeasurements | None:
    """One rank of the validation job; rank 0 returns the measurements, the others None."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    dist, device, sync = init_worker(config.backend, config.threads)
    try:
        model, batch = build(config.spec, config.batch, device=str(device))
        params = parameter_count(model)
        sizes = message_sizes(MIN_SWEEP_SIZE, max(2 * 4 * params, 4 * MIN_SWEEP_SIZE))
        sweep = time_allreduce(dist, device, sync, sizes, config.sweep_warmup, config.sweep_iters)
        dist.barrier()
        local = time_steps(training_step(model, batch), sync, config.warmup, config.steps)
        everyone: list[list[float]] = [[] for _ in range(dist.get_world_size())]
        dist.all_gather_object(everyone, local)
        dist.barrier()
        ids = [device.index] if device.type == "cuda" else None
        wrapped = DistributedDataParallel(model, device_ids=ids)
        steps = time_steps(training_step(wrapped, batch), sync, config.warmup, config.steps)
        updates = slowest(dist, torch.tensor(steps, dtype=torch.float64), device)
        step = training_step(wrapped, batch)

        def unsynced() -> None:
            with wrapped.no_sync():
                step()

        quiet = time_steps(unsynced, sync, config.warmup, config.steps)
        no_sync = slowest(dist, torch.tensor(quiet, dtype=torch.float64), device)
        if dist.get_rank() != 0:
            return None
        return {
            "sizes": sizes,
            "sweep": sweep,
            "local": [t for times in everyone for t in times],
            "updates": updates,
            "no_sync": no_sync,
            "parameters": params,
            "world_size": dist.get_world_size(),
        }
    finally:
        dist.destroy_process_group()


@dataclass(frozen=True)
class DdpValidation:
    """Predicted against measured DDP update time, with everything the prediction used."""

    spec: ModelSpec
    launch: Launch
    batch: int
    steps: int
    parameters: int
    step_time: Quantity
    local_step_times: tuple[float, ...]
    update_times: tuple[float, ...]
    no_sync_times: tuple[float, ...]
    fit: CollectiveFit
    overlap: bool
    predicted: DataParallelScaleOutResult

    @property
    def ranks(self) -> int:
        return self.fit.ranks

    @property
    def measured_update_time(self) -> Quantity:
        """Median over steps of the slowest rank's DDP step, in ms."""
        return quantity(1e3 * statistics.median(self.update_times), "ms")

    @property
    def predicted_update_time(self) -> Quantity:
        return self.predicted.update_time

    @property
    def relative_error(self) -> float:
        """``(predicted - measured) / measured`` update time."""
        p = self.predicted_update_time.to("ms").magnitude
        m = self.measured_update_time.to("ms").magnitude
        return (p - m) / m

    @property
    def measured_speedup(self) -> float:
        """``K T1 / measured update time`` (the model's definition of speedup)."""
        t1 = self.step_time.to("ms").magnitude
        return self.ranks * t1 / self.measured_update_time.to("ms").magnitude

    def terms(self) -> dict[str, tuple[float, float]]:
        """Each part of the update, (predicted, measured) in ms.

        ``one device step``: T1 (a measured input, equal by construction);
        ``DDP's hooks``: measured as the ``no_sync()`` step minus T1 (the
        model: 0); ``copies, wait and communication``: the model's straggler
        wait plus exposed communication (plus bucket copies when that
        assumption is on), measured as the DDP step minus the ``no_sync()`` step.
        """
        t1 = statistics.median(self.local_step_times) * 1e3
        quiet = statistics.median(self.no_sync_times) * 1e3
        full = statistics.median(self.update_times) * 1e3
        rest = self.predicted.update_time.to("ms").magnitude - t1
        return {
            "one device step": (t1, t1),
            "DDP's hooks": (0.0, quiet - t1),
            "copies, wait and communication": (float(rest), full - quiet),
        }

    def to_dict(self) -> dict[str, Any]:  # JSON data, read by key in the CLI
        def q(value: Quantity) -> dict[str, JSONValue]:
            return {"value": float(value.magnitude), "unit": f"{value.units:D}"}

        fit = self.fit.to_dict()
        fit.pop("points")
        return {
            "predicted_update_time": q(self.predicted_update_time),
            "measured_update_time": q(self.measured_update_time),
            "relative_error": self.relative_error,
            "predicted_speedup": self.predicted.speedup,
            "measured_speedup": self.measured_speedup,
            "predicted_efficiency": self.predicted.efficiency,
            "measured_efficiency": self.measured_speedup / self.ranks,
            "step_time": q(self.step_time),
            "predicted_communication_time": q(self.predicted.communication_time),
            "predicted_exposed_communication_time": q(self.predicted.exposed_communication_time),
            "gradient_bytes": q(self.predicted.gradient_bytes),
            "model": self.spec.describe(),
            "parameters": self.parameters,
            "batch": self.batch,
            "steps": self.steps,
            "nproc": self.ranks,
            "backend": self.launch.backend,
            "threads_per_process": self.launch.threads_per_process,
            "overlap": self.overlap,
            "update_time_spread": _spread(self.update_times),
            "step_time_spread": _spread(self.local_step_times),
            "step_time_cv": robust_cv(self.local_step_times),
            "predicted_synchronization_time": q(self.predicted.synchronization_time),
            "terms_ms": {name: {"predicted": a, "measured": b} for name, (a, b) in self.terms().items()},
            "allreduce_fit": fit,
        }


def validate_ddp(
    spec: ModelSpec,
    launch_config: Launch,
    *,
    batch: int,
    steps: int = 20,
    warmup: int = 3,
    sweep_iters: int = DEFAULT_ITERS,
    sweep_warmup: int = DEFAULT_WARMUP,
    overlap: bool | None = None,
) -> DdpValidation:
    """Measure, predict and run DDP on ``launch_config.nproc`` local processes (one node)."""
    from mlsysim.calibrate.torch_measure import _nonnegative, _positive, available_cores

    if launch_config.nnodes != 1:
        raise InputError("nnodes: validate ddp runs on one node", field="nnodes")
    if launch_config.nproc < 2:
        raise InputError("nproc: DDP needs at least 2 processes", field="nproc")
    config = DdpConfig(
        spec=spec,
        batch=_positive("batch", batch),
        steps=_positive("steps", steps),
        warmup=_nonnegative("warmup", warmup),
        backend=launch_config.backend,
        threads=launch_config.threads_per_process,
        sweep_warmup=_nonnegative("sweep_warmup", sweep_warmup),
        sweep_iters=_positive("sweep_iters", sweep_iters),
    )
    if overlap is None:
        overlap = default_overlap(
            config.backend, launch_config.nproc, config.threads, available_cores()
        )
    data = launch(ddp_worker, launch_config, config)[0]
    assert data is not None  # rank 0 returns the measurements
    fit = fit_collective(
        data["sizes"],
        data["sweep"],
        collective="all_reduce",
        ranks=data["world_size"],
        source=f"torch.distributed {config.backend}, {data['world_size']} processes",
    )
    step_time = quantity(1e3 * statistics.median(data["local"]), "ms")
    predicted = predict(
        fit, data["parameters"], step_time, batch=config.batch, overlap=overlap,
        straggler_cv=robust_cv(data["local"]),
    )
    return DdpValidation(
        spec=spec,
        launch=launch_config,
        batch=config.batch,
        steps=config.steps,
        parameters=data["parameters"],
        step_time=step_time,
        local_step_times=tuple(data["local"]),
        update_times=tuple(data["updates"]),
        no_sync_times=tuple(data["no_sync"]),
        fit=fit,
        overlap=overlap,
        predicted=predicted,
    )


def predict(
    fit: CollectiveFit,
    parameters: int,
    step_time: Quantity,
    *,
    batch: int,
    overlap: bool,
    straggler_cv: float = 0.0,
    memory_bandwidth: Quantity | None = None,
    **assumptions: object,
) -> DataParallelScaleOutResult:
    """The model's DDP result for ``fit.ranks`` devices on one node, fp32 gradients.

    Assumptions: the seed's (full fitted bandwidth) plus ``overlap`` with DDP's
    default 25 MiB buckets (:data:`mlsysim.engine.inputs.assumptions.DEFAULT_BUCKET_SIZE`)
    and the straggler wait with the measured ``straggler_cv``, and any further
    ``assumptions`` fields (DDP's bucket copies, which also take ``memory_bandwidth``).
    The training time is one step's worth (it does not enter the update time).
    """
    from mlsysim import Assumptions, DataParallelScaleOutModel, Workload

    link = fit.to_link()
    return DataParallelScaleOutModel().solve(
        Workload(name="measured model", parameters=quantity(float(parameters), "param")),
        "fp32",
        step_time,
        step_time,
        batch,
        fit.ranks,
        1,
        link.bandwidth,
        intra_latency=link.latency,
        memory_bandwidth=memory_bandwidth,
        assumptions=Assumptions(overlap=overlap, straggler_cv=straggler_cv, **assumptions),
    )


IQR_PER_SIGMA = 1.349
"""Interquartile range of a normal distribution in standard deviations."""


def robust_cv(times: list[float] | tuple[float, ...]) -> float:
    """Coefficient of variation of step times, robust to a few outliers: (IQR / 1.349) / median.

    For normal step times it equals sigma / mu; a stray slow step (a page
    fault, another process's burst) moves it far less than the standard
    deviation.
    """
    if len(times) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(times, n=4)
    middle = statistics.median(times)
    return (q3 - q1) / IQR_PER_SIGMA / middle if middle > 0 else 0.0


def _spread(times: tuple[float, ...]) -> float:
    """(max - min) / median."""
    middle = statistics.median(times)
    return (max(times) - min(times)) / middle if middle > 0 else math.nan
