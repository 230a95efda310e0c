"""What the terminal shows, through click's runner: the answer first, fixed point, no false precision."""

import re

import pytest
from click.testing import CliRunner

from mlsysim import Q_, Scenarios
from mlsysim.cli.app import app

FOUR = "Gpt2DataParallelFourNodes10GbE"
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def invoke(runner, *argv):
    result = runner.invoke(app, list(argv))
    assert result.exit_code == 0, result.output
    return result.output


def test_run_opens_with_the_answer_in_one_line(runner):
    out = invoke(runner, "run", FOUR)
    first = out.splitlines()[0]
    r = Scenarios.Gpt2DataParallelFourNodes10GbE.result
    assert first == (
        f"{FOUR}: 32 devices (4 nodes x 8): efficiency {r.efficiency:.1%}, update time "
        f"{r.update_time.magnitude / 1e3:.2f} s, training time on 32 devices "
        f"{r.training_time.magnitude:.2f} h, cost {r.cost:,.2f} USD; bottleneck: inter-node link"
    )


def test_run_labels_tell_one_device_inputs_from_cluster_results(runner):
    out = invoke(runner, "run", FOUR)
    assert re.search(r"training time on 32 devices\s+2\.80\s+h", out)
    assert re.search(r"training_time \(T_train\)\s+25 h\s+one device, the whole run", out)
    assert not re.search(r"^training_time\s+\d", out, re.M)  # no bare label that could be either
    assert out.index("update time") < out.index("step_time (T1)")  # results before inputs


def test_run_closes_with_the_next_commands_spelled_for_this_scenario(runner):
    out = invoke(
        runner,
        "run",
        "Gpt2DataParallelOneNode",
        "--set",
        "nodes=2",
        "--set",
        "inter_bandwidth=25 Gbps",
    )
    lines = out.rstrip().splitlines()
    assert lines[-3] == (
        'Next: mlsysim explain Gpt2DataParallelOneNode --set nodes=2 --set "inter_bandwidth=25 Gbps"'
        "   (how each figure is derived)"
    )
    assert (
        lines[-1]
        .strip()
        .startswith(
            'mlsysim sweep Gpt2DataParallelOneNode --set nodes=2 --set "inter_bandwidth=25 Gbps" --axis nodes=1..16'
        )
    )


def test_run_notes_say_flat_ring_over_all_devices_and_are_not_wrapped_in_a_pipe(runner):
    out = invoke(runner, "run", FOUR)
    assert (
        "  - inter-node AllReduce: one flat ring over all 32 devices (4 nodes x 8), 1 NIC per node\n"
        in out
    )
    assert (
        "  - efficiency 27.9%: communication dominates; consider accumulation, a faster link or fewer nodes\n"
        in out
    )


def test_run_figures_are_fixed_point(runner):
    out = invoke(runner, "run", FOUR, "--set", "training_time=20000 h")
    assert not SCIENTIFIC.search(out)


def test_explain_opens_with_the_same_answer_line(runner):
    out = invoke(runner, "explain", FOUR)
    run_first = invoke(runner, "run", FOUR).splitlines()[0]
    assert out.splitlines()[2] == run_first.split(": ", 1)[1]
    assert "ring factor f(n)" in out and "(flat ring over all n devices)" in out
    assert "one flat ring over all 32 devices" in out


def test_sweep_table_is_fixed_point_without_a_rate_on_a_tiny_sweep(runner):
    out = invoke(
        runner,
        "sweep",
        "Gpt2DataParallelOneNode",
        "--set",
        "training_time=20000 h",
        "--axis",
        "nodes=1,2,64",
        "--axis",
        "inter_bandwidth=25 Gbps,400 Gbps",
    )
    assert not SCIENTIFIC.search(out)
    assert "per second" not in out
    assert "update (ms)" in out and "cost (USD)" in out  # units in the headers
    assert "80,518.52" in out  # cost with thousands separators, two decimals


def test_sweep_csv_keeps_full_precision(runner, tmp_path):
    path = tmp_path / "s.csv"
    invoke(
        runner,
        "sweep",
        "Gpt2DataParallelOneNode",
        "--axis",
        "nodes=1,2",
        "--set",
        "inter_bandwidth=100 Gbps",
        "--csv",
        str(path),
    )
    header, first, _ = path.read_text().splitlines()
    eff = header.split(",").index("efficiency")
    assert first.split(",")[eff] == repr(Scenarios.Gpt2DataParallelOneNode.result.efficiency)


def test_plan_prints_equal_results_on_one_row(runner):
    out = invoke(
        runner,
        "plan",
        "Gpt2DataParallelOneNode",
        "--axis",
        "nodes=1..4",
        "--axis",
        "inter_bandwidth=100 Gbps,400 Gbps",
        "--axis",
        "zero_stage=1,2",
    )
    assert out.startswith("Best: nodes=1 -> 8 devices")
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows and all(" any " in row for row in rows)  # ZeRO-1 and ZeRO-2 take the same time
    nodes = [int(row.split("│")[1]) for row in rows]
    assert len(nodes) == len(set(nodes))  # one row per distinct result


def test_plan_on_the_edge_of_the_range_asks_to_widen_it(runner):
    out = invoke(
        runner,
        "plan",
        "Gpt2DataParallelOneNode",
        "--axis",
        "nodes=1..8",
        "--axis",
        "inter_bandwidth=400 Gbps",
        "--min-efficiency",
        "0.8",
    )
    assert "Knee: not in the range" in out and "widen the range (nodes beyond 8)" in out
    assert (
        Scenarios.Gpt2DataParallelOneNode.variant(
            nodes=8, inter_bandwidth=Q_(400, "Gbps")
        ).result.efficiency
        >= 0.8
    )


def test_readme_shows_the_real_output_of_run(runner):
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    command = "$ mlsysim run Gpt2DataParallelFourNodes10GbE\n"
    shown = readme.split(command, 1)[1].split("```", 1)[0]
    out = invoke(runner, "run", FOUR)
    assert [line.rstrip() for line in shown.splitlines()] == [
        line.rstrip() for line in out.splitlines()
    ]


def test_the_interval_line_writes_fixed_point_figures(runner):
    """An update of about a minute was written "4.691e+04-1.837e+05 ms" (issue 30)."""
    import re

    out = invoke(runner, "run", "Gpt2DataParallelOneNode", "--set", "assumptions=realistic", "--set", "nodes=64",
                 "--set", "inter_bandwidth=1 Gbps", "--set", "accumulation_steps=8")
    line = next(line for line in out.splitlines() if line.startswith("80% prediction interval"))
    assert not re.search(r"\de[+-]\d", line), line
    assert re.search(r"update_time [\d,]+\.\d-[\d,]+\.\d ms", line) and re.search(r"training_time [\d.]+-[\d.]+ min", line)
