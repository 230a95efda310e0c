"""WholeRun: the worked example of docs/whole_run.md checked by hand, and its input errors."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Hardware, Infrastructure, InputError
from mlsysim.engine.model.whole_run import WHOLE_RUN_FIELDS, WholeRun

HOUR = 3600.0


def worked_example(**changes):
    inputs = dict(
        devices=16_384,
        devices_per_node=8,
        training_time=Q_(54, "day"),
        failure_rate=Infrastructure.Reliability.Llama3_405B_all.rate,
        restart_time=Q_(10, "min"),
        parameters=Q_(405e9, "param"),
        storage_bandwidth=Q_(2, "TB/s"),
        checkpoint_writers=1,
        device_power=Hardware.Cloud.H100.power.tdp,
        pue=1.1,
        carbon_intensity=Q_(385, "g/kWh"),
        energy_price=Q_(0.08, "USD/kWh"),
    )
    inputs.update(changes)
    return WholeRun(**inputs)


def test_worked_example_by_hand():
    """16,384 GPUs, 54 days, 466 interruptions per 54 days (Llama 3 405B), each term by hand."""
    f = worked_example().figures()
    n, ts = 16_384, 54 * 24 * HOUR
    lam = 466 / (n * 54 * 24 * HOUR)  # per GPU-second, from the published count
    m = 1 / (lam * n)
    assert m / HOUR == pytest.approx(1296 / 466, rel=1e-4)
    assert f.job_mtbf.to("hour").magnitude == pytest.approx(m / HOUR, rel=1e-4)
    delta = 14 * 405e9 / 2e12
    assert f.checkpoint_size.to("TB").magnitude == pytest.approx(5.67)
    assert f.checkpoint_time.to("s").magnitude == pytest.approx(delta)
    x = delta / (2 * m)
    tau = math.sqrt(2 * delta * m) * (1 + math.sqrt(x) / 3 + x / 9) - delta
    assert f.checkpoint_interval.to("s").magnitude == pytest.approx(tau, rel=1e-4)
    r = 600.0
    wall = m * math.exp(r / m) * (math.exp((tau + delta) / m) - 1) * ts / tau
    assert f.wall_time.to("s").magnitude == pytest.approx(wall, rel=1e-4)
    assert f.goodput == pytest.approx(ts / wall, rel=1e-4)
    assert f.goodput == pytest.approx(0.9196, abs=1e-4)
    assert f.inflation == pytest.approx(wall / ts, rel=1e-4)
    assert f.checkpoint_overhead.to("s").magnitude == pytest.approx(ts / tau * delta, rel=1e-4)
    assert f.interruptions == pytest.approx(wall / m, rel=1e-4)
    # the restarts cost about R per failure, the recomputed work about half a segment per
    # failure during computation (the ~R/M = 6% of failures that strike a restart lose none)
    assert f.restart_overhead.to("s").magnitude == pytest.approx(f.interruptions * r, rel=0.04)
    during_compute = f.interruptions * (1 - r / m)
    assert f.rework.to("s").magnitude == pytest.approx(during_compute * (tau + delta) / 2, rel=0.01)
    kwh = n * 0.7 * wall / HOUR * 1.1
    assert f.energy.to("kWh").magnitude == pytest.approx(kwh, rel=1e-4)
    assert f.emissions.to("t").magnitude == pytest.approx(kwh * 0.385 / 1000, rel=1e-4)
    assert f.energy_cost.to("USD").magnitude == pytest.approx(kwh * 0.08, rel=1e-4)


def test_without_failures_the_run_takes_its_training_time():
    f = WholeRun(devices=8, training_time=Q_(10, "hour"), device_power=Q_("700 W")).figures()
    assert f.goodput == 1.0 and f.wall_time == Q_(10.0, "hour")
    assert f.job_mtbf is None and f.emissions is None
    assert f.energy.to("kWh").magnitude == pytest.approx(8 * 0.7 * 10)


def test_a_rate_per_node_is_the_same_as_per_device_times_devices_per_node():
    per_device = worked_example(failure_rate=Q_(2e-5, "failures/hour")).figures()
    per_node = worked_example(
        failure_rate=Q_(16e-5, "failures/hour"), failure_rate_per="node"
    ).figures()
    assert per_node.job_mtbf.magnitude == pytest.approx(per_device.job_mtbf.magnitude)


def test_lower_idle_power_lowers_the_energy_of_checkpoints_and_restarts():
    full = worked_example().figures()
    low = worked_example(idle_power=Q_(100, "W")).figures()
    assert low.energy < full.energy
    saved = (16_384 * Q_(600, "W") * (full.checkpoint_overhead + full.restart_overhead) * 1.1).to(
        "MWh"
    )
    assert (full.energy - low.energy).to("MWh").magnitude == pytest.approx(saved.magnitude)


def test_embodied_emissions_need_a_lifetime():
    with pytest.raises(InputError, match="hardware_lifetime"):
        worked_example(embodied_per_node=Q_(2.5, "t"))
    f = worked_example(embodied_per_node=Q_(2.5, "t"), hardware_lifetime=Q_(6 * 365, "day"))
    wall_days = f.figures().wall_time.to("day").magnitude
    expected = 2048 * 2.5 * wall_days / (6 * 365)
    assert f.figures().embodied_emissions.to("t").magnitude == pytest.approx(expected)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"restart_time": None}, "restart_time"),
        ({"parameters": None}, "checkpoint_size"),
        ({"storage_bandwidth": None}, "checkpoint_bandwidth"),
        ({"pue": 0.9}, "pue"),
        ({"device_power": Q_(700, "GB")}, "device_power"),
        ({"carbon_intensity": Q_(400, "W")}, "carbon_intensity"),
        ({"failure_rate_per": "rack"}, "failure_rate_per"),
        ({"devices": 0}, "devices"),
        ({"compute_share": 0.5}, "compute_share"),
    ],
)
def test_bad_inputs_name_the_field(change, field):
    with pytest.raises(InputError) as info:
        worked_example(**change)
    assert info.value.loc == (field,)


def test_a_job_that_cannot_finish_is_an_error_naming_the_failure_rate():
    with pytest.raises(InputError) as info:
        worked_example(failure_rate=Q_(1, "failures/hour"), restart_time=Q_(10, "day")).figures()
    assert info.value.loc == ("failure_rate",)


def test_explain_shows_each_figure_with_its_equation():
    f = worked_example().figures()
    text = f.explain()
    for name in ("job_mtbf", "checkpoint_interval", "goodput", "energy", "emissions"):
        assert name in text
    assert "Daly 2006" in text and "0.9196" in text
    for line in text.splitlines():
        name, rest = line.split(maxsplit=1)
        shown = rest.split("   ")[0].strip()
        value = getattr(f, name)
        if isinstance(value, float):
            assert float(shown) == pytest.approx(value, rel=1e-3), name
        else:
            assert Q_(shown).to(value.units).magnitude == pytest.approx(value.magnitude, rel=1e-3)


def test_the_planned_result_names_are_fields():
    for name in (
        "goodput", "job_mtbf", "checkpoint_interval", "checkpoint_time", "energy",
        "emissions", "energy_cost",
    ):  # fmt: skip
        assert name in WHOLE_RUN_FIELDS


@settings(max_examples=60, deadline=None)
@given(
    devices=st.integers(8, 100_000),
    rate=st.floats(1e-7, 1e-4),
    restart_min=st.floats(0.0, 60.0),
    pue=st.floats(1.0, 2.0),
    intensity=st.floats(0.0, 1000.0),
)
def test_whole_run_invariants(devices, rate, restart_min, pue, intensity):
    run = WholeRun(
        devices=devices,
        training_time=Q_(30, "day"),
        failure_rate=Q_(rate, "failures/hour"),
        restart_time=Q_(restart_min, "min"),
        checkpoint_size=Q_(1, "TB"),
        checkpoint_bandwidth=Q_(5, "GB/s"),
        device_power=Q_(700, "W"),
        pue=pue,
        carbon_intensity=Q_(intensity, "g/kWh"),
    )
    try:
        f = run.figures()
    except InputError as exc:  # a job that fails too often to finish is refused, by name
        assert exc.loc == ("failure_rate",)
        return
    assert 0.0 < f.goodput <= 1.0
    parts = f.training_time + f.checkpoint_overhead + f.rework + f.restart_overhead
    assert parts.to("hour").magnitude == pytest.approx(f.wall_time.to("hour").magnitude)
    kwh = devices * 0.7 * f.wall_time.to("hour").magnitude * pue
    assert f.energy.to("kWh").magnitude == pytest.approx(kwh)
    assert f.emissions.to("kg").magnitude == pytest.approx(
        kwh * intensity / 1000, rel=1e-9, abs=1e-9
    )


def test_a_given_interval_is_used_and_explained_as_given():
    f = worked_example(checkpoint_interval=Q_(30, "min")).figures()
    assert f.checkpoint_interval == Q_(30.0, "min") and f.interval_given
    line = next(x for x in f.explain().splitlines() if x.startswith("checkpoint_interval"))
    assert line.endswith("given")
    assert f.goodput < worked_example().figures().goodput  # Daly's optimum does better
