"""``mlsysim run`` writes its result with the output options of ``mlsysim sweep``."""

import csv

import pytest

from mlsysim.cli import main

FOUR = "Gpt2DataParallelFourNodes10GbE"


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_run_csv_is_the_row_sweep_writes_for_the_layout(tmp_path, capsys):
    ran, swept = tmp_path / "run.csv", tmp_path / "sweep.csv"
    assert main(["run", FOUR, "--set", "nodes=3", "--csv", str(ran)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"wrote {ran}")
    assert (
        main(
            [
                "sweep",
                FOUR,
                "--axis",
                "nodes=3",
                "--axis",
                "devices_per_node=8",
                "--csv",
                str(swept),
            ]
        )
        == 0
    )
    assert rows(ran) == rows(swept)
    (row,) = rows(ran)
    assert row["nodes"] == "3" and row["n_devices"] == "24" and row["fits"] == ""


def test_run_parquet_and_json_keep_stdout_json(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "run.parquet"
    assert main(["run", FOUR, "--json", "--parquet", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("{") and f"wrote {path}" in err
    frame = pd.read_parquet(path)
    assert len(frame) == 1 and int(frame["n_devices"][0]) == 32


def test_run_refuses_a_bad_output_before_work(tmp_path, capsys):
    assert main(["run", FOUR, "--csv", str(tmp_path / "out.txt")]) == 2
    assert "--csv" in capsys.readouterr().err
