"""Fused attention physics: the benchmarks' FLOP convention, the causal tile count, and the model's invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.physics.attention import (
    TILE,
    Direction,
    attention_flops,
    causal_pairs,
    fused_attention_time,
    packed_tiles,
    tile_pairs,
    unfused_attention_time,
)
from mlsysim.physics.bounds import Bound

FORWARD, BACKWARD, BOTH = (float(d) for d in Direction)


def test_flops_follow_flashattention_benchmark_convention():
    # benchmark_flash_attention.py: 4 b h s^2 d forward, halved when causal, x2.5 backward, x3.5 both
    b, h, s, d = 2, 16, 8192, 128
    forward = 4 * b * h * s**2 * d
    assert attention_flops(b, h, s, s, d, d, False, FORWARD) == forward
    assert attention_flops(b, h, s, s, d, d, True, FORWARD) == forward / 2
    assert attention_flops(b, h, s, s, d, d, False, BACKWARD) == 2.5 * forward
    assert attention_flops(b, h, s, s, d, d, True, BOTH) == 3.5 * forward / 2


def test_flops_match_cudnn_frontends_deepseek_v3_figure():
    # cudnn-frontend dsv3 on GB200: b 2, h 128, s 32k, d_qk 192, d_v 128, causal: 50.456 ms = 1743 TFLOPs/s
    # forward; 212.546 ms = 1076 TFLOPs/s backward (2 (3 d_qk + 2 d_v) per pair).
    forward = attention_flops(2, 128, 32768, 32768, 192, 128, True, FORWARD)
    backward = attention_flops(2, 128, 32768, 32768, 192, 128, True, BACKWARD)
    assert forward / 50.456e-3 / 1e12 == pytest.approx(1743, abs=0.5)
    assert backward / 212.546e-3 / 1e12 == pytest.approx(1076, abs=0.5)


def test_causal_pairs_keep_the_last_keys_for_every_query():
    assert causal_pairs(4.0, 4.0) == 8.0  # s^2 / 2
    assert causal_pairs(2.0, 6.0) == 2.0 + 2.0 * 4.0  # queries aligned to the last keys
    assert causal_pairs(6.0, 2.0) == 2.0  # the first four queries see nothing


def _brute_tiles(seq_q: int, seq_k: int) -> int:
    total = 0
    for i in range(math.ceil(seq_q / TILE)):
        last_key = (i + 1) * TILE - 1 + (seq_k - seq_q)
        total += 0 if last_key < 0 else min(math.ceil(seq_k / TILE), int(last_key // TILE) + 1)
    return total


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_causal_tiles_are_those_on_and_below_the_diagonal(seq_q, seq_k):
    assert tile_pairs(float(seq_q), float(seq_k), True) == _brute_tiles(seq_q, seq_k)


@given(st.integers(1, 40_000))
def test_causal_tiles_are_more_than_half_of_all(seq):
    causal, full = tile_pairs(float(seq), float(seq), True), tile_pairs(float(seq), float(seq), False)
    n = math.ceil(seq / TILE)
    assert causal == n * (n + 1) / 2
    assert full / 2 <= causal <= full


def test_a_query_shorter_than_a_tile_packs_the_heads_of_a_kv_head():
    # decoding: 32 query heads on 8 KV heads, one query row: 4 rows of one tile per KV head
    tiles, units = packed_tiles(1.0, 32.0, 8.0, 1.0, 8192.0, True, FORWARD)
    assert units == 8
    assert tiles == 8 * 8192 / TILE


CONSTANTS = {"scale": 0.9, "head_overhead": 200.0, "loop_overhead": 2.0, "ceiling": 0.75, "floor": 3e-6}


def _time(**shape):
    base = {"batch": 2.0, "heads": 16.0, "kv_heads": 16.0, "seq_q": 4096.0, "seq_k": 4096.0, "head_dim": 128.0,
            "head_dim_v": 128.0, "causal": 1.0, "direction": FORWARD, "element_bytes": 2.0, "peak_flops": 989.4e12,
            "bandwidth": 3.35e12, "compute_units": 132.0, **CONSTANTS}
    base.update(shape)
    return fused_attention_time(**base)


shapes = st.fixed_dictionaries({
    "batch": st.integers(1, 64).map(float), "heads": st.sampled_from([1.0, 8.0, 16.0, 32.0, 128.0]),
    "seq_q": st.integers(64, 65536).map(float), "head_dim": st.sampled_from([64.0, 128.0, 192.0, 256.0]),
    "causal": st.sampled_from([0.0, 1.0]), "direction": st.sampled_from([FORWARD, BACKWARD, BOTH]),
})


@settings(max_examples=200)
@given(shapes)
def test_efficiency_is_in_zero_one_and_below_the_ceiling(shape):
    shape = {**shape, "seq_k": shape["seq_q"], "kv_heads": shape["heads"], "head_dim_v": shape["head_dim"]}
    kernel = _time(**shape)
    assert 0 < kernel.efficiency <= 1
    if kernel.bound != Bound.MEMORY:
        assert kernel.efficiency <= CONSTANTS["ceiling"] + 1e-12
    assert kernel.time >= CONSTANTS["floor"]


@settings(max_examples=200)
@given(shapes, st.sampled_from(["batch", "heads", "seq_q", "head_dim"]), st.floats(1.0, 8.0))
def test_time_never_falls_when_a_dimension_grows(shape, name, factor):
    shape = {**shape, "kv_heads": shape["heads"]}
    grown = {**shape, name: shape[name] * factor}
    for s in (shape, grown):
        s["seq_k"], s["head_dim_v"] = s["seq_q"], s["head_dim"]
        s["kv_heads"] = s["heads"]
    assert _time(**grown).time >= _time(**shape).time * (1 - 1e-12)


def test_arrays_give_what_each_float_gives():
    seqs = np.array([512.0, 2048.0, 16384.0])
    many = _time(seq_q=seqs, seq_k=seqs)
    for i, s in enumerate(seqs):
        one = _time(seq_q=float(s), seq_k=float(s))
        assert many.time[i] == pytest.approx(one.time, rel=1e-12)
        assert many.bound[i] == one.bound


def test_a_tiny_call_runs_on_one_sm_and_decoding_is_bound_by_memory():
    tiny = _time(batch=1.0, heads=1.0, seq_q=64.0, seq_k=64.0)  # one tile: one SM of 132 at work
    assert tiny.bound == Bound.WAVES
    assert _time(batch=1.0, heads=1.0, seq_q=64.0, seq_k=64.0, floor=1e-3).bound == Bound.LAUNCH
    decode = _time(batch=64.0, heads=32.0, kv_heads=8.0, seq_q=1.0, seq_k=8192.0)
    assert decode.bound == Bound.MEMORY
    assert decode.time == pytest.approx(3e-6 + 64 * 8 * 8192 * 256 * 2 / 3.35e12, rel=0.01)


def test_few_work_units_leave_sms_idle():
    assert _time(batch=1.0, heads=4.0).bound == Bound.WAVES  # 4 x 32 query tiles < 132 SMs
    assert _time(batch=8.0, heads=16.0).bound == Bound.COMPUTE


def test_unfused_attention_is_memory_bound_at_small_head_dims_and_pays_every_score():
    kwargs = {"batch": 1.0, "heads": 16.0, "seq_q": 8192.0, "seq_k": 8192.0, "element_bytes": 2.0,
              "matmul_rate": 600e12, "peak_flops": 989.4e12, "bandwidth": 3.35e12}
    small = unfused_attention_time(head_dim=64.0, head_dim_v=64.0, direction=FORWARD, **kwargs)
    assert small.bound == Bound.MEMORY
    scores = 16 * 8192**2
    assert small.time == pytest.approx(scores * 256 / 600e12 + 4 * scores * 2 / 3.35e12)
    backward = unfused_attention_time(head_dim=64.0, head_dim_v=64.0, direction=BACKWARD, **kwargs)
    assert backward.time > small.time
