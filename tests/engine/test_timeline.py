"""The timeline of one update: each stage's segments tile [0, update_time], each a share of a figure explain prints."""

import math
import warnings

import pytest

from mlsysim import Scenarios
from mlsysim.engine.io.overrides import apply_overrides
from mlsysim.engine.reports.timeline import KINDS, MAX_UNITS, figure_of, schedule, timeline, unit_of

LLAMA = [
    "workload=Llama3_70B", "node=DGX_H100", "fabric=InfiniBand_NDR", "nodes=64", "mfu=0.5",
    "per_device_batch=1", "step_time=none", "training_time=none", "training_tokens=1e12 token",
    "optimizer=adam", "memory_bandwidth=3.35 TB/s",
]
LAYOUTS = {
    "tensor": ["tensor_parallel=8", "accumulation_steps=4"],
    "1f1b": ["tensor_parallel=8", "pipeline_parallel=4", "accumulation_steps=8", "zero_stage=1"],
    "1f1b-few-micro-batches": ["tensor_parallel=8", "pipeline_parallel=8", "accumulation_steps=3"],
    "interleaved": ["tensor_parallel=8", "pipeline_parallel=4", "pipeline_chunks=2", "accumulation_steps=8"],
    "zero3": ["tensor_parallel=4", "zero_stage=3", "accumulation_steps=4"],
    "zero3-pipeline-full-recompute": ["tensor_parallel=8", "pipeline_parallel=2", "zero_stage=3",
                                      "accumulation_steps=4", "recompute=full"],
    "hsdp-realistic": ["zero_stage=3", "shard_group=8", "accumulation_steps=2", "assumptions=realistic"],
    "1f1b-realistic": ["tensor_parallel=8", "pipeline_parallel=4", "accumulation_steps=8", "zero_stage=1",
                       "assumptions=realistic"],
}
DATA_PARALLEL = {
    "four-nodes-overlap-costs": [
        "nodes=4", "inter_bandwidth=100 Gbps", "accumulation_steps=4", "optimizer=adam",
        "memory_bandwidth=3 TB/s", "assumptions.overlap=true", "assumptions.bucket_copies=true",
        "assumptions.interference=0.1", "assumptions.straggler_cv=0.05",
    ],
    "first-bucket": ["nodes=2", "inter_bandwidth=100 Gbps", "assumptions.first_bucket_size=1 MB"],
    "realistic": ["nodes=8", "inter_bandwidth=200 Gbps", "assumptions=realistic"],
}
OPERATORS = {  # steps priced operator by operator (no step_time, no mfu)
    "operators-data-parallel": (["step_time=none", "training_time=none", "training_tokens=1e9 token",
                                 "node=DGX_H100", "nodes=2", "accumulation_steps=2"], "Gpt2DataParallelFourNodes10GbE"),
    "operators-1f1b-fp8": ([x for x in LLAMA if not x.startswith("mfu")]
                           + ["matmul_format=fp8", "tensor_parallel=8", "pipeline_parallel=4", "accumulation_steps=8",
                              "zero_stage=1", "flash_attention=1"], "Gpt2DataParallelOneNode"),
    "operators-zero3-unfused": ([x for x in LLAMA if not x.startswith("mfu")]
                                + ["tensor_parallel=4", "zero_stage=3", "accumulation_steps=4"],
                                "Gpt2DataParallelOneNode"),
}
PARALLEL = {  # context parallelism's ring and expert parallelism's all-to-alls, exposed per micro-batch
    "context-parallel-across-nodes": ["workload=Llama3_8B", "node=DGX_H100", "nodes=2", "per_device_batch=1",
                                      "accumulation_steps=4", "tensor_parallel=2", "context_parallel=8",
                                      "flash_attention=1", "recompute=full", "training_tokens=1e12 token"],
    "context-parallel-pipeline": [*LLAMA, "tensor_parallel=8", "context_parallel=4", "pipeline_parallel=4",
                                  "accumulation_steps=8", "zero_stage=1", "fabric=none", "inter_bandwidth=100 Gbps"],
    "deepseek-v3-expert-parallel": ["workload=DeepSeek_V3", "node=HGX_H800", "nodes=32", "per_device_batch=1",
                                    "accumulation_steps=32", "pipeline_parallel=4", "expert_parallel=64",
                                    "zero_stage=1", "flash_attention=1", "matmul_format=fp8",
                                    "step_time=none", "training_time=none", "training_tokens=1e12 token"],
}
SEEDS = Scenarios.names()


