"""Alpha-beta fit of measured collective times, in nccl-tests' bus-bandwidth terms.

nccl-tests reports, for a collective of S bytes on n ranks taking t seconds,
the algorithm bandwidth ``algbw = S / t`` and the bus bandwidth
``busbw = algbw * F(n)``, where F(n) is the fraction of the buffer each rank
must move over its slowest link (nccl-tests, doc/PERFORMANCE.md):

* AllReduce: ``F(n) = 2 (n - 1) / n`` (a reduce-scatter then an all-gather);
* AllGather and ReduceScatter: ``F(n) = (n - 1) / n`` (S is the full buffer).

The alpha-beta model (Hockney 1994, "The communication challenge for MPP:
Intel Paragon and Meiko CS-2"; for collectives Thakur, Rabenseifner and Gropp
2005, section 4) makes the time affine in the size:

    t(S) = alpha + S F(n) / beta

with alpha the startup time of the whole collective and beta the bus
bandwidth that large messages reach. :func:`fit_alpha_beta` chooses alpha and
beta so that the *relative* error is small over the whole measured range (a
log from 8 B to 8 GB spans six decades of time; an ordinary least-squares fit
would ignore every size below a few megabytes), by least absolute relative
deviations, which a few noisy points do not drag.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import PHYSICAL_RANGE, Quantity, quantity, to_canonical, ureg
from mlsysim.core.validation import check_positive_int

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.physics._array import Array, Num

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
"""Collectives whose timings can be fitted (the nccl-tests binaries ``<name>_perf``)."""


def check_collective(value: object) -> str:
    """One of :data:`COLLECTIVES`; ``-`` and upper case are accepted (``All-Reduce``)."""
    name = str(value).strip().lower().replace("-", "_")
    if name in ("allreduce", "allgather", "reducescatter"):
        name = {"allreduce": "all_reduce", "allgather": "all_gather"}.get(name, "reduce_scatter")
    if name not in COLLECTIVES:
        raise InputError(
            f"collective: expected one of {', '.join(COLLECTIVES)}, got {value!r}",
            field="collective",
        )
    return name


@overload
def bus_factor(collective: str, ranks: float) -> float: ...
@overload
def bus_factor(collective: str, ranks: Array) -> Array: ...
def bus_factor(collective: str, ranks: Num) -> Num:
    """F(n): bytes each rank moves per byte of buffer (nccl-tests, doc/PERFORMANCE.md).

    ``2 (n-1) / n`` for AllReduce, ``(n-1) / n`` for AllGather and ReduceScatter.
    """
    single = (ranks - 1) / ranks
    return 2.0 * single if collective == "all_reduce" else single


def ring_steps(collective: str, ranks: int) -> int:
    """Communication steps of the ring algorithm: ``2 (n-1)`` for AllReduce, ``n-1`` otherwise.

    A ring reduce-scatter and a ring all-gather each take n-1 steps; AllReduce
    is one then the other (Patarasuk and Yuan 2009, section 3).
    """
    return 2 * (ranks - 1) if collective == "all_reduce" else ranks - 1


def fit_alpha_beta(moved_bytes: ArrayLike, times: ArrayLike) -> tuple[float, float]:
    """Fit ``t = alpha + x / beta`` to (x_i, t_i), minimising the sum of relative errors.

    ``x`` is the bytes each rank moves (S F(n)), ``t`` the measured seconds.
    The fit minimises ``sum_i |alpha + x_i c - t_i| / t_i`` over ``alpha >= 0``
    and ``c = 1 / beta > 0``: least absolute deviations on relative residuals,
    which weighs a 10 us point as much as a 10 ms one and, unlike least
    squares, is not dragged by a few outliers (a scheduling hiccup that makes
    one small message take ten times its time on a shared CPU). The objective
    is convex and piecewise linear in (alpha, c), so its minimum lies on a
    vertex: a line through two points, or (alpha = 0) a line from the origin
    through one point (Barrodale and Roberts 1973, "An improved algorithm for
    discrete l1 linear approximation").

    The vertex is found by Wesolowsky's direct descent (Wesolowsky 1981, "A new
    descent algorithm for the least absolute value regression problem"): the
    best line through a pivot point is a weighted median of the slopes to the
    other points (O(n log n)); the point it passes through becomes the next
    pivot, until the objective stops decreasing. It starts from the best line
    through the origin. When the unconstrained optimum has ``alpha < 0``, the
    constrained one lies on the boundary: ``alpha = 0`` (a weighted median of
    ``t_i / x_i``), unless the flat line ``c = 0`` is better, in which case the
    times do not grow with the size. O(n log n) per step, a few steps: a
    million points in seconds. Times that do not grow with the size (the
    largest message is the fastest) are refused. Returns ``(alpha, beta)`` in
    the units of the inputs.
    """
    x = np.asarray(moved_bytes, dtype=float)
    t = np.asarray(times, dtype=float)
    w = 1.0 / t
    refused = InputError(
        "the measured times do not grow with the message size, so no bandwidth can be "
        "fitted; measure up to sizes where the collective is bandwidth-bound (megabytes)"
    )
    if not t[np.argmax(x)] > t.min():
        raise refused
    slope0 = float(_weighted_median(t / x, w * x))  # the best line through the origin
    alpha, slope = _descend(x, t, w, 0.0, slope0)
    if alpha < 0.0 or slope <= 0.0:
        flat = float(_weighted_median(t, w))
        if _cost(x, t, w, flat, 0.0) < _cost(x, t, w, 0.0, slope0):
            raise refused
        alpha, slope = 0.0, slope0
    return float(alpha), float(1.0 / slope)


def _cost(x: np.ndarray, t: np.ndarray, w: np.ndarray, alpha: float, slope: float) -> float:
    return float(np.sum(np.abs(alpha + slope * x - t) * w))


def _weighted_median(values: Array, weights: Array) -> float:
    """A minimiser of ``sum_i weights_i |values_i - m|`` over m (the lower weighted median)."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    k = int(np.searchsorted(cumulative, 0.5 * cumulative[-1]))
    return float(values[order[min(k, order.size - 1)]])


def _descend(
    x: np.ndarray, t: np.ndarray, w: np.ndarray, alpha: float, slope: float
) -> tuple[float, float]:
    """Wesolowsky's descent from the line (alpha, slope): pivot on a point the line passes through."""
    best = _cost(x, t, w, alpha, slope)
    residual = np.abs(alpha + slope * x - t) * w
    pivot = int(np.argmin(residual))
    for _ in range(10 * max(8, int(np.log2(x.size + 1)))):
        dx = x - x[pivot]
        other = dx != 0.0
        if not other.any():
            break
        slopes = (t[other] - t[pivot]) / dx[other]
        candidate = float(_weighted_median(slopes, w[other] * np.abs(dx[other])))
        candidate_alpha = float(t[pivot] - candidate * x[pivot])
        cost = _cost(x, t, w, candidate_alpha, candidate)
        if not cost < best:
            break
        best, alpha, slope = cost, candidate_alpha, candidate
        through = np.flatnonzero(other)[np.flatnonzero(slopes == candidate)]
        pivot = int(through[0])
    return alpha, slope


def relative_errors(moved_bytes: ArrayLike, times: ArrayLike, alpha: float, beta: float) -> Array:
    """``(fitted - measured) / measured`` at each point."""
    t = np.asarray(times, dtype=float)
    return (alpha + np.asarray(moved_bytes, dtype=float) / beta - t) / t


@dataclass(frozen=True)
class Link:
    """A link of the scenario model fed from a fit: ``bandwidth`` and per-step ``latency``.

    These are what ``intra_bandwidth``/``intra_latency`` (or ``inter_*``) mean
    in :class:`mlsysim.DataParallelScaleOutModel`: a ring stage over k ranks
    takes ``2 (k-1) latency + M f(k) / bandwidth``.
    """

    bandwidth: Quantity
    latency: Quantity


@dataclass(frozen=True, eq=False)
class CollectiveFit:
    """An alpha-beta fit of one collective on ``ranks`` ranks, with the points it was fitted to.

    ``latency`` (alpha, the whole collective's startup time) and
    ``bus_bandwidth`` (beta) define ``t(S) = alpha + S F(n) / beta``;
    ``peak_bus_bandwidth`` is the largest bus bandwidth measured;
    ``worst_relative_error`` the largest ``|fitted - measured| / measured``;
    ``message_sizes`` (bytes) and ``measured_times`` (seconds) are the fitted
    points, ``source`` where they came from and ``notes`` what was assumed or
    left out on the way. Build one with :func:`fit_collective` (or :func:`mlsysim.calibrate.from_nccl_tests`).
    """

    collective: str
    ranks: int
    latency: Quantity
    bus_bandwidth: Quantity
    peak_bus_bandwidth: Quantity
    worst_relative_error: float
    message_sizes: tuple[float, ...]
    measured_times: tuple[float, ...]
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def factor(self) -> float:
        """F(n), the bus factor of this collective on these ranks."""
        return bus_factor(self.collective, self.ranks)

    def _alpha_beta(self) -> tuple[float, float]:
        return to_canonical(self.latency, "time"), to_canonical(self.bus_bandwidth, "bandwidth")

    def predict(self, message_size: Quantity) -> Quantity:
        """Time of the collective for ``message_size`` (a data Quantity, scalar or array), in us.

        ``t = alpha + S F(n) / beta``.

        >>> from mlsysim import Q_
        >>> fit = fit_collective([1e3, 1e9], [1.00175e-5, 1.751e-2], collective="all_reduce", ranks=8)
        >>> round(fit.predict(Q_(100, "MB")).to("ms").magnitude, 4)
        1.76
        """
        size = _bytes(message_size, "message_size")
        alpha, beta = self._alpha_beta()
        return quantity(1e6 * (alpha + size * self.factor / beta), "us")

    def relative_errors(self) -> np.ndarray:
        """``(fitted - measured) / measured`` at each measured size."""
        alpha, beta = self._alpha_beta()
        moved = np.asarray(self.message_sizes) * self.factor
        return relative_errors(moved, self.measured_times, alpha, beta)

    def to_link(self) -> Link:
        """The scenario link this fit implies: bandwidth = beta, latency = alpha / ring steps.

        The model costs a ring AllReduce over k ranks as
        ``t(M) = 2 (k-1) latency + M f(k) / bandwidth`` with ``f(k) = 2 (k-1) / k``
        (:func:`mlsysim.physics.collectives.intra_node_cost`). With k = n this
        equals the fitted ``alpha + S F(n) / beta`` exactly when
        ``bandwidth = beta`` (the bus bandwidth) and ``latency = alpha / (2 (n-1))``:
        the model's latency is per ring step. An AllGather or ReduceScatter fit
        (n - 1 steps, F = (n-1)/n) maps the same way with ``alpha / (n-1)``.
        """
        alpha, beta = self._alpha_beta()
        return Link(
            bandwidth=quantity(beta / 1e9, "GB/s"),
            latency=quantity(1e6 * alpha / ring_steps(self.collective, self.ranks), "us"),
        )

    def to_dict(self) -> dict[str, Any]:  # JSON data, read by key in the CLI
        """Plain JSON-able values; Quantities as ``{"value": ..., "unit": ...}``."""
        link = self.to_link()
        fitted = self.predict(quantity(np.asarray(self.message_sizes), "byte")).magnitude
        return {
            "collective": self.collective,
            "ranks": self.ranks,
            "latency": _json(self.latency),
            "bus_bandwidth": _json(self.bus_bandwidth),
            "peak_bus_bandwidth": _json(self.peak_bus_bandwidth),
            "worst_relative_error": self.worst_relative_error,
            "link": {"bandwidth": _json(link.bandwidth), "latency": _json(link.latency)},
            "source": self.source,
            "notes": list(self.notes),
            "points": [
                {
                    "size": {"value": size, "unit": "byte"},
                    "measured": {"value": 1e6 * t, "unit": "microsecond"},
                    "fitted": {"value": float(f), "unit": "microsecond"},
                    "relative_error": float(e),
                }
                for size, t, f, e in zip(
                    self.message_sizes,
                    self.measured_times,
                    fitted,
                    self.relative_errors(),
                    strict=True,
                )
            ],
        }

    def __repr__(self) -> str:
        return (
            f"CollectiveFit(collective={self.collective!r}, ranks={self.ranks}, "
            f"latency={self.latency:.4g~P}, bus_bandwidth={self.bus_bandwidth:.4g~P}, "
            f"peak_bus_bandwidth={self.peak_bus_bandwidth:.4g~P}, "
            f"worst_relative_error={self.worst_relative_error:.3g}, points={len(self.message_sizes)})"
        )


def fit_collective(
    message_sizes: Sequence[float],
    times: Sequence[float],
    *,
    collective: str,
    ranks: int,
    peak_bus_bandwidth: float | None = None,
    source: str = "",
    notes: tuple[str, ...] = (),
) -> CollectiveFit:
    """Fit measured times of a collective: sizes in bytes, times in seconds (plain floats).

    ``peak_bus_bandwidth`` (bytes/s) is the largest bus bandwidth the tool
    reported; when not given it is computed from the points (``max S F / t``).

    >>> fit = fit_collective([1e3, 1e9], [1.00175e-5, 1.751e-2], collective="all_reduce", ranks=8)
    >>> fit.latency, fit.bus_bandwidth
    (<Quantity(10.0, 'microsecond')>, <Quantity(100.0, 'gigabyte / second')>)
    """
    name = check_collective(collective)
    n = _ranks(ranks)
    sizes, seconds = _points(message_sizes, times)
    factor = bus_factor(name, n)
    moved = sizes * factor
    alpha, beta = fit_alpha_beta(moved, seconds)
    _check_physical(alpha, beta)
    worst = float(np.max(np.abs(relative_errors(moved, seconds, alpha, beta))))
    peak = float(np.max(moved / seconds)) if peak_bus_bandwidth is None else peak_bus_bandwidth
    return CollectiveFit(
        collective=name,
        ranks=n,
        latency=quantity(_round(1e6 * alpha), "us"),
        bus_bandwidth=quantity(_round(beta / 1e9), "GB/s"),
        peak_bus_bandwidth=quantity(_round(peak / 1e9), "GB/s"),
        worst_relative_error=worst,
        message_sizes=tuple(float(s) for s in sizes),
        measured_times=tuple(float(t) for t in seconds),
        source=source,
        notes=tuple(notes),
    )


def _check_physical(alpha: float, beta: float) -> None:
    """The fitted latency and bandwidth must be finite and in the physical range of scenario inputs."""
    low, high, words = PHYSICAL_RANGE["bandwidth"]
    if not low <= beta <= high:
        raise InputError(
            f"the fitted bus bandwidth {beta:.4g} B/s is outside the physical range {words}; "
            "check the measured times"
        )
    if not 0.0 <= alpha <= PHYSICAL_RANGE["time"][1]:
        raise InputError(f"the fitted latency {alpha:.4g} s is outside the physical range")


def _round(x: float) -> float:
    """Drop floating-point noise below 12 significant digits (``9.999999999999e0`` -> ``10.0``)."""
    return float(f"{x:.12g}")


def _ranks(value: object) -> int:
    try:
        n = check_positive_int(value)
    except InputError as exc:
        raise InputError(f"ranks: {exc}", field="ranks") from None
    if n < 2:
        raise InputError(
            f"ranks: a collective needs at least 2 ranks to move data, got {n}", field="ranks"
        )
    return n


def _points(sizes: Sequence[float], times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if s.ndim != 1 or s.shape != t.shape:
        raise InputError(
            f"message_sizes and times must be two lists of the same length, got {s.shape} and {t.shape}"
        )
    for name, values in (("message_sizes", s), ("times", t)):
        if not np.all(np.isfinite(values) & (values > 0)):
            raise InputError(f"{name}: every value must be finite and above zero", field=name)
    if np.unique(s).size < 2:
        raise InputError(
            "message_sizes: need measurements at two or more different sizes to fit a line",
            field="message_sizes",
        )
    return s, t


def _bytes(value: object, name: str) -> Num:
    """A data Quantity (scalar or array) as bytes: a float or a numpy array."""
    try:
        size: Num
        if isinstance(value, ureg.Quantity) and np.ndim(value.magnitude) > 0:
            size = np.asarray(value.magnitude, dtype=float) * to_canonical(
                quantity(1.0, str(value.units)), "data"
            )
        else:
            size = to_canonical(value, "data")
    except InputError as exc:
        raise type(exc)(f"{name}: {exc}", field=name) from None
    if not np.all(np.isfinite(size) & (np.asarray(size) >= 0)):
        raise InputError(f"{name}: expected finite sizes at or above zero, got {value}", field=name)
    return size


def _json(q: Quantity) -> dict[str, JSONValue]:
    value = float(q.magnitude)
    return {"value": value if math.isfinite(value) else None, "unit": f"{q.units:D}"}
