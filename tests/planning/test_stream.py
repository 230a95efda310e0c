"""The streamed plan against the plan over a materialised table, and the merge of partial reductions."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import (
    Q_,
    Assumptions,
    Hardware,
    InfeasiblePlanError,
    InputError,
    Models,
    Scenarios,
    plan,
    sweep,
)
from mlsysim.hardware.registry import Systems
from mlsysim.planning.pareto import pareto_mask
from mlsysim.planning.plan import Constraints
from mlsysim.planning.reduce import Partial, merge, merge_fronts, reduce_blocks
from mlsysim.planning.space import Block
from mlsysim.planning.sweep import prepare_space
from tests.planning.test_sweep_derived import LLAMA_JOB  # noqa: E402

ONE = Scenarios.Gpt2DataParallelOneNode
FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


def materialised(table, objective, constraints, top=0):
    """The plan as it was computed before streaming: masks and lexsorts over the whole table."""
    masks = constraints.masks(table)
    feasible = np.logical_and.reduce(list(masks.values()))
    excluded = {name: int((~mask).sum()) for name, mask in masks.items()}
    rows = np.flatnonzero(feasible)
    time, cost = table["training_time"], table["cost"]
    known = np.where(np.isnan(cost), np.inf, cost)
    primary, secondary = (known, time) if objective == "cost" else (time, known)
    order = rows[np.lexsort((secondary[rows], primary[rows]))]
    front = rows[pareto_mask(time[rows], cost[rows])]
    front = front[np.lexsort((known[front], time[front]))]
    knee = None
    if constraints.min_efficiency is not None and rows.size:
        n, eff = table["n_devices"], table["efficiency"]
        knee = int(rows[np.lexsort((primary[rows], -eff[rows], -n[rows]))[0]])
    return {
        "feasible": feasible,
        "excluded": excluded,
        "best": int(order[0]) if rows.size else None,
        "front": front.tolist(),
        "knee": knee,
        "top": order[:top].tolist(),
    }


SPACES = [
    (
        ONE,
        {
            "nodes": [1, 2, 3, 4, 8, 16],
            "inter_bandwidth": [Q_(25, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")],
            "accumulation_steps": [1, 2, 4],
            "per_device_batch": [8, 16, 32],
        },
    ),
    (  # categorical axes between numeric ones, realistic assumptions (algorithm auto, overlap)
        FOUR.variant(node_hour_rate=Q_(40, "USD/hour")),
        {
            "nodes": [1, 2, 4, 8, 32],
            "precision": ["fp32", "fp16"],
            "devices_per_node": [1, 4, 8],
            "assumptions": [Assumptions(), Assumptions.realistic()],
            "inter_bandwidth": [Q_(10, "Gbps"), Q_(200, "Gbps")],
        },
    ),
    (  # memory limits and ZeRO stages
        FOUR.variant(
            workload=Models.Language.Llama2_7B,
            device_memory=Hardware.Cloud.H100,
            node_hour_rate=Q_(98, "USD/hour"),
        ),
        {"zero_stage": [0, 1, 2, 3], "nodes": [1, 2, 4, 8], "accumulation_steps": [1, 8]},
    ),
    (  # derived inputs: training time and activations per layout (the batch is not folded)
        # a step of 7 s: slower than 4 sequences' model FLOPs at the A100's peak (6.4 s)
        LLAMA_JOB.variant(node_hour_rate=Q_(98, "USD/hour"), step_time=Q_(7, "s")),
        {
            "per_device_batch": [1, 2, 4],
            "nodes": [1, 2, 4, 8],
            "node": [Systems.Nodes.DGX_H100, Systems.Nodes.DGX_A100],
            "recompute": ["none", "full"],
        },
    ),
]

LIMITS = [
    ("cost", {}),
    ("time", {}),
    ("cost", {"deadline": Q_(3, "hour"), "min_efficiency": 0.5}),
    ("time", {"budget": Q_(400, "USD"), "max_global_batch": 2048, "min_efficiency": 0.6}),
]


@pytest.mark.parametrize("space", range(len(SPACES)))
@pytest.mark.parametrize("objective, limits", LIMITS)
@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 1 << 18])
def test_streamed_plan_equals_the_materialised_plan(space, objective, limits, chunk_rows):
    base, axes = SPACES[space]
    table = sweep(base, **axes)
    constraints = Constraints.checked(**limits)
    expected = materialised(table, objective, constraints, top=5)
    if expected["best"] is None:
        with pytest.raises(InfeasiblePlanError) as info:
            plan(base, objective=objective, chunk_rows=chunk_rows, workers=1, **limits, **axes)
        assert info.value.excluded == expected["excluded"]
        return
    p = plan(base, objective=objective, chunk_rows=chunk_rows, top=5, workers=1, **limits, **axes)
    assert p.excluded == expected["excluded"]
    assert p.feasible_count == int(expected["feasible"].sum())
    assert p.best_row == expected["best"]
    assert p.knee_row == expected["knee"]
    assert [p.pareto.grid_index(i) for i in range(len(p.pareto))] == expected["front"]
    assert [p.top.grid_index(i) for i in range(len(p.top))] == expected["top"]
    front = table.take(expected["front"])
    for column in front.columns:
        a, b = p.pareto[column], front[column]
        assert a.dtype == b.dtype and all(
            x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
            for x, y in zip(a.tolist(), b.tolist(), strict=True)
        ), column
    assert p.best == table.scenario(expected["best"])
    assert (p.feasible == expected["feasible"]).all()  # the table, rebuilt on demand
    assert not p.partial and p.evaluated == p.size == len(table)


def test_summary_reads_as_before():
    """The summary of the materialised plan (text produced by main's materialised plan)."""
    p = plan(
        ONE,
        objective="time",
        nodes=[1, 2, 4, 8],
        inter_bandwidth=[Q_(100, "Gbps"), Q_(400, "Gbps")],
        budget=Q_(150, "USD"),
        min_efficiency=0.8,
    )
    assert p.summary() == (
        "Best: nodes=8, inter_bandwidth=400 Gbps -> 64 devices, 25.1 min, 107.21 USD, "
        "efficiency 0.933\n"
        "Runner-up: nodes=8, inter_bandwidth=400 Gbps finishes 50% sooner than nodes=4, "
        "inter_bandwidth=400 Gbps (50.2 min), which costs <0.1% less (107.11 USD).\n"
        "Knee: not in the range. Efficiency stays >= 0.8 up to the largest layout searched "
        "(nodes=8, inter_bandwidth=400 Gbps: 64 devices, efficiency 0.933); widen the range "
        "(nodes beyond 8) to find where it falls below.\n"
        "Pareto front (training time against cost): 5 layouts, 4 distinct results, "
        "from 25.1 min for 107.21 USD to 3.15 h for 100.65 USD\n"
        "Plan for 'Gpt2DataParallelOneNode': the fastest of 8 layouts "
        "(nodes 1/2/4/8 x inter_bandwidth 100 Gbps/400 Gbps)\n"
        "Constraints: cost <= 150 USD, efficiency >= 0.8, fits in device memory (when known); "
        "5 layouts meet them (3 break min efficiency)"
    )


def test_infeasible_plan_reaches_the_same_figures_streamed():
    with pytest.raises(InfeasiblePlanError, match=r"fastest .* h, cheapest .* USD") as streamed:
        plan(FOUR, deadline=Q_(1, "minute"), chunk_rows=3, nodes=range(1, 31))
    table = sweep(FOUR, nodes=range(1, 31))
    assert f"fastest {table['training_time'].min():.4g} h" in str(streamed.value)
    assert f"cheapest {np.nanmin(table['cost']):,.2f} USD" in str(streamed.value)


def test_plan_without_axes_is_the_scenario_itself():
    p = plan(ONE, objective="time")
    assert p.size == 1 and p.best == ONE and len(p.pareto) == 1


# -- merging partial reductions --------------------------------------------------------

coordinates = st.one_of(st.integers(0, 5).map(float), st.just(math.nan))
point_sets = st.lists(st.tuples(st.integers(0, 5).map(float), coordinates), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(point_sets, st.lists(st.integers(0, 3), min_size=40, max_size=40))
def test_merge_of_partial_fronts_is_the_front_of_the_union(points, parts):
    time = np.array([p[0] for p in points])
    cost = np.array([p[1] for p in points])
    index = np.arange(len(points), dtype=np.int64)
    whole = set(index[pareto_mask(time, cost)].tolist())
    fronts = []
    for part in range(4):
        chosen = np.array([parts[i] == part for i in range(len(points))])
        keep = pareto_mask(time[chosen], cost[chosen])
        fronts.append(
            {
                "time": time[chosen][keep],
                "cost": cost[chosen][keep],
                "index": index[chosen][keep],
            }
        )
    merged = fronts[0]
    for f in fronts[1:]:
        merged = merge_fronts(merged, f)
    assert set(merged["index"].tolist()) == whole
    merged_other_way = fronts[3]
    for f in reversed(fronts[:3]):
        merged_other_way = merge_fronts(f, merged_other_way)
    assert set(merged_other_way["index"].tolist()) == whole


MERGE_AXES = {
    "nodes": [1, 2, 4, 8, 16, 64],
    "accumulation_steps": [1, 2, 4],
    "inter_bandwidth": [Q_(25, "Gbps"), Q_(400, "Gbps")],
    "per_device_batch": [16, 32],
}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 71), min_size=0, max_size=6, unique=True),
    st.sampled_from(["cost", "time"]),
    st.permutations(range(7)),
)
def test_any_split_of_the_blocks_merges_to_the_same_answer(cuts, objective, order):
    space = prepare_space(ONE, MERGE_AXES)
    criteria = Constraints.checked(deadline=Q_(4, "hour"), min_efficiency=0.4).criteria(
        objective, top=4
    )
    blocks = space.blocks(5)
    whole = reduce_blocks(space, criteria, blocks)
    edges = [0, *sorted(c for c in cuts if c < len(blocks)), len(blocks)]
    pieces = [
        reduce_blocks(space, criteria, blocks[a:b]) for a, b in zip(edges, edges[1:], strict=False)
    ]
    pieces = [pieces[i] for i in order if i < len(pieces)]
    merged = Partial(criteria)
    for piece in pieces:
        merged = merge(merged, piece)
    for name in ("evaluated", "feasible", "excluded", "best", "knee", "top"):
        assert getattr(merged, name) == getattr(whole, name), name
    assert merged.front_indices().tolist() == whole.front_indices().tolist()


