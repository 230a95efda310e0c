"""The data-parallel model: SPEC section 4, plus the opt-in choices of :class:`Assumptions`.

:func:`evaluate` composes the pure formulas of :mod:`mlsysim.physics` on
plain floats (one scenario) or numpy arrays (a sweep): the scalar solve and
the vectorized sweep run this same code. Units are canonical SI: bytes,
seconds, bytes/second, US dollars per hour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlsysim.physics._array import is_array, where
from mlsysim.physics.collectives import (
    ALGORITHMS,
    bucket_layout,
    inter_node_cost,
    intra_node_cost,
    stage_time,
)
from mlsysim.physics.memory import communication_volume_factor, training_state_bytes
from mlsysim.physics.overlap import exposed_communication
from mlsysim.physics.synchronization import straggler_delay, update_overhead


@dataclass(slots=True)
class Inputs:
    """Numeric inputs in canonical units; each a float or a numpy array (broadcast together).

    ``inter_bandwidth`` is ``inf`` when not given (one node), ``node_hour_rate``
    is ``nan`` when not given, ``device_memory`` is ``nan`` when unknown, and
    ``nics`` is 1 when ``nics_per_node`` is not given (the seed's one link).
    """

    gradient_bytes: Any
    parameters: Any
    devices_per_node: Any
    nodes: Any
    accumulation_steps: Any
    step_time: Any
    training_time: Any
    per_device_batch: Any
    intra_bandwidth: Any
    inter_bandwidth: Any = math.inf
    node_hour_rate: Any = math.nan
    nics: Any = 1.0
    intra_latency: Any = 0.0
    inter_latency: Any = 0.0
    activation_bytes: Any = 0.0
    device_memory: Any = math.nan
    # sources of the derived inputs (mlsysim.engine.job.derive_inputs); NaN when not given
    mfu: Any = math.nan
    training_tokens: Any = math.nan
    training_samples: Any = math.nan
    flops_per_sample: Any = math.nan
    peak_flops: Any = math.nan
    sequence_length: Any = math.nan
    activation_memory_per_sample: Any = math.nan


@dataclass(frozen=True)
class Choices:
    """Modeling choices as plain values (see :class:`mlsysim.Assumptions`); scalars only."""

    algorithm: str = "ring"
    intra_efficiency: float = 1.0
    inter_efficiency: float = 1.0
    overlap: bool = False
    bucket_bytes: float = 25 * 2**20
    backward_fraction: float = 2.0 / 3.0
    update_overhead: float = 0.0
    straggler_cv: float = 0.0
    zero_stage: int = 0


SEED_CHOICES = Choices()

BOTTLENECKS = ("compute", "intra-node link", "inter-node link", "synchronization")


def _inter_costs(x: Inputs, c: Choices, message_bytes: Any) -> tuple[tuple[Any, Any, Any], Any]:
    """The inter-node stage cost and the algorithm used (a string, or an array of codes for ``auto``)."""
    bandwidth = x.inter_bandwidth * c.inter_efficiency
    if c.algorithm != "auto":
        cost = inter_node_cost(
            c.algorithm, x.devices_per_node, x.nodes, bandwidth, x.nics, x.inter_latency
        )
        return cost, c.algorithm
    costs = [
        inter_node_cost(name, x.devices_per_node, x.nodes, bandwidth, x.nics, x.inter_latency)
        for name in ALGORITHMS
    ]
    times = [stage_time(message_bytes, cost) for cost in costs]
    if not is_array(*times, *(v for cost in costs for v in cost)):
        best = min(range(len(ALGORITHMS)), key=lambda i: times[i])
        return costs[best], ALGORITHMS[best]
    best = np.argmin(np.broadcast_arrays(*times), axis=0)
    picked = tuple(
        np.choose(best, np.broadcast_arrays(*(cost[part] for cost in costs))) for part in range(3)
    )
    return picked, best  # codes index ALGORITHMS


def evaluate(x: Inputs, c: Choices = SEED_CHOICES) -> dict[str, Any]:
    """All result figures of one layout (floats) or many (arrays), in canonical units.

    Seed equations (SPEC section 4), with the opt-in terms at their neutral
    values (efficiency 1, latency 0, one NIC, no overlap, no sync cost):

        n = d N;  G_c = G z (z = 1.5 under ZeRO-3, else 1)
        intra_bytes = G_c f(d);  intra_time = L_i + intra_bytes / (e_i B_i)
        inter_bytes = G_c v_o;   inter_time = L_o + inter_bytes / rate_o
        communication_time = intra_time + inter_time
        compute_time = A T1
        update_time = compute_time + exposed_communication + synchronization
        speedup = n compute_time / update_time;  efficiency = speedup / n
        training_time = T_train / speedup;  cost = hours(training_time) N rate
    """
    d, big_n = x.devices_per_node, x.nodes
    n = d * big_n
    g = x.gradient_bytes * communication_volume_factor(c.zero_stage)

    if c.overlap:
        buckets, bucket, last = bucket_layout(g, c.bucket_bytes)
        message = bucket
    else:
        buckets, bucket, last = 1.0, g, g
        message = g

    intra_cost = intra_node_cost(d, x.intra_bandwidth * c.intra_efficiency, x.intra_latency)
    inter_cost, inter_algorithm = _inter_costs(x, c, message)

    intra_bytes = g * intra_cost[1]
    inter_bytes = g * inter_cost[1]
    intra_time = buckets * intra_cost[0] + intra_bytes / intra_cost[2]
    inter_time = buckets * inter_cost[0] + inter_bytes / inter_cost[2]
    communication_time = intra_time + inter_time

    compute_time = x.accumulation_steps * x.step_time
    if c.overlap:
        bucket_time = stage_time(bucket, intra_cost) + stage_time(bucket, inter_cost)
        last_bucket_time = stage_time(last, intra_cost) + stage_time(last, inter_cost)
        exposed = exposed_communication(
            communication_time,
            bucket_time,
            last_bucket_time,
            c.backward_fraction * x.step_time,
            buckets,
            bucket / g,
            last / g,
        )
    else:
        bucket_time = last_bucket_time = exposed = communication_time
    synchronization = straggler_delay(
        x.step_time, x.accumulation_steps, n, c.straggler_cv
    ) + update_overhead(n, c.update_overhead)
    update_time = compute_time + exposed + synchronization

    speedup = n * compute_time / update_time
    training_time = x.training_time / speedup
    memory = training_state_bytes(x.parameters, c.zero_stage, n) + x.activation_bytes

    return {
        "n_devices": n,
        "gradient_bytes": x.gradient_bytes,
        "intra_bytes": intra_bytes,
        "inter_bytes": inter_bytes,
        "intra_time": intra_time,
        "inter_time": inter_time,
        "communication_time": communication_time,
        "exposed_communication_time": exposed,
        "hidden_communication_time": communication_time - exposed,
        "synchronization_time": synchronization,
        "compute_time": compute_time,
        "update_time": update_time,
        "communication_overhead": communication_time / compute_time,
        "compute_share": compute_time / update_time,
        "communication_share": exposed / update_time,
        "synchronization_share": synchronization / update_time,
        "speedup": speedup,
        "efficiency": speedup / n,
        "global_batch": x.per_device_batch * n * x.accumulation_steps,
        "training_time": training_time,
        "cost": training_time / 3600.0 * big_n * x.node_hour_rate,
        "memory_per_device": memory,
        "fits": memory <= x.device_memory,  # False when unknown (nan); the solver reports None
        "inter_algorithm": inter_algorithm,
        # internals of the overlap model, for explain(); not result fields
        "buckets": buckets,
        "bucket_bytes": bucket,
        "last_bucket_bytes": last,
        "bucket_time": bucket_time,
        "last_bucket_time": last_bucket_time,
        "bottleneck": _bottleneck(
            compute_time, intra_time, inter_time, communication_time, exposed, synchronization
        ),
    }


def _bottleneck(compute: Any, intra: Any, inter: Any, total: Any, exposed: Any, sync: Any) -> Any:
    """Index into :data:`BOTTLENECKS` of the largest term of the update time.

    Exposed communication is split between the two links in proportion to
    their share of the communication time.
    """
    share = where(total > 0, exposed / where(total > 0, total, 1.0), 0.0)
    terms = (compute, intra * share, inter * share, sync)
    if not is_array(*terms):
        return max(range(4), key=lambda i: terms[i])
    return _argmax_first(terms)


def _argmax_first(terms: tuple[Any, ...]) -> Any:
    """Index of the largest of several broadcastable arrays, the first on ties (as argmax).

    A chain of comparisons: ~5x faster than ``np.argmax`` over stacked arrays on
    large sweeps, with the same answer.
    """
    top = terms[0]
    best = np.zeros(np.broadcast_shapes(*(np.shape(t) for t in terms)), dtype=np.intp)
    for index, term in enumerate(terms[1:], 1):
        better = term > top
        best[np.broadcast_to(better, best.shape)] = index
        top = np.maximum(top, term)
    return best
