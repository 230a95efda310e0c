"""The whole run through a scenario: failures, checkpoints, goodput, energy, emissions, cost.

The worked example of docs/whole_run.md (16,384 GPUs, 54 days, Llama 3's
interruption rate) through a scenario equals the standalone ``WholeRun``
figures and the hand-checked ones; properties hold over random inputs; the
seed's figures stay bit for bit when no whole-run input is given.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import (
    Q_,
    Assumptions,
    DataParallelScaleOutScenario,
    Hardware,
    Infrastructure,
    Scenarios,
    WholeRun,
    Workload,
)
from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import LLAMA3_FAILURE_RATE

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
WHOLE_RUN = dict(
    failure_rate=Q_(2e-5, "failures/device/hour"),
    checkpoint_bandwidth=Q_(2, "GB/s"),
    restart_time=Q_(10, "min"),
    device_power=Q_(700, "W"),
    pue=1.1,
    carbon_intensity=Q_(385, "g/kWh"),
    energy_price=Q_(0.08, "USD/kWh"),
)
NEW_RESULTS = (
    "job_mtbf", "checkpoint_size", "checkpoint_time", "checkpoint_interval",
    "checkpoint_overhead", "rework_time", "restart_overhead", "interruptions", "goodput",
    "wall_clock_time", "energy", "emissions", "energy_cost", "total_cost",
)


def _llama3_scenario() -> DataParallelScaleOutScenario:
    """16,384 GPUs (2,048 nodes of 8) whose failure-free training time is 54 days."""
    base = DataParallelScaleOutScenario(
        workload=Workload(name="405B", parameters=Q_(405e9, "param")),
        precision="bf16",
        step_time=Q_(10, "s"),
        training_time=Q_(1, "hour"),
        per_device_batch=1,
        devices_per_node=8,
        nodes=2048,
        intra_bandwidth=Q_(450, "GB/s"),
        inter_bandwidth=Q_(400, "Gbps"),
        failure_rate=Infrastructure.Reliability.Llama3_405B_all,
        restart_time=Q_(10, "min"),
        checkpoint_bandwidth=Q_(2, "TB/s"),  # one replica writes the 5.67 TB state
        device_power=Hardware.Cloud.H100,
        pue=1.1,
        carbon_intensity=Q_(385, "g/kWh"),
        energy_price=Q_(0.08, "USD/kWh"),
    )
    speedup = base.result.speedup
    return base.variant(training_time=Q_(54 * 24 * speedup, "hour"))


def test_worked_example_through_a_scenario_equals_the_whole_run_front_and_the_hand_figures():
    scenario = _llama3_scenario()
    r = scenario.result
    assert r.training_time.to("day").magnitude == pytest.approx(54, rel=1e-12)
    front = WholeRun(
        devices=16_384, devices_per_node=8, training_time=r.training_time,
        failure_rate=Infrastructure.Reliability.Llama3_405B_all.rate,
        restart_time=Q_(10, "min"), parameters=Q_(405e9, "param"),
        storage_bandwidth=Q_(2, "TB/s"), checkpoint_writers=1,
        device_power=Hardware.Cloud.H100.power.tdp, pue=1.1,
        carbon_intensity=Q_(385, "g/kWh"), energy_price=Q_(0.08, "USD/kWh"),
    ).figures()
    pairs = [
        (r.job_mtbf, front.job_mtbf, "hour"),
        (r.checkpoint_size, front.checkpoint_size, "TB"),
        (r.checkpoint_time, front.checkpoint_time, "s"),
        (r.checkpoint_interval, front.checkpoint_interval, "min"),
        (r.checkpoint_overhead, front.checkpoint_overhead, "hour"),
        (r.rework_time, front.rework, "hour"),
        (r.restart_overhead, front.restart_overhead, "hour"),
        (r.wall_clock_time, front.wall_time, "hour"),
        (r.energy, front.energy, "MWh"),
        (r.emissions, front.emissions, "t"),
    ]
    for ours, theirs, unit in pairs:
        assert ours.to(unit).magnitude == pytest.approx(theirs.to(unit).magnitude, rel=1e-12)
    assert r.goodput == pytest.approx(front.goodput, rel=1e-12)
    assert r.interruptions == pytest.approx(front.interruptions, rel=1e-12)
    assert r.energy_cost == pytest.approx(front.energy_cost.to("USD").magnitude, rel=1e-12)
    # the figures checked by hand in docs/whole_run.md
    assert round(r.job_mtbf.to("hour").magnitude, 3) == 2.781
    assert round(r.checkpoint_time.to("s").magnitude, 3) == 2.835
    assert round(r.checkpoint_interval.to("min").magnitude, 2) == 3.94
    assert round(r.goodput, 4) == 0.9196
    assert round(r.wall_clock_time.to("day").magnitude, 1) == 58.7
    assert round(r.interruptions) == 507
    assert round(r.energy.to("GWh").magnitude, 2) == 17.78
    assert round(r.emissions.to("t").magnitude) == 6845
    assert r.energy_cost == pytest.approx(1.42e6, rel=3e-3)
    # no node price: the whole run's cost is the energy's
    assert r.total_cost == pytest.approx(r.energy_cost, rel=1e-15)


def test_no_whole_run_input_leaves_every_figure_and_the_new_ones_none():
    for name in ("Gpt2DataParallelOneNode", "Gpt2DataParallelFourNodes10GbE"):
        r = getattr(Scenarios, name).result
        for field in NEW_RESULTS:
            assert getattr(r, field) is None, field


def test_whole_run_inputs_leave_the_update_and_the_seed_figures_bit_for_bit():
    plain = FOUR.result.figures
    modeled = FOUR.variant(**WHOLE_RUN).result.figures
    for field in plain._fields:
        if field in (*NEW_RESULTS, "update_power", "intra_cost", "inter_cost", "buckets"):
            continue
        ours, theirs = getattr(modeled, field), getattr(plain, field)
        assert ours == theirs or (ours != ours and theirs != theirs), field
    assert modeled.goodput < 1.0
    assert modeled.wall_clock_time > modeled.training_time


def test_energy_without_failures_is_the_failure_free_time_at_device_power():
    r = FOUR.variant(device_power=Q_(700, "W"), pue=1.2, carbon_intensity="France_BLOOM").result
    assert r.goodput is None and r.wall_clock_time is None
    expected = 1.2 * 32 * FOUR.result.training_time.to("s").magnitude * 700
    assert r.energy.to("J").magnitude == pytest.approx(expected, rel=1e-12)
    assert r.emissions.to("kg").magnitude == pytest.approx(expected / 3.6e6 * 0.057, rel=1e-12)
    assert r.energy_cost is None and r.total_cost is None


def test_an_accelerator_fills_device_power_with_its_tdp():
    scenario = FOUR.variant(accelerator="H100")
    assert scenario.result.energy is not None
    assert scenario.job.origins["device_power"].startswith("accelerator H100")
    assert FOUR.variant(accelerator="H100", device_power=Q_(500, "W")).result.energy < (
        scenario.result.energy
    )


def test_registry_entries_stand_for_their_figures():
    node_rate = Infrastructure.Reliability.OPT_175B_paper  # per node-hour, 8 devices a node
    s = FOUR.variant(**{**WHOLE_RUN, "failure_rate": node_rate, "carbon_intensity": "France_BLOOM"})
    per_device = node_rate.rate.to("failures/hour").magnitude / 8
    assert s.failure_rate.to("failures/device/hour").magnitude == pytest.approx(per_device, rel=1e-12)
    assert s.carbon_intensity.to("g/kWh").magnitude == pytest.approx(57)
    assert FOUR.variant(**{**WHOLE_RUN, "failure_rate": "Llama3_405B_all"}).result.job_mtbf.to(
        "hour"
    ).magnitude == pytest.approx(1 / (2.1946e-5 * 32), rel=1e-12)


@pytest.mark.parametrize("missing", ["checkpoint_bandwidth", "restart_time"])
def test_a_failure_rate_without_what_a_failure_costs_is_refused_at_the_missing_input(missing):
    given_inputs = {k: v for k, v in WHOLE_RUN.items() if k != missing}
    with pytest.raises(InputError) as info:
        FOUR.variant(**given_inputs)
    assert missing in str(info.value)


def test_a_zero_rate_needs_nothing_and_prices_no_failure():
    r = FOUR.variant(failure_rate=Q_(0, "failures/device/hour")).result
    assert r.goodput is None


@pytest.mark.parametrize(
    "text", ["pue=0.9", "pue=11", "device_power=-5 W", "carbon_intensity=400 W"]
)
def test_bad_whole_run_text_is_refused_naming_the_field(text):
    from mlsysim.engine.inputs.fields import FIELDS

    name, value = text.split("=")
    with pytest.raises(InputError) as info:
        FIELDS[name].from_text(value)
    assert info.value.loc == (name,)


def test_realistic_assumptions_price_failures_where_a_checkpoint_and_restart_are_given():
    assert LLAMA3_FAILURE_RATE.to("failures/device/hour").magnitude == pytest.approx(
        Infrastructure.Reliability.Llama3_405B_all.rate.to("failures/hour").magnitude, rel=1e-4
    )
    realistic = FOUR.variant(assumptions=Assumptions.realistic())
    assert realistic.result.goodput is None
    assert any("failures not priced" in note for note in realistic.result.constraint_trace)
    priced = realistic.variant(checkpoint_bandwidth=Q_(2, "GB/s"), restart_time=Q_(10, "min"))
    assert priced.result.goodput < 1.0
    rate = LLAMA3_FAILURE_RATE.to("failures/device/s").magnitude
    assert priced.result.job_mtbf.to("s").magnitude == pytest.approx(1 / (rate * 32), rel=1e-12)
    # the update's figures are the realistic ones, untouched
    assert priced.result.efficiency == realistic.result.efficiency
    assert priced.result.training_time == realistic.result.training_time
    # a scenario's own rate wins over the assumptions'
    own = priced.variant(failure_rate=Q_(1e-3, "failures/device/hour")).result
    assert own.job_mtbf < priced.result.job_mtbf


def test_a_job_that_cannot_finish_gets_goodput_zero_not_an_exception():
    r = FOUR.variant(
        **{**WHOLE_RUN, "failure_rate": Q_(0.9, "failures/device/s"), "restart_time": Q_(1, "day")}
    ).result
    assert r.goodput == 0.0
    assert math.isinf(r.wall_clock_time.magnitude)


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(1e-7, 1e-2),
    bandwidth=st.floats(0.1, 100.0),
    restart=st.floats(0.0, 120.0),
    pue=st.floats(1.0, 3.0),
    nodes=st.integers(1, 512),
    zero=st.sampled_from([0, 1, 3]),
)
def test_goodput_is_a_share_and_energy_is_proportional_to_pue(
    rate, bandwidth, restart, pue, nodes, zero
):
    s = FOUR.variant(
        nodes=nodes, zero_stage=zero, failure_rate=Q_(rate, "failures/device/hour"),
        checkpoint_bandwidth=Q_(bandwidth, "GB/s"), restart_time=Q_(restart, "min"),
        device_power=Q_(700, "W"), pue=pue,
    )
    r = s.result
    assert 0.0 < r.goodput <= 1.0
    assert r.wall_clock_time.to("hour").magnitude == pytest.approx(
        r.training_time.to("hour").magnitude / r.goodput, rel=1e-9
    )
    parts = (r.checkpoint_overhead + r.rework_time + r.restart_overhead).to("hour").magnitude
    assert r.training_time.to("hour").magnitude + parts == pytest.approx(
        r.wall_clock_time.to("hour").magnitude, rel=1e-9
    )
    higher = s.variant(pue=pue + 0.5).result
    assert higher.energy > r.energy
    assert higher.energy.magnitude / r.energy.magnitude == pytest.approx((pue + 0.5) / pue)
    more_failures = s.variant(failure_rate=Q_(rate * 2, "failures/device/hour")).result
    assert more_failures.goodput <= r.goodput
    assert more_failures.energy >= r.energy


def test_result_json_with_and_without_the_whole_run_is_valid_against_its_schema():
    from mlsysim.engine.io.schema import _result_model

    model = _result_model()
    for scenario in (FOUR, FOUR.variant(**WHOLE_RUN)):
        data = scenario.result.to_dict()
        model.model_validate(data)
    modeled = FOUR.variant(**WHOLE_RUN).result.to_dict()
    assert modeled["emissions"]["unit"] == "metric_ton" and modeled["emissions"]["value"] > 0
    assert FOUR.result.to_dict()["goodput"] is None


def test_idle_power_lowers_the_energy_by_the_update_s_waiting_share():
    busy = FOUR.variant(device_power=Q_(700, "W"))
    waiting = FOUR.variant(device_power=Q_(700, "W"), idle_power=Q_(100, "W"))
    same = FOUR.variant(device_power=Q_(700, "W"), idle_power=Q_(700, "W"))
    f = busy.result.figures
    share = f.exposed_communication_time / f.update_time  # the seed: no synchronization
    expected = busy.result.energy.magnitude * ((1 - share) * 700 + share * 100) / 700
    assert waiting.result.energy.magnitude == pytest.approx(expected, rel=1e-12)
    assert same.result.energy.magnitude == pytest.approx(busy.result.energy.magnitude, rel=1e-12)
    assert waiting.result.figures.update_power == pytest.approx(
        (1 - share) * 700 + share * 100, rel=1e-12
    )


def test_the_failure_rate_leaves_the_prediction_intervals_as_they_are():
    from mlsysim.engine.reports.band_store import assumptions_key

    realistic = Assumptions.realistic()
    assert assumptions_key(realistic) == assumptions_key(
        realistic.variant(failure_rate=Q_(0, "failures/device/hour"))
    )
    with_failures = FOUR.variant(
        assumptions=realistic, checkpoint_bandwidth=Q_(2, "GB/s"), restart_time=Q_(10, "min")
    ).result
    without = FOUR.variant(
        assumptions=realistic.variant(failure_rate=Q_(0, "failures/device/hour"))
    ).result
    assert with_failures.interval("efficiency") == without.interval("efficiency")
