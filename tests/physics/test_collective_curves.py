"""The collective size curve and the expert dispatch bytes: conventions, invariants, measured anchors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.physics import collective_curves as curves
from mlsysim.physics import expert_dispatch as dispatch
from mlsysim.physics.bounds import Bound
from mlsysim.physics.collective_curves import Algorithm, Op

CONSTANTS = {"up_rate": 450e9, "out_rate": 50e9, "up_efficiency": 0.8, "out_efficiency": 0.9,
             "base_latency": 20e-6, "up_latency": 1e-6, "out_latency": 5e-6, "half_size": 16 * 2**20,
             "sharpness": 0.2}


@pytest.mark.parametrize(("op", "n", "factor"), [
    (Op.ALL_REDUCE, 8, 1.75), (Op.ALL_GATHER, 8, 0.875), (Op.REDUCE_SCATTER, 4, 0.75),
    (Op.ALL_TO_ALL, 8, 0.875), (Op.SEND_RECV, 2, 1.0), (Op.BROADCAST, 8, 1.0),
])
def test_bus_factors_are_nccl_tests_conventions(op, n, factor):
    assert curves.bus_factor(op, n) == pytest.approx(factor)


def test_a_ring_in_one_domain_moves_the_bus_factor_of_the_buffer_and_nothing_over_the_nics():
    up, out = curves.wire_bytes(Op.ALL_REDUCE, Algorithm.RING, 2**30, 8, 8)
    assert (up, out) == (pytest.approx(1.75 * 2**30), 0.0)


def test_nvls_moves_n_plus_one_over_n_so_its_bus_bandwidth_exceeds_the_wire():
    """Bekman's 8x H200 sweep: 414-473 GB/s of bus bandwidth on 5-8 GPUs is one wire rate of ~305 GB/s."""
    wire = []
    for n, busbw in ((5, 414.2), (6, 435.6), (7, 460.0), (8, 473.1)):
        up, _ = curves.wire_bytes(Op.ALL_REDUCE, Algorithm.NVLS, 2**33, n, n)
        time = 2**33 * curves.bus_factor(Op.ALL_REDUCE, n) / (busbw * 1e9)
        wire.append(up / time / 1e9)
    assert max(wire) - min(wire) < 0.03 * min(wire)
    assert 295 < np.mean(wire) < 315


def test_algorithms_apply_only_where_they_exist():
    def up(op, alg, n=8, d=8):
        return curves.wire_bytes(op, alg, 2**20, n, d)[0]

    assert math.isinf(up(Op.ALL_GATHER, Algorithm.NVLS))
    assert math.isinf(up(Op.ALL_REDUCE, Algorithm.NVLS, n=16, d=8))  # NVLS: one domain
    assert math.isinf(up(Op.ALL_REDUCE, Algorithm.TREE))  # a tree needs more than one domain
    assert math.isinf(up(Op.ALL_TO_ALL, Algorithm.TREE, n=16, d=8))
    assert math.isfinite(up(Op.ALL_REDUCE, Algorithm.NVLS_TREE, n=16, d=8))


def test_a_hierarchical_all_reduce_sends_each_ranks_shard_over_its_rail():
    up, out = curves.wire_bytes(Op.ALL_REDUCE, Algorithm.TREE, 2**30, 32, 8)
    assert up == pytest.approx(2 * 7 / 8 * 2**30)
    assert out == pytest.approx(2 * 3 / 4 * 2**30 / 8)


def test_an_all_to_all_across_domains_sends_the_remote_share_over_the_nics():
    up, out = curves.wire_bytes(Op.ALL_TO_ALL, Algorithm.RING, 2**30, 16, 8)
    assert (up, out) == (pytest.approx(7 / 16 * 2**30), pytest.approx(8 / 16 * 2**30))


def test_small_messages_are_latency_bound_and_large_ones_bandwidth_bound():
    small = curves.collective_time(Op.ALL_REDUCE, Algorithm.RING, 1024.0, 8, 8, **CONSTANTS)
    large = curves.collective_time(Op.ALL_REDUCE, Algorithm.RING, 2.0**33, 8, 8, **CONSTANTS)
    assert small.bound == Bound.LATENCY and large.bound == Bound.BANDWIDTH
    assert small.time >= 20e-6 + 14e-6
    assert large.efficiency == pytest.approx(0.8, rel=0.02)  # the fill is near 1 at 1 GiB per rank


