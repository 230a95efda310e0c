"""The whole run on the command line: run, sweep and plan with failures, energy and emissions."""

from mlsysim import Q_, Scenarios, plan
from tests.runner import run

FOUR = "Gpt2DataParallelFourNodes10GbE"
SETS = [
    "--set", "device_power=H100", "--set", "carbon_intensity=France_BLOOM",
    "--set", "failure_rate=Llama3_405B_all", "--set", "checkpoint_bandwidth=2 GB/s",
    "--set", "restart_time=10 min",
]


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


WHOLE_RUN = ("job_mtbf", "checkpoint_size", "checkpoint_time", "checkpoint_interval", "wall_clock_time",
             "checkpoint_overhead", "rework_time", "restart_overhead", "interruptions", "goodput", "energy")
LAYOUT = ("tensor_ranks", "pipeline_stages", "data_parallel", "tensor_parallel_time", "pipeline_transfer_time",
          "sharding_time", "data_parallel_time", "bubble_time", "bubble_fraction", "state_memory",
          "stage_activation_memory", "gather_buffer_memory")


def test_the_whole_run_rows_and_the_pipeline_rows_are_each_in_one_block(capsys):
    """A failure model with a pipeline: the rows alternated (issue 30), each block now whole."""
    from mlsysim.engine.results import result_fields

    code, out, err = run(capsys, "run", FOUR, *SETS, "--set", "tensor_parallel=1", "--set", "pipeline_parallel=2",
                         "--set", "accumulation_steps=2")
    assert code == 0, err
    table = out.split("\n\ninput")[0].splitlines()

    def place(name):
        label = result_fields()[name].layout_label
        return next(i for i, line in enumerate(table) if line.startswith(label + "  "))

    whole, layout = sorted(place(n) for n in WHOLE_RUN), sorted(place(n) for n in LAYOUT)
    assert layout == list(range(layout[0], layout[0] + len(layout)))
    assert whole == list(range(whole[0], whole[0] + len(whole)))
    assert layout[-1] < whole[0]


def test_every_run_row_has_a_place_of_its_own():
    from mlsysim.engine.results import run_rows

    places = [f.row for f in run_rows()]
    assert len(places) == len(set(places))
