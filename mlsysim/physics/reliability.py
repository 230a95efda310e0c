"""Failures, checkpoints and goodput of a whole training run (SI floats or numpy arrays).

A synchronous data-parallel (or sharded) job stops when any one of its devices
or nodes fails. With independent failures at a constant rate (exponential
lifetimes, the Poisson single-component failures of Daly 2006), the job is a
series system: its failure rate is the sum of its parts' rates, and its mean
time between failures (MTBF) falls as one over the number of parts.

The job writes a checkpoint of its training state every ``tau`` seconds of
computation; writing takes ``delta``. After a failure it spends ``R`` restarting
(detection, rescheduling, loading the checkpoint) and then recomputes the work
done since the last checkpoint: on average half a segment, ``(tau + delta) / 2``
(Young 1974). Daly 2006 solves the model exactly for Poisson failures
(failures may also strike during writes and restarts): :func:`wall_time`.

Symbols, as in Daly 2006: ``T_s`` the failure-free solve time (what the step
model predicts), ``tau`` the compute time between checkpoints, ``delta`` the
checkpoint write time, ``R`` the restart time, ``M`` the job's MTBF, ``T_w``
the expected wall-clock time.

Sources:

* J. W. Young, 1974, "A first order approximation to the optimum checkpoint
  interval", Communications of the ACM 17(9): ``tau = sqrt(2 delta M)``.
* J. T. Daly, 2006, "A higher order estimate of the optimum checkpoint interval
  for restart dumps", Future Generation Computer Systems 22(3):303-312: the
  complete model of the expected wall-clock time and its perturbation
  solution for the optimum (equation 37), checked against Daly's three
  published cases (M = 24 h, 6 h, 15 min; delta = 5 min: tau = 117, 57, 9.1 min).

Every function works on floats and on numpy arrays alike (a sweep evaluates
one formula for many layouts); a job that practically never finishes (its
segments or restarts hundreds of times its MTBF) gets an ``inf`` wall-clock
time and a goodput of zero, never an exception, so that a sweep can mark it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mlsysim.physics._array import Num, ceil, is_array, maximum, minimum, sqrt, where
from mlsysim.physics.memory import OPTIMIZER_BYTES, WEIGHT_BYTES, ZERO_STAGES

HOUR = 3600.0
"""Seconds in an hour (failure rates are quoted per device-hour or per node-hour)."""

CHECKPOINT_BYTES_PER_PARAMETER = WEIGHT_BYTES + OPTIMIZER_BYTES
"""Bytes of training state a checkpoint holds per parameter with mixed-precision Adam: the
16-bit weights (2) and the fp32 master weights, momentum and variance (K = 12), 14 in all.
Gradients are not saved: they are recomputed by the next step. (ZeRO's state model,
Rajbhandari et al. 2020, section 3.1; :mod:`mlsysim.physics.memory`.)"""

EQUATIONS = {
    "failure_rate": "lambda = k / (n T_obs)  (k interruptions of n parts over T_obs)",
    "job_mtbf": "M = 1 / (lambda n)  (series system: any one of n parts stops the job)",
    "checkpoint_size": "S = b psi  (b = 14 bytes per parameter: 16-bit weights + fp32 Adam state)",
    "checkpoint_writers": (
        "w = N when ZeRO shards the state, else min(N, ceil(t p / g))  "
        "(the nodes one replica spans: each holds a distinct shard)"
    ),
    "checkpoint_time": "delta = S / min(w B_node, B_storage)  (w nodes write in parallel)",
    "young_interval": "tau = sqrt(2 delta M)  (Young 1974)",
    "daly_interval": (
        "tau = sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta, "
        "or M when delta >= 2M  (Daly 2006, eq. 37)"
    ),
    "wall_time": "T_w = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau  (Daly 2006, complete model)",
    "checkpoint_overhead": "T_ckpt = (T_s / tau) delta",
    "rework": (
        "T_rework = (T_s / tau) [M (e^((tau + delta)/M) - 1) - (tau + delta)]  "
        "(~ N_f (tau + delta) / 2)"
    ),
    "restart_overhead": "T_restart = (T_s / tau) M (e^((tau + delta)/M) - 1)(e^(R/M) - 1)  (~ N_f R)",
    "interruptions": "N_f = T_w / M",
    "goodput": "G = T_s / T_w  (share of wall-clock time that advances training)",
}
"""The equation of each function of this module, in words a reader can check (explain prints them)."""


def failure_rate_from_count(interruptions: Num, parts: Num, duration: Num) -> Num:
    """Failure rate per part per second observed over a run: ``lambda = k / (n T_obs)``.

    ``interruptions`` (k) over ``duration`` seconds (T_obs) of ``parts`` (n)
    devices or nodes running together. Example (Llama 3 405B, Llama Team 2024,
    section 3.3.4): 419 unexpected interruptions in 54 days on 16,384 GPUs give
    419 / (16,384 x 1,296 h) = 1.97e-5 failures per GPU-hour.
    """
    return interruptions / (parts * duration)


def job_mtbf(rate_per_part: Num, parts: Num) -> Num:
    """The job's mean time between failures: ``M = 1 / (lambda n)`` seconds.

    A synchronous job stops when any of its ``parts`` (devices or nodes, each
    failing at ``rate_per_part`` per second, independently, at a constant rate)
    fails: the rates of a series system add (Daly 2006, Poisson single-component
    failures). Doubling the GPUs halves the MTBF.
    """
    return 1.0 / (rate_per_part * parts)


def checkpoint_size(
    parameters: Num, bytes_per_parameter: Num = CHECKPOINT_BYTES_PER_PARAMETER
) -> Num:
    """Bytes of one full checkpoint of the training state: ``S = b psi``.

    ``b`` defaults to :data:`CHECKPOINT_BYTES_PER_PARAMETER` (14: 16-bit weights
    and fp32 master weights, momentum and variance of mixed-precision Adam; the
    state model of ZeRO, Rajbhandari et al. 2020, section 3.1). The size is the
    same whether the state is sharded or replicated: sharding changes who
    writes it (:func:`checkpoint_write_time`), not how much there is.
    """
    return bytes_per_parameter * parameters


def checkpoint_bytes_per_device(parameters: Num, zero_stage: int, n_devices: Num) -> Num:
    """Bytes of the checkpointed state (weights + optimizer state) one device holds.

    By ZeRO stage over ``n_devices`` data-parallel ranks (Rajbhandari et al.
    2020, section 3.1, without the gradients, which a checkpoint does not keep):

        stage 0: (w + K) psi           (replicated: one replica writes it all)
        stage 1, 2: w psi + K psi / n  (the optimizer state sharded)
        stage 3: (w + K) psi / n       (everything sharded)

    with w = 2 bytes of 16-bit weights and K = 12 of fp32 Adam state. Unsharded
    state is written once (by one replica), sharded state by every rank: the
    whole checkpoint is :func:`checkpoint_size` either way.
    """
    psi, n, w, k = parameters, n_devices, WEIGHT_BYTES, OPTIMIZER_BYTES
    if zero_stage == 0:
        return (w + k) * psi
    if zero_stage in (1, 2):
        return w * psi + k * psi / n
    if zero_stage == 3:
        return (w + k) * psi / n
    raise ValueError(f"unknown ZeRO stage {zero_stage!r}; expected one of {ZERO_STAGES}")


def checkpoint_writers(nodes: Num, devices_per_node: Num, model_parallel: Num, sharded: Num) -> Num:
    """Nodes that write a checkpoint in parallel: ``w = N`` sharded, else ``min(N, ceil(t p / g))``.

    Every node that holds a distinct part of the training state writes its
    part. A ZeRO-sharded state (``sharded`` true, stages 1-3) is spread over
    every data-parallel rank, so all ``nodes`` (N) write. A replicated state
    (stage 0) is written by one replica; a replica of ``model_parallel`` =
    t x p devices (tensor x pipeline ranks, each holding 1 / (t p) of the
    state: Shoeybi et al. 2019, Narayanan et al. 2021) spans ``ceil(t p / g)``
    nodes of ``devices_per_node`` (g), and each of those nodes writes its own
    shards (the per-rank files of Megatron-LM's and PyTorch's distributed
    checkpoints). Example: 405B at t = 8, p = 16 on 8-GPU nodes: 16 writers.
    """
    spanned = minimum(nodes, maximum(1.0, ceil(model_parallel / devices_per_node)))
    return where(sharded, nodes, spanned)


def checkpoint_write_time(
    size: Num, bandwidth_per_node: Num, writers: Num, storage_bandwidth: Num = math.inf
) -> Num:
    """Seconds to write one checkpoint: ``delta = S / min(w B_node, B_storage)``.

    ``writers`` (w) nodes write their shares in parallel, each at
    ``bandwidth_per_node`` (B_node), into a store that takes at most
    ``storage_bandwidth`` (B_storage; infinite when each node writes to its
    own disks). A sharded state (ZeRO, or a distributed checkpoint that splits
    replicas' writing) has every node as a writer; a replicated state saved by
    one rank has one writer. The job waits for the write (a blocking
    checkpoint; an asynchronous one hides part of it and is modelled by
    passing the exposed time instead).
    """
    if is_array(size, bandwidth_per_node, writers, storage_bandwidth):
        return size / np.minimum(writers * bandwidth_per_node, storage_bandwidth)
    return size / min(writers * bandwidth_per_node, storage_bandwidth)


def young_interval(delta: Num, mtbf: Num) -> Num:
    """Young's (1974) optimum compute time between checkpoints: ``tau = sqrt(2 delta M)``.

    It minimises the first-order waste ``delta / tau + tau / (2 M)``: the
    checkpoints' share plus the half segment lost per failure.
    """
    return sqrt(2.0 * delta * mtbf)


def daly_interval(delta: Num, mtbf: Num) -> Num:
    """Daly's (2006) higher-order optimum compute time between checkpoints (his equation 37).

    ``tau = sqrt(2 delta M) [1 + sqrt(x) / 3 + x / 9] - delta`` with ``x = delta / (2M)``
    when ``delta < 2M``; otherwise ``tau = M``. Daly's published cases
    (delta = 5 min; M = 24 h, 6 h, 15 min) give 117, 57 and 9.1 minutes;
    Young's first-order value gives 120, 60 and 12.2.
    """
    x = delta / (2.0 * mtbf)
    tau = sqrt(2.0 * delta * mtbf) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - delta
    return where(delta < 2.0 * mtbf, tau, mtbf)


def _exp(x: Num) -> Num:
    """``e^x``; ``inf`` past the float range."""
    if is_array(x):
        with np.errstate(over="ignore"):
            return np.exp(x)
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _expm1(x: Num) -> Num:
    """``e^x - 1``, accurate for small x; ``inf`` past the float range (a job that cannot finish)."""
    if is_array(x):
        with np.errstate(over="ignore"):
            return np.expm1(x)
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def wall_time(solve_time: Num, interval: Num, delta: Num, restart: Num, mtbf: Num) -> Num:
    """Expected wall-clock seconds of the run: ``T_w = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau``.

    Daly 2006, the complete model with Poisson failures (failures may also
    strike during a checkpoint or a restart); :func:`overheads` splits it into
    checkpoints, recomputed work and restarts. Its minimum over ``tau`` is what
    :func:`daly_interval` approximates (Daly's published cases, 117, 57 and 9.1
    minutes, are the minima of this function to the rounding). To first order
    in ``(tau + delta + R) / M`` it is
    ``T_s (1 + delta / tau)(1 + (R + (tau + delta) / 2) / M)``, whose minimum is
    ``tau = sqrt(2 delta (M + R))``: Young's interval when ``R << M``.
    ``inf`` when the exponentials overflow (the job never finishes).
    """
    return mtbf * _exp(restart / mtbf) * _expm1((interval + delta) / mtbf) * solve_time / interval


def overheads(
    solve_time: Num, interval: Num, delta: Num, restart: Num, mtbf: Num
) -> tuple[Num, Num, Num, Num]:
    """(checkpoint time, recomputed work, restart time, expected failures): Daly's (2006) model.

    The run needs ``T_s / tau`` segments, each ``tau`` of computation and a
    checkpoint write ``delta`` (L = tau + delta); failures arrive as a Poisson
    process with mean ``M``, also during writes and restarts; after each
    failure the job restarts (``R`` of failure-free time) and redoes the
    segment. Per segment the expected failures are ``e^(R/M) (e^(L/M) - 1)``
    and the expected time is ``M`` times that (Daly 2006, the complete model).
    Split into what the time is spent on, in seconds:

    * checkpoints written: ``T_ckpt = (T_s / tau) delta``;
    * work (and writes) lost and recomputed:
      ``T_rework = (T_s / tau) [M (e^(L/M) - 1) - L]``, about ``N_f L / 2`` when ``L << M``;
    * restarts: ``T_restart = (T_s / tau) M (e^(L/M) - 1)(e^(R/M) - 1)``, about
      ``N_f R`` when ``R << M`` (a restart cut short by a failure counts its elapsed part);
    * expected failures ``N_f = T_w / M``, with
      ``T_w = T_s + T_ckpt + T_rework + T_restart`` (:func:`wall_time`).

    Every term is at least zero; they are ``inf`` when the job never finishes.
    """
    segments = solve_time / interval
    length = interval + delta
    lost = _expm1(length / mtbf)
    checkpoints = segments * delta
    rework = segments * (mtbf * lost - length)
    restarts = segments * mtbf * lost * _expm1(restart / mtbf)
    failures = (solve_time + checkpoints + rework + restarts) / mtbf
    return checkpoints, rework, restarts, failures


def goodput(solve_time: Num, total_wall_time: Num) -> Num:
    """The share of wall-clock time that advances training: ``G = T_s / T_w`` (0 when T_w is inf).

    The training time and its cost (a price per time) are inflated by ``1 / G``.
    """
    return solve_time / total_wall_time


class RunTerms(NamedTuple):
    """The failure terms of a whole run (seconds; ``failures`` a count; ``goodput`` a fraction)."""

    mtbf: Num
    checkpoint_time: Num
    interval: Num
    checkpoints: Num
    rework: Num
    restarts: Num
    failures: Num
    wall_time: Num
    goodput: Num


def run_terms(
    solve_time: Num,
    rate_per_device: Num,
    devices: Num,
    size: Num,
    bandwidth_per_node: Num,
    writers: Num,
    restart: Num,
    interval: Num = math.nan,
    storage_bandwidth: Num = math.inf,
) -> RunTerms:
    """Every failure term of a run, composed once for the scenario and :class:`~mlsysim.WholeRun`.

    ``M = 1 / (lambda n)`` (:func:`job_mtbf`), ``delta`` (:func:`checkpoint_write_time`),
    ``tau`` = ``interval`` where given (not NaN), else Daly's optimum
    (:func:`daly_interval`); Daly's terms (:func:`overheads`), ``T_w``
    (:func:`wall_time`) and ``G = T_s / T_w`` (:func:`goodput`).
    """
    mtbf = job_mtbf(rate_per_device, devices)
    delta = checkpoint_write_time(size, bandwidth_per_node, writers, storage_bandwidth)
    tau = where(interval == interval, interval, daly_interval(delta, mtbf))
    checkpoints, rework, restarts, failures = overheads(solve_time, tau, delta, restart, mtbf)
    wall = wall_time(solve_time, tau, delta, restart, mtbf)
    return RunTerms(
        mtbf, delta, tau, checkpoints, rework, restarts, failures, wall, goodput(solve_time, wall)
    )
