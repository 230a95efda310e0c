"""Activation memory per layer (Korthikanti et al. 2022): hand-computed figures."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim import InputError
from mlsysim.physics.activations import (
    RECOMPUTE_MODES,
    activation_bytes,
    activation_bytes_per_layer,
    check_recompute,
)

# Llama-3 8B: 32 layers, h = 4096, a = 32 heads, s = 8192; micro-batch 1.
# s b h = 8192 x 4096 = 2^25, so 32 layers x s b h = 2^30 bytes per unit.


def test_llama3_8b_activations_without_recomputation():
    # 34 + 5 a s / h = 34 + 5 x 32 x 8192 / 4096 = 34 + 320 = 354; 354 x 2^30
    assert activation_bytes(32, 8192, 1, 4096, 32, "none") == 354 * 2**30 == 380_104_605_696


def test_llama3_8b_activations_with_selective_recomputation():
    assert activation_bytes(32, 8192, 1, 4096, 32, "selective") == 34 * 2**30 == 36_507_222_016


def test_llama3_8b_activations_with_full_recomputation():
    assert activation_bytes(32, 8192, 1, 4096, 32, "full") == 2 * 2**30 == 2_147_483_648


def test_gpt3_per_layer_matches_the_papers_formula():
    # GPT-3 175B: s = 2048, h = 12288, a = 96, b = 1: sbh (34 + 5 x 96 x 2048 / 12288) = sbh x 114
    sbh = 2048 * 12288
    assert activation_bytes_per_layer(2048, 1, 12288, 96) == pytest.approx(sbh * 114)


def test_recompute_names_are_checked():
    assert check_recompute(" Selective ") == "selective"
    with pytest.raises(InputError, match="recompute.*none, selective, full"):
        check_recompute("partial")


def test_arrays_of_batches():
    got = activation_bytes_per_layer(1024, np.array([1, 2, 8]), 1024, 16, "selective")
    np.testing.assert_array_equal(got, 34 * 1024 * 1024 * np.array([1, 2, 8]))


@given(
    s=st.integers(1, 32768),
    b=st.integers(1, 64),
    h=st.integers(64, 16384),
    a=st.integers(1, 128),
)
def test_more_recomputation_never_keeps_more(s, b, h, a):
    none, selective, full = (activation_bytes_per_layer(s, b, h, a, m) for m in RECOMPUTE_MODES)
    assert none >= selective >= full > 0
