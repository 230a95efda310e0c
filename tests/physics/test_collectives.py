"""Pure collective formulas: volumes, alpha-beta stage costs, buckets; floats and arrays alike."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.collectives import (
    ALGORITHMS,
    bucket_layout,
    inter_node_cost,
    intra_node_cost,
    ring_allreduce_factor,
    stage_time,
)


def test_ring_factor_values():
    assert ring_allreduce_factor(1) == 0
    assert ring_allreduce_factor(2) == 1
    assert ring_allreduce_factor(8) == 1.75
    assert ring_allreduce_factor(np.array([1, 4])).tolist() == [0.0, 1.5]


@given(st.integers(1, 10_000))
def test_ring_factor_is_below_two_and_grows(k):
    assert 0 <= ring_allreduce_factor(k) < 2
    assert ring_allreduce_factor(k + 1) > ring_allreduce_factor(k)


def test_intra_stage_is_the_seed_equation_at_zero_latency():
    startup, volume, rate = intra_node_cost(8, 450e9)
    assert startup == 0 and volume == 1.75 and rate == 450e9
    assert stage_time(3e9, (startup, volume, rate)) == 3e9 * 1.75 / 450e9


def test_one_node_has_no_inter_stage_for_any_algorithm():
    for algorithm in ALGORITHMS:
        assert stage_time(3e9, inter_node_cost(algorithm, 8, 1, 1.25e9, 8, 5e-6)) == 0


def test_unknown_algorithm_is_an_error():
    with pytest.raises(ValueError, match="butterfly"):
        inter_node_cost("butterfly", 8, 2, 1e9)


@given(
    st.integers(1, 16),
    st.integers(2, 256),
    st.floats(1e3, 1e11),
    st.integers(1, 16),
    st.floats(0, 1e-4),
)
def test_hierarchical_never_moves_more_than_the_flat_ring(d, nodes, message, nics, alpha):
    ring = stage_time(message, inter_node_cost("ring", d, nodes, 1e9, nics, alpha))
    hier = stage_time(message, inter_node_cost("hierarchical", d, nodes, 1e9, nics, alpha))
    assert hier <= ring * (1 + 1e-12)


@given(st.integers(2, 4096), st.integers(1, 8))
def test_tree_bandwidth_term_is_at_most_twice_over_the_ring_and_its_latency_logarithmic(nodes, d):
    ring = inter_node_cost("hierarchical", d, nodes, 1e9, d, 1.0)
    tree = inter_node_cost("tree", d, nodes, 1e9, d, 1.0)
    assert tree[0] == 2 * math.ceil(math.log2(nodes))
    assert ring[0] == 2 * (nodes - 1)
    assert tree[1] / tree[2] <= 2 * ring[1] / ring[2] * nodes / (nodes - 1) + 1e-15


def test_scalar_and_array_evaluations_agree():
    nodes = np.array([1, 2, 4, 32])
    for algorithm in ALGORITHMS:
        vector = stage_time(1e9, inter_node_cost(algorithm, 8, nodes, 1.25e9, 4, 2e-6))
        scalar = [
            stage_time(1e9, inter_node_cost(algorithm, 8, int(n), 1.25e9, 4, 2e-6)) for n in nodes
        ]
        assert vector.tolist() == scalar


@given(st.floats(1, 1e12), st.floats(1, 1e10))
def test_buckets_cover_the_gradient(gradient, bucket):
    count, size, last = bucket_layout(gradient, bucket)
    assert count >= 1 and 0 < last <= size * (1 + 1e-12)
    assert (count - 1) * size + last == pytest.approx(gradient, rel=1e-12)
