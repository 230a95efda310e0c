"""Costs of a synchronous update beyond compute and communication.

Straggler effect: a synchronous step ends when the slowest of n devices ends.
For n independent step times with mean mu and standard deviation sigma, the
expected maximum is about mu + sigma * sqrt(2 ln n) (the leading term of the
expected maximum of n Gaussians; e.g. David and Nagaraja 2003, "Order
Statistics", section 10.5; the effect at scale: Dean and Barroso 2013, "The
Tail at Scale"; Chen et al. 2016, "Revisiting Distributed Synchronous SGD").
A local update of A micro-steps of T1 with coefficient of variation c per
micro-step has sigma = c T1 sqrt(A).
"""

from __future__ import annotations

from mlsysim.physics._array import Num, log, sqrt

STRAGGLER_EQUATION = "sync = c x T1 x sqrt(A) x sqrt(2 ln n) + overhead  (0 for n = 1)"
"""The synchronisation cost of :func:`straggler_delay` and :func:`update_overhead`."""


def straggler_delay(step_time: Num, accumulation_steps: Num, n_devices: Num, cv: Num) -> Num:
    """Expected wait for the slowest device: ``c * T1 * sqrt(A) * sqrt(2 ln n)`` (0 for n = 1)."""
    return cv * step_time * sqrt(accumulation_steps) * sqrt(2.0 * log(n_devices))


def update_overhead(n_devices: Num, overhead: Num) -> Num:
    """Fixed per-update cost of a distributed step (launch, bookkeeping, barrier); 0 for n = 1."""
    return overhead * (n_devices > 1)
