"""Every bad input of SPEC section 5 fails at construction and in variant(), naming the field."""

import math

import numpy as np
import pytest

from mlsysim import (
    Q_,
    DataParallelScaleOutScenario,
    InputError,
    Models,
    UnitsError,
)
from mlsysim.solvers import DataParallelScaleOutModel

INT_FIELDS = ["nodes", "devices_per_node", "per_device_batch", "accumulation_steps"]
BAD_INTS = [0, -1, 2.5, True, "4", None, 4.0]


@pytest.mark.parametrize("field", INT_FIELDS)
@pytest.mark.parametrize("bad", BAD_INTS)
def test_counts_must_be_positive_integers(base_inputs, field, bad):
    inputs = {**base_inputs, field: bad, "inter_bandwidth": Q_(100, "Gbps")}
    with pytest.raises(InputError) as info:
        DataParallelScaleOutScenario(**inputs)
    assert field in str(info.value)
    if bad is None and field == "devices_per_node":  # None: to come from a node preset, and none given
        assert "required field is missing; or give node=" in str(info.value)
    else:
        assert "positive integer" in str(info.value)
    assert info.value.field == field


@pytest.mark.parametrize("field", INT_FIELDS)
def test_variant_validates_like_construction(gpt2_one_node, field):
    with pytest.raises(ValueError, match=field):
        gpt2_one_node.variant(**{field: 0})


def test_numpy_integers_are_accepted(base_inputs):
    s = DataParallelScaleOutScenario(**{**base_inputs, "devices_per_node": np.int64(4)})
    assert s.devices_per_node == 4 and type(s.devices_per_node) is int


def test_nodes_above_one_needs_inter_bandwidth(base_inputs, gpt2_one_node):
    with pytest.raises(InputError, match="inter_bandwidth.*nodes > 1"):
        DataParallelScaleOutScenario(**{**base_inputs, "nodes": 2})
    with pytest.raises(ValueError, match="inter_bandwidth") as caught:
        gpt2_one_node.variant(nodes=4)
    assert "e.g. inter_bandwidth=Q_(100, 'Gbps'), or a fabric (fabric='InfiniBand_NDR')" in str(caught.value)


def _in(unit: str, *magnitudes: float) -> list:
    """Each magnitude as a quantity in ``unit`` (the right dimension, a bad value)."""
    return [Q_(m, unit) for m in magnitudes]


QUANTITY_FIELDS = {
    "step_time": [Q_(3, "GB"), 1.8, "1.8", *_in("s", 0, -1, math.nan, math.inf)],
    "training_time": [Q_(25, "GB/s"), 25, *_in("hour", 0, -2, math.nan)],
    "intra_bandwidth": [Q_(1, "s"), 450, *_in("GB/s", 0, -450, math.inf, math.nan)],
    "inter_bandwidth": [Q_(1, "s"), 10, *_in("Gbps", 0, -1, math.nan)],
    "node_hour_rate": [Q_(32, "USD"), Q_(32, "hour"), 32, *_in("USD/hour", 0, -1, math.inf)],
}


@pytest.mark.parametrize(
    "field, bad", [(f, b) for f, values in QUANTITY_FIELDS.items() for b in values]
)
def test_physical_inputs_need_the_right_dimension_and_a_finite_positive_value(
    base_inputs, field, bad
):
    with pytest.raises(InputError) as info:
        DataParallelScaleOutScenario(**{**base_inputs, field: bad})
    assert field in str(info.value)
    assert "expected" in str(info.value)


def test_wrong_dimension_says_what_was_expected(base_inputs):
    with pytest.raises(UnitsError) as info:
        DataParallelScaleOutModel().solve(
            Models.Language.GPT2, "fp16", Q_(3, "GB"), Q_(25, "hour"), 16, 8, 1, Q_(450, "GB/s")
        )
    assert "step_time" in str(info.value) and "time" in str(info.value) and "GB" in str(info.value)


@pytest.mark.parametrize("bad", ["fp7", "float16", "", 16, None])
def test_unknown_precision_lists_the_supported_ones(base_inputs, bad):
    with pytest.raises(InputError) as info:
        DataParallelScaleOutScenario(**{**base_inputs, "precision": bad})
    message = str(info.value)
    assert "precision" in message
    for name in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"):
        assert name in message


