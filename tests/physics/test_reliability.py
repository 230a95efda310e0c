"""Failures, checkpoints and goodput: Young/Daly against Daly's cases, invariants, array = scalar."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics import reliability as rel

HOUR = 3600.0


def test_job_mtbf_falls_as_one_over_the_parts():
    rate = 419 / (16_384 * 54 * 24 * HOUR)  # Llama 3 405B, per GPU-second
    assert rel.job_mtbf(rate, 16_384) / HOUR == pytest.approx(54 * 24 / 419)
    assert rel.job_mtbf(rate, 8_192) == pytest.approx(2 * rel.job_mtbf(rate, 16_384))


def test_failure_rate_from_count_inverts_the_mtbf():
    rate = rel.failure_rate_from_count(466, 16_384, 54 * 24 * HOUR)
    assert rate * HOUR == pytest.approx(2.1946e-5, rel=1e-4)
    assert rel.job_mtbf(rate, 16_384) == pytest.approx(54 * 24 * HOUR / 466)


def test_checkpoint_holds_weights_and_adam_state_not_gradients():
    assert rel.CHECKPOINT_BYTES_PER_PARAMETER == 14.0
    assert rel.checkpoint_size(405e9) == pytest.approx(5.67e12)


def test_checkpoint_write_is_limited_by_the_writers_or_the_store():
    size = 1.6e12
    assert rel.checkpoint_write_time(size, 2e9, 100, math.inf) == pytest.approx(8.0)
    assert rel.checkpoint_write_time(size, 2e9, 100, 1e11) == pytest.approx(16.0)
    assert rel.checkpoint_write_time(size, 2e9, 1) == pytest.approx(800.0)


@pytest.mark.parametrize(
    "mtbf_h, printed_min, half_digit",
    [(24.0, 117.0, 0.5), (6.0, 57.0, 0.5), (0.25, 9.1, 0.05)],
)
def test_daly_interval_reproduces_dalys_published_cases(mtbf_h, printed_min, half_digit):
    """Daly 2006, figures 3-5: delta = 5 min, R = 10 min; tau_opt = 117, 57, 9.1 min."""
    tau = rel.daly_interval(300.0, mtbf_h * HOUR) / 60.0
    assert abs(tau - printed_min) <= half_digit


def test_young_interval_is_the_first_order_value():
    assert rel.young_interval(300.0, 24 * HOUR) / 60.0 == pytest.approx(120.0)


def test_daly_interval_is_the_mtbf_when_the_write_exceeds_twice_the_mtbf():
    assert rel.daly_interval(3000.0, 1000.0) == 1000.0


def test_daly_interval_minimises_the_complete_model():
    """The numerical minimum of wall_time is Daly's eq. 37 to 0.1% for M = 24 h."""
    taus = np.linspace(60.0, 6 * HOUR, 400_001)
    walls = rel.wall_time(1.0, taus, 300.0, 600.0, 24 * HOUR)
    assert taus[np.argmin(walls)] == pytest.approx(rel.daly_interval(300.0, 24 * HOUR), rel=1e-3)


POSITIVE = st.floats(1.0, 1e6)


@given(POSITIVE, POSITIVE, st.floats(0.0, 1e5), st.floats(1e3, 1e8), st.floats(1.0, 1e7))
def test_terms_add_up_to_the_wall_clock_time_and_goodput_is_a_fraction(tau, delta, r, m, ts):
    ckpt, rework, restarts, failures = rel.overheads(ts, tau, delta, r, m)
    wall = rel.wall_time(ts, tau, delta, r, m)
    if math.isfinite(wall):
        assert ts + ckpt + rework + restarts == pytest.approx(wall, rel=1e-9)
        assert min(ckpt, rework, restarts, failures) >= 0.0
        assert failures == pytest.approx(wall / m)
        assert 0.0 < rel.goodput(ts, wall) <= 1.0


@given(POSITIVE, POSITIVE, st.floats(0.0, 1e4), st.floats(1e4, 1e7))
def test_goodput_falls_as_failures_come_more_often(tau, delta, r, m):
    g = rel.goodput(1.0, rel.wall_time(1.0, tau, delta, r, m))
    g_worse = rel.goodput(1.0, rel.wall_time(1.0, tau, delta, r, m / 2))
    assert g_worse <= g


def test_first_order_limit():
    """For tau + delta + R << M the wall time is T_s (1 + delta/tau)(1 + (R + (tau + delta)/2)/M)."""
    tau, delta, r, m = 600.0, 10.0, 60.0, 1e6
    first = (1 + delta / tau) * (1 + (r + (tau + delta) / 2) / m)
    assert rel.wall_time(1.0, tau, delta, r, m) == pytest.approx(first, rel=1e-6)


def test_a_job_that_cannot_finish_has_infinite_wall_time_and_zero_goodput():
    wall = rel.wall_time(1.0, 1e6, 10.0, 10.0, 1.0)
    assert wall == math.inf and rel.goodput(1.0, wall) == 0.0
    arr = rel.wall_time(np.array([1.0, 1.0]), 1e6, 10.0, 10.0, np.array([1.0, 1e9]))
    assert arr[0] == math.inf and math.isfinite(arr[1])


def test_arrays_give_the_scalar_figures():
    ms = np.array([900.0, 6 * HOUR, 24 * HOUR])
    taus = rel.daly_interval(300.0, ms)
    walls = rel.wall_time(1e6, taus, 300.0, 600.0, ms)
    terms = rel.overheads(1e6, taus, 300.0, 600.0, ms)
    for i, m in enumerate(ms):
        assert taus[i] == rel.daly_interval(300.0, float(m))
        assert walls[i] == pytest.approx(rel.wall_time(1e6, float(taus[i]), 300.0, 600.0, float(m)))
        scalar = rel.overheads(1e6, float(taus[i]), 300.0, 600.0, float(m))
        assert [t[i] for t in terms] == pytest.approx(list(scalar))


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_checkpoint_state_per_device_by_zero_stage(stage):
    psi, n = 7e9, 64
    per_device = rel.checkpoint_bytes_per_device(psi, stage, n)
    expected = {0: 14 * psi, 1: 2 * psi + 12 * psi / n, 2: 2 * psi + 12 * psi / n, 3: 14 * psi / n}
    assert per_device == pytest.approx(expected[stage])
    # the distinct state over all devices is one checkpoint: replicated parts counted once
    distinct = {0: per_device, 1: 2 * psi + n * 12 * psi / n, 2: 2 * psi + 12 * psi, 3: n * per_device}
    assert distinct[stage] == pytest.approx(rel.checkpoint_size(psi))
    with pytest.raises(ValueError, match="ZeRO stage"):
        rel.checkpoint_bytes_per_device(psi, 4, n)
