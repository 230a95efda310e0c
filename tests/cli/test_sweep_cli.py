"""``mlsysim sweep`` and ``mlsysim plan`` through the runner: exit code, stdout, stderr, files."""

import csv

import pytest

from mlsysim import Q_, Scenarios, plan, save_scenario, sweep
from mlsysim.cli import main
from mlsysim.planning.axes import parse_axis
from tests.runner import run

ONE = "Gpt2DataParallelOneNode"
BW = "inter_bandwidth=25 Gbps,100 Gbps,400 Gbps"


@pytest.mark.parametrize(
    "text, field, values",
    [
        ("nodes=1..4", "nodes", [1, 2, 3, 4]),
        ("nodes=1..9:4", "nodes", [1, 5, 9]),
        ("nodes = 2, 8", "nodes", [2, 8]),
        ("accumulation_steps=4", "accumulation_steps", [4]),
        ("precision=fp16,bf16", "precision", ["fp16", "bf16"]),
    ],
)
def test_axis_syntax(text, field, values):
    got_field, got = parse_axis(text, Scenarios.Gpt2DataParallelOneNode)
    assert (got_field, list(got)) == (field, values)


def test_axis_with_units_and_assumption_fields():
    scenario = Scenarios.Gpt2DataParallelOneNode
    field, values = parse_axis(BW, scenario)
    assert field == "inter_bandwidth" and values == [
        Q_(25, "Gbps"),
        Q_(100, "Gbps"),
        Q_(400, "Gbps"),
    ]
    field, values = parse_axis("assumptions.inter_efficiency=0.7,0.9", scenario)
    assert field == "assumptions" and [a.inter_efficiency for a in values] == [0.7, 0.9]