def test_floats_and_arrays_give_the_same_figures():
    sizes = np.array([2.0**10, 2.0**24, 2.0**33])
    many = curves.collective_time(Op.ALL_GATHER, Algorithm.RING, sizes, 8, 8, **CONSTANTS)
    for i, s in enumerate(sizes):
        one = curves.collective_time(Op.ALL_GATHER, Algorithm.RING, float(s), 8, 8, **CONSTANTS)
        assert isinstance(one.time, float) and isinstance(one.bound, int)
        assert one.time == pytest.approx(many.time[i]) and one.bound == many.bound[i]


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(list(Op)),
    sizes=st.lists(st.floats(min_value=1.0, max_value=2.0**36), min_size=2, max_size=6),
    n=st.integers(min_value=2, max_value=512),
    d=st.sampled_from([1, 4, 8, 72]),
)
def test_time_grows_with_size_stays_above_its_latency_and_efficiency_stays_in_range(op, sizes, n, d):
    sizes = np.sort(np.array(sizes))
    kernel = curves.collective_time(op, Algorithm.RING, sizes, n, d, **CONSTANTS)
    up_steps, out_steps = curves.latency_steps(op, Algorithm.RING, n, d)
    floor = 20e-6 + 1e-6 * up_steps + 5e-6 * out_steps
    assert np.all(np.diff(kernel.time) >= -1e-15)
    assert np.all(kernel.time >= floor)
    assert np.all((kernel.efficiency > 0) & (kernel.efficiency <= 0.9 + 1e-12))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=2, max_value=64), e=st.floats(min_value=0.05, max_value=1.0))
def test_a_faster_link_never_makes_a_collective_slower(n, e):
    slow = curves.collective_time(Op.ALL_REDUCE, Algorithm.RING, 2.0**28, n, n, **{**CONSTANTS, "up_efficiency": e})
    fast = curves.collective_time(Op.ALL_REDUCE, Algorithm.RING, 2.0**28, n, n,
                                  **{**CONSTANTS, "up_efficiency": e, "up_rate": 900e9})
    assert fast.time <= slow.time


def test_a_token_with_one_expert_per_rank_reaches_exactly_k_ranks():
    assert dispatch.ranks_reached(64, 8, 64) == pytest.approx(8.0)


def test_node_limited_routing_reaches_at_most_its_limit_of_domains():
    reached, own = dispatch.domains_reached(256, 8, 8, 4)
    assert 3.5 < reached <= 4.0
    assert own == pytest.approx(reached / 8)
    unlimited, _ = dispatch.domains_reached(256, 8, 8, np.inf)
    assert unlimited > reached


def test_low_latency_kernels_send_every_copy_and_normal_ones_one_per_domain():
    ll_up, ll_out = dispatch.dispatch_bytes(dispatch.Kernel.LOW_LATENCY, 128, 7168, 2.0, 8, 256, 16, 8, np.inf)
    assert ll_up + ll_out == pytest.approx(128 * 8 * 7168 * 2 * 15 / 16)  # all but the copies to itself
    up, out = dispatch.dispatch_bytes(dispatch.Kernel.NORMAL, 4096, 7168, 2.0, 8, 256, 16, 8, 4)
    assert out == pytest.approx(4096 * 7168 * 2 * (dispatch.domains_reached(256, 8, 2, 4)[0]
                                                    - dispatch.domains_reached(256, 8, 2, 4)[1]))
    assert up > 0


def test_deepeps_logical_bytes_count_what_its_tests_print():
    """test_low_latency.py: T k (h + h/128 x 4 + 16) bytes per FP8 dispatch; the model's b = 1 + 4/128 is within 0.3%."""
    logical = dispatch.logical_bytes(dispatch.Kernel.LOW_LATENCY, 128, 7168, dispatch.FP8_BYTES, 8, 288, 8, 8, np.inf)
    assert logical == pytest.approx(128 * 8 * (7168 + 7168 / 128 * 4 + 16), rel=0.003)


def test_a_dispatch_is_bound_by_the_slower_link():
    kernel = dispatch.dispatch_time(1e8, 1e8, up_rate=200e9, out_rate=50e9, up_efficiency=0.8, out_efficiency=0.8,
                                    latency=1e-5)
    assert kernel.time == pytest.approx(1e-5 + 1e8 / 40e9)
    assert kernel.bound == Bound.BANDWIDTH and 0 < kernel.efficiency <= 0.8
