"""The whole run on the command line: run, sweep and plan with failures, energy and emissions."""

from mlsysim import Q_, Scenarios, plan
from mlsysim.cli import main

FOUR = "Gpt2DataParallelFourNodes10GbE"
SETS = [
    "--set", "device_power=H100", "--set", "carbon_intensity=France_BLOOM",
    "--set", "failure_rate=Llama3_405B_all", "--set", "checkpoint_bandwidth=2 GB/s",
    "--set", "restart_time=10 min",
]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_shows_the_whole_run_on_its_first_line_and_its_rows(capsys):
    code, out, err = run(capsys, "run", FOUR, *SETS)
    assert code == 0, err
    first = out.splitlines()[0]
    assert "goodput 99.8%" in first and "t CO2e" in first
    for label in ("job mean time between failures", "checkpoint interval", "goodput", "emissions (CO2e)"):
        assert label in out


def test_a_seed_run_shows_no_whole_run_row(capsys):
    code, out, _ = run(capsys, "run", FOUR)
    assert code == 0 and "goodput" not in out and "CO2e" not in out


def test_sweep_shows_the_whole_run_columns_where_modeled(capsys):
    code, out, err = run(capsys, "sweep", FOUR, *SETS, "--axis", "nodes=4,64")
    assert code == 0, err
    assert "goodput" in out and "CO2e (t)" in out and "energy (MWh)" in out


def test_plan_under_an_emissions_limit_and_a_bad_limit(capsys):
    base = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
        device_power=Q_(700, "W"), carbon_intensity=Q_(400, "g/kWh")
    )
    expected = plan(base, max_emissions=Q_(8, "kg"), nodes=[1, 2, 4, 8, 16]).best.nodes
    code, out, err = run(
        capsys, "plan", FOUR, "--set", "device_power=700 W", "--set", "carbon_intensity=400 g/kWh",
        "--axis", "nodes=1,2,4,8,16", "--max-emissions", "8 kg",
    )
    assert code == 0, err
    assert f"Best: nodes={expected} " in out and "emissions <= 8 kg CO2e" in out
    code, _, err = run(capsys, "plan", FOUR, "--axis", "nodes=1,2", "--max-emissions", "8 kWh")
    assert code == 2 and "--max-emissions" in err