def test_sweep_prints_rows_and_writes_csv_and_plot(capsys, tmp_path):
    out_csv, out_png = tmp_path / "s.csv", tmp_path / "s.png"
    code, out, err = run(
        capsys,
        "sweep",
        ONE,
        "--axis",
        "nodes=1..8",
        "--axis",
        BW,
        "--csv",
        str(out_csv),
        "--plot",
        str(out_png),
        "--rows",
        "5",
        "--progress",
    )
    assert code == 0, err
    assert "24 layouts of Gpt2DataParallelOneNode" in out and "19 more rows" in out
    assert "inter_bandwidth (Gbps)" in out and "update (ms)" in out
    with out_csv.open() as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 25 and rows[0][:2] == ["nodes", "inter_bandwidth [Gbps]"]
    expected = sweep(
        Scenarios.Gpt2DataParallelOneNode,
        nodes=range(1, 9),
        inter_bandwidth=[Q_(25, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")],
    )
    column = rows[0].index("efficiency")
    assert [float(r[column]) for r in rows[1:]] == expected["efficiency"].tolist()
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("kind", ["speedup", "breakdown"])
def test_sweep_plot_kinds_write_svg(capsys, tmp_path, kind):
    path = tmp_path / "p.svg"
    code, _, err = run(
        capsys,
        "sweep",
        ONE,
        "--axis",
        "nodes=1..4",
        "--axis",
        BW,
        "--plot",
        str(path),
        "--plot-kind",
        kind,
    )
    assert code == 0, err
    assert path.read_text().lstrip().startswith("<?xml")


def test_sweep_reads_a_scenario_file(capsys, tmp_path):
    path = save_scenario(Scenarios.Gpt2DataParallelFourNodes10GbE, tmp_path / "job.toml")
    code, out, _ = run(capsys, "sweep", "--file", str(path), "--axis", "accumulation_steps=1,4")
    assert code == 0 and "2 layouts" in out
    code, out, _ = run(capsys, "run", "--file", str(path))
    assert code == 0 and "4,650.0" in out


def test_plan_prints_the_plan_and_the_front(capsys, tmp_path):
    png = tmp_path / "front.png"
    code, out, err = run(
        capsys,
        "plan",
        ONE,
        "--axis",
        "nodes=1..16",
        "--axis",
        BW,
        "--deadline",
        "2 hour",
        "--budget",
        "5000 USD",
        "--min-efficiency",
        "0.8",
        "--plot",
        str(png),
    )
    assert code == 0, err
    expected = plan(
        Scenarios.Gpt2DataParallelOneNode,
        nodes=range(1, 17),
        inter_bandwidth=[Q_(25, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")],
        deadline=Q_(2, "hour"),
        budget=Q_(5000, "USD"),
        min_efficiency=0.8,
    )
    assert expected.summary() in out
    assert "Pareto front: training time against cost" in out
    assert png.stat().st_size > 1000


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["sweep", ONE, "--axis", "nodes=1..4"], "no inter_bandwidth"),
        (["sweep", ONE, "--axis", "nodes"], "FIELD=VALUES"),
        (["sweep", ONE, "--axis", "nodes=4..1"], "holds no values"),
        (["sweep", ONE, "--axis", "nodes=1,x"], "nodes"),
        (["sweep", ONE, "--axis", "bogus=1"], "bogus: unknown field"),
        (["sweep", ONE, "--axis", "nodes=1", "--axis", "nodes=2"], "twice"),
        (["sweep", ONE, "--axis", "nodes=1", "--plot", "x.gif"], ".png or .svg"),
        (["sweep", ONE, "--plot-kind", "pie"], "pie"),
        (["sweep"], "scenario"),
        (["sweep", ONE, "--file", "x.toml"], "not both"),
        (["sweep", "--file", "/no/such.toml"], "cannot read"),
        (
            ["plan", ONE, "--axis", "nodes=1..2", "--axis", BW, "--deadline", "1 s"],
            "no layout meets",
        ),
        (["plan", ONE, "--deadline", "2 USD"], "--deadline"),
        (["plan", ONE, "--objective", "speed"], "objective"),
        (["plan", ONE, "--set", "node_hour_rate=none"], "node_hour_rate"),
    ],
)
def test_mistakes_print_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("mlsysim: error:") and needle in lines[0]


@pytest.mark.parametrize("command", ["sweep", "plan"])
@pytest.mark.parametrize(
    "option, path, needle",
    [
        ("--plot", "out.gif", ".png or .svg"),
        ("--plot", "/no/such/dir/x.png", "does not exist"),
        ("--csv", "/no/such/dir/x.csv", "does not exist"),
    ],
)
def test_bad_output_paths_fail_before_any_work(capsys, command, option, path, needle):
    from mlsysim.cli import main

    code = main([command, "Gpt2DataParallelFourNodes10GbE", "--axis", "nodes=1..3", option, path])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


def test_a_sweep_too_big_for_memory_is_refused_up_front(capsys):
    code, out, err = run(
        capsys,
        "sweep",
        "Gpt2DataParallelFourNodes10GbE",
        "--axis",
        "nodes=1..1000000",
        "--axis",
        "accumulation_steps=1..1000",
    )
    assert code == 2 and out == ""
    assert "1,000,000,000 layouts would need about" in err and "--max-layouts" in err
    assert "--parquet" in err and len(err.strip().splitlines()) == 1


def test_a_huge_axis_is_refused_without_building_it(capsys):
    code, _, err = run(
        capsys, "plan", "Gpt2DataParallelFourNodes10GbE", "--axis", "nodes=1..1000000000000"
    )
    assert code == 2 and "--max-layouts" in err and "would take about" in err


def test_sweep_streams_to_parquet(capsys, tmp_path):
    import pandas as pd

    path = tmp_path / "rows.parquet"
    code, out, _ = run(
        capsys,
        "sweep",
        "Gpt2DataParallelFourNodes10GbE",
        "--axis",
        "nodes=1..40",
        "--axis",
        "precision=fp16,fp32",
        "--parquet",
        str(path),
    )
    assert code == 0 and f"wrote {path}" in out
    frame = pd.read_parquet(path)
    table = sweep(
        Scenarios.Gpt2DataParallelFourNodes10GbE, nodes=range(1, 41), precision=["fp16", "fp32"]
    )
    assert frame["efficiency"].tolist() == table["efficiency"].tolist()
    code, _, err = run(
        capsys,
        "sweep",
        "Gpt2DataParallelFourNodes10GbE",
        "--axis",
        "nodes=1..4",
        "--parquet",
        str(path),
        "--csv",
        str(tmp_path / "x.csv"),
    )
    assert code == 2 and "--parquet" in err


def test_plan_with_workers_top_and_a_layout_limit(capsys):
    args = [
        "plan",
        "Gpt2DataParallelFourNodes10GbE",
        "--axis",
        "nodes=1..32",
        "--axis",
        "accumulation_steps=1,2,4",
        "--objective",
        "cost",
    ]
    code, out, _ = run(capsys, *args, "--workers", "1", "--top", "3")
    assert code == 0 and "Top 3 layouts" in out and "Best:" in out
    code, _, err = run(capsys, *args, "--max-layouts", "50")
    assert code == 2 and "96 layouts would take about" in err and "--max-layouts" in err


@pytest.mark.parametrize(
    ("axis", "shown"),
    [("nodes=1,2,4,5,8,10", "nodes 1, 2, 4, 5, 8, 10"), ("nodes=1..10", "nodes 1..10"),
     ("nodes=2..10:2", "nodes 2..10:2"), ("nodes=1,2,3,4,5,6,7,9,12", "nodes 1, 2, 3, ..., 12 (9 values)")],
)
def test_the_plan_header_writes_a_list_as_a_list_and_a_range_as_a_range(capsys, axis, shown):
    assert main(["plan", "Gpt2DataParallelOneNode", "--set", "inter_bandwidth=100 Gbps", "--axis", axis]) == 0
    out = capsys.readouterr().out
    assert f"layouts ({shown})" in out


def test_piped_plan_output_cuts_no_number(capsys):
    """A layout plan under a failure model has some twenty columns: piped, each whole (issue 30: "43,958...")."""
    sets = ["workload=Llama3_70B", "node=DGX_H100", "nodes=8", "fabric=InfiniBand_NDR", "mfu=0.4",
            "training_tokens=1e12 token", "per_device_batch=1", "tensor_parallel=8", "pipeline_parallel=4", "accumulation_steps=16", "zero_stage=1",
            "failure_rate=2e-4 failures/device/h", "restart_time=8 h", "checkpoint_bandwidth=2 GB/s",
            "node_hour_rate=32 USD/hour", "device_power=H100"]
    argv = ["plan", *(w for s in sets for w in ("--set", s)), "--axis", "nodes=8,32,128,512"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "..." not in out
    assert "total cost (USD)" in out and "wall clock (h)" in out
