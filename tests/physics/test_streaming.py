"""Memory-bound kernels: a floor plus the bytes at a fraction of the peak bandwidth."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.bounds import Bound
from mlsysim.physics.streaming import memory_kernel_time


def test_a_large_kernel_runs_at_the_fraction_of_the_bandwidth():
    # 268.5 MB (an RMSNorm forward of 16384 x 4096 bf16) at 0.8 of 4.8 TB/s plus a 3 us floor
    kernel = memory_kernel_time(268.5e6, 4.8e12, 0.8, 3e-6)
    assert kernel.time == pytest.approx(3e-6 + 268.5e6 / (0.8 * 4.8e12))
    assert kernel.bound == Bound.MEMORY
    assert kernel.efficiency < 0.8


def test_a_small_kernel_is_its_floor():
    kernel = memory_kernel_time(64e3, 4.8e12, 0.8, 3e-6)
    assert kernel.bound == Bound.LAUNCH
    assert kernel.time == pytest.approx(3e-6, rel=0.01)


@given(st.floats(1.0, 1e11), st.floats(1.0, 1e3))
def test_time_grows_with_bytes_and_efficiency_stays_below_the_fraction(moved, factor):
    small, large = memory_kernel_time(moved, 3.35e12, 0.85, 2.5e-6), memory_kernel_time(moved * factor, 3.35e12, 0.85, 2.5e-6)
    assert large.time >= small.time
    assert 0 < small.efficiency <= 0.85


def test_arrays_give_what_each_float_gives():
    moved = np.array([1e3, 1e6, 1e9])
    many = memory_kernel_time(moved, 8e12, 0.87, 2e-6)
    for i, m in enumerate(moved):
        one = memory_kernel_time(float(m), 8e12, 0.87, 2e-6)
        assert many.time[i] == pytest.approx(one.time)
        assert many.bound[i] == one.bound
