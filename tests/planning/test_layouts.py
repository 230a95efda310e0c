"""``mlsysim.plan`` over parallel layouts, the one layout search: the layout rules first, then only the layouts
they keep priced, equals a brute force over the same space (every layout of the materialised sweep, each row
the scalar solve's; the rules one layout at a time)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlsysim
from mlsysim import (
    Q_,
    Assumptions,
    DataParallelScaleOutScenario,
    InfeasiblePlanError,
    Models,
    Systems,
)
from mlsysim.core.exceptions import InputError
from mlsysim.physics.layout import check_layout, layout_figures
from mlsysim.physics.records import records_from
from mlsysim.planning.space import figures
from mlsysim.planning.sweep import prepare_space
from tests.physics.test_frontier_layouts import deepseek
from tests.planning.conftest import variant_of_row

LLAMA3_70B = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
DGX_H100 = dict(devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.73, memory_bandwidth=3.35e12,
                intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0)


def worked_example(**given):
    """docs/parallelism.md's worked example as a scenario: Llama-3 70B's parameters and widths with
    multi-head attention and a plain 4h MLP (the shape of the page's arithmetic), u = 0.73, 64 DGX H100
    nodes with links of no latency, Adam, the gradient sync under the backward."""
    base = dict(
        workload=Models.Language.Llama3_70B.variant(kv_heads=None, ffn_hidden=None, gated_mlp=False),
        precision="bf16", node=Systems.Nodes.DGX_H100, nodes=64, fabric=Systems.Fabrics.InfiniBand_NDR,
        per_device_batch=1, accumulation_steps=4, mfu=0.73, training_tokens=Q_(1e12, "token"),
        device_memory=Q_(80, "GB"), tensor_parallel=4, zero_stage=3, sequence_parallel=1, flash_attention=1,
        recompute="none", intra_latency=Q_(0, "s"), inter_latency=Q_(0, "s"), optimizer="adam",
        assumptions=Assumptions(overlap=True),
    )
    return DataParallelScaleOutScenario(**(base | given))


SMALL = {
    "nodes": [8, 64], "tensor_parallel": [2, 4, 8], "context_parallel": [1, 2], "pipeline_parallel": [1, 2, 4, 8],
    "pipeline_chunks": [1, 2], "per_device_batch": [1, 2], "accumulation_steps": [1, 4, 8, 16, 32],
    "zero_stage": [0, 1, 3], "recompute": ["none", "selective", "full"],
}
MOE = {
    "nodes": [64, 128], "tensor_parallel": [1, 2], "context_parallel": [1, 2], "pipeline_parallel": [8, 16],
    "pipeline_chunks": [1, 2], "expert_parallel": [1, 8, 64, 256], "expert_tensor_parallel": [1, 2],
    "per_device_batch": [1, 2], "accumulation_steps": [16, 32], "zero_stage": [1, 3], "recompute": ["none", "full"],
}


def obeys_the_rules(scenario, row):
    """:func:`check_layout` of one layout (Python ints): whether it obeys the layout rules."""
    w = scenario.workload
    try:
        check_layout(
            devices=8 * row["nodes"], tensor_parallel=row["tensor_parallel"],
            pipeline_parallel=row["pipeline_parallel"], heads=w.heads, layers=w.layers,
            micro_batches=row["accumulation_steps"], pipeline_chunks=row["pipeline_chunks"],
            context_parallel=row["context_parallel"], seq_len=w.seq_len, experts=w.experts or 0,
            expert_parallel=row.get("expert_parallel", 1), expert_tensor_parallel=row.get("expert_tensor_parallel", 1),
        )
    except InputError:
        return False
    return True


def brute_force(scenario, axes, global_batch=None):
    """The fastest layout that obeys the rules, fits and (given) makes the global batch, ties to the first in
    grid order, over the whole materialised sweep; and how many layouts the rules break and how many are kept."""
    table = mlsysim.sweep(scenario, **axes)
    rows = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
    valid = np.array([obeys_the_rules(scenario, row) for row in rows])
    assert np.array_equal(valid, table["layout_valid"])  # the sweep's rule column, one layout at a time
    kept = valid & table["fits"]
    if global_batch is not None:
        kept &= table["global_batch"] == global_batch
    time, cost = table["training_time"], np.nan_to_num(table["cost"], nan=np.inf)
    order = np.lexsort((np.arange(len(table)), cost, time))
    best = next((int(i) for i in order if kept[i]), None)
    return table, best, int((~valid).sum()), int(kept.sum())


@pytest.mark.parametrize("global_batch", [None, 256])
@pytest.mark.parametrize("chunk_rows", [97, None])
def test_a_plan_over_layouts_equals_a_brute_force(global_batch, chunk_rows):
    scenario = worked_example()
    p = mlsysim.plan(scenario, objective="time", global_batch=global_batch, chunk_rows=chunk_rows, **SMALL)
    table, best, broken, kept = brute_force(scenario, SMALL, global_batch)
    assert p.size == len(table) == 2 * 4320
    assert p.excluded["layout_rules"] == broken > 0
    assert p.feasible_count == kept > 0
    assert p.best_row == best
    result = p.best.result  # the scalar solve of the best row
    assert result.training_time.magnitude == pytest.approx(table["training_time"][best], rel=1e-12)
    if global_batch is not None:
        assert result.global_batch == global_batch


TINY = {"nodes": [8, 16], "tensor_parallel": [1, 2, 4, 8], "pipeline_parallel": [1, 2, 4], "pipeline_chunks": [1, 2],
        "per_device_batch": [1, 2], "accumulation_steps": [1, 2, 4, 8], "zero_stage": [0, 3]}


@settings(max_examples=12, deadline=None)
@given(chunk_rows=st.integers(1, 800), top=st.integers(0, 4), objective=st.sampled_from(["time", "cost"]))
def test_any_block_size_gives_the_same_plan_over_layouts(chunk_rows, top, objective):
    """Blocks and calls of any size (the rows gathered across blocks, a call per categorical group) give the
    answers of one block of the whole space: best, runner-up, counts, front and top."""
    scenario = worked_example(nodes=8, node_hour_rate=Q_(98, "USD/hour"))
    whole = mlsysim.plan(scenario, objective=objective, top=top, chunk_rows=10**6, **TINY)
    split = mlsysim.plan(scenario, objective=objective, top=top, chunk_rows=chunk_rows, **TINY)
    assert (split.best_row, split.runner_row) == (whole.best_row, whole.runner_row)
    assert split.excluded == whole.excluded and split.feasible_count == whole.feasible_count
    assert split.evaluated == whole.evaluated == 768
    assert split.pareto["training_time"].tolist() == whole.pareto["training_time"].tolist()
    if top:
        assert split.top["training_time"].tolist() == whole.top["training_time"].tolist()


def test_a_plan_on_two_processes_equals_one():
    """The blocks on two spawned processes: the scenario unpickled there prices its operators from the same
    registry accelerator (its kernel tables found by the copy), with categorical axes (ZeRO, recomputation)."""
    scenario = llama3_8b()
    axes = {"nodes": [1, 2], "tensor_parallel": [1, 2, 8], "pipeline_parallel": [1, 2], "accumulation_steps": [4, 8],
            "zero_stage": [0, 3], "recompute": ["none", "full"]}
    one = mlsysim.plan(scenario, objective="time", top=5, **axes)
    two = mlsysim.plan(scenario, objective="time", top=5, workers=2, chunk_rows=20, **axes)
    assert two.best_row == one.best_row and two.runner_row == one.runner_row
    assert two.excluded == one.excluded and two.feasible_count == one.feasible_count > 0
    assert two.top["training_time"].tolist() == one.top["training_time"].tolist()


@pytest.mark.parametrize("chunk_rows", [300, None])
def test_a_mixture_of_experts_plan_equals_a_brute_force(chunk_rows):
    """cp, ep and etp are axes too: each layout's experts split as its own ep x etp (priced by the operators)."""
    scenario = deepseek()
    assert scenario.job.origins["step_time"].startswith("operators")
    p = mlsysim.plan(scenario, objective="time", chunk_rows=chunk_rows, **MOE)
    table, best, broken, kept = brute_force(scenario, MOE)
    assert p.size == 4096 and p.excluded["layout_rules"] == broken
    assert p.feasible_count == kept > 100
    assert p.best_row == best
    assert p.best.expert_parallel > 1  # the experts do not fit in 80 GB unless spread


def llama3_8b(**given):
    """Llama 3 8B on two DGX H100 nodes, its step priced from the operators."""
    base = dict(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=2,
        fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=8,
        training_tokens=Q_(1e12, "token"), device_memory=Q_(80, "GB"), sequence_parallel=1, tensor_parallel=2,
        flash_attention=1,
    )
    return DataParallelScaleOutScenario(**(base | given))


CASES = {
    "flops": (worked_example, SMALL),
    "operators": (llama3_8b, {
        "nodes": [1, 2], "tensor_parallel": [1, 2, 8], "pipeline_parallel": [1, 2, 4], "pipeline_chunks": [1, 2],
        "per_device_batch": [1, 2], "accumulation_steps": [4, 8], "zero_stage": [0, 1, 3],
        "recompute": ["none", "selective", "full"],
    }),
    "context": (lambda: llama3_8b(workload=Models.Language.Llama3_8B.variant(seq_len=32768), context_parallel=2), {
        "nodes": [2], "tensor_parallel": [1, 2, 4], "context_parallel": [1, 2, 4], "pipeline_parallel": [1, 2],
        "accumulation_steps": [4, 8], "zero_stage": [1, 3], "recompute": ["none", "full"],
    }),
    "experts": (deepseek, MOE),
}


@pytest.mark.parametrize("case", CASES)
def test_the_layouts_a_plan_prices_are_the_sweeps_rows_that_obey_the_rules(case):
    """The rows a plan evaluates (the rules first, then gathered into calls) are exactly those the rules keep,
    with the figures of the same rows of the materialised sweep and of their scalar solves: a step from the
    FLOPs, from the operators (each layout's kernels at its own t, b and stage), with context parallelism
    (Llama 3 8B on 32k-token sequences) and a mixture of experts (DeepSeek-V3: cp, ep, etp)."""
    build, axes = CASES[case]
    scenario = build()
    if case != "flops":
        assert scenario.job.origins["step_time"].startswith("operators")
    table = mlsysim.sweep(scenario, **axes)
    space = prepare_space(scenario, axes)
    seen = []
    for sub in space.layout_sub_blocks(space.blocks(1500), 700):
        assert sub.size <= 700 and sub.layouts >= sub.size
        seen.append(sub.rows)
        if not sub.size:
            continue
        f = figures(sub)
        for name, unit in (("update_time", 1e3), ("training_time", 1 / 3600), ("memory_per_device", 1.0),
                           ("global_batch", 1.0), ("efficiency", 1.0)):  # in the table's units: ms, h
            np.testing.assert_allclose(getattr(f, name) * unit, table[name][sub.rows], rtol=1e-12, err_msg=name)
    kept = np.sort(np.concatenate(seen))
    assert np.array_equal(kept, np.flatnonzero(table["layout_valid"]))
    names = list(axes)
    for i in kept[:: max(1, kept.size // 8)]:
        row = table.axis_values(int(i))
        result = variant_of_row(scenario, {k: row[k] for k in names}).result
        assert result.update_time.to("ms").magnitude == pytest.approx(table["update_time"][i], rel=1e-12), row
        assert result.memory_per_device.to("B").magnitude == pytest.approx(table["memory_per_device"][i], rel=1e-12)


def test_nothing_fits_in_a_tiny_memory():
    scenario = worked_example(device_memory=Q_(1, "GB"))
    with pytest.raises(InfeasiblePlanError) as info:
        mlsysim.plan(scenario, objective="time", **SMALL)
    _, _, broken, _ = brute_force(scenario, SMALL)
    assert info.value.excluded["layout_rules"] == broken
    assert info.value.excluded["memory"] == 2 * 4320 - broken  # every layout the rules keep: none fits


def test_a_space_where_every_layout_breaks_a_rule_says_so():
    with pytest.raises(InfeasiblePlanError, match="2 break layout_rules.*reaches: no layout that obeys the layout"):
        mlsysim.plan(worked_example(), objective="time", tensor_parallel=[3, 5])  # 64 heads


def test_the_worked_example_search_picks_the_zero3_layout():
    """docs/parallelism.md: 512 H100s, a global batch of 512 sequences, no recomputation (a given MFU holds
    the recomputation's cost, so a search over modes at one u would find full recomputation free: the
    operator model prices it); the layout and its update as computed by hand."""
    from tests.physics.test_layout_worked_example import zero3_by_hand

    axes = dict(tensor_parallel=[1, 2, 4, 8], pipeline_parallel=[1, 2, 4, 5, 8, 10, 16, 20],
                pipeline_chunks=[1, 2, 4], per_device_batch=[1, 2, 4], accumulation_steps=list(range(1, 129)),
                zero_stage=[0, 1, 2, 3])
    p = mlsysim.plan(worked_example(), objective="time", global_batch=512, **axes)
    best = p.best
    assert (best.nodes, best.tensor_parallel, best.pipeline_parallel, best.pipeline_chunks) == (64, 4, 1, 1)
    assert (best.per_device_batch, best.accumulation_steps, best.zero_stage) == (1, 4, 3)
    assert p.feasible_count == 126 and p.size == 147456
    by_hand = sum(v for k, v in zero3_by_hand().items() if k.endswith("_time"))
    assert best.result.figures.layout.update_time == pytest.approx(by_hand, rel=1e-12)


def test_the_worked_example_scenario_prices_the_pages_records():
    """The scenario's layout records are the page's figures (records_from), field by field."""
    scenario = worked_example()
    job = records_from(**LLAMA3_70B, **DGX_H100, sequence_parallel=True, flash_attention=True, devices=512.0,
                       tensor_parallel=4.0, micro_batches=4.0, zero_stage=3.0)
    got = scenario.result.figures.layout.records
    for mine, page in zip(got, job, strict=True):
        for name in mine._fields:
            a, b = getattr(mine, name), getattr(page, name)
            assert a == b or (a != a and b != b), name
    assert scenario.result.figures.layout.update_time == layout_figures(*job).update_time


def test_why_better_names_the_term_saved_and_the_term_paid():
    from mlsysim.planning.layouts import why_better

    common = dict(**LLAMA3_70B, **DGX_H100, devices=512.0, micro_batch=1.0, micro_batches=32.0, zero_stage=1.0,
                  sequence_parallel=True, flash_attention=True)
    a = dict(devices=512, tensor_parallel=8, pipeline_parallel=4, micro_batches=32, zero_stage=1)
    b = dict(devices=512, tensor_parallel=16, pipeline_parallel=2, micro_batches=32, zero_stage=1)
    fa = layout_figures(*records_from(**common, tensor_parallel=8.0, pipeline_parallel=4.0))
    fb = layout_figures(*records_from(**common, tensor_parallel=16.0, pipeline_parallel=2.0))
    text = why_better(a, fa, b, fb, 8)
    saved = fb.tensor_time - fa.tensor_time
    paid = fa.bubble_time - fb.bubble_time
    assert saved > 0 and paid > 0
    assert f"saves {saved:.3g} s of tensor-parallel collectives (t=8 inside the node)" in text
    assert f"pays {paid:.3g} s more of pipeline bubble (p=4: 9% bubble)" in text
    assert text.startswith("t=8 p=4 d=16 ZeRO-1") and text.count(".") >= 1 and "\n" not in text


def test_registry_workload_and_node_give_the_worked_examples_inputs():
    from mlsysim.planning.layouts import node_figures, workload_shape

    assert workload_shape(Models.Language.Llama3_70B) == LLAMA3_70B
    assert node_figures(Systems.Nodes.DGX_H100, "bf16", 0.73) == DGX_H100


def test_a_workload_without_a_transformer_shape_is_refused():
    from mlsysim.planning.layouts import workload_shape

    with pytest.raises(InputError, match="has no layers"):
        workload_shape(Models.Vision.ResNet50)


def test_a_row_with_a_switch_that_does_nothing_is_the_row_with_it_off():
    """sequence_parallel=1 at tensor_parallel=1 is a row of a sweep that gives it elsewhere; the plan's best
    there is that row's scenario with the switch off (the scalar solve refuses the switch on)."""
    p = mlsysim.plan(worked_example(recompute="full"), objective="time", tensor_parallel=[1, 2], zero_stage=[3],
                     accumulation_steps=[8], nodes=[64], top=2)
    rows = [p.top.scenario(i) for i in range(len(p.top))]
    assert {s.tensor_parallel for s in rows} == {1, 2}
    for s in rows:
        assert s.sequence_parallel == (None if s.tensor_parallel == 1 else 1)
