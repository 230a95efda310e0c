"""The layout search equals a brute force over the same space (one layout at a time, scalar floats)."""

import itertools

import numpy as np
import pytest

from mlsysim.core.exceptions import InputError
from mlsysim.physics.layout import check_layout, layout_figures
from mlsysim.physics.records import records_from
from mlsysim.planning.layouts import AXES, RECOMPUTE_CODES, best_layout, full_axes, grid_size
from tests.planning.conftest import variant_of_row

LLAMA3_70B = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
DGX_H100 = dict(devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.73, memory_bandwidth=3.35e12,
                intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0)
SMALL = {
    "devices": [64.0, 512.0],
    "tensor_parallel": [2.0, 4.0, 8.0],
    "context_parallel": [1.0, 2.0],
    "pipeline_parallel": [1.0, 2.0, 4.0, 8.0],
    "pipeline_chunks": [1.0, 2.0],
    "micro_batch": [1.0, 2.0],
    "micro_batches": [1.0, 4.0, 8.0, 16.0, 32.0],
    "zero_stage": [0.0, 1.0, 3.0],
    "recompute": [0.0, 1.0, 2.0],
}


DEFAULT = records_from(**LLAMA3_70B, **DGX_H100, sequence_parallel=True, flash_attention=True)


def brute_force(axes, memory_capacity, global_batch, records=DEFAULT):
    """The best layout one at a time: :func:`check_layout`'s rules, scalar :func:`layout_figures`."""
    axes = full_axes(axes)
    shape = records.shape
    best = (-1, np.inf)
    kept = 0
    for index, combo in enumerate(itertools.product(*(axes[name] for name in AXES))):
        x = dict(zip(AXES, combo, strict=True))
        n, t, cp, p = x["devices"], x["tensor_parallel"], x["context_parallel"], x["pipeline_parallel"]
        b, m = x["micro_batch"], x["micro_batches"]
        try:
            check_layout(devices=int(n), tensor_parallel=int(t), pipeline_parallel=int(p),
                         heads=int(shape.heads), layers=int(shape.layers), micro_batches=int(m),
                         pipeline_chunks=int(x["pipeline_chunks"]), context_parallel=int(cp),
                         seq_len=int(shape.seq_len), experts=0 if shape.moe is None else int(shape.moe.experts),
                         expert_parallel=int(x["expert_parallel"]),
                         expert_tensor_parallel=int(x["expert_tensor_parallel"]))
        except InputError:
            continue
        d = n / (t * cp * p)
        if global_batch is not None and b * m * d != global_batch:
            continue
        layout = records.layout._replace(tensor_parallel=t, context_parallel=cp, pipeline_parallel=p,
                         pipeline_chunks=x["pipeline_chunks"], micro_batch=b, micro_batches=m,
                         zero_stage=x["zero_stage"], recompute=RECOMPUTE_CODES[int(x["recompute"])],
                         expert_parallel=x["expert_parallel"], expert_tensor_parallel=x["expert_tensor_parallel"])
        f = layout_figures(records.shape, records.cluster._replace(devices=n), layout, records.rates)
        if f.memory_bytes > memory_capacity:
            continue
        kept += 1
        seconds = f.update_time / (b * m * d)
        if seconds < best[1]:
            best = (index, seconds)
    return best, kept


@pytest.mark.parametrize("global_batch", [None, 256.0])
@pytest.mark.parametrize("chunk", [97, 1 << 17])
def test_search_equals_brute_force(global_batch, chunk):
    got = best_layout(SMALL, records=DEFAULT, memory_capacity=80e9, global_batch=global_batch, chunk=chunk)
    (index, seconds), kept = brute_force(SMALL, 80e9, global_batch)
    assert got.searched == grid_size(SMALL) == 2 * 4320
    assert got.kept == kept > 0
    assert got.grid_index == index
    assert got.seconds_per_sequence == pytest.approx(seconds, rel=1e-12)


def deepseek_v3(**given):
    """DeepSeek-V3 on HGX H800 nodes as its report trains it (PP 16, EP 64, ZeRO-1, DualPipe's overlap)."""
    from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems

    base = dict(
        workload=Models.Language.DeepSeek_V3, node=Systems.Nodes.HGX_H800, nodes=256, precision="bf16",
        matmul_format="fp8", per_device_batch=1, accumulation_steps=120, pipeline_parallel=16,
        expert_parallel=64, zero_stage=1, flash_attention=1, recompute="none", expert_overlap=1,
        training_tokens=Q_(14.8e12, "token"),
    )
    return DataParallelScaleOutScenario(**(base | given))


