"""One layout's update: the breakdown adds up, arrays equal scalars, the rules and their messages."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.core.exceptions import InputError
from mlsysim.kernels.device import device_kernels
from mlsysim.physics.collectives import inter_node_cost, intra_node_cost, stage_time
from mlsysim.physics.layout import (
    LayoutFigures,
    check_layout,
    layout_figures,
    layout_mask,
)
from mlsysim.physics.operators import OperatorTimes
from mlsysim.physics.records import records_from

A100_NODE = dict(
    devices_per_node=8.0, peak_flops=312e12, memory_bandwidth=2.039e12, intra_bandwidth=300e9,
    nic_bandwidth=25e9, nics_per_node=8.0, math_efficiency=0.6,
)
GPT_175B = dict(parameters=174.6e9, layers=96.0, hidden=12288.0, heads=96.0, seq_len=2048.0, vocab=51200.0)
TIME_TERMS = ("compute_time", "tensor_time", "bubble_time", "pipeline_time", "sharding_time", "data_time",
              "optimizer_time")


def _figures(**layout):
    return layout_figures(*records_from(**GPT_175B, **A100_NODE, **layout))


@pytest.mark.parametrize(
    "layout",
    [
        dict(devices=1536.0, tensor_parallel=8.0, pipeline_parallel=12.0, micro_batches=96.0, recompute="full"),
        dict(devices=384.0, micro_batch=4.0, zero_stage=3.0, recompute="full"),
        dict(devices=512.0, tensor_parallel=8.0, pipeline_parallel=8.0, pipeline_chunks=3.0, micro_batches=64.0,
             zero_stage=1.0, sequence_parallel=True, recompute="selective"),
        dict(devices=1024.0, tensor_parallel=4.0, zero_stage=3.0, shard_group=8.0, backward_gathers=0.0),
    ],
)
def test_time_terms_add_up_to_the_update(layout):
    f = _figures(**layout)
    assert sum(getattr(f, name) for name in TIME_TERMS) == pytest.approx(f.update_time)
    assert f.memory_bytes == pytest.approx(f.state_bytes + f.activation_bytes + f.buffer_bytes)
    assert f.mfu == pytest.approx(f.model_flops / (f.update_time * layout["devices"]) / 312e12)


@pytest.mark.parametrize("operators", [{}, {"matmul_ceiling": 0.7, "compute_units": 108.0, "ffn_hidden": 49152.0,
                                            "kernels": device_kernels("A100", "bf16").constants}])
def test_an_array_of_layouts_equals_each_layout_alone(operators):
    t = np.array([1.0, 2.0, 8.0, 8.0, 8.0])
    p = np.array([1.0, 4.0, 2.0, 12.0, 1.0])
    z = np.array([0.0, 1.0, 3.0, 0.0, 2.0])
    m = np.array([1.0, 8.0, 4.0, 24.0, 2.0])
    many = _figures(devices=768.0, tensor_parallel=t, pipeline_parallel=p, zero_stage=z, micro_batches=m,
                    **operators)
    for i in range(len(t)):
        one = _figures(devices=768.0, tensor_parallel=float(t[i]), pipeline_parallel=float(p[i]),
                       zero_stage=float(z[i]), micro_batches=float(m[i]), **operators)
        for name in LayoutFigures._fields[:-2]:
            assert np.asarray(getattr(many, name))[i] == pytest.approx(getattr(one, name), rel=1e-12)
        for term_name, term in zip(many.terms._fields, many.terms, strict=True):
            alone = getattr(one.terms, term_name)
            for name, value in zip(term._fields, term, strict=True):
                if name == "operators":
                    for op, got in zip(OperatorTimes._fields, value, strict=True):
                        got = np.broadcast_to(got, t.shape)[i]
                        assert got == pytest.approx(getattr(alone.operators, op), rel=1e-12), op
                elif name != "experts":
                    got = np.broadcast_to(value, t.shape)[i]
                    assert got == pytest.approx(getattr(alone, name), rel=1e-12), f"{term_name}.{name}"


def test_plain_data_parallel_sync_is_the_seeds_allreduce_of_the_gradient():
    f = _figures(devices=64.0, data_overlap=0.0)
    grad = 2.0 * 174.6e9
    want = stage_time(grad, intra_node_cost(8, 300e9)) + stage_time(grad, inter_node_cost("ring", 8, 8, 25e9, 8))
    assert f.data_time == pytest.approx(want)
    assert f.tensor_time == f.bubble_time == f.pipeline_time == f.sharding_time == 0


def test_hsdp_sends_only_the_shard_across_nodes():
    # t = 1, d = 64 on 8 nodes, shard group of 8 = one node: replicas AllReduce G/8 over 8 nodes, one rank a node
    f = _figures(devices=64.0, zero_stage=3.0, shard_group=8.0, data_overlap=0.0)
    shard = 2.0 * 174.6e9 / 8
    want = stage_time(shard, inter_node_cost("ring", 1, 8, 25e9, 1))
    assert f.data_time == pytest.approx(want)


def test_tensor_parallel_beyond_the_node_is_slower_than_inside():
    inside = _figures(devices=64.0, tensor_parallel=8.0)
    across = _figures(devices=64.0, tensor_parallel=16.0)
    assert across.tensor_time > inside.tensor_time


def test_zero3_gathers_cost_more_with_fewer_samples_per_gather():
    big = _figures(devices=1536.0, micro_batch=4.0, zero_stage=3.0)
    small = _figures(devices=1536.0, micro_batch=1.0, zero_stage=3.0)
    assert small.sharding_time / small.update_time >= big.sharding_time / big.update_time


RULES = dict(devices=st.sampled_from([8, 16, 64, 96, 512]), t=st.sampled_from([0, 1, 2, 3, 4, 8, 16]),
             p=st.sampled_from([0, 1, 2, 3, 4, 8]), v=st.sampled_from([0, 1, 2, 3]), m=st.integers(0, 32),
             k=st.sampled_from([0, 2, 4, 8]))


@given(**RULES)
def test_the_mask_and_the_check_agree(devices, t, p, v, m, k):
    ok = bool(layout_mask(devices=devices, tensor_parallel=t, pipeline_parallel=p, heads=96, layers=96,
                          micro_batches=m, pipeline_chunks=v, shard_group=k))
    try:
        check_layout(devices=devices, tensor_parallel=t, pipeline_parallel=p, heads=96, layers=96,
                     micro_batches=m, pipeline_chunks=v, shard_group=k)
        raised = False
    except InputError:
        raised = True
    assert ok is not raised


def test_mask_over_arrays():
    mask = layout_mask(devices=64.0, tensor_parallel=np.array([8.0, 3.0, 8.0]), pipeline_parallel=np.array([2.0, 1.0, 8.0]),
                       heads=64.0, layers=80.0, micro_batches=np.array([4.0, 4.0, 4.0]))
    assert mask.tolist() == [True, False, True]  # 4 micro-batches on 8 stages: legal, the bubble dominates
    few_layers = layout_mask(devices=64.0, tensor_parallel=8.0, pipeline_parallel=np.array([4.0, 8.0]),
                             heads=64.0, layers=6.0, micro_batches=8.0)
    assert few_layers.tolist() == [True, False]  # 6 layers on 8 stages leave a stage without a layer


@pytest.mark.parametrize(
    ("kwargs", "field", "numbers"),
    [
        (dict(devices=64, tensor_parallel=3, pipeline_parallel=1, heads=96, layers=96, micro_batches=1),
         "tensor_parallel", ["3", "64"]),
        (dict(devices=64, tensor_parallel=8, pipeline_parallel=1, heads=28, layers=96, micro_batches=1),
         "tensor_parallel", ["28", "8"]),
        (dict(devices=96, tensor_parallel=8, pipeline_parallel=3, heads=64, layers=5, micro_batches=8,
              pipeline_chunks=2), "pipeline_parallel", ["5", "3"]),
        (dict(devices=64, tensor_parallel=8, pipeline_parallel=4, heads=64, layers=80, micro_batches=6,
              pipeline_chunks=2), "pipeline_chunks", ["6", "4"]),
        (dict(devices=64, tensor_parallel=8, pipeline_parallel=4, heads=64, layers=80, micro_batches=8,
              first_stage_layers=40, last_stage_layers=39), "first_stage_layers", ["80", "40 + 39"]),
        (dict(devices=64, tensor_parallel=8, pipeline_parallel=1, heads=64, layers=80, micro_batches=1,
              shard_group=3), "shard_group", ["3", "8"]),
    ],
)
def test_each_rule_names_both_numbers_and_the_field(kwargs, field, numbers):
    with pytest.raises(InputError) as caught:
        check_layout(**kwargs)
    assert caught.value.field == field
    text = str(caught.value)
    assert "\n" not in text
    for n in numbers:
        assert f"({n})" in text or f"= {n}" in text or f" {n}" in text


LAYOUTS = st.sampled_from([
    dict(devices=512.0, tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0),
    dict(devices=512.0, tensor_parallel=4.0, pipeline_parallel=8.0, pipeline_chunks=2.0, micro_batches=64.0),
    dict(devices=256.0, micro_batch=2.0, zero_stage=3.0, shard_group=8.0),
    dict(devices=64.0, tensor_parallel=16.0, micro_batches=4.0, zero_stage=2.0),
])


@given(LAYOUTS, st.floats(0.1, 10.0))
def test_faster_links_never_slow_an_update(layout, factor):
    base = _figures(**layout)
    fast = layout_figures(*records_from(**GPT_175B, **{**A100_NODE, "intra_bandwidth": 300e9 * max(factor, 1.0),
                                         "nic_bandwidth": 25e9 * max(factor, 1.0)}, **layout))
    assert fast.update_time <= base.update_time * (1 + 1e-12)


@given(LAYOUTS, st.floats(0.2, 0.9))
def test_better_kernels_never_slow_an_update(layout, u):
    slow = layout_figures(*records_from(**GPT_175B, **{**A100_NODE, "math_efficiency": u}, **layout))
    fast = layout_figures(*records_from(**GPT_175B, **{**A100_NODE, "math_efficiency": min(1.0, u + 0.1)}, **layout))
    assert fast.update_time < slow.update_time


@given(LAYOUTS)
def test_higher_zero_stages_never_hold_more_state(layout):
    states = [_figures(**{**layout, "zero_stage": float(z)}).state_bytes for z in range(4)]
    assert states == sorted(states, reverse=True)


@given(st.integers(2, 16), st.integers(1, 8))
def test_more_micro_batches_shrink_the_bubble_share(p, extra):
    lo = _figures(devices=8.0 * p, pipeline_parallel=float(p), micro_batches=float(p))
    hi = _figures(devices=8.0 * p, pipeline_parallel=float(p), micro_batches=float(p * (1 + extra)))
    assert hi.bubble_time / hi.update_time < lo.bubble_time / lo.update_time
    assert 0 < hi.mfu <= 1 and 0 < lo.mfu <= 1


def test_a_given_step_time_replaces_the_flop_based_compute():
    layout = dict(devices=512.0, tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0)
    derived = _figures(**layout)
    t_c = derived.compute_time / 32
    given = _figures(**layout, device_step_time=t_c * 32)  # one device would take t p times as long
    for name in LayoutFigures._fields[:-2]:
        assert getattr(given, name) == pytest.approx(getattr(derived, name), rel=1e-12)
    arrays = _figures(**layout, device_step_time=np.array([np.nan, 2 * t_c * 32]))
    assert arrays.compute_time.tolist() == pytest.approx([derived.compute_time, 2 * derived.compute_time])


@pytest.mark.parametrize("name", ["tensor_parallel", "pipeline_parallel", "pipeline_chunks"])
def test_sizes_below_one_are_refused_by_name(name):
    kwargs = dict(devices=64, tensor_parallel=8, pipeline_parallel=1, heads=64, layers=80, micro_batches=1)
    kwargs[name] = 0
    with pytest.raises(InputError, match=f"{name} must be a positive integer, got 0") as caught:
        check_layout(**kwargs)
    assert caught.value.field == name


def test_tensor_term_is_tp_time_per_micro_batch():
    from mlsysim.physics.tensor_parallel import tp_message_bytes, tp_time_per_micro_batch

    f = _figures(devices=512.0, tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, recompute="full",
                 intra_latency=2e-6)
    want = tp_time_per_micro_batch(24, tp_message_bytes(1, 2048, 12288), 8, 300e9, 2e-6, "full")
    assert f.terms.tensor.micro_batch_time == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("layers", "p", "first", "last", "slowest"),
    [
        (96, 8, None, None, 12.0),  # even: L / p
        (70, 12, None, None, 6.0),  # BLOOM-176B: 70 layers on 12 stages, the balanced cut
        (126, 16, 7, 7, 8.0),  # Llama 3 405B: one layer fewer on the first and the last stage
        (126, 16, None, None, 8.0),
        (128, 16, 4, 4, 9.0),  # 120 layers left for 14 stages: ceil(8.57)
        (32, 1, None, None, 32.0),
    ],
)
def test_the_slowest_stage_sets_the_pace(layers, p, first, last, slowest):
    from mlsysim.physics.layout import slowest_stage_layers

    nan = float("nan")
    one = slowest_stage_layers(float(layers), float(p), nan if first is None else float(first),
                               nan if last is None else float(last))
    assert one == slowest
    many = slowest_stage_layers(np.array([float(layers)] * 2), float(p),
                                nan if first is None else float(first), nan if last is None else float(last))
    assert many.tolist() == [slowest, slowest]


def test_uneven_stages_price_the_slowest_stage():
    base = dict(GPT_175B, **A100_NODE, devices=64.0, tensor_parallel=8.0, micro_batch=1.0, micro_batches=16.0)
    even = layout_figures(*records_from(**{**base, "layers": 80.0}, pipeline_parallel=8.0))
    uneven = layout_figures(*records_from(**{**base, "layers": 78.0}, pipeline_parallel=8.0))  # ceil(78/8) = 10, as 80/8
    assert uneven.terms.stage.layers == even.terms.stage.layers == 10.0
    # the slowest stage holds 10 of 78 layers: a larger share of the model than 10 of 80
    assert float(uneven.terms.sharding.parameters) > float(even.terms.sharding.parameters)


def test_fewer_micro_batches_than_stages_are_priced_by_fill_and_drain():
    two = _figures(devices=64.0, tensor_parallel=8.0, pipeline_parallel=8.0, micro_batches=2.0)
    one_stage_time = float(two.terms.compute.micro_batch_time + two.terms.tensor.micro_batch_time)
    # 1F1B: (m + p - 1) stage slots of forward and backward, the bubble (p - 1)/m = 3.5 of the compute
    assert float(two.bubble_fraction) == 3.5
    assert float(two.compute_time + two.tensor_time + two.bubble_time) == pytest.approx(9.0 * one_stage_time)
