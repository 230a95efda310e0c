"""The one JSON encoding: quantities as {value, unit} that parse back, strict JSON."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim import Q_, Scenarios
from mlsysim.core.exceptions import InputError
from mlsysim.core.jsonio import decode_quantity, document, dumps, encode
from mlsysim.engine.results import RESULT_NAMES, field_unit


@given(
    st.floats(min_value=1e-9, max_value=1e12, allow_nan=False),
    st.sampled_from(["ms", "GB/s", "Gbps", "hour", "USD/hour", "MiB", "us"]),
)
def test_a_quantity_round_trips_through_its_encoding(value, unit):
    q = Q_(value, unit)
    back = decode_quantity(json.loads(dumps(encode(q))))
    assert back.to(unit).magnitude == pytest.approx(value, rel=1e-12)


def test_non_finite_figures_are_an_error_not_invalid_json():
    with pytest.raises(InputError, match="not finite"):
        encode(Q_(math.inf, "s"))
    with pytest.raises(ValueError):
        dumps({"x": math.nan})


def test_result_json_gives_every_field_with_its_declared_unit():
    data = json.loads(Scenarios.Gpt2DataParallelFourNodes10GbE.result.to_json())
    assert list(data) == list(RESULT_NAMES)
    for name in RESULT_NAMES:
        unit = field_unit(name)
        if unit is not None and data[name] is not None:
            assert data[name]["unit"] == unit
    assert data["cost"] == {"value": pytest.approx(358.981481481), "unit": "USD"}


def test_documents_carry_the_schema_version():
    assert document("result", {"a": 1}) == {"schema_version": 1, "kind": "result", "a": 1}