MOE_SPACE = {
    "devices": [512.0, 1024.0], "tensor_parallel": [1.0, 2.0], "context_parallel": [1.0, 2.0],
    "pipeline_parallel": [8.0, 16.0], "pipeline_chunks": [1.0, 2.0], "expert_parallel": [1.0, 8.0, 64.0, 256.0],
    "expert_tensor_parallel": [1.0, 2.0], "micro_batch": [1.0, 2.0], "micro_batches": [16.0, 32.0],
    "zero_stage": [1.0, 3.0], "recompute": [0.0, 2.0],
}


@pytest.mark.parametrize("chunk", [61, 1 << 17])
def test_a_mixture_of_experts_search_equals_brute_force(chunk):
    """ep, etp and cp are axes too: each layout's experts are split as its own ep x etp (priced by the operators)."""
    from mlsysim.planning.layouts import scenario_search_inputs

    inputs = scenario_search_inputs(deepseek_v3())
    assert inputs.records.shape.moe.experts == 256.0
    got = best_layout(MOE_SPACE, **inputs._asdict(), chunk=chunk)
    (index, seconds), kept = brute_force(MOE_SPACE, inputs.memory_capacity, None, inputs.records)
    assert got.searched == grid_size(MOE_SPACE) == 4096
    assert got.kept == kept > 100
    assert got.grid_index == index
    assert got.seconds_per_sequence == pytest.approx(seconds, rel=1e-12)
    assert got.layout["expert_parallel"] > 1  # the experts do not fit in 80 GB unless spread


def test_nothing_fits_in_a_tiny_memory():
    got = best_layout(SMALL, records=DEFAULT, memory_capacity=1e9)
    assert got.grid_index == -1 and got.kept == 0 and got.layout == {}


def test_best_layout_reports_its_values():
    got = best_layout(SMALL, records=DEFAULT, memory_capacity=80e9, global_batch=256.0)
    assert set(got.layout) == set(AXES)
    assert got.layout["recompute"] in RECOMPUTE_CODES
    d = got.layout["devices"] / (got.layout["tensor_parallel"] * got.layout["context_parallel"]
                                 * got.layout["pipeline_parallel"])
    assert got.layout["micro_batch"] * got.layout["micro_batches"] * d == 256
    assert got.memory_bytes <= 80e9


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
    from mlsysim import Models, Systems
    from mlsysim.planning.layouts import node_figures, workload_shape

    assert workload_shape(Models.Language.Llama3_70B) == LLAMA3_70B
    assert node_figures(Systems.Nodes.DGX_H100, "bf16", 0.73) == DGX_H100


def test_a_workload_without_a_transformer_shape_is_refused():
    from mlsysim import Models
    from mlsysim.planning.layouts import workload_shape

    with pytest.raises(InputError, match="has no layers"):
        workload_shape(Models.Vision.ResNet50)


def _llama3_8b(**given):
    from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems

    return DataParallelScaleOutScenario(**({
        "workload": Models.Language.Llama3_8B, "precision": "bf16", "node": Systems.Nodes.DGX_H100, "nodes": 2,
        "fabric": Systems.Fabrics.InfiniBand_NDR, "per_device_batch": 1, "accumulation_steps": 8,
        "training_tokens": Q_(1e12, "token"), "device_memory": Q_(80, "GB"), "sequence_parallel": 1,
        "tensor_parallel": 2, "flash_attention": 1,
    } | given))


DENSE_AXES = {
    "devices": [8.0, 16.0], "tensor_parallel": [1.0, 2.0, 8.0], "pipeline_parallel": [1.0, 2.0, 4.0],
    "pipeline_chunks": [1.0, 2.0], "micro_batch": [1.0, 2.0], "micro_batches": [4.0, 8.0],
    "zero_stage": [0.0, 1.0, 3.0], "recompute": [0.0, 1.0, 2.0],
}
CONTEXT_AXES = {
    "devices": [16.0], "tensor_parallel": [1.0, 2.0, 4.0], "context_parallel": [1.0, 2.0, 4.0],
    "pipeline_parallel": [1.0, 2.0], "pipeline_chunks": [1.0], "micro_batch": [1.0], "micro_batches": [4.0, 8.0],
    "zero_stage": [1.0, 3.0], "recompute": [0.0, 2.0],
}
EXPERT_AXES = {
    "devices": [2048.0], "tensor_parallel": [1.0, 2.0], "context_parallel": [1.0, 2.0],
    "pipeline_parallel": [8.0, 16.0], "pipeline_chunks": [1.0], "expert_parallel": [8.0, 32.0, 64.0, 128.0],
    "expert_tensor_parallel": [1.0, 2.0], "micro_batch": [1.0], "micro_batches": [64.0, 120.0],
    "zero_stage": [1.0], "recompute": [0.0, 2.0],
}