@pytest.mark.parametrize("spelling", ["FP16", "Bf16", "fp32"])
def test_precision_is_case_insensitive(base_inputs, spelling):
    s = DataParallelScaleOutScenario(**{**base_inputs, "precision": spelling})
    assert s.precision == spelling.lower()


def test_unknown_field_is_rejected(base_inputs, gpt2_one_node):
    with pytest.raises(InputError, match="bogus.*unknown field"):
        DataParallelScaleOutScenario(**{**base_inputs, "bogus": 1})
    with pytest.raises(InputError, match="nodez"):
        gpt2_one_node.variant(nodez=4)


def test_missing_required_field_is_named(base_inputs):
    inputs = dict(base_inputs)
    del inputs["step_time"]
    with pytest.raises(InputError, match="step_time.*required"):
        DataParallelScaleOutScenario(**inputs)


def test_workload_must_be_a_workload(base_inputs):
    with pytest.raises(InputError, match="workload"):
        DataParallelScaleOutScenario(**{**base_inputs, "workload": 42})
    with pytest.raises(InputError, match="workload"):
        DataParallelScaleOutScenario(**{**base_inputs, "workload": "NoSuchModel"})


def test_text_forms_work_in_python_as_on_the_command_line(base_inputs):
    """A workload or accelerator by registry name, a quantity as text with units."""
    s = DataParallelScaleOutScenario(
        **{**base_inputs, "workload": "GPT2", "step_time": "1.8 s", "device_memory": "H100"}
    )
    assert s.workload.name == base_inputs["workload"].name
    assert s.step_time == Q_(1.8, "s")
    assert s.device_memory == Q_(80, "GB") or s.device_memory.to("GB").magnitude > 0


def test_scenarios_are_frozen(gpt2_one_node):
    with pytest.raises(ValueError):
        gpt2_one_node.nodes = 4


def test_solver_validates_its_inputs_too():
    solve = DataParallelScaleOutModel().solve
    args = [Models.Language.GPT2, "fp16", Q_(1.8, "s"), Q_(25, "hour"), 16, 8, 1, Q_(450, "GB/s")]
    for index, bad, field in [
        (4, 0, "per_device_batch"),
        (5, True, "devices_per_node"),
        (6, 2, "inter_bandwidth"),
        (1, "fp7", "precision"),
    ]:
        broken = list(args)
        broken[index] = bad
        with pytest.raises(InputError, match=field):
            solve(*broken)


def test_solver_accepts_spec_keywords_and_positions(gpt2_one_node):
    solve = DataParallelScaleOutModel().solve
    s = gpt2_one_node
    positional = solve(
        s.workload,
        "fp16",
        s.step_time,
        s.training_time,
        16,
        8,
        1,
        s.intra_bandwidth,
        None,
        1,
        s.node_hour_rate,
    )
    keywords = solve(
        model=s.workload,
        precision="fp16",
        step_time=s.step_time,
        training_time=s.training_time,
        per_device_batch=16,
        devices_per_node=8,
        nodes=1,
        intra_bandwidth=s.intra_bandwidth,
        inter_bandwidth=None,
        accumulation_steps=1,
        node_hour_rate=s.node_hour_rate,
    )
    assert positional == keywords == s.result


def test_errors_are_value_errors():
    assert issubclass(InputError, ValueError)
    assert issubclass(UnitsError, ValueError)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("nodes", 10**5000, "up to 1e15, got an integer of about 5,000 digits"),
        ("nodes", -(10**5000), "got a negative integer of about 5,000 digits"),
        ("nodes", 10**20, "up to 1e15, got 1e+20"),
        ("zero_stage", -(10**5000), "got a negative integer of about 5,000 digits"),
        ("sequence_parallel", 10**5000, "got an integer of about 5,000 digits"),
    ],
    ids=["huge-nodes", "huge-negative-nodes", "nodes-1e20", "huge-negative-zero-stage", "huge-flag"],
)
def test_an_integer_too_long_to_write_is_refused_by_its_size(gpt2_one_node, field, value, words):
    with pytest.raises(InputError) as caught:
        gpt2_one_node.variant(**{field: value})
    assert words in str(caught.value) and "sys." not in str(caught.value)
