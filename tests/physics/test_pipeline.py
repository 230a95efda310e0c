"""Pipeline parallelism: the bubble, stage-to-stage transfers and the first stage's activations."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.pipeline import (
    bubble_fraction,
    first_stage_activation_bytes,
    in_flight_micro_batches,
    p2p_message_bytes,
    p2p_time,
    pipeline_compute_time,
    pipeline_link_rate,
)


def test_bubble_of_1f1b_and_interleaved():
    assert bubble_fraction(8, 64) == 7 / 64
    assert bubble_fraction(8, 64, 3) == 7 / (3 * 64)
    assert bubble_fraction(1, 5) == 0


@given(st.integers(1, 64), st.integers(1, 512), st.integers(1, 8))
def test_pipelined_time_is_the_ideal_time_plus_the_bubble(p, m, v):
    ideal = m * 0.25
    assert pipeline_compute_time(0.25, p, m, v) == pytest.approx(ideal * (1 + bubble_fraction(p, m, v)))


@given(st.integers(2, 64), st.integers(1, 512))
def test_more_chunks_never_lengthen_the_bubble(p, m):
    assert bubble_fraction(p, m, 2) <= bubble_fraction(p, m, 1)


def test_no_pipeline_no_transfers():
    assert p2p_time(1e8, 25e9, 1, 32) == 0


def test_transfers_by_hand():
    msg = p2p_message_bytes(1, 2048, 12288, 8)
    assert msg == 2 * 2048 * 12288 / 8
    # p = 4, m = 8, v = 2: 2 (2 x 8 + 3) = 38 transfers
    assert p2p_time(msg, 25e9 / 8, 4, 8, 2, 1e-6) == pytest.approx(38 * (1e-6 + msg / (25e9 / 8)))


def test_pipeline_crosses_nodes_when_a_replica_spans_more_than_one():
    assert pipeline_link_rate(2, 4, 8, 300e9, 25e9, 8) == 300e9
    assert pipeline_link_rate(8, 4, 8, 300e9, 25e9, 8) == 25e9
    assert pipeline_link_rate(np.array([2.0, 8.0]), 4, 8, 300e9, 25e9, 8).tolist() == [300e9, 25e9]


def test_first_stage_holds_p_micro_batches_of_its_layers():
    assert in_flight_micro_batches(8, 3) == 3
    assert in_flight_micro_batches(8, 64) == 8
    # 1F1B with m >= p: all L layers' worth of one micro-batch
    assert first_stage_activation_bytes(96, 1e8, 8, 64) == pytest.approx(96 * 1e8)
    # interleaved: times 1 + (p-1)/(p v)
    assert first_stage_activation_bytes(96, 1e8, 8, 64, 3) == pytest.approx(96 * 1e8 * (1 + 7 / 24))
