"""Pareto front of layouts in (training time, cost), both to be minimized."""

from __future__ import annotations

import numpy as np


def pareto_mask(time: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """True for the points no other point dominates (time and cost minimized).

    Point a dominates b when ``a.time <= b.time`` and ``a.cost <= b.cost`` with
    one of them strictly smaller; equal points do not dominate each other, so
    duplicates on the front are all kept. An unknown cost (NaN) counts as
    infinite: it never dominates. O(n log n): sort by time then cost; a point
    is on the front when its cost is the lowest of its time and below every
    cost at a strictly smaller time.
    """
    t = np.asarray(time, dtype=float)
    c = np.where(np.isnan(cost), np.inf, np.asarray(cost, dtype=float))
    mask = np.zeros(t.shape, dtype=bool)
    if t.size == 0:
        return mask
    order = np.lexsort((c, t))
    ts, cs = t[order], c[order]
    new_time = np.empty(ts.shape, dtype=bool)
    new_time[0] = True
    new_time[1:] = ts[1:] != ts[:-1]
    start = np.maximum.accumulate(np.where(new_time, np.arange(ts.size), 0))
    running = np.minimum.accumulate(cs)
    before = np.where(start > 0, running[np.maximum(start - 1, 0)], np.inf)
    on_front = (cs == cs[start]) & (cs < before)
    if np.isinf(cs).all():  # no cost known anywhere: the fastest layouts
        on_front = ts == ts[0]
    mask[order] = on_front
    return mask
