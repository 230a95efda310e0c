"""A sweep over a layout with failures and energy: every row equals the scalar solve."""

from mlsysim import Q_, Assumptions, Scenarios
from mlsysim.planning.sweep import sweep

from .conftest import assert_table_matches_scalar

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
BASE = FOUR.variant(
    failure_rate=Q_(1e-4, "failures/device/hour"),
    checkpoint_bandwidth=Q_(2, "GB/s"),
    restart_time=Q_(10, "min"),
    device_power=Q_(700, "W"),
    carbon_intensity=Q_(385, "g/kWh"),
    energy_price=Q_(0.08, "USD/kWh"),
)


def test_sweep_with_failures_and_energy_equals_the_scalar_solve_row_by_row():
    axes = {
        "nodes": [1, 4, 64, 1024],
        "zero_stage": [0, 3],
        "failure_rate": [Q_(0, "failures/device/hour"), Q_(2e-5, "failures/device/hour"), Q_(0.5, "failures/device/hour")],
        "pue": [None, 1.4],
        "checkpoint_interval": [None, Q_(20, "min")],
    }
    table = sweep(BASE, **axes)
    assert_table_matches_scalar(table, BASE, axes)
    goodput = [g for g in table["goodput"] if g == g]
    assert goodput and all(0.0 <= g < 1.0 for g in goodput)


def test_sweep_of_the_realistic_rate_and_device_power_equals_the_scalar_solve():
    base = FOUR.variant(checkpoint_bandwidth=Q_(1, "GB/s"), restart_time=Q_(5, "min"))
    axes = {
        "assumptions": [Assumptions(), Assumptions.realistic()],
        "nodes": [2, 256],
        "device_power": [None, Q_(400, "W")],
        "idle_power": [None, Q_(150, "W")],
    }
    assert_table_matches_scalar(sweep(base, **axes), base, axes)