@pytest.mark.parametrize("case", ["dense", "context", "experts"])
def test_an_operator_priced_scenarios_planned_layouts_equal_its_variants(case):
    """One rule for one layout and many: the search's figures of each layout it keeps are
    those of ``scenario.variant(**layout).result`` when the step comes from the operators:
    a dense model (t, p, v, b, m, ZeRO, recompute), with context parallelism (Llama 3 8B on
    32k-token sequences) and a mixture of experts (DeepSeek-V3: cp, ep, etp)."""
    from mlsysim import Models
    from mlsysim.planning.layouts import full_axes, layout_objective, scenario_search_inputs

    if case == "dense":
        scenario, axes = _llama3_8b(), DENSE_AXES
    elif case == "context":
        long = Models.Language.Llama3_8B.variant(seq_len=32768)
        scenario, axes = _llama3_8b(workload=long, context_parallel=2, tensor_parallel=2), CONTEXT_AXES
    else:
        scenario, axes = deepseek_v3(), EXPERT_AXES
    assert scenario.job.origins["step_time"].startswith("operators")
    inputs = scenario_search_inputs(scenario)
    records = inputs.records
    assert records.rates.matmul_ceiling == records.rates.matmul_ceiling  # priced by the operators
    if case == "dense":
        assert records.shape.ffn_hidden == 14336.0 and records.layout.flash_attention
        assert records.layout.sequence_parallel
    axes = full_axes(axes)
    grid = list(itertools.product(*(axes[name] for name in AXES)))
    values = {name: np.array([row[k] for row in grid]) for k, name in enumerate(AXES)}
    seconds, update, memory = layout_objective(values, records=records, memory_capacity=inputs.memory_capacity)
    kept = np.flatnonzero(np.isfinite(seconds))
    assert kept.size > {"dense": 50, "context": 20, "experts": 20}[case]
    best = best_layout(axes, **inputs._asdict())
    assert best.update_time == update[best.grid_index] and best.kept == kept.size
    per_node = float(records.cluster.devices_per_node)
    for i in sorted({*kept[:: max(1, kept.size // 12)].tolist(), best.grid_index}):
        x = dict(zip(AXES, grid[i], strict=True))
        given = dict(
            nodes=int(x["devices"] // per_node), tensor_parallel=int(x["tensor_parallel"]),
            pipeline_parallel=int(x["pipeline_parallel"]), pipeline_chunks=int(x["pipeline_chunks"]),
            per_device_batch=int(x["micro_batch"]), accumulation_steps=int(x["micro_batches"]),
            zero_stage=int(x["zero_stage"]), recompute=RECOMPUTE_CODES[int(x["recompute"])],
            context_parallel=int(x["context_parallel"]),
        )
        if case == "experts":
            given.update(expert_parallel=int(x["expert_parallel"]),
                         expert_tensor_parallel=int(x["expert_tensor_parallel"]))
        f = variant_of_row(scenario, given).result.figures  # sequence parallelism at t = 1: off
        assert f.layout.update_time == pytest.approx(update[i], rel=1e-12), x
        assert f.layout.memory_bytes == pytest.approx(memory[i], rel=1e-12), x
        if case != "experts":
            assert f.update_time == pytest.approx(update[i], rel=1e-12), x  # no synchronisation cost here
    if case == "context":
        assert {values["context_parallel"][i] for i in kept} == {1.0, 2.0, 4.0}
    if case == "experts":
        assert {values["expert_parallel"][i] for i in kept} >= {32.0, 64.0}
        assert {values["context_parallel"][i] for i in kept} == {1.0, 2.0}


def test_a_measured_step_time_is_not_searched():
    from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
    from mlsysim.planning.layouts import scenario_search_inputs

    scenario = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=2,
        fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=8,
        step_time=Q_(1, "s"), training_time=Q_(10, "hour"), tensor_parallel=2,
    )
    with pytest.raises(InputError, match="measured step_time"):
        scenario_search_inputs(scenario)
