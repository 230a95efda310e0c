"""Tensor parallelism: Megatron-LM's collectives per layer, their link, and activation memory under t."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.activations import activation_bytes_per_layer
from mlsysim.physics.tensor_parallel import (
    tp_activation_bytes_per_layer,
    tp_allreduce_time,
    tp_collectives_per_layer,
    tp_link_rate,
    tp_message_bytes,
    tp_time_per_micro_batch,
)


def test_four_allreduces_per_layer_and_two_more_when_the_forward_is_recomputed():
    assert tp_collectives_per_layer("none") == 4
    assert tp_collectives_per_layer("selective") == 4
    assert tp_collectives_per_layer("full") == 6


def test_message_is_two_bytes_per_activation():
    assert tp_message_bytes(2, 2048, 4096) == 2 * 2 * 2048 * 4096


def test_one_device_has_no_tensor_parallel_time():
    assert tp_time_per_micro_batch(40, 1e9, 1, 300e9, 1e-6) == 0


def test_time_by_hand_for_eight_ways_on_nvlink():
    # 48 layers, M = 2 x 4 x 2048 x 6144 bytes, ring factor 2 x 7/8, 300 GB/s, no latency
    m = tp_message_bytes(4, 2048, 6144)
    assert tp_time_per_micro_batch(48, m, 8, 300e9) == pytest.approx(48 * 4 * m * 1.75 / 300e9)


def test_link_is_nvlink_inside_the_node_and_the_nics_beyond():
    assert tp_link_rate(8, 8, 300e9, 25e9, 8) == 300e9
    assert tp_link_rate(16, 8, 300e9, 25e9, 8) == 8 * 25e9
    rates = tp_link_rate(np.array([4.0, 8.0, 16.0]), 8, 300e9, 25e9, 4)
    assert rates.tolist() == [300e9, 300e9, 100e9]


@given(st.floats(1e9, 1e12), st.floats(1e9, 1e12), st.sampled_from([2, 4, 8, 16]))
def test_allreduce_time_falls_as_bandwidth_rises(slow, fast, t):
    lo, hi = sorted((slow, fast))
    assert tp_allreduce_time(1e8, t, hi) <= tp_allreduce_time(1e8, t, lo)


@pytest.mark.parametrize("mode", ["none", "selective", "full"])
def test_at_one_way_the_activations_are_korthikantis_equation_one(mode):
    ours = tp_activation_bytes_per_layer(2048, 2, 4096, 32, 1, recompute=mode)
    assert ours == pytest.approx(activation_bytes_per_layer(2048, 2, 4096, 32, mode))


@pytest.mark.parametrize("mode", ["none", "selective", "full"])
def test_sequence_parallelism_divides_every_activation_by_t(mode):
    one = tp_activation_bytes_per_layer(2048, 1, 12288, 96, 1, sequence_parallel=True, recompute=mode)
    eight = tp_activation_bytes_per_layer(2048, 1, 12288, 96, 8, sequence_parallel=True, recompute=mode)
    assert eight == pytest.approx(one / 8)


def test_without_sequence_parallelism_ten_sbh_stay_replicated():
    sbh = 2048 * 1 * 12288
    assert tp_activation_bytes_per_layer(2048, 1, 12288, 96, 8, recompute="selective") == sbh * (10 + 3)
