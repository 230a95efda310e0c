"""Fuzz the text boundary: our error or a valid, finite value, never another exception."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from mlsysim.core.text import parse_float, parse_int, printable
from mlsysim.core.units import KINDS, Quantity, parse_quantity, to_canonical
from mlsysim.engine.inputs.assumptions import assumption_from_text
from mlsysim.engine.io.overrides import coerce_field
from tests.hostile.conftest import FUZZ, ours_or_valid

# Pieces people (and attackers) type: numbers, units, operators, unicode look-alikes.
PIECES = [
    "1", "0", "-", "+", ".", "e", "E", "9", "**", "^", "*", "/", " ", "(", ")", "_", ",",
    "1e308", "1e-320", "9**9**9", "inf", "nan", "NaN", "²", "٣", "０", "\x00", "\x1b[2J",
    "\u202e", "Gb", "GB", "gb", "Gbps", "gbps", "G", "GbE", "Mb", "Tb", "Kb", "KB", "B", "b",
    "s", "ms", "MS", "us", "µs", "hour", "h", "USD", "USD/hour", "param", "flop", "Gilbert",
    "H100", "InfiniBand_NDR", "none", "seed", "realistic", "meter", "kelvin", "degC", "%",
    "pi", "π", "e", "x" * 300,
]
TEXTS = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.lists(st.sampled_from(PIECES), max_size=4).map(" ".join),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def _finite_quantity(q: object) -> None:
    assert isinstance(q, Quantity)
    assert math.isfinite(float(q.magnitude))


@FUZZ
@given(TEXTS, st.sampled_from([None, *KINDS]))
def test_parse_quantity(text, kind):
    q = ours_or_valid("parse_quantity", lambda: parse_quantity(text, kind), _finite_quantity)
    if q is not None and kind is not None:
        assert math.isfinite(to_canonical(q, kind))


@FUZZ
@given(TEXTS)
def test_parse_int_and_float(text):
    ours_or_valid("parse_int", lambda: parse_int(text), lambda v: type(v) is int)
    ours_or_valid(
        "parse_float", lambda: parse_float(text), lambda v: type(v) is float and math.isfinite(v)
    )


FIELDS = [
    "nodes", "devices_per_node", "step_time", "inter_bandwidth", "intra_bandwidth",
    "device_memory", "node_hour_rate", "workload", "assumptions", "intra_latency",
]  # fmt: skip


@FUZZ
@given(st.sampled_from(FIELDS), TEXTS)
def test_set_a_field_from_text(gpt2_scenario, field, text):
    def build():
        return gpt2_scenario.variant(**{field: coerce_field(field, text)}).result

    ours_or_valid("--set", build, lambda result: _finite_result(result))


@FUZZ
@given(
    st.sampled_from(["bucket_size", "update_overhead", "inter_efficiency", "overlap", "algorithm"]),
    TEXTS,
)
def test_set_an_assumption_from_text(gpt2_scenario, field, text):
    def build():
        a = gpt2_scenario.assumptions.variant(**{field: assumption_from_text(field, text)})
        return gpt2_scenario.variant(assumptions=a).result

    ours_or_valid("assumptions", build, _finite_result)


def _finite_result(result) -> None:
    for key, value in result.to_dict().items():
        if isinstance(value, dict):
            value = value["value"]
        if isinstance(value, float):
            assert math.isfinite(value), (key, value)
    result.to_json()  # strict JSON: raises on NaN or infinity


@FUZZ
@given(st.text(max_size=80))
def test_printable_leaves_no_control_characters(text):
    out = printable(text)
    assert out.isprintable()


UNITS = {
    "step_time": "s", "training_time": "hour", "intra_bandwidth": "GB/s", "inter_bandwidth": "Gbps",
    "node_hour_rate": "USD/hour", "intra_latency": "us", "inter_latency": "us",
    "device_memory": "GB", "activation_memory": "GB",
}  # fmt: skip


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(sorted(UNITS)), st.floats(allow_nan=True, allow_infinity=True), max_size=4
    ),
    st.dictionaries(
        st.sampled_from(["nodes", "devices_per_node", "per_device_batch", "accumulation_steps"]),
        st.integers(-5, 10**18),
        max_size=3,
    ),
    st.booleans(),
    st.dictionaries(
        st.sampled_from(["intra_efficiency", "inter_efficiency", "backward_fraction", "straggler_cv"]),
        st.floats(allow_nan=True, allow_infinity=True),
        max_size=3,
    ),
)
def test_python_quantities_give_a_finite_result_or_our_error(
    gpt2_scenario, quantities, counts, realistic, choices
):
    from mlsysim import Q_, Assumptions

    def build():
        changes = {k: Q_(v, UNITS[k]) for k, v in quantities.items()} | counts
        base = Assumptions.realistic() if realistic else Assumptions()
        changes["assumptions"] = base.variant(**choices)
        return gpt2_scenario.variant(**changes).result

    ours_or_valid("python inputs", build, _finite_result)
