"""FLOPs per sample, step time from peak FLOPs, one-device time: hand-computed figures."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics.compute import (
    cnn_flops_per_sample,
    one_device_training_time,
    samples_from_tokens,
    step_time_from_flops,
    transformer_flops_per_sample,
)

# Llama-3 8B (Llama Team 2024, Table 3): N = 8.03e9, L = 32, h = 4096, s = 8192.
N, L, H, S = 8.03e9, 32, 4096, 8192


def test_llama3_8b_flops_per_sample_by_hand():
    # 6 N s = 6 x 8.03e9 x 8192 = 3.9469056e14
    # 12 L h s^2 = 12 x 32 x 2^12 x 2^26 = 384 x 2^38 = 105,553,116,266,496
    assert transformer_flops_per_sample(N, L, H, S) == pytest.approx(
        3.9469056e14 + 105_553_116_266_496, rel=1e-15
    )


def test_attention_term_is_twelve_layers_hidden_seq_squared():
    with_attention = transformer_flops_per_sample(1e9, 10, 1000, 2000)
    assert with_attention - 6 * 1e9 * 2000 == pytest.approx(12 * 10 * 1000 * 2000**2)


def test_cnn_training_is_three_forwards():
    # ResNet-50: about 4.1e9 multiply-adds forward = 8.2e9 FLOPs; training 3x
    assert cnn_flops_per_sample(8.2e9) == pytest.approx(2.46e10)


def test_llama3_8b_step_time_on_h100_at_mfu_0_4_by_hand():
    # F b / (P u) = 5.00243676266496e14 x 1 / (989e12 x 0.4) = 1.26451889855... s
    flops = 5.00243676266496e14
    assert step_time_from_flops(flops, 1, 989e12, 0.4) == pytest.approx(
        1.2645188985502933, rel=1e-12
    )


def test_one_device_time_for_1e12_tokens_by_hand():
    # 1e12 tokens / 8192 = 122,070,312.5 samples; x 1.26451889855 s / 1 = 1.5436e8 s = 42,877.8 h
    samples = samples_from_tokens(1e12, 8192)
    assert samples == 122_070_312.5
    seconds = one_device_training_time(samples, 1.2645188985502933, 1)
    assert seconds / 3600 == pytest.approx(42_877.838, rel=1e-7)


def test_formulas_take_numpy_arrays():
    batch = np.array([1.0, 2.0, 4.0])
    times = step_time_from_flops(1e12, batch, 1e12, 0.5)
    np.testing.assert_allclose(times, [2.0, 4.0, 8.0])
    np.testing.assert_allclose(one_device_training_time(100.0, times, batch), [200.0] * 3)


@given(
    batch=st.integers(1, 512),
    mfu=st.floats(0.01, 1.0),
    samples=st.floats(1.0, 1e12),
)
def test_one_device_time_does_not_depend_on_the_batch(batch, mfu, samples):
    """A bigger batch makes each step longer and the steps fewer: the work is the same."""
    flops, peak = 5e14, 1e15
    t1 = step_time_from_flops(flops, batch, peak, mfu)
    total = one_device_training_time(samples, t1, batch)
    assert total == pytest.approx(samples * flops / (peak * mfu), rel=1e-12)
