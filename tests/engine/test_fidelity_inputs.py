"""Scenario inputs and assumptions of issue 12; each neutral by default, each with its effect."""

import pytest

from mlsysim import Q_, Assumptions, Scenarios
from mlsysim.core.exceptions import InputError
from mlsysim.hardware.registry import Hardware

BASE = Scenarios.Gpt2DataParallelOneNode
MULTI = Scenarios.Gpt2DataParallelFourNodes10GbE


def _raw(s, name):
    return s.result.raw(name)


def test_neutral_defaults_reproduce_the_seed_exactly():
    plain = BASE.result
    same = BASE.variant(
        gradient_precision=None, optimizer=None, inter_transport=None, input_pipeline=None
    ).result
    assert same == plain
    assert BASE.variant(input_pipeline="synthetic").result == plain  # no jitter in the seed
    assert _raw(BASE, "optimizer_time") == 0.0 and _raw(BASE, "extra_share") == 0.0


def test_gradient_precision_sets_the_bytes_on_the_wire():
    fp32 = BASE.variant(precision="fp16", gradient_precision="fp32")
    assert _raw(fp32, "gradient_bytes") == pytest.approx(BASE.workload.parameter_count() * 4.0)
    assert _raw(fp32, "communication_time") > _raw(
        BASE.variant(precision="fp16"), "communication_time"
    )


def test_optimizer_needs_memory_bandwidth_and_excludes_a_given_time():
    with pytest.raises(InputError, match="memory_bandwidth"):
        BASE.variant(optimizer="adam")
    with pytest.raises(InputError, match="optimizer"):
        BASE.variant(
            optimizer="adam", memory_bandwidth=Q_(2, "TB/s"), optimizer_step_time=Q_(5, "ms")
        )
    with pytest.raises(InputError, match="optimizer"):
        BASE.variant(optimizer="rmsprop2", memory_bandwidth=Q_(2, "TB/s"))


def test_optimizer_step_counts_once_per_update_on_both_sides_of_the_speedup():
    s = BASE.variant(optimizer="adam", memory_bandwidth=Hardware.Cloud.A100)
    p = BASE.workload.parameter_count()
    t_opt = p * 28.0 / 2.039e12
    assert _raw(s, "optimizer_time") == pytest.approx(t_opt)
    assert _raw(s, "update_time") == pytest.approx(_raw(BASE, "update_time") + t_opt)
    compute = _raw(s, "compute_time")
    assert s.result.speedup == pytest.approx(
        s.result.n_devices * (compute + t_opt) / _raw(s, "update_time")
    )
    given = BASE.variant(optimizer_step_time=Q_(t_opt, "s"))
    assert _raw(given, "update_time") == pytest.approx(_raw(s, "update_time"))


def test_tcp_transport_halves_the_inter_node_rate():
    rdma, tcp = MULTI, MULTI.variant(inter_transport="TCP")
    assert _raw(tcp, "inter_time") == pytest.approx(2 * _raw(rdma, "inter_time"))
    with pytest.raises(InputError, match="inter_transport"):
        MULTI.variant(inter_transport="udp")


def test_interference_and_jitter_are_opt_in_costs():
    a = Assumptions(overlap=True)
    hidden = BASE.variant(assumptions=a)
    slowed = BASE.variant(assumptions=a.variant(interference=0.19))
    assert _raw(slowed, "interference_time") == pytest.approx(
        0.19 * _raw(hidden, "hidden_communication_time")
    )
    jitter = BASE.variant(assumptions=Assumptions(host_jitter=Q_(10, "ms")))
    assert _raw(jitter, "synchronization_time") > 0 == _raw(BASE, "synchronization_time")


