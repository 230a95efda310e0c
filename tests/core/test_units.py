"""The unit registry: the spec's units, information as a dimension, fast and exact conversion."""


import pytest

from mlsysim import Q_, UnitsError, ureg
from mlsysim.core.units import parse_quantity, to_canonical

SPEC_UNITS = [
    "byte",
    "B",
    "kB",
    "MB",
    "GB",
    "TB",
    "KiB",
    "MiB",
    "GiB",
    "bit",
    "Gbit",
    "Gbps",
    "GB/s",
    "s",
    "ms",
    "us",
    "hour",
    "day",
    "param",
    "flop",
    "USD",
    "dollar",
]


@pytest.mark.parametrize("name", SPEC_UNITS)
def test_the_spec_units_are_understood(name):
    assert Q_(1, name).magnitude == 1


@pytest.mark.parametrize(
    "text, kind, expected",
    [
        ("10 Gbps", "bandwidth", 1.25e9),
        ("450 GB/s", "bandwidth", 450e9),
        ("1 GiB", "data", 2**30),
        ("8 bit", "data", 1.0),
        ("2 hour", "time", 7200.0),
        ("250 us", "time", 250e-6),
        ("32 USD/hour", "money_rate", 32.0),
        ("1 day", "time", 86400.0),
    ],
)
def test_canonical_values(text, kind, expected):
    assert to_canonical(Q_(text), kind) == pytest.approx(expected, rel=1e-15)


def test_information_is_a_dimension_not_a_plain_number():
    assert Q_(1, "GB").dimensionality == ureg.bit.dimensionality != Q_(1, "").dimensionality
    with pytest.raises(UnitsError, match="dimensionless"):
        to_canonical(Q_(3, ""), "data")
    with pytest.raises(UnitsError):
        to_canonical(Q_(5, "1/s"), "bandwidth")


def test_bps_prints_as_bits_per_second_not_baud():
    assert f"{Q_(10, 'Gbps'):~P}" == "10 Gbps"
    assert Q_(10, "Gbps") == Q_(1.25, "GB/s")


@pytest.mark.parametrize("bad", [1.8, "1.8 s", None, True])
def test_plain_numbers_and_strings_are_not_quantities(bad):
    with pytest.raises(UnitsError):
        to_canonical(bad, "time")


def test_quantities_from_another_registry_are_converted():
    import pint

    other = pint.UnitRegistry()
    assert to_canonical(other.Quantity(2, "second"), "time") == 2.0


def test_parse_quantity_names_the_text():
    with pytest.raises(UnitsError, match="blorps"):
        parse_quantity("3 blorps")
    with pytest.raises(UnitsError, match="nan s"):  # text reads finite numbers only
        parse_quantity("nan s")


def test_tokens_and_samples_are_counts_of_their_own():
    assert to_canonical(Q_("1e12 token"), "tokens") == 1e12
    assert to_canonical(Q_(3, "samples"), "samples") == 3.0
    with pytest.raises(UnitsError, match="number of tokens"):
        to_canonical(Q_(1e12, "sample"), "tokens")
    with pytest.raises(UnitsError, match="number of samples"):
        to_canonical(Q_(5, "param"), "samples")


@pytest.mark.parametrize("unit_name", ["millisecond", "byte", "GB/s", "hour", ""])
def test_fast_float_quantity_is_a_plain_pint_quantity(unit_name):
    from mlsysim.core.units import quantity

    fast = quantity(2.5, unit_name)
    slow = Q_(2.5, unit_name)
    assert type(fast) is type(slow)
    assert fast == slow and fast.units == slow.units and fast.magnitude == 2.5
    assert f"{fast:~P}" == f"{slow:~P}"
    assert (fast * 2).to(slow.units).magnitude == 5.0
    assert fast.dimensionality == slow.dimensionality


@pytest.mark.parametrize(
    "text, kind, expected",
    [
        ("700 W", "power", 700.0),
        ("1.1 kW", "power", 1100.0),
        ("1287 MWh", "energy", 1287 * 3.6e9),
        ("3.2 t", "mass", 3200.0),
        ("400 g/kWh", "carbon_intensity", 0.4 / 3.6e6),
        ("0.385 kg/kWh", "carbon_intensity", 0.385 / 3.6e6),
        ("0.08 USD/kWh", "energy_price", 0.08 / 3.6e6),
        ("2e-5 failures/device/hour", "failure_rate", 2e-5 / 3600),
        ("2e-5 failures/hour", "event_rate", 2e-5 / 3600),
        ("466 interruptions/day", "event_rate", 466 / 86400),
    ],
)
def test_whole_run_units_parse_to_si(text, kind, expected):
    """The text forms of the whole-run inputs (power, energy, CO2e mass, intensity, price, rate)."""
    assert to_canonical(parse_quantity(text, kind), kind) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "text, kind",
    [("700 W", "energy"), ("400 g/kWh", "mass"), ("0.08 USD/kWh", "money"), ("3 h", "failure_rate")],
)
def test_whole_run_units_refuse_the_wrong_dimension(text, kind):
    with pytest.raises(UnitsError, match="expected"):
        to_canonical(parse_quantity(text), kind)


def test_every_kind_has_a_physical_range_and_spellings():
    from mlsysim.core.units import KINDS, PHYSICAL_RANGE, SPELLINGS

    assert set(KINDS) == set(PHYSICAL_RANGE) == set(SPELLINGS)


def test_the_cached_unit_registry_equals_the_parsed_one(tmp_path):
    """pint's disk cache of the parsed definitions gives the same registry as parsing them:
    every unit the parsed registry knows converts to its base units the same way."""
    import json
    import os
    import subprocess
    import sys

    probe = """
import json, sys
from mlsysim.core.units import ureg
names = json.loads(sys.stdin.read()) or sorted(ureg._units)
out = {}
for name in names:
    try:
        out[name] = str(ureg.Quantity(1.0, name).to_base_units())
    except Exception as exc:  # a few symbols pint keeps but cannot parse back (R_inf's)
        out[name] = type(exc).__name__
print(json.dumps(out))
"""

    def registry(cache: str, names: list[str]) -> dict[str, str]:
        env = {**os.environ, "MLSYSIM_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, "-c", probe],
            env=env, input=json.dumps(names), capture_output=True, text=True, check=True,
        )
        return json.loads(out.stdout)

    parsed = registry("off", [])
    names = sorted(parsed)
    assert {"Gbps", "param", "flop", "USD", "token", "sample"} <= set(names)
    assert registry(str(tmp_path), names) == parsed  # writes the cache
    assert any(tmp_path.glob("units-*.txt")) and (tmp_path / "pint").is_dir()
    assert registry(str(tmp_path), names) == parsed  # reads it
