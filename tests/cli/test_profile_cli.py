"""`mlsysim calibrate profile` through click's runner: the breakdown of a real trace, the files --out
writes, and one line on stderr with exit status 2 for each kind of bad trace."""

import copy
import gzip
import json
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mlsysim.cli import main
from mlsysim.kernels.tables import read_table

TRACES = Path(__file__).parents[1] / "data" / "traces"
CONTROL = str(TRACES / "hta_trace_diff_control_rank3.json.gz")
NCCL = str(TRACES / "hta_nccl_data_rank0.json.gz")


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def mlsysim(argv):
    """The installed entry point (``mlsysim.cli:entry``): exit status and stderr as a shell sees them."""
    sys.exit(main(list(argv)))


def run(*argv):
    return CliRunner().invoke(mlsysim, ["calibrate", "profile", *map(str, argv)])


def refused(result, *words):
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("mlsysim: error: "), result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_the_breakdown_of_a_real_trace_is_printed_by_class():
    result = run(CONTROL)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[1] == "  rank 3 of 8; NVIDIA A100-PG509-200 (registry: A100_40GB); steps #1010-#1011"
    assert lines[2].startswith("  step time 76.58 ms (gpu kernels;")
    rows = {line.split()[0]: line.split()[1:] for line in lines[6:15]}
    assert rows["matmul"] == ["14.01", "ms", "18.3%", "398"]
    assert rows["communication"] == ["26.3", "ms", "34.4%", "10"]
    assert rows["all_to_all"] == ["20.74", "ms", "27.1%", "7"]
    assert rows["attention"] == ["0", "0.0%", "0"]
    assert "measured tables: matmul 133 row(s)" in result.stdout


def test_json_gives_the_summary_and_the_tables():
    result = run(CONTROL, "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["kind"] == "profile" and data["accelerator"] == "A100_40GB" and data["gpu"] is True
    assert data["classes"]["matmul"]["time"] == {"value": pytest.approx(14.01, abs=0.005), "unit": "millisecond"}
    assert data["steps"] == [1010, 1011] and data["ranks"][0]["rank"] == 3
    assert data["tables"] == [{"kind": "matmul", "rows": 133, "file": "matmul_A100_40GB_profile.json"}]


def test_out_writes_the_summary_and_tables_that_read_back(tmp_path):
    result = run(CONTROL, "--out", tmp_path, "--accelerator", "a100_40gb")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matmul_A100_40GB_profile.json", "profile_summary.json"]
    assert f"wrote {tmp_path / 'matmul_A100_40GB_profile.json'}" in result.stdout
    table = read_table(tmp_path / "matmul_A100_40GB_profile.json")
    assert table.kind == "matmul" and table.accelerator == "A100_40GB" and len(table) == 133
    summary = json.loads((tmp_path / "profile_summary.json").read_text())
    assert summary["classes"]["optimizer"]["count"] == 14


def test_an_accelerator_the_registry_lacks_is_refused_before_reading():
    refused(run(CONTROL, "--accelerator", "TPUv9"), "--accelerator: 'TPUv9' is not a registry accelerator")


def test_out_must_be_an_existing_folder(tmp_path):
    refused(run(CONTROL, "--out", tmp_path / "missing"), "not an existing folder")


def test_a_file_of_another_format_is_refused(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text("#  size  count  type  redop  root  time  algbw  busbw\n")
    refused(run(log), "is not JSON", "expected a PyTorch profiler Chrome trace")


def test_a_truncated_json_trace_is_refused(tmp_path):
    cut = tmp_path / "rank0.json"
    cut.write_bytes(gzip.decompress(Path(NCCL).read_bytes())[:100_000])
    refused(run(cut), "the JSON ends mid-way (at byte 100,000): the file is truncated")


def test_a_truncated_gzip_trace_is_refused(tmp_path):
    cut = tmp_path / "rank0.json.gz"
    cut.write_bytes(Path(NCCL).read_bytes()[:50_000])
    refused(run(cut), "the gzip stream ends mid-way: the file is truncated")


def test_a_cpu_only_trace_is_summarised_and_refused(tmp_path):
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "ts": 10, "dur": 40, "pid": 1, "tid": 1,
         "args": {"Input Dims": [[4, 8], [16, 8], [16]], "Input type": ["float"] * 3}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 12, "dur": 30, "pid": 1, "tid": 1,
         "args": {"Input Dims": [[16], [4, 8], [8, 16]], "Input type": ["float"] * 3}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "ts": 60, "dur": 10, "pid": 1, "tid": 1},
    ]
    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    result = run(trace)
    refused(result, "no GPU kernels in", "(a CPU-only trace)", "ProfilerActivity.CUDA")
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line[:1].isalpha()}
    assert rows["matmul"][:3] == ["40", "us", "40.0%"]  # linear's self 10 us + addmm's 30 us
    assert rows["memory_bound"][:3] == ["10", "us", "10.0%"]


def test_a_trace_without_shapes_is_summarised_and_refused():
    result = run(NCCL)
    refused(result, "no operator shapes in", "record with record_shapes=True")
    assert "measured tables: collective 7 row(s)" in result.stdout


def test_ranks_that_disagree_in_steps_are_refused(tmp_path):
    document = json.loads(gzip.decompress(Path(NCCL).read_bytes()))
    other = copy.deepcopy(document)
    other["distributedInfo"]["rank"] = 1
    for event in other["traceEvents"]:
        if event.get("name") == "ProfilerStep#5":
            event["name"] = "ProfilerStep#6"
    rank1 = tmp_path / "rank1.json.gz"
    rank1.write_bytes(gzip.compress(json.dumps(other).encode()))
    refused(run(NCCL, rank1), "the ranks disagree in steps", "rank 0 (", "has step #5", "rank 1 (", "has step #6",
            "profile the same steps on every rank")


def test_traces_of_two_runs_are_refused():
    refused(run(CONTROL, NCCL), "the traces come from runs of different sizes (world sizes [2, 8])")