@pytest.mark.parametrize("pipeline", ["Synthetic", "device"])
def test_inputs_prepared_off_the_host_remove_the_host_jitter_only(pipeline):
    a = Assumptions.realistic()
    real = MULTI.variant(assumptions=a)
    synthetic = MULTI.variant(assumptions=a, input_pipeline=pipeline)
    no_jitter = MULTI.variant(assumptions=a.variant(host_jitter=Q_(0, "s")))
    assert MULTI.variant(assumptions=a, input_pipeline="real").result == real.result
    assert _raw(synthetic, "synchronization_time") == _raw(no_jitter, "synchronization_time")
    assert _raw(synthetic, "synchronization_time") < _raw(real, "synchronization_time")
    assert synthetic.result.raw("exposed_communication_time") == real.result.raw(
        "exposed_communication_time"
    )
    with pytest.raises(InputError, match="input_pipeline"):
        MULTI.variant(input_pipeline="disk")


def test_ddp_bucket_copies_and_first_bucket():
    a = Assumptions(bucket_copies=True, first_bucket_size=Q_(1, "MiB"))
    s = BASE.variant(assumptions=a, memory_bandwidth=Q_(10, "GB/s"), intra_latency=Q_(1, "ms"))
    g = _raw(s, "gradient_bytes")
    assert _raw(s, "bucket_copy_time") == pytest.approx(4 * g / 10e9)
    d = BASE.devices_per_node
    assert _raw(s, "exposed_communication_time") == pytest.approx(
        _raw(BASE.variant(intra_latency=Q_(1, "ms")), "communication_time") + 2 * (d - 1) * 1e-3
    )
    one = BASE.variant(assumptions=a, memory_bandwidth=Q_(10, "GB/s"), devices_per_node=1)
    assert _raw(one, "bucket_copy_time") == 0.0


def test_realistic_preset_values():
    r = Assumptions.realistic()
    assert r.interference == 0.19 and r.host_jitter == Q_(15.2, "ms")


def test_new_steps_appear_in_explain():
    s = BASE.variant(
        assumptions=Assumptions.realistic(),
        optimizer="adam",
        memory_bandwidth=Hardware.Cloud.A100,
    )
    text = s.explain()
    for step in ("optimizer step", "interference", "sqrt((c T1)^2 + (p j)^2)", "80% interval"):
        assert step in text
    assert "80% interval" not in BASE.explain()


def test_sweep_over_the_new_inputs_equals_the_scalar_solve():
    from mlsysim.planning.sweep import sweep

    s = MULTI.variant(assumptions=Assumptions.realistic(), memory_bandwidth="A100")
    axes = {
        "inter_transport": ["rdma", "tcp"],
        "input_pipeline": ["real", "synthetic"],
        "optimizer": ["sgd", "lamb"],
        "gradient_precision": ["fp16", "fp32"],
        "nodes": [2, 4],
    }
    table = sweep(s, **axes)
    got = sorted(table["efficiency"].ravel().tolist())
    want = sorted(
        s.variant(
            inter_transport=t, input_pipeline=p, optimizer=o, gradient_precision=g, nodes=n
        ).result.efficiency
        for t in axes["inter_transport"]
        for p in axes["input_pipeline"]
        for o in axes["optimizer"]
        for g in axes["gradient_precision"]
        for n in axes["nodes"]
    )
    assert got == want


def test_new_steps_recompute_from_their_printed_operands():
    """The explain checker of tests/engine/test_explain.py, on a scenario with every new cost."""
    import re

    from tests.engine.test_explain import NUMBER, steps, value_of

    s = MULTI.variant(
        assumptions=Assumptions.realistic().variant(bucket_copies=True),
        nics_per_node=8,
        optimizer="lamb",
        memory_bandwidth="A100",
        inter_transport="tcp",
        accumulation_steps=2,
    )
    seen = set()
    for what, operands, value in steps(s.explain()):
        if not re.match(NUMBER, value):
            continue
        assert value_of(operands) == pytest.approx(value_of(value), rel=2e-5, abs=1e-9), what
        seen.add(what)
    assert {"optimizer step", "interference", "bucket copies", "extra", "synchronization"} <= seen
    synthetic = s.variant(input_pipeline="synthetic", accumulation_steps=1)
    text = synthetic.explain()
    assert "(0 x " in text
    for what, operands, value in steps(text):
        if re.match(NUMBER, value):
            assert value_of(operands) == pytest.approx(value_of(value), rel=2e-5, abs=1e-9), what
