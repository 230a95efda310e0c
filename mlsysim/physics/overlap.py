"""Overlap of bucketed gradient AllReduce with the backward pass (PyTorch DDP style).

Model (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data
Parallel Training", VLDB, sections 3.2.3 and 4: gradient bucketing and overlap).
The backward pass of the last micro-step lasts T_b and produces gradients at a
steady rate. The gradient is cut into m buckets (m-1 of size b, the last of
size r). Bucket j is ready at T_b * j b / G, and buckets are reduced one after
another on the network, each taking c(x) = L + x s. The last bucket finishes at
max over j of (ready_j + cost of buckets j..m); the expression is linear in j,
so the maximum is at j = 1 or j = m, which gives:

    exposed = c(r) + max(0, C - c(r) - T_b (1 - b / G))

where C = (m-1) c(b) + c(r) is the total communication time. The last bucket
is always exposed (the first/last-bucket effect); the rest hides under the
backward time left after the first bucket is ready. With gradient accumulation
only the last micro-step overlaps: the others run under ``no_sync`` and do not
communicate.
"""

from __future__ import annotations

from typing import Any

from mlsysim.physics._array import maximum


def exposed_communication(
    total_time: Any, last_bucket_time: Any, backward_time: Any, first_bucket_fraction: Any
) -> Any:
    """Communication time left on the critical path after overlap.

    ``exposed = c_last + max(0, C - c_last - T_b (1 - b/G))``; see the module docstring.
    """
    window = backward_time * (1.0 - first_bucket_fraction)
    return last_bucket_time + maximum(0.0, total_time - last_bucket_time - window)
