"""The matrix-product kernel model: tiles, waves, splits, the floor, the memory roofline, the power limit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.physics.bounds import Bound
from mlsysim.physics.clocks import sustained_fraction
from mlsysim.physics.gemm import gemm_time, grouped_gemm_time

H100 = dict(  # H100 SXM bf16 with round constants: 989.4 TFLOP/s, 132 SMs, 3.35 TB/s
    peak=989.4e12, ceiling=0.8, compute_units=132.0, bandwidth=3.35e12, in_bytes=2.0, out_bytes=2.0,
    launch=1.5e-6, fill=4.0e-6, epilogue_share=0.3, memory_efficiency=0.8,
)

dims = st.integers(min_value=1, max_value=20000)


def test_a_tiny_product_takes_the_floor_and_says_launch():
    t = gemm_time(64.0, 64.0, 64.0, 1.0, **H100)
    assert t.bound == Bound.LAUNCH
    assert 5.5e-6 <= t.time < 6.5e-6  # t_L + t_F and a sliver of work


def test_a_large_square_product_is_compute_bound_near_the_ceiling():
    t = gemm_time(8192.0, 8192.0, 8192.0, 1.0, **H100)
    assert t.bound == Bound.COMPUTE
    assert 0.7 < t.efficiency <= 0.8  # below c = 0.8: the waves, the epilogues, the floor


def test_a_product_of_one_row_streams_the_weights_at_the_memory_bandwidth():
    t = gemm_time(1.0, 8192.0, 8192.0, 1.0, **H100)
    assert t.bound == Bound.MEMORY
    weights = 8192 * 8192 * 2 / (0.8 * 3.35e12)
    assert t.time == pytest.approx(1.5e-6 + weights, rel=0.01)
    traffic = (8192 + 8192 * 8192 + 8192) * 2
    assert t.efficiency == pytest.approx(traffic / (t.time * 3.35e12))


def test_fewer_output_tiles_than_sms_split_k_instead_of_running_one_long_wave():
    """2048 x 2048 output (128 x 256 tiles: 128 on 132 SMs) over K = 65536: splitting K fills the SMs,
    so the product runs well above the one-wave time of its 128 tiles' long K-loops."""
    t = gemm_time(512.0, 512.0, 65536.0, 1.0, **H100)
    one_wave = 2 * 128 * 128 * 65536 / (0.8 * 989.4e12 / 132)  # the best unsplit tile, one wave
    assert t.time < 0.5 * one_wave


def test_a_batch_of_products_takes_no_more_than_its_products_one_after_another():
    one = gemm_time(1024.0, 1024.0, 1024.0, 1.0, **H100).time
    four = gemm_time(1024.0, 1024.0, 1024.0, 4.0, **H100).time
    assert one < four < 4 * one


def test_a_grouped_product_of_equal_groups_is_the_batched_one():
    batched = gemm_time(512.0, 4096.0, 7168.0, 8.0, **H100)
    grouped = grouped_gemm_time(np.full(8, 512.0), 4096.0, 7168.0, **H100)
    assert grouped.time == pytest.approx(batched.time)


def test_ragged_groups_cost_their_partial_tiles_and_empty_ones_nothing():
    even = grouped_gemm_time(np.array([256.0, 256.0]), 4096.0, 7168.0, **H100).time
    ragged = grouped_gemm_time(np.array([300.0, 212.0]), 4096.0, 7168.0, **H100).time
    padded = grouped_gemm_time(np.array([256.0, 256.0, 0.0, 0.0]), 4096.0, 7168.0, **H100).time
    assert ragged >= even
    assert padded == pytest.approx(even)


def test_arrays_and_floats_give_the_same_numbers():
    m = np.array([256.0, 1024.0, 4096.0])
    arrays = gemm_time(m, 2048.0, 1024.0, 1.0, **H100)
    for i, value in enumerate(m):
        one = gemm_time(float(value), 2048.0, 1024.0, 1.0, **H100)
        assert float(arrays.time[i]) == pytest.approx(one.time)
        assert int(arrays.bound[i]) == int(one.bound)


@settings(max_examples=80, deadline=None)
@given(m=dims, n=dims, k=dims, grow=st.integers(min_value=1, max_value=5000), axis=st.sampled_from("mnk"))
def test_time_never_falls_as_a_dimension_grows_and_efficiency_stays_in_0_1(m, n, k, grow, axis):
    shape = {"m": float(m), "n": float(n), "k": float(k)}
    base = gemm_time(shape["m"], shape["n"], shape["k"], 1.0, **H100)
    shape[axis] += grow
    bigger = gemm_time(shape["m"], shape["n"], shape["k"], 1.0, **H100)
    assert bigger.time >= base.time * (1 - 1e-12)
    assert base.time >= H100["launch"] + H100["fill"] or base.bound == Bound.MEMORY
    assert 0.0 < base.efficiency <= 1.0


@settings(max_examples=40, deadline=None)
@given(m=dims, n=dims, k=dims, cap=st.floats(min_value=200.0, max_value=700.0))
def test_a_lower_power_limit_never_makes_a_product_faster(m, n, k, cap):
    full = gemm_time(float(m), float(n), float(k), 1.0, **H100).time
    capped = {**H100, "sustained": sustained_fraction(cap, 700.0, 1.3)}
    held = gemm_time(float(m), float(n), float(k), 1.0, **capped).time
    assert held >= full * (1 - 1e-12)


def test_the_sustained_fraction_falls_below_the_reference_power_and_is_one_at_or_above_it():
    assert sustained_fraction(700.0, 700.0, 1.3) == 1.0
    assert sustained_fraction(1000.0, 700.0, 1.3) == 1.0
    assert sustained_fraction(500.0, 700.0, 1.0) == pytest.approx(500 / 700)
    assert sustained_fraction(500.0, 700.0, 3.0) == pytest.approx((500 / 700) ** (1 / 3))
    caps = np.array([300.0, 500.0, 700.0])
    assert np.all(np.diff(sustained_fraction(caps, 700.0, 1.3)) > 0)
