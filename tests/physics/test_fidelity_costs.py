"""The opt-in costs of issue 12: optimizer step, host jitter, interference, transport."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.collectives import TRANSPORT_EFFICIENCY
from mlsysim.physics.optimizer import OPTIMIZER_BYTES_PER_PARAMETER, optimizer_step_time
from mlsysim.physics.overlap import interference_delay
from mlsysim.physics.synchronization import (
    INPUT_PIPELINE_JITTER,
    jittered_straggler_delay,
    straggler_delay,
)


def test_optimizer_step_time_is_bytes_over_bandwidth():
    # BERT-large (330M) with LAMB on a V100 (900 GB/s): 330e6 x 48 B / 900e9 B/s = 17.6 ms
    assert optimizer_step_time(
        330e6, OPTIMIZER_BYTES_PER_PARAMETER["lamb"], 900e9
    ) == pytest.approx(17.6e-3)
    assert optimizer_step_time(1e9, 28.0, math.inf) == 0.0


def test_optimizer_bytes_follow_the_update_equations():
    assert OPTIMIZER_BYTES_PER_PARAMETER["sgd"] == 5 * 4
    assert OPTIMIZER_BYTES_PER_PARAMETER["adam"] == 7 * 4
    assert OPTIMIZER_BYTES_PER_PARAMETER["lamb"] > OPTIMIZER_BYTES_PER_PARAMETER["adam"]


@given(
    st.floats(1e-4, 10.0),
    st.integers(1, 64),
    st.integers(1, 4096),
    st.one_of(st.just(0.0), st.floats(1e-6, 0.2)),
)
def test_jitter_zero_is_the_proportional_straggler_term(t1, acc, n, cv):
    assert jittered_straggler_delay(t1, acc, n, cv, 0.0) == pytest.approx(
        straggler_delay(t1, acc, n, cv), rel=1e-12, abs=1e-300
    )


@given(st.floats(1e-3, 1.0), st.floats(1e-4, 0.05), st.integers(2, 1024))
def test_jitter_costs_fast_steps_most(t1, jitter, n):
    """The same absolute jitter is a larger share of a shorter step."""
    slow = jittered_straggler_delay(2 * t1, 1, n, 0.0, jitter) / (2 * t1)
    fast = jittered_straggler_delay(t1, 1, n, 0.0, jitter) / t1
    assert fast > slow


def test_jitter_is_zero_for_one_device_and_vectorizes():
    assert jittered_straggler_delay(0.1, 4, 1, 0.03, 0.01) == 0.0
    out = jittered_straggler_delay(np.array([0.1, 0.2]), 1, np.array([8, 8]), 0.0, 0.01)
    assert out[0] == pytest.approx(out[1]) == pytest.approx(0.01 * math.sqrt(2 * math.log(8)))


def test_interference_scales_the_hidden_communication():
    assert interference_delay(0.010, 0.19) == pytest.approx(0.0019)
    assert interference_delay(0.0, 0.19) == 0.0


def test_transport_tcp_keeps_half_of_rdma():
    assert TRANSPORT_EFFICIENCY == {"rdma": 1.0, "tcp": 0.5}


@pytest.mark.parametrize("pipeline", ["device", "synthetic"])
def test_inputs_prepared_off_the_host_bring_no_host_jitter(pipeline):
    assert INPUT_PIPELINE_JITTER == {"real": 1.0, "device": 0.0, "synthetic": 0.0}
    p = INPUT_PIPELINE_JITTER[pipeline]
    assert jittered_straggler_delay(0.1, 2, 16, 0.03, p * 0.01) == pytest.approx(
        straggler_delay(0.1, 2, 16, 0.03)
    )
    real = INPUT_PIPELINE_JITTER["real"]
    assert jittered_straggler_delay(0.1, 2, 16, 0.03, real * 0.01) > straggler_delay(
        0.1, 2, 16, 0.03
    )