def scenario(sets, base="Gpt2DataParallelOneNode"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return apply_overrides(Scenarios.get(base), list(sets))


def cases():
    out = [pytest.param(Scenarios.get(name), id=name) for name in SEEDS]
    out += [pytest.param(scenario(sets), id=name) for name, sets in DATA_PARALLEL.items()]
    out += [pytest.param(scenario(LLAMA + sets), id=name) for name, sets in LAYOUTS.items()]
    out += [pytest.param(scenario(sets, base), id=name) for name, (sets, base) in OPERATORS.items()]
    out += [pytest.param(scenario(sets), id=name) for name, sets in PARALLEL.items()]
    return out


@pytest.mark.parametrize("name", list(OPERATORS))
def test_a_step_from_the_operators_splits_each_compute_segment_by_operator_class(name):
    """The compute is drawn as matrix products, attention, casts and element-wise work, in proportion to the
    operator times of the step, and still adds up to compute_time."""
    sets, base = OPERATORS[name]
    r = scenario(sets, base).result
    ops = r.job.operators
    assert ops is not None
    if r.figures.layout is not None:  # a layout prices t_c from the operators at its own t, b and stage
        ops = r.figures.layout.terms.compute.operators
        assert float(ops.attention_time) > 0
    classes = {"matmul": ops.matmul_time, "attention": ops.attention_time, "cast": ops.cast_time,
               "elementwise": ops.memory_time}
    total = float(ops.total)
    for row in timeline(r).rows:
        assert not any(seg.kind == "compute" for seg in row.segments)
        drawn = {kind: math.fsum(seg.duration for seg in row.segments if seg.kind == kind) for kind in classes}
        compute = math.fsum(drawn.values())
        assert compute == pytest.approx(float(r.figures.compute_time), rel=1e-9)
        for kind, time in classes.items():
            assert drawn[kind] == pytest.approx(compute * float(time) / total, rel=1e-9, abs=1e-15), kind
            assert (drawn[kind] > 0) == (float(time) > 0), kind


UPDATE_FIGURES = {  # the terms explain adds up to the update, on each model
    "layout": ("compute_time", "tensor_parallel_time", "context_parallel_time", "expert_parallel_time", "bubble_time", "pipeline_transfer_time",
               "sharding_time", "data_parallel_time", "optimizer_time", "synchronization_time"),
    "overlap": ("compute_time", "exposed_communication_time", "interference_time", "bucket_copy_time",
                "optimizer_time", "synchronization_time"),
    "no overlap": ("compute_time", "intra_time", "inter_time", "first_bucket_time", "interference_time",
                   "bucket_copy_time", "optimizer_time", "synchronization_time"),
}


def update_figures(result):
    if result.figures.layout is not None:
        return UPDATE_FIGURES["layout"]
    return UPDATE_FIGURES["overlap" if result.choices.overlap else "no overlap"]


@pytest.mark.parametrize("s", cases())
def test_each_stage_tiles_the_update_and_sums_to_the_update_time(s):
    r = s.result
    line = timeline(r)
    update = r.update_time.to("s").magnitude
    assert line.update_time == r.figures.update_time == pytest.approx(update, rel=1e-12)
    stages = int(r.pipeline_stages or 1)
    assert len(line.rows) == stages == line.stages
    for row in line.rows:
        assert row.segments[0].start == 0.0
        for before, after in zip(row.segments, row.segments[1:], strict=False):
            assert after.start == pytest.approx(before.end, rel=0, abs=1e-12 * update), (before, after)
        assert all(seg.duration > 0 and seg.kind in KINDS for seg in row.segments)
        assert math.fsum(seg.duration for seg in row.segments) == pytest.approx(update, rel=1e-9)
        assert row.segments[-1].end == pytest.approx(update, rel=1e-9)


@pytest.mark.parametrize("s", cases())
def test_a_rows_segments_of_one_figure_add_up_to_that_figure(s):
    """Every update term explain prints is the sum of the segments drawn from it, on every stage."""
    r = s.result
    for row in timeline(r).rows:
        assert {seg.figure for seg in row.segments} <= set(update_figures(r))
        for name in update_figures(r):
            drawn = math.fsum(seg.duration for seg in row.segments if seg.figure == name)
            assert drawn == pytest.approx(figure_of(r, name), rel=1e-9, abs=1e-15), (row.label, name)
        for seg in row.hidden:
            assert seg.duration == pytest.approx(figure_of(r, seg.figure), rel=1e-12)
            assert seg.start >= 0 and seg.end <= r.figures.update_time


@pytest.mark.parametrize("name", ["1f1b", "interleaved", "zero3-pipeline-full-recompute", "1f1b-few-micro-batches"])
def test_each_segment_is_the_share_of_the_figure_explain_prints(name):
    """Forward t_c / 3v, backward 2 t_c / 3v, the forward's 2 of c all-reduces, one transfer T_p2p / 2(vm + p - 1),
    and each stage idle for exactly the bubble (p - 1)/v (t_c + t_tp)."""
    r = scenario(LLAMA + LAYOUTS[name]).result
    f = r.figures
    q, a = f.layout.terms, f.layout.records.layout
    p, v, m = (int(float(getattr(a, k))) for k in ("pipeline_parallel", "pipeline_chunks", "micro_batches"))
    t_c, t_tp, c = q.compute.micro_batch_time, q.tensor.micro_batch_time, q.tensor.collectives
    send = f.pipeline_transfer_time / (2 * (v * m + p - 1))
    want = {
        ("compute", "forward"): t_c / 3 / v,
        ("compute", "backward"): 2 * t_c / 3 / v,
        ("tensor", "tensor-parallel all-reduces (forward)"): t_tp * 2 / c / v,
        ("tensor", "tensor-parallel all-reduces (backward)"): t_tp * (c - 2) / c / v,
        ("pipeline", "send activations to the next stage"): send,
        ("pipeline", "send gradients to the previous stage"): send,
    }
    line = timeline(r)
    for s, row in enumerate(line.rows):
        seen = set()
        for seg in row.segments:
            key = (seg.kind, seg.label.split(", ")[0])
            if key in want:
                assert seg.duration == pytest.approx(want[key], rel=1e-12), (row.label, seg)
                seen.add(key)
        assert seen == set(want)
        idle = math.fsum(seg.duration for seg in row.segments if seg.kind == "idle")
        assert idle == pytest.approx(f.bubble_time, rel=1e-12)
        # stage s waits s forwards (and their transfers) for its first micro-batch
        first = next(seg for seg in row.segments if seg.kind == "compute")
        gather = next((seg.duration for seg in row.segments if seg.kind == "sharding"), 0.0)
        forward = t_c / 3 / v + t_tp * 2 / c / v + send
        assert first.start == pytest.approx(s * forward + gather, rel=1e-9)


def test_the_data_parallel_row_is_the_micro_steps_then_the_allreduce():
    r = Scenarios.get("Gpt2GradientAccumulationOneNode").result
    (row,) = timeline(r).rows
    steps = [seg for seg in row.segments if seg.kind == "compute"]
    assert len(steps) == 4
    assert all(seg.duration == pytest.approx(r.model_inputs.step_time, rel=1e-12) for seg in steps)
    assert [seg.kind for seg in row.segments] == ["compute"] * 4 + ["data"]
    assert row.hidden == ()


def test_the_hidden_allreduce_is_drawn_under_the_last_backward_and_not_added():
    r = scenario(DATA_PARALLEL["four-nodes-overlap-costs"]).result
    (row,) = timeline(r).rows
    (hidden,) = row.hidden
    assert hidden.duration == pytest.approx(r.figures.hidden_communication_time, rel=1e-12)
    assert hidden.end == pytest.approx(r.compute_time.to("s").magnitude, rel=1e-12)


def test_a_long_update_is_drawn_with_its_phases_collapsed_and_still_tiles():
    r = scenario(LLAMA + ["tensor_parallel=8", "pipeline_parallel=4", "accumulation_steps=512"]).result
    line = timeline(r)
    update = r.update_time.to("s").magnitude
    for row in line.rows:
        assert len(row.segments) < 12 * MAX_UNITS
        assert math.fsum(seg.duration for seg in row.segments) == pytest.approx(update, rel=1e-9)
    assert {seg.label for seg in line.rows[0].segments if seg.kind == "compute"} >= {
        "forward (steady 1F1B: 509 micro-batches)", "backward (steady 1F1B: 509 micro-batches)"}
    full = timeline(r, max_units=10_000)
    assert len(full.rows[0].segments) > 4 * 512


def test_max_rows_keeps_the_first_and_the_last_stage():
    r = scenario(LLAMA + ["tensor_parallel=8", "pipeline_parallel=8", "accumulation_steps=8"]).result
    line = timeline(r, max_rows=3)
    assert [row.label for row in line.rows] == ["stage 1", "stage 5", "stage 8"]
    assert line.stages == 8


@pytest.mark.parametrize(("p", "v", "m"), [(4, 1, 8), (4, 1, 2), (8, 1, 3), (1, 1, 4), (4, 2, 8), (4, 2, 4),
                                            (2, 4, 4), (8, 2, 16), (4, 3, 8), (5, 3, 10)])
@pytest.mark.parametrize(("f", "b"), [(1.0, 2.0), (1.0, 1.0), (1.0, 0.3), (0.7, 3.1)])
def test_the_schedule_keeps_its_dependencies_and_takes_the_models_time(p, v, m, f, b):
    """Megatron's 1F1B and interleaved schedules with uniform units: (M + p - 1)(f + b) in all, each stage
    idle (p - 1)(f + b), whatever the ratio of forward to backward; no unit before the one it needs."""
    rows = schedule(p, v, m, f, b)
    units = v * m
    ends = {}
    for s, ops in enumerate(rows):
        assert sorted(op.k for op in ops if not op.backward) == list(range(units))
        assert sorted(op.k for op in ops if op.backward) == list(range(units))
        for before, after in zip(ops, ops[1:], strict=False):
            assert after.start >= before.start + (b if before.backward else f) - 1e-12
        for op in ops:
            mb, chunk = unit_of(op.k, p, v, op.backward)
            ends[(op.backward, mb, chunk, s)] = (op.start, op.start + (b if op.backward else f))
    for (backward, mb, chunk, s), (start, _) in ends.items():
        if not backward:
            need = (False, mb, chunk, s - 1) if s else (False, mb, chunk - 1, p - 1) if chunk else None
        elif s < p - 1:
            need = (True, mb, chunk, s + 1)
        else:
            need = (True, mb, chunk + 1, 0) if chunk < v - 1 else (False, mb, chunk, s)
        assert need is None or start >= ends[need][1] - 1e-12, (backward, mb, chunk, s)
    span = max(end for _, end in ends.values())
    assert span == pytest.approx((units + p - 1) * (f + b), rel=1e-12)
    for s, ops in enumerate(rows):
        assert ops[0].start == pytest.approx(s * f, rel=1e-12, abs=0)  # s forwards late


def test_the_interleaved_units_are_megatrons_order():
    assert [unit_of(k, 2, 2) for k in range(8)] == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    assert [unit_of(k, 2, 2, backward=True) for k in range(4)] == [(0, 1), (1, 1), (0, 0), (1, 0)]


@pytest.mark.parametrize("name", list(PARALLEL))
def test_the_ring_and_the_all_to_alls_are_drawn_per_micro_batch_and_add_up(name):
    """Each unit carries its share of t_cp (1 of n_kv ring passes in the forward) and of t_ep (2 of 4 all-to-alls in
    the forward); their segments add up to the figures explain prints, and the idle time is still the bubble
    (p - 1)/v (t_c + t_tp + t_cp + t_ep)."""
    r = scenario(PARALLEL[name]).result
    f = r.figures
    q, a = f.layout.terms, f.layout.records.layout
    kind, figure, t_x = (("experts", "expert_parallel_time", q.experts.micro_batch_time) if "expert" in name
                         else ("context", "context_parallel_time", q.context.micro_batch_time))
    assert float(t_x) > 0 and figure_of(r, figure) > 0.01 * float(f.update_time)
    v, m = int(float(a.pipeline_chunks)), int(float(a.micro_batches))
    forward_share = 2 / 4 if kind == "experts" else 1 / (4 if a.recompute in ("full", "selective") else 3)
    for row in timeline(r).rows:
        drawn = [seg for seg in row.segments if seg.kind == kind]
        assert math.fsum(seg.duration for seg in drawn) == pytest.approx(figure_of(r, figure), rel=1e-9)
        if v * m <= MAX_UNITS:
            forwards = [seg for seg in drawn if "(forward" in seg.label]
            assert len(forwards) == v * m
            assert forwards[0].duration == pytest.approx(float(t_x) * forward_share / v, rel=1e-12)
        idle = math.fsum(seg.duration for seg in row.segments if seg.kind == "idle")
        assert idle == pytest.approx(float(f.bubble_time), rel=1e-9)
