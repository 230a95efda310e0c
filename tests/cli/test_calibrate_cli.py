"""`mlsysim calibrate nccl-tests` and the torch commands without torch, through the runner."""

import json
import sys
from pathlib import Path

import pytest

from tests.runner import run

FIXTURES = Path(__file__).parents[1] / "calibrate" / "fixtures"
H100 = str(FIXTURES / "h100_8gpu_all_reduce.txt")


def test_nccl_tests_prints_the_fit_and_a_row_per_size(capsys):
    code, out, err = run(capsys, "calibrate", "nccl-tests", H100)
    assert code == 0 and err == ""
    assert "all_reduce on 8 ranks, 31 sizes" in out
    assert "latency (alpha)        18.14 us" in out
    assert "bus bandwidth (beta)   330.6 GB/s" in out
    assert "peak bus bandwidth     369.8 GB/s" in out
    assert "per ring step" in out
    table = out.split("error\n")[-1].strip().splitlines()
    assert len(table) == 31
    assert table[0].split()[:2] == ["8", "B"] and table[-1].split()[:2] == ["8", "GiB"]


def test_nccl_tests_json(capsys):
    code, out, _ = run(capsys, "calibrate", "nccl-tests", H100, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ranks"] == 8 and data["collective"] == "all_reduce"
    assert data["latency"]["unit"] == "microsecond"
    assert data["bus_bandwidth"]["value"] == pytest.approx(330.57, rel=1e-4)
    assert data["link"]["latency"]["value"] == pytest.approx(data["latency"]["value"] / 14)
    assert len(data["points"]) == 31
    worst = max(abs(p["relative_error"]) for p in data["points"])
    assert worst == pytest.approx(data["worst_relative_error"])


def test_nccl_tests_writes_the_scenario_link(capsys, tmp_path):
    scenario = tmp_path / "cluster.toml"
    scenario.write_text('devices_per_node = 2\nnodes = 2\ninter_bandwidth = "10 Gbps"\n')
    fixture = str(FIXTURES / "two_node_ndr_all_reduce_out_of_place.txt")
    code, out, _ = run(
        capsys,
        "calibrate",
        "nccl-tests",
        fixture,
        "--write-scenario",
        str(scenario),
        "--link",
        "inter",
    )
    assert code == 0
    assert "wrote inter_bandwidth = '45.4178 GB/s', inter_latency = '12.1596 us'" in out
    text = scenario.read_text()
    assert 'inter_bandwidth = "45.4178 GB/s"' in text and 'inter_latency = "12.1596 us"' in text


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["calibrate", "nccl-tests", "no/such/file.log"], "cannot read the file"),
        (
            ["calibrate", "nccl-tests", str(FIXTURES / "h100_8gpu_all_reduce_truncated.txt")],
            "truncated.txt:40",
        ),
        (
            ["calibrate", "nccl-tests", H100, "--write-scenario", "x.toml", "--link", "both"],
            "--link",
        ),
        (["calibrate", "nccl-tests", H100, "--write-scenario", "x.toml"], "needs --link"),
        (["calibrate", "nccl-tests", H100, "--link", "intra"], "needs --write-scenario"),
        (["calibrate", "nccl-tests", H100, "--ranks", "4"], "ranks=4"),
        (["calibrate", "nccl-tests", H100, "--collective", "alltoall"], "collective"),
        (["calibrate", "torch", "--nproc", "0"], "nproc"),
        (["calibrate", "torch", "--backend", "mpi"], "backend"),
        (["calibrate", "torch", "--max-size", "3 s"], "max-size"),
        (["calibrate", "torch", "--nnodes", "2"], "rdzv_endpoint"),
        (["calibrate", "step", "--model", "resnet"], "model"),
        (["calibrate", "step", "--model", "gpt", "--width", "100", "--heads", "3"], "heads"),
        (["validate", "ddp", "--nproc", "1"], "nproc"),
        (["validate", "ddp", "--model", "bert"], "model"),
    ],
)
def test_mistakes_print_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("mlsysim: error: ") and err.count("\n") == 1
    assert needle in err
    assert "Traceback" not in err


def test_a_log_without_rows_is_one_line(capsys, tmp_path):
    path = tmp_path / "empty.log"
    path.write_text("host:1:1 [0] NCCL INFO Bootstrap : Using eth0\n")
    code, _, err = run(capsys, "calibrate", "nccl-tests", str(path))
    assert code == 2 and "no nccl-tests data rows" in err and "empty.log" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "torch", "--nproc", "2"],
        ["calibrate", "step", "--model", "mlp", "--batch", "2"],
        ["validate", "ddp", "--nproc", "2"],
    ],
)
def test_torch_commands_without_torch_say_how_to_install_it(capsys, monkeypatch, argv):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1
    assert "pip install 'mlsysim[calibrate]'" in err and "torch==2.13.0" in err


def test_help_does_not_import_torch():
    import subprocess

    code = (
        "import sys; from mlsysim.cli import main; main(['calibrate', '--help']); "
        "main(['validate', 'ddp', '--help']); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("False")
