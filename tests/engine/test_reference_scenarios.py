"""The three reference scenarios against every figure of SPEC section 4's expected-results table.

Figures are copied from the table of ../shared/spec/SPEC.md ("Expected results (to at
least 9 significant digits)"); the tolerance is 1e-9 relative.
"""

import pytest

from mlsysim import Scenarios, ureg

REL = 1e-9

# field: (OneNode, FourNodes10GbE, GradientAccumulationOneNode), units as in the spec table.
EXPECTED = {
    "n_devices": (8, 32, 8),
    "gradient_bytes": (3e9, 3e9, 3e9),  # B
    "intra_bytes": (5.25e9, 5.25e9, 5.25e9),  # B
    "inter_bytes": (0.0, 5.8125e9, 0.0),  # B
    "intra_time": (35 / 3, 35 / 3, 35 / 3),  # ms; the spec prints 11.6666667
    "inter_time": (0.0, 4650.0, 0.0),  # ms
    "communication_time": (35 / 3, 4650 + 35 / 3, 35 / 3),  # ms; 4661.66667
    "compute_time": (1800.0, 1800.0, 7200.0),  # ms
    "update_time": (1800 + 35 / 3, 6450 + 35 / 3, 7200 + 35 / 3),  # ms; 1811.66667 ...
    # the table prints 0.00648148148, 2.58981481, 0.00162037037 (rounded); exact ratios here
    "communication_overhead": ((35 / 3) / 1800, (4650 + 35 / 3) / 1800, (35 / 3) / 7200),
    "compute_share": (0.99356025759, 0.27856590147, 0.99838225098),
    "speedup": (7.94848206072, 8.91410884705, 7.98705800786),
    "efficiency": (0.99356025759, 0.27856590147, 0.99838225098),
    "global_batch": (128, 512, 512),
    # hour; the table prints 3.14525463, 2.80454282, 3.13006366: 25 h / speedup, exactly
    "training_time": (
        25 * (1800 + 35 / 3) / (8 * 1800),
        25 * (6450 + 35 / 3) / (32 * 1800),
        25 * (7200 + 35 / 3) / (8 * 7200),
    ),
    "cost": (100.648148148, 358.981481481, 100.162037037),  # USD
}
UNITS = {
    "gradient_bytes": "byte",
    "intra_bytes": "byte",
    "inter_bytes": "byte",
    "intra_time": "millisecond",
    "inter_time": "millisecond",
    "communication_time": "millisecond",
    "compute_time": "millisecond",
    "update_time": "millisecond",
    "training_time": "hour",
}
PRINTED = {  # the table's rounded figures, checked to the digits printed
    "communication_overhead": (0.00648148148, 2.58981481, 0.00162037037),
    "training_time": (3.14525463, 2.80454282, 3.13006366),
}

NAMES = (
    "Gpt2DataParallelOneNode",
    "Gpt2DataParallelFourNodes10GbE",
    "Gpt2GradientAccumulationOneNode",
)


@pytest.mark.parametrize("index, name", list(enumerate(NAMES)))
@pytest.mark.parametrize("field", list(EXPECTED))
def test_reference_figure(index, name, field):
    result = getattr(Scenarios, name).result
    value = getattr(result, field)
    expected = EXPECTED[field][index]
    if field in UNITS:
        assert value.units == ureg.Unit(UNITS[field])
        value = value.magnitude
    assert value == pytest.approx(expected, rel=REL, abs=0 if expected else 1e-15)
    if field in PRINTED:
        assert value == pytest.approx(PRINTED[field][index], rel=5e-9)


@pytest.mark.parametrize("name", NAMES)
def test_communication_share_complements_compute_share(name):
    r = getattr(Scenarios, name).result
    assert r.compute_share + r.communication_share == pytest.approx(1.0, rel=1e-15)


def test_integer_fields_are_ints():
    r = Scenarios.Gpt2DataParallelFourNodes10GbE.result
    assert type(r.n_devices) is int and type(r.global_batch) is int
    assert type(r.cost) is float


def test_cost_is_none_without_a_rate():
    scenario = Scenarios.Gpt2DataParallelOneNode.variant(node_hour_rate=None)
    assert scenario.result.cost is None


def test_result_is_immutable_and_serialisable():
    import json

    r = Scenarios.Gpt2DataParallelOneNode.result
    with pytest.raises(AttributeError):
        r.speedup = 3.0
    data = json.loads(r.to_json())
    assert data["update_time"] == {
        "value": pytest.approx(1811.6666666666667),
        "unit": "millisecond",
    }
    assert data["training_time"]["unit"] == "hour"
    assert data["cost"] == {"value": pytest.approx(100.648148148), "unit": "USD"}
    assert data["n_devices"] == 8


def test_seed_scenarios_have_name_and_description():
    for scenario in Scenarios:
        assert scenario.name and scenario.description
    assert Scenarios.names() == list(NAMES)
