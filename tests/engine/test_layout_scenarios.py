"""Parallel layouts through the scenario engine: the same figures as the layout physics, the seed untouched."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import (
    Q_,
    Assumptions,
    DataParallelScaleOutScenario,
    Models,
    Scenarios,
    Systems,
    TransformerWorkload,
)
from mlsysim.core.exceptions import InputError
from mlsysim.physics.layout import layout_figures
from mlsysim.physics.records import records_from
from mlsysim.planning.layouts import node_figures, workload_shape

LLAMA = Models.Language.Llama3_70B
DGX = Systems.Nodes.DGX_H100
FLOP_MODEL = {**workload_shape(LLAMA), **node_figures(DGX, "bf16", 0.73)}


def worked_example(**layout):
    """docs/parallelism.md's worked example (Llama-3 70B, 64 DGX H100 nodes) as the physics and as a scenario.

    The scenario's step time T1 is the physics' FLOP-based micro-batch time times t p, so t_c is the same;
    recompute=selective with sequence parallelism stores what fused attention without recomputation stores;
    overlap=True lets the gradient sync overlap the last backward (the physics' default).
    """
    t, p = layout.get("tensor_parallel", 1), layout.get("pipeline_parallel", 1)
    reference = layout_figures(*records_from(**FLOP_MODEL, devices=512, sequence_parallel=True, flash_attention=True, **layout
    ))
    t1 = reference.terms.compute.micro_batch_time * t * p
    scenario = DataParallelScaleOutScenario(
        workload=LLAMA, precision="bf16", node=DGX, nodes=64, fabric=Systems.Fabrics.InfiniBand_NDR,
        intra_latency=Q_(0, "us"), inter_latency=Q_(0, "us"),
        per_device_batch=layout["micro_batch"], accumulation_steps=layout["micro_batches"],
        zero_stage=layout["zero_stage"], tensor_parallel=t, pipeline_parallel=p,
        pipeline_chunks=layout.get("pipeline_chunks", 1), sequence_parallel=1, recompute="selective",
        step_time=Q_(t1, "s"), training_time=Q_(1000, "hour"), optimizer="adam",
        memory_bandwidth=Q_(3.35, "TB/s"), device_memory=Q_(80, "GB"),
        assumptions=Assumptions(overlap=True),  # the gradient sync overlaps the last backward, as the page's
    )
    return reference, scenario


BEST = dict(tensor_parallel=4, pipeline_parallel=1, micro_batch=1, micro_batches=4, zero_stage=3)
PIPELINE = dict(tensor_parallel=8, pipeline_parallel=4, micro_batch=1, micro_batches=32, zero_stage=1)


@pytest.mark.parametrize("layout", [BEST, PIPELINE], ids=["t4-zero3", "t8-p4-zero1"])
def test_worked_example_through_a_scenario_equals_the_physics(layout):
    reference, scenario = worked_example(**layout)
    f = scenario.result.figures
    pairs = {
        "update_time": reference.update_time, "compute_time": reference.compute_time,
        "tensor_parallel_time": reference.tensor_time, "bubble_time": reference.bubble_time,
        "pipeline_transfer_time": reference.pipeline_time, "sharding_time": reference.sharding_time,
        "data_parallel_time": reference.data_time, "optimizer_time": reference.optimizer_time,
        "bubble_fraction": reference.bubble_time / reference.update_time, "data_parallel": reference.data_parallel,
        "memory_per_device": reference.memory_bytes, "state_memory": reference.state_bytes,
        "stage_activation_memory": reference.activation_bytes, "gather_buffer_memory": reference.buffer_bytes,
    }
    for name, expected in pairs.items():
        assert getattr(f, name) == pytest.approx(expected, rel=1e-12, abs=1e-15), name
    # the seven terms add up to the update (no synchronisation cost in the seed assumptions)
    terms = (f.compute_time, f.tensor_parallel_time, f.bubble_time, f.pipeline_transfer_time, f.sharding_time,
             f.data_parallel_time, f.optimizer_time)
    assert sum(terms) == pytest.approx(f.update_time, rel=1e-12)
    r = scenario.result
    assert r.global_batch == 512
    assert r.fits is True


def test_worked_example_figures_of_the_page():
    """The printed figures of docs/parallelism.md, through the scenario."""
    _, best = worked_example(**BEST)
    f = best.result.figures
    assert (round(f.update_time, 3), round(f.compute_time, 3), round(f.tensor_parallel_time, 4),
            round(f.sharding_time, 4)) == (6.162, 5.535, 0.5727, 0.0525)
    assert round(f.memory_per_device / 1e9, 1) == 49.6
    _, pipe = worked_example(**PIPELINE)
    g = pipe.result.figures
    assert (round(g.update_time, 3), round(g.bubble_time, 3), round(g.pipeline_transfer_time, 4),
            round(g.data_parallel_time, 4)) == (7.623, 0.644, 0.0235, 0.0827)
    # speedup = d (m T1 + t_opt,1) / T: samples per second over one device's (Adam: 28 B a parameter)
    one_device_adam = 70.6e9 * 28 / 3.35e12
    assert g.speedup == pytest.approx(16 * (32 * pipe.step_time.to("s").magnitude + one_device_adam) / g.update_time)


def test_explain_prints_every_layout_term_and_each_recomputes():
    from tests.engine.test_explain import steps, value_of

    _, scenario = worked_example(**PIPELINE)
    text = scenario.explain()
    names = [what for what, _, _ in steps(text)]
    for term in ("tensor-parallel time", "bubble time", "stage-to-stage transfers", "gradient synchronisation",
                 "optimizer step", "update", "memory", "speedup", "global batch"):
        assert term in names, term
    for what, operands, value in steps(text):
        if not value[:1].isdigit():
            continue
        assert value_of(operands) == pytest.approx(value_of(value), rel=2e-5, abs=1e-9), what


def test_seed_scenarios_take_the_data_parallel_model():
    s = Scenarios.Gpt2DataParallelFourNodes10GbE
    f = s.result.figures
    assert f.layout is None and math.isnan(f.tensor_parallel_time)
    assert s.result.tensor_ranks is None and s.result.bubble_time is None
    assert "layout: tensor-parallel size t" not in s.explain()


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (dict(tensor_parallel=3), "tensor_parallel", "(3 x 1 = 3) must divide the devices (32)"),
        (dict(tensor_parallel=2), "tensor_parallel", "heads (25) must be a multiple of tensor_parallel (2)"),
        (dict(pipeline_parallel=4, pipeline_chunks=16, accumulation_steps=4), "pipeline_parallel",
         "layers (48) must be at least pipeline_parallel x pipeline_chunks = 4 x 16 = 64"),
        (dict(pipeline_parallel=4, accumulation_steps=4, first_stage_layers=30, last_stage_layers=17),
         "first_stage_layers", "leave 1 of 48 layers for the other 2 stage(s)"),
        (dict(first_stage_layers=10), "first_stage_layers", "needs a pipeline"),
        (dict(reshard_after_forward=0), "reshard_after_forward", "give zero_stage=3"),
        (dict(pipeline_parallel=2, pipeline_chunks=2, accumulation_steps=3), "pipeline_chunks", "multiple of"),
        (dict(shard_group=2), "shard_group", "zero_stage is 0"),
        (dict(shard_group=3, zero_stage=3), "shard_group", "shard_group (3) must divide the data-parallel size"),
    ],
)
def test_layout_rules_are_one_line_errors_at_their_field(changes, field, words):
    with pytest.raises(InputError) as err:
        _ = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(**changes).result
    assert err.value.loc == (field,)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_layout_needs_a_transformer_workload():
    with pytest.raises(InputError, match="needs a transformer workload"):
        _ = DataParallelScaleOutScenario(
            workload=Models.Vision.ResNet50, precision="bf16", node="DGX_A100", nodes=1, mfu=0.5,
            training_samples=Q_(1e6, "sample"), per_device_batch=64, tensor_parallel=2,
        ).result


def test_sweep_rows_equal_scalar_solves_and_broken_layouts_do_not_fit():
    import mlsysim

    base = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(nodes=5, accumulation_steps=4, zero_stage=1)
    table = mlsysim.sweep(base, tensor_parallel=[1, 5, 2], pipeline_parallel=[1, 2, 4])
    df = table.to_pandas() if hasattr(table, "to_pandas") else table
    assert len(df) == 9
    for row in range(9):
        t, p = int(df["tensor_parallel"].iloc[row]), int(df["pipeline_parallel"].iloc[row])
        if t == 2:  # 25 heads: breaks a rule, kept as a row marked not valid
            assert not bool(df["layout_valid"].iloc[row])
            assert df["fits"].isna().iloc[row]  # no device memory given: an unknown fit
            continue
        r = base.variant(tensor_parallel=t, pipeline_parallel=p).result
        assert df["update_time"].iloc[row] == pytest.approx(r.update_time.magnitude, rel=1e-12)
        assert df["bubble_time"].iloc[row] == pytest.approx(r.bubble_time.magnitude, rel=1e-12)
        assert df["data_parallel"].iloc[row] == r.data_parallel
    assert np.isfinite(df["update_time"]).all()


GPT2_FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


@given(
    t=st.sampled_from([1, 5]),
    p=st.sampled_from([1, 2, 4, 8]),
    v=st.sampled_from([1, 2, 3]),
    m_per_p=st.integers(1, 4),
    zero=st.sampled_from([0, 1, 2, 3]),
    nodes=st.sampled_from([5, 10]),
    sp=st.sampled_from([0, 1]),
    recompute=st.sampled_from(["none", "selective", "full"]),
    overlap=st.booleans(),
)
@settings(max_examples=40, deadline=None)
def test_any_valid_layout_adds_up(t, p, v, m_per_p, zero, nodes, sp, recompute, overlap):
    """Invariants of every layout the rules accept: the terms add up, the batch is b m d, memory is its parts."""
    v = v if p > 1 else 1
    if 48 % (p * v):
        v = 1
    m = p * m_per_p
    r = GPT2_FOUR.variant(
        nodes=nodes, tensor_parallel=t, pipeline_parallel=p, pipeline_chunks=v, accumulation_steps=m,
        zero_stage=zero, sequence_parallel=sp if t > 1 else None,  # at t = 1 it does nothing: refused
        recompute=recompute, assumptions=Assumptions(overlap=overlap),
    ).result
    f = r.figures
    assert f.layout_valid
    terms = (f.compute_time, f.tensor_parallel_time, f.bubble_time, f.pipeline_transfer_time, f.sharding_time,
             f.data_parallel_time, f.optimizer_time, f.synchronization_time)
    assert sum(terms) == pytest.approx(f.update_time, rel=1e-12)
    assert f.compute_time + f.exposed_communication_time + f.synchronization_time + f.extra_time == pytest.approx(
        f.update_time, rel=1e-12)
    assert f.intra_time + f.inter_time == pytest.approx(f.exposed_communication_time, rel=1e-12, abs=1e-15)
    assert r.data_parallel * t * p == 8 * nodes
    assert r.global_batch == 16 * m * r.data_parallel
    assert f.memory_per_device == pytest.approx(f.state_memory + f.stage_activation_memory + f.gather_buffer_memory)
    assert f.bubble_fraction == pytest.approx(f.bubble_time / f.update_time)
    assert f.layout.bubble_fraction == pytest.approx((p - 1) / (v * m))
    assert 0 < r.efficiency <= 1 + 1e-12
    assert all(x >= 0 for x in terms)


def test_hsdp_gathers_stay_inside_the_node_and_the_replica_sync_crosses_nodes():
    """HSDP with one node per shard group: ZeRO-3's per-layer traffic is intra-node, the replicas' sync inter-node."""
    r = GPT2_FOUR.variant(nodes=5, accumulation_steps=4, zero_stage=3, shard_group=8,
                          pipeline_parallel=1).result
    f = r.figures
    assert f.sharding_time > 0 and f.data_parallel_time > 0
    assert f.intra_time == pytest.approx(f.sharding_time, rel=1e-12)
    assert f.inter_time == pytest.approx(f.data_parallel_time, rel=1e-12)
    full = GPT2_FOUR.variant(nodes=5, accumulation_steps=4, zero_stage=3, pipeline_parallel=1).result.figures
    assert full.intra_time == 0 and full.inter_time == pytest.approx(full.sharding_time + full.data_parallel_time)


def test_production_pipelines_evaluate():
    """Issue 29: uneven stages and fewer micro-batches than stages are layouts people run."""
    from mlsysim import Systems

    llama = TransformerWorkload(
        name="Llama 3 405B", parameters=Q_(405e9, "param"), layers=126, hidden_dim=16384, heads=128,
        seq_len=8192, vocab_size=128256,
    )
    job = DataParallelScaleOutScenario(
        workload=llama, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=1024, mfu=0.5,
        training_tokens=Q_(15.6e12, "token"), per_device_batch=1, accumulation_steps=16,
        tensor_parallel=8, pipeline_parallel=16, pipeline_chunks=4, zero_stage=1,
        first_stage_layers=7, last_stage_layers=7, flash_attention=1,
    )
    r = job.result
    assert r.figures.layout.terms.stage.layers == 8.0  # (126 - 7 - 7) / 14 stages
    balanced = job.variant(first_stage_layers=None, last_stage_layers=None).result
    assert balanced.figures.layout.terms.stage.layers == 8.0  # ceil(126 / 16)
    bloom = TransformerWorkload(
        name="BLOOM", parameters=Q_(176e9, "param"), layers=70, hidden_dim=14336, heads=112, seq_len=2048,
        vocab_size=250880,
    )
    ramp = DataParallelScaleOutScenario(
        workload=bloom, precision="bf16", node=Systems.Nodes.DGX_A100, nodes=48, mfu=0.5,
        training_samples=Q_(1e6, "sample"), per_device_batch=2, accumulation_steps=1,
        tensor_parallel=4, pipeline_parallel=12,
    ).result
    assert ramp.figures.layout.terms.stage.layers == 6.0  # ceil(70 / 12)
    assert ramp.figures.layout.bubble_fraction == pytest.approx(11.0)  # (p - 1) / m: fill and drain dominate
    assert 0.8 < ramp.bubble_fraction < 11 / 12  # the share of the update: 11 of 12 slots, less the other terms
    assert any("fewer micro-batches" in note for note in ramp.constraint_trace)


def test_full_recomputation_costs_compute():
    """Issue 29: t 8, p 4 with full recomputation has >= 25% more compute than without, where the step is
    priced from the operators (the products at their fitted ceiling); issue 40: a given mfu is a measured
    model FLOPs utilisation, which already holds the recomputation, so the same mfu gives the same compute."""
    from mlsysim import Systems

    job = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=8,
        training_tokens=Q_(1e12, "token"), per_device_batch=1, accumulation_steps=8,
        tensor_parallel=8, pipeline_parallel=4, recompute="none",
    )
    full = job.variant(recompute="full").result.compute_time
    none = job.result.compute_time
    assert full >= 1.25 * none
    measured = job.variant(mfu=0.5)
    assert measured.variant(recompute="full").result.compute_time == measured.result.compute_time


def test_two_micro_batches_on_four_stages_evaluate_with_a_note():
    """Issue 29: fewer micro-batches than stages is a legal schedule (fill and drain dominate)."""
    from mlsysim import Systems

    r = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=4,
        mfu=0.5, training_tokens=Q_(1e12, "token"), per_device_batch=1, accumulation_steps=2,
        tensor_parallel=8, pipeline_parallel=4,
    ).result
    assert r.figures.layout.bubble_fraction == pytest.approx(1.5)  # (p - 1) / m
    assert r.bubble_fraction == pytest.approx(r.bubble_time / r.update_time)  # 3 of 5 slots, less the rest
    stage = r.figures.layout.terms.compute.micro_batch_time + r.figures.layout.terms.tensor.micro_batch_time
    assert float(r.compute_time.to("s").magnitude + r.tensor_parallel_time.to("s").magnitude
                 + r.bubble_time.to("s").magnitude) == pytest.approx(5 * stage)  # (m + p - 1) slots
    assert any("fewer micro-batches (2) than pipeline stages (4)" in n for n in r.constraint_trace)


def test_the_notes_say_the_input_mfu_is_one_devices_and_give_the_jobs():
    from mlsysim import Systems

    r = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=2, mfu=0.45,
        training_tokens=Q_(1e12, "token"), per_device_batch=1,
    ).result
    note = next(n for n in r.constraint_trace if n.startswith("mfu 0.45 is the model FLOPs utilisation of one"))
    assert f"the job achieves MFU {r.achieved_mfu:.3f}" in note
    assert r.achieved_mfu < 0.45
