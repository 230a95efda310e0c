"""Overlap of bucketed gradient AllReduce with the backward pass (PyTorch DDP style).

Model (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data
Parallel Training", VLDB, sections 3.2.3 and 4: gradient bucketing and overlap).
The backward pass of the last micro-step lasts T_b and produces gradients at a
steady rate. The gradient of G bytes is cut into m buckets, m-1 of size b and
the last of size r = G - (m-1) b. Bucket j is ready at T_b min(j b, G) / G, and
the buckets are reduced one after another on the network, each taking
c(x) = L + x s. The last bucket finishes at

    F = max over j of (ready_j + c(bucket j) + ... + c(bucket m)).

For j = 1 .. m-1 the expression is linear in j, so its maximum there is at
j = 1 or j = m-1; j = m (ready at T_b) stands apart when the last bucket is
partial. With C = (m-1) c(b) + c(r) the total communication time:

    exposed = F - T_b = max( c(r),                          (j = m: the last bucket)
                             C - T_b (1 - b/G),             (j = 1: all of it after the first)
                             c(b) + c(r) - T_b r/G )        (j = m-1, when m >= 2)

The last bucket is always exposed, the rest hides under the backward time
left after the first bucket is ready, and when the last bucket is small the
one before it, ready just before the backward pass ends, is exposed too. With
gradient accumulation only the last micro-step overlaps: the others run under
``no_sync`` and do not communicate. ``tests/physics/test_overlap.py`` checks
the closed form against a direct simulation of the schedule.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, maximum, where

EXPOSED_EQUATION = "exposed = max(c(r), C - T_b (1 - b/G), c(b) + c(r) - T_b r/G)"
"""The closed form of :func:`exposed_communication`, in symbols (T_b: backward time)."""


def exposed_communication(
    total_time: Num,
    full_bucket_time: Num,
    last_bucket_time: Num,
    backward_time: Num,
    buckets: Num,
    full_bucket_fraction: Num,
    last_bucket_fraction: Num,
) -> Num:
    """Communication time left on the critical path after overlap (see the module docstring).

    ``total_time`` is C, ``full_bucket_time`` c(b), ``last_bucket_time`` c(r),
    ``backward_time`` T_b, ``buckets`` m, and the fractions are b/G and r/G.
    """
    after_first = total_time - backward_time * (1.0 - full_bucket_fraction)
    last_two = full_bucket_time + last_bucket_time - backward_time * last_bucket_fraction
    exposed = maximum(last_bucket_time, after_first)
    return maximum(exposed, where(buckets >= 2, last_two, last_bucket_time))


INTERFERENCE_EQUATION = "interference = s x hidden  (compute slowed beside communication)"


def interference_delay(hidden_communication: Num, slowdown: float) -> Num:
    """Compute slowed by communication running beside it: ``s x hidden`` (seconds).

    Collective kernels that run during the backward pass take SMs and memory
    bandwidth from it, so the compute overlapped with ``hidden`` seconds of
    communication takes ``s`` times that much longer. Measured: overlapping
    compute with communication slows the compute by 18.9% on average (40% at
    most) on A100, H100, MI210 and MI250 GPUs ("Characterizing
    Compute-Communication Overlap in GPU-Accelerated Distributed Deep
    Learning: Performance and Power Implications", arXiv 2507.03114, 2025).
    """
    return slowdown * hidden_communication
