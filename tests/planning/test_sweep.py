"""mlsysim.sweep against a brute-force loop over the scalar solve."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Assumptions, Hardware, InputError, Models, Scenarios, Workload, sweep
from mlsysim.engine.inputs.fields import FIELDS, MODEL_FIELDS
from mlsysim.engine.results import RESULT_NAMES, field_unit
from tests.planning.conftest import assert_table_matches_scalar

ONE = Scenarios.Gpt2DataParallelOneNode
FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


def test_rows_follow_itertools_product_order():
    axes = {
        "nodes": [1, 3, 2],
        "accumulation_steps": [4, 1],
        "inter_bandwidth": [Q_(25, "Gbps"), Q_(400, "Gbps")],
    }
    table = sweep(FOUR, **axes)
    combos = list(itertools.product(*axes.values()))
    assert len(table) == len(combos) == 12
    assert table["nodes"].tolist() == [c[0] for c in combos]
    assert table["accumulation_steps"].tolist() == [c[1] for c in combos]
    assert table["inter_bandwidth"].tolist() == [c[2].magnitude for c in combos]
    assert table.units["inter_bandwidth"] == "Gbps"


def test_seed_sweep_equals_the_scalar_solve_row_by_row():
    axes = {
        "nodes": [1, 2, 4, 7],
        "devices_per_node": [1, 8],
        "inter_bandwidth": [Q_(10, "Gbps"), Q_(50, "GB/s")],
        "accumulation_steps": [1, 3],
    }
    assert_table_matches_scalar(sweep(FOUR, **axes), FOUR, axes)


def test_realistic_assumptions_and_opt_in_fields_equal_the_scalar_solve():
    axes = {
        "assumptions": [Assumptions(), Assumptions.realistic(), Assumptions(algorithm="tree")],
        "nodes": [1, 2, 16, 64],
        "nics_per_node": [None, 8],
        "inter_latency": [Q_(0, "us"), Q_(5, "us")],
        "intra_latency": [None, Q_(2, "us")],
        "inter_bandwidth": [Q_(100, "Gbps"), Q_(400, "Gbps")],
    }
    table = sweep(FOUR, **axes)
    assert set(table["inter_algorithm"]) >= {"ring", "tree", "none"}
    assert_table_matches_scalar(table, FOUR, axes)


def test_categorical_axes_and_memory_equal_the_scalar_solve():
    base = FOUR.variant(device_memory=Hardware.Cloud.H100, node_hour_rate=None)
    axes = {
        "workload": [Models.Language.GPT2, Models.Language.Llama2_7B],
        "precision": ["fp16", "FP32", "fp8"],
        "zero_stage": [0, 1, 3],
        "nodes": [2, 8],
        "device_memory": [None, Q_(80, "GB"), Hardware.Cloud.A100_40GB],
        "activation_memory": [None, Q_(10, "GiB")],
    }
    table = sweep(base, **axes)
    assert table["precision"][36] == "fp32"  # 3 * 2 * 3 * 2 rows per precision
    assert table["workload"][0] == Models.Language.GPT2.name
    assert not table["fits"].all() and table["fits"].any()
    assert np.isnan(table["cost"]).all()
    assert_table_matches_scalar(table, base, axes)


def test_every_scalar_result_field_is_a_column_in_the_results_unit():
    table = sweep(ONE, nodes=[1])
    assert set(RESULT_NAMES) - set(table.columns) == {"constraint_trace"}
    for field in RESULT_NAMES:
        if field != "constraint_trace":
            assert table.units[field] == field_unit(field)
    assert table.units["training_time"] == "hour" and table.units["update_time"] == "millisecond"
    assert table["training_time"][0] == pytest.approx(3.14525463, rel=1e-8)
    assert table["cost"][0] == pytest.approx(100.648148148, rel=1e-10)


def test_no_axes_gives_the_base_scenario_as_one_row():
    table = sweep(FOUR)
    assert len(table) == 1
    assert table["inter_time"][0] == pytest.approx(4650.0)
    assert table.scenario(0) == FOUR


def test_scenario_of_a_row_reproduces_it():
    table = sweep(FOUR, nodes=[2, 4], accumulation_steps=[1, 8])
    for i in range(len(table)):
        scenario = table.scenario(i)
        assert scenario.result.update_time.magnitude == table["update_time"][i]
        assert scenario.nodes == table["nodes"][i]


def test_training_time_axis_is_named_input_training_time():
    table = sweep(ONE, training_time=[Q_(25, "hour"), Q_(50, "hour")])
    assert table["input_training_time"].tolist() == [25.0, 50.0]
    assert table.units["input_training_time"] == "h"
    assert table["training_time"][1] == pytest.approx(2 * table["training_time"][0])


def test_quantity_axis_uses_the_unit_of_its_first_value_and_none_as_nan():
    table = sweep(
        FOUR.variant(nodes=1, inter_bandwidth=None),
        inter_bandwidth=[None, Q_(100, "Gbps"), Q_(50, "GB/s")],
    )
    assert table.units["inter_bandwidth"] == "Gbps"
    values = table["inter_bandwidth"]
    assert math.isnan(values[0]) and values[1] == 100.0 and values[2] == pytest.approx(400.0)


def test_quantity_array_and_numpy_axes_are_accepted():
    table = sweep(FOUR, inter_bandwidth=Q_(np.array([10.0, 100.0]), "Gbps"), nodes=np.arange(2, 4))
    assert table["inter_bandwidth"].tolist() == [10.0, 10.0, 100.0, 100.0]
    assert table["nodes"].tolist() == [2, 3, 2, 3]


def test_several_nodes_without_inter_bandwidth_is_reported_not_dropped():
    with pytest.raises(
        InputError, match=r"2 of 3 combinations have nodes > 1 and no inter_bandwidth"
    ):
        sweep(ONE, nodes=[1, 2, 4])
    with pytest.raises(InputError, match=r"nodes=4, inter_bandwidth=None"):
        sweep(FOUR, inter_bandwidth=[Q_(10, "Gbps"), None])
    with pytest.raises(InputError, match=r"2 of 8") as info:
        sweep(ONE, nodes=[1, 2], inter_bandwidth=[None, Q_(1, "Gbps")], accumulation_steps=[1, 2])
    assert info.value.field == "inter_bandwidth"


@pytest.mark.parametrize(
    "axes, needle",
    [
        ({"nodes": [1, 0]}, r"axis nodes, value 0: .*positive integer"),
        ({"nodes": [2.5]}, r"axis nodes"),
        ({"step_time": [Q_(3, "GB")]}, r"step_time.*time"),
        ({"precision": ["fp7"]}, r"fp32"),
        ({"zero_stage": [4]}, r"ZeRO stage"),
        ({"bogus": [1]}, r"cannot sweep 'bogus'"),
        ({"name": ["x"]}, r"cannot sweep 'name'"),
        ({"nodes": []}, r"no values"),
        ({"precision": "fp16"}, r"list or range"),
        ({"nodes": 4}, r"list or range"),
    ],
)
def test_bad_axis_values_name_the_axis(axes, needle):
    with pytest.raises(InputError, match=needle):
        sweep(FOUR, **axes)


def test_unknown_result_field_is_an_error_and_fields_limit_columns():
    with pytest.raises(InputError, match="unknown result field"):
        sweep(ONE, nodes=[1], fields=["speed"])
    table = sweep(FOUR, nodes=[2, 4], fields=["efficiency", "cost"])
    assert table.columns == ("nodes", "efficiency", "cost")


def test_every_model_input_is_sweepable():
    """Each input the model reads can be an axis, but a file: the sweep reads the same field table."""
    for name in MODEL_FIELDS:
        if FIELDS[name].kind == "text":  # cluster_file: every row reads the base scenario's
            with pytest.raises(InputError, match=f"cannot sweep '{name}'"):
                sweep(FOUR, **{name: [None]})
            continue
        value = getattr(FOUR, name)
        table = sweep(FOUR, **{name: [value]}, fields=["update_time"])
        assert table["update_time"][0] == pytest.approx(FOUR.result.update_time.magnitude)


@pytest.mark.parametrize("chunk_rows", [1, 5, 7, 64, 10_000])
def test_block_size_does_not_change_the_numbers(chunk_rows):
    axes = {
        "nodes": range(1, 10),
        "inter_bandwidth": [Q_(10, "Gbps"), Q_(1, "Tbps")],
        "accumulation_steps": [1, 2, 3],
    }
    whole = sweep(FOUR, **axes)
    parts = sweep(FOUR, chunk_rows=chunk_rows, **axes)
    for column in whole.columns:
        assert np.array_equal(
            whole[column],
            parts[column],
            equal_nan=column
            not in ("bottleneck", "algorithm", "intra_algorithm", "inter_algorithm"),
        ), column


def test_progress_reports_every_block_up_to_the_total():
    calls = []
    sweep(
        FOUR,
        nodes=range(1, 11),
        accumulation_steps=range(1, 11),
        chunk_rows=25,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert calls[-1] == (100, 100)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) > 2


def test_take_and_row_and_pandas_free_export(tmp_path):
    table = sweep(FOUR, nodes=[2, 4, 8], accumulation_steps=[1, 2])
    sub = table.take(table["efficiency"] > 0.3)
    assert len(sub) == int((table["efficiency"] > 0.3).sum())
    i = 1
    full = int(np.flatnonzero(table["efficiency"] > 0.3)[i])
    assert sub.row(i) == table.row(full)
    assert sub.scenario(i) == table.scenario(full)
    path = tmp_path / "t.csv"
    table.to_csv(path)
    lines = path.read_text().splitlines()
    assert len(lines) == 7
    assert lines[0].split(",")[:4] == [
        "nodes",
        "accumulation_steps",
        "n_devices",
        "gradient_bytes [byte]",
    ]


def test_to_pandas_has_every_column_and_the_units():
    pd = pytest.importorskip("pandas")
    frame = sweep(FOUR, nodes=[2, 4]).to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 2
    assert frame.attrs["units"]["update_time"] == "millisecond"


def test_to_pandas_without_pandas_says_what_to_install(monkeypatch):
    import sys

    from mlsysim import MissingDependencyError

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingDependencyError, match="pip install pandas"):
        sweep(ONE).to_pandas()


positive = st.floats(0.5, 500.0)


@settings(max_examples=25, deadline=None)
@given(
    nodes=st.lists(st.integers(1, 300), min_size=1, max_size=4),
    devices=st.lists(st.integers(1, 16), min_size=1, max_size=3),
    bandwidths=st.lists(positive, min_size=1, max_size=3),
    accumulation=st.lists(st.integers(1, 16), min_size=1, max_size=2),
    parameters=st.floats(1e6, 1e11),
    realistic=st.booleans(),
)
def test_random_sweeps_equal_the_scalar_solve(
    nodes, devices, bandwidths, accumulation, parameters, realistic
):
    base = FOUR.variant(
        workload=Workload(name="w", parameters=Q_(parameters, "param")),
        assumptions=Assumptions.realistic() if realistic else Assumptions(),
    )
    axes = {
        "nodes": nodes,
        "devices_per_node": devices,
        "inter_bandwidth": [Q_(b, "Gbps") for b in bandwidths],
        "accumulation_steps": accumulation,
    }
    assert_table_matches_scalar(sweep(base, **axes), base, axes)


def test_table_nodes_are_devices_over_devices_per_node():
    """SweepTable.nodes(): the swept devices per node where it is an axis, else the base's."""
    base = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(assumptions=Assumptions.realistic())
    table = sweep(base, nodes=[1, 2, 8], devices_per_node=[1, 4, 8])
    assert np.array_equal(table.nodes(), table["nodes"].astype(float))
    plain = sweep(base, nodes=[1, 3, 16])
    assert np.array_equal(plain.nodes(), [1.0, 3.0, 16.0])
