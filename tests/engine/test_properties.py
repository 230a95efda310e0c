"""Invariants of the seed model over random valid inputs (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutScenario, Workload, ureg

precisions = st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"])


@st.composite
def scenarios(draw, nodes=None):
    n_nodes = draw(st.integers(1, 512)) if nodes is None else nodes
    return DataParallelScaleOutScenario(
        workload=Workload(name="w", parameters=Q_(draw(st.floats(1e5, 1e12)), "param")),
        precision=draw(precisions),
        step_time=Q_(draw(st.floats(1e-3, 100.0)), "s"),
        training_time=Q_(draw(st.floats(0.1, 1e5)), "hour"),
        per_device_batch=draw(st.integers(1, 1024)),
        devices_per_node=draw(st.integers(1, 16)),
        nodes=n_nodes,
        intra_bandwidth=Q_(draw(st.floats(1.0, 2000.0)), "GB/s"),
        inter_bandwidth=Q_(draw(st.floats(0.1, 3200.0)), "Gbps"),
        accumulation_steps=draw(st.integers(1, 64)),
        node_hour_rate=Q_(draw(st.floats(0.01, 1000.0)), "USD/hour"),
    )


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_speedup_at_most_devices_and_efficiency_in_unit_interval(s):
    r = s.result
    assert 0 < r.speedup <= r.n_devices * (1 + 1e-12)
    assert 0 < r.efficiency <= 1.0 + 1e-12
    assert r.compute_share + r.communication_share == pytest.approx(1.0, rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.integers(1, 64))
def test_efficiency_never_rises_when_nodes_grow(s, extra):
    bigger = s.variant(nodes=s.nodes + extra)
    assert bigger.result.efficiency <= s.result.efficiency * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.floats(0.01, 0.99))
def test_efficiency_never_rises_when_bandwidth_falls(s, factor):
    slower_inter = s.variant(inter_bandwidth=s.inter_bandwidth * factor)
    slower_intra = s.variant(intra_bandwidth=s.intra_bandwidth * factor)
    assert slower_inter.result.efficiency <= s.result.efficiency * (1 + 1e-12)
    assert slower_intra.result.efficiency <= s.result.efficiency * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.integers(1, 16))
def test_more_accumulation_never_lowers_efficiency(s, extra):
    more = s.variant(accumulation_steps=s.accumulation_steps + extra)
    assert more.result.efficiency >= s.result.efficiency * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(scenarios(nodes=1))
def test_one_node_has_no_inter_traffic(s):
    r = s.result
    assert r.inter_bytes.magnitude == 0 and r.inter_time.magnitude == 0


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.floats(0.1, 10.0))
def test_cost_scales_with_the_rate(s, factor):
    pricier = s.variant(node_hour_rate=s.node_hour_rate * factor)
    assert pricier.result.cost == pytest.approx(s.result.cost * factor, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(scenarios())
def test_units_of_every_result_field(s):
    r = s.result
    for name in ("gradient_bytes", "intra_bytes", "inter_bytes"):
        assert getattr(r, name).units == ureg.byte
    for name in ("intra_time", "inter_time", "communication_time", "compute_time", "update_time"):
        assert getattr(r, name).units == ureg.millisecond
    assert r.training_time.units == ureg.hour
    for name in (
        "communication_overhead",
        "compute_share",
        "communication_share",
        "speedup",
        "efficiency",
    ):
        assert type(getattr(r, name)) is float
    assert type(r.n_devices) is int and type(r.global_batch) is int
    assert type(r.cost) is float


@settings(max_examples=50, deadline=None)
@given(scenarios())
def test_update_time_is_compute_plus_communication(s):
    r = s.result
    assert r.update_time.magnitude == pytest.approx(
        r.compute_time.magnitude + r.communication_time.magnitude, rel=1e-12
    )
    assert r.global_batch == s.per_device_batch * r.n_devices * s.accumulation_steps
