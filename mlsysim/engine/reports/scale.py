"""How large a layout is next to the largest training runs that have been published.

A layout of more devices than any published training run is computed like any
other, but no such run is known to exist: its figures are an extrapolation
(failures, stragglers and the depth of the network at that scale are beyond
what any source here measured).
"""

from __future__ import annotations

LARGEST_PUBLISHED_RUN_DEVICES = 16_384
"""Accelerators of the largest training run whose device count is published: Llama 3
405B pre-training on 16,384 H100 GPUs (Llama Team 2024, 'The Llama 3 Herd of Models',
section 3.3 and Table 4: up to 16K GPUs of a 24K-GPU RoCE cluster). A count of devices
(GPUs) working on one job, not of nodes."""

LARGEST_PUBLISHED_RUN = "Llama 3 405B pre-training, Llama Team 2024, Table 4"
"""The run behind :data:`LARGEST_PUBLISHED_RUN_DEVICES`, in a few words."""


def cluster_note(n_devices: int) -> str | None:
    """The note for a layout of more devices than the largest published training run; else None.

    >>> cluster_note(16_384) is None
    True
    >>> cluster_note(20_000)[:60]
    '20,000 devices is more than the largest training run with a '
    """
    if n_devices <= LARGEST_PUBLISHED_RUN_DEVICES:
        return None
    return (
        f"{n_devices:,} devices is more than the largest training run with a published "
        f"device count ({LARGEST_PUBLISHED_RUN_DEVICES:,} GPUs: {LARGEST_PUBLISHED_RUN}); "
        "no cluster of this size may exist, and every figure here is an extrapolation"
    )


__all__ = ["LARGEST_PUBLISHED_RUN", "LARGEST_PUBLISHED_RUN_DEVICES", "cluster_note"]
