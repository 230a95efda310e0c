"""Bounded robust least squares for the kernel models' constants (pure numpy, deterministic).

The constants are searched through a smooth map of the real line onto their bounds: the
logarithm of a constant is a logistic function of its search variable z,

    ln v = ln low + ln(high / low) (1 + tanh(z / 2)) / 2,

so no step leaves the bound (:func:`to_value`, :func:`to_search`). The residuals are the rows'
log errors under the "soft L1" loss (:func:`robust`): squared for errors under about
:data:`ROBUST_SCALE`, linear beyond, so that a few rows a harness disturbed do not drag the
rest. They are minimised by Levenberg-Marquardt (Marquardt 1963, "An algorithm for
least-squares estimation of nonlinear parameters"), the Jacobian by forward differences, until
a step improves the cost by less than :data:`TOLERANCE` of itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

TOLERANCE = 1e-7
"""The search stops when a step improves the cost by less than this share of it."""

ROBUST_SCALE = 0.2
"""c of the soft-L1 loss rho(e) = 2 c^2 (sqrt(1 + e^2 / c^2) - 1): log errors beyond about 20% count
linearly, not squared."""


def to_value(z: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The constants from the search variables (module docstring)."""
    return np.asarray(np.exp(np.log(low) + np.log(high / low) * 0.5 * (1.0 + np.tanh(z / 2.0))))


def to_search(value: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The search variables of the constants (the inverse of :func:`to_value`, a hair inside the bound)."""
    share = np.clip(np.log(value / low) / np.log(high / low), 1e-6, 1.0 - 1e-6)
    return np.asarray(np.log(share / (1.0 - share)))


def robust(error: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Residuals whose squares sum to sum_i w_i rho(e_i) (soft L1, :data:`ROBUST_SCALE`); an infinite or
    missing error counts as 50 (a model time that cannot be computed)."""
    e = np.where(np.isfinite(error), np.clip(error, -50.0, 50.0), 50.0)
    rho = 2.0 * ROBUST_SCALE**2 * (np.sqrt(1.0 + (e / ROBUST_SCALE) ** 2) - 1.0)
    return np.asarray(np.sqrt(weights * rho) * np.sign(e))


def levenberg_marquardt(
    residuals: Callable[[np.ndarray], np.ndarray], z: np.ndarray, free: np.ndarray, max_iterations: int,
) -> tuple[np.ndarray, float, int]:
    """(z, cost, iterations): |r(z)|^2 minimised over the ``free`` coordinates of z by damped Gauss-Newton
    steps (module docstring); the others stay as given."""
    r = residuals(z)
    cost = float(r @ r)
    damping = 1e-3
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 - the count is reported
        jacobian = np.empty((r.size, free.size))
        for j, i in enumerate(free):
            step = z.copy()
            step[i] += 1e-5
            jacobian[:, j] = (residuals(step) - r) / 1e-5
        normal = jacobian.T @ jacobian
        gradient = jacobian.T @ r
        improved = converged = False
        while damping < 1e12:
            delta = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), -gradient)
            trial = z.copy()
            trial[free] += delta
            trial_r = residuals(trial)
            trial_cost = float(trial_r @ trial_r)
            if trial_cost < cost:
                converged = cost - trial_cost <= TOLERANCE * cost
                z, r, cost, damping, improved = trial, trial_r, trial_cost, max(damping / 10.0, 1e-12), True
                break
            damping *= 10.0
        if not improved or converged:
            break
    return z, cost, iterations


def round_constant(value: float) -> float:
    """Six significant digits: a fits file reads the same on every machine."""
    return float(f"{value:.6g}")