def test_blocks_are_contiguous_boxes_covering_the_grid():
    space = prepare_space(ONE, MERGE_AXES)
    for target in (1, 5, 12, 50, 1000):
        blocks = space.blocks(target)
        assert blocks[0].start == 0 and blocks[-1].stop == space.size
        assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:], strict=False))
        for block in blocks:
            grid = np.arange(space.size).reshape(space.shape)
            box = grid[block.index].reshape(-1)
            assert box.tolist() == list(range(block.start, block.stop))
            assert isinstance(block, Block)


# -- limits known up front ---------------------------------------------------------------


def test_an_in_memory_sweep_too_big_is_refused_before_allocating():
    with pytest.raises(InputError, match=r"1,000,000,000 layouts would need about .* GiB") as info:
        sweep(
            ONE,
            nodes=range(1, 1001),
            accumulation_steps=range(1, 1001),
            per_device_batch=range(1, 1001),
        )
    assert "max_layouts" in str(info.value) and "parquet" in str(info.value)
    table = sweep(ONE, accumulation_steps=range(1, 11), max_layouts=10)
    assert len(table) == 10
    with pytest.raises(InputError, match="max_layouts"):
        sweep(ONE, accumulation_steps=range(1, 12), max_layouts=10)


def test_a_plan_too_big_is_refused_with_its_estimated_time():
    with pytest.raises(
        InputError, match=r"plan: 10,000 layouts would take about .* worker.*max_layouts"
    ):
        plan(FOUR, nodes=range(1, 101), accumulation_steps=range(1, 101), max_layouts=5000)


def test_an_axis_too_long_is_refused_before_checking_its_values():
    with pytest.raises(InputError, match="nodes: 1,000,000,000 values"):
        plan(FOUR, nodes=range(1, 10**9 + 1), max_layouts=10**10)


def test_cost_of_a_price_axis_with_a_missing_price_is_refused_up_front():
    with pytest.raises(InputError, match="node_hour_rate"):
        plan(ONE, node_hour_rate=[Q_(3, "USD/hour"), None], nodes=[1])
