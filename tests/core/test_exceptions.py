"""Structured errors: every mistake found at once, each with its location, message, value and type."""

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, InputError, Scenarios
from mlsysim.engine.io.overrides import apply_overrides

ONE = Scenarios.Gpt2DataParallelOneNode


def test_every_mistake_of_a_construction_is_listed_with_its_location_value_and_type():
    with pytest.raises(InputError) as caught:
        DataParallelScaleOutScenario(
            step_time=Q_(1, "GB"),
            training_time=Q_(1, "hour"),
            per_device_batch=0,
            devices_per_node=8,
            intra_bandwidth=Q_(450, "GB/s"),
            nodez=4,
        )
    details = caught.value.errors()
    by_loc = {d["loc"]: d for d in details}
    assert set(by_loc) == {("workload",), ("step_time",), ("per_device_batch",), ("nodez",)}
    assert by_loc[("per_device_batch",)]["input"] == 0
    assert by_loc[("per_device_batch",)]["type"] == "value_error"
    assert by_loc[("nodez",)]["type"] == "extra_forbidden"
    assert by_loc[("workload",)]["type"] == "missing" and "input" not in by_loc[("workload",)]
    assert by_loc[("step_time",)]["input"] == Q_(1, "GB")
    # one line for the command line, the first mistake leading
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("DataParallelScaleOutScenario.nodez: unknown field")


def test_a_rule_between_inputs_names_the_inputs_it_reads():
    with pytest.raises(InputError) as caught:
        ONE.variant(nodes=4)
    (detail,) = caught.value.errors()
    assert detail["type"] == "rule" and detail["loc"] == ("inter_bandwidth",)
    assert detail["ctx"] == {"fields": ("nodes", "inter_bandwidth")}


def test_set_reports_every_value_it_cannot_read():
    with pytest.raises(InputError) as caught:
        apply_overrides(ONE, ["nodes=0", "step_time=fast", "precision=fp16"])
    assert [d["loc"] for d in caught.value.errors()] == [("nodes",), ("step_time",)]
    assert [d["input"] for d in caught.value.errors()] == ["0", "fast"]


def test_a_location_added_later_moves_every_mistake():
    with pytest.raises(InputError) as caught:
        ONE.variant(nodes=0, per_device_batch=-1)
    moved = caught.value.at("scenario")
    assert [d["loc"] for d in moved.errors()] == [
        ("scenario", "per_device_batch"),
        ("scenario", "nodes"),
    ]
