"""Energy, emissions and cost: the published accounting, the power model's invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.physics import energy as en


def test_patterson_gpt3_row():
    """Patterson et al. 2021, Table 4: 10,000 V100 x 14.8 days x 330 W x PUE 1.1 = 1,287 MWh."""
    joules = en.facility_energy(en.it_power(10_000, 330.0), 14.8 * 86400, 1.1)
    assert joules / en.JOULES_PER_KWH / 1e3 == pytest.approx(1287, rel=0.005)
    kg = en.emissions(joules, 0.429 / en.JOULES_PER_KWH)
    assert kg / 1e3 == pytest.approx(552.1, rel=0.005)


def test_device_hours_form_equals_the_facility_form():
    a = en.device_hours_energy(82_432, 400.0, 1.1)
    b = en.facility_energy(en.it_power(82_432, 400.0), 3600.0, 1.1)
    assert a == pytest.approx(b)
    assert a / en.JOULES_PER_KWH / 1e3 == pytest.approx(36.27, rel=1e-3)  # LLaMA-7B, 36 MWh


def test_energy_cost():
    assert en.energy_cost(1000 * en.JOULES_PER_KWH, 0.08 / en.JOULES_PER_KWH) == pytest.approx(80.0)


def test_embodied_share_is_the_runs_part_of_the_lifetime():
    assert en.embodied_share(2500.0, 1.0, 6.0) == pytest.approx(2500.0 / 6.0)
    assert en.embodied_share(2500.0, 1.0, 6.0, 0.5) == pytest.approx(2 * 2500.0 / 6.0)


W = st.floats(1.0, 2000.0)
T = st.floats(0.0, 1e6)


@given(W, W, W, T, T, st.floats(1e-3, 1e6))
def test_average_power_lies_between_the_state_powers(p1, p2, p3, t1, t2, t3):
    avg = en.average_device_power(p1, p2, p3, t1, t2, t3)
    assert min(p1, p2, p3) * (1 - 1e-12) <= avg <= max(p1, p2, p3) * (1 + 1e-12)


def test_average_power_is_the_power_when_states_draw_the_same():
    assert en.average_device_power(700.0, 700.0, 700.0, 0.6, 0.3, 0.1) == pytest.approx(700.0)


def test_arrays_give_the_scalar_figures():
    shares = np.array([0.5, 0.9])
    avg = en.average_device_power(700.0, 400.0, 100.0, shares, 1 - shares, 0.0)
    assert avg[0] == en.average_device_power(700.0, 400.0, 100.0, 0.5, 0.5, 0.0)
    assert avg[1] == pytest.approx(700 * 0.9 + 400 * 0.1)
