"""Sharded data parallelism: ZeRO/FSDP state, per-layer exposed communication (checked against a
direct simulation of the prefetch schedule), HSDP's replica traffic."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.memory import training_state_bytes
from mlsysim.physics.sharding import (
    gather_time,
    group_rate,
    layerwise_exposed,
    replica_allreduce_bytes,
    sharded_state_bytes,
    zero3_buffer_bytes,
)


@given(st.floats(1e6, 1e12), st.sampled_from([0, 1, 2, 3]), st.integers(1, 4096))
def test_state_is_zeros_table_for_every_stage(psi, stage, k):
    assert sharded_state_bytes(psi, stage, k) == pytest.approx(training_state_bytes(psi, stage, k))


def test_state_takes_an_array_of_stages():
    got = sharded_state_bytes(1e9, np.array([0, 1, 2, 3]), 8)
    want = [training_state_bytes(1e9, s, 8) for s in range(4)]
    assert got == pytest.approx(want)


def test_gather_over_one_rank_is_free_and_by_hand_otherwise():
    assert gather_time(1e9, 1, 25e9, 1e-6) == 0
    assert gather_time(1e9, 8, 25e9, 1e-6) == pytest.approx(7e-6 + 1e9 * 7 / 8 / 25e9)


def test_group_rate_inside_a_node_and_across():
    assert group_rate(8, 8, 8, 300e9, 25e9, 8) == 300e9
    # all 8 ranks of a node in the group: the node's 8 NICs
    assert group_rate(8, 64, 8, 300e9, 25e9, 8) == 8 * 25e9
    # one rank per node (t = 8): one NIC's share
    assert group_rate(1, 64, 8, 300e9, 25e9, 8) == 25e9


def _simulate(layers, c_ag, c_rs, f, b, r):
    """A direct event simulation of one micro-step with one-layer prefetch on one comm stream."""
    comm = 0.0
    # forward
    ag_end = c_ag
    comm = ag_end
    compute_end = 0.0
    for i in range(layers):
        start = max(compute_end, ag_end)
        if i + 1 < layers:  # prefetch the next layer's gather when this one starts
            ag_end = max(comm, start) + c_ag
            comm = ag_end
        compute_end = start + f
    # backward, last layer first
    if r:
        ag_end = max(comm, compute_end) + c_ag
        comm = ag_end
    else:
        ag_end = compute_end
    for i in range(layers):
        start = max(compute_end, ag_end)
        if r and i + 1 < layers:
            ag_end = max(comm, start) + c_ag
            comm = ag_end
        elif not r:
            ag_end = 0.0
        compute_end = start + b
        comm = max(comm, compute_end) + c_rs
    return max(comm, compute_end) - layers * (f + b)


@given(
    st.integers(1, 40),
    st.floats(0.0, 2.0),
    st.floats(0.0, 2.0),
    st.floats(0.01, 2.0),
    st.sampled_from([0.0, 1.0]),
)
def test_closed_form_is_within_one_layers_gather_of_the_simulated_schedule(layers, c, f, extra, r):
    # all-gather and reduce-scatter of one layer move the same bytes: c_ag = c_rs = c; backward >= 2 forward.
    # The closed form is exact when no prefetch is needed (r = 0, or compute-bound); when the backward is
    # communication-bound it misses the schedule's start-up transient by at most one layer's gather.
    b = 2 * f + extra
    got = layerwise_exposed(layers, c, c, f, b, r)
    assert abs(got - _simulate(layers, c, c, f, b, r)) <= c + 1e-9


@given(st.integers(1, 40), st.floats(0.0, 2.0), st.floats(0.0, 2.0), st.floats(0.01, 2.0))
def test_closed_form_is_exact_without_a_backward_gather(layers, c, f, extra):
    b = 2 * f + extra
    assert layerwise_exposed(layers, c, c, f, b, 0.0) == pytest.approx(_simulate(layers, c, c, f, b, 0.0), abs=1e-9)


def test_prefetch_hides_everything_but_the_ends_when_compute_is_long():
    assert layerwise_exposed(80, 0.01, 0.01, 1.0, 2.0, 1.0) == pytest.approx(0.01 + 0.01 + 0.01)


def test_buffers_and_hsdp_shard():
    assert zero3_buffer_bytes(1e9) == 2 * 4 * 1e9
    assert replica_allreduce_bytes(8e9, 8) == 1e9
