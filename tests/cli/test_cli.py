"""The command line through its runner (mlsysim.cli.main): exit code, stdout, stderr."""

import json
import re
import subprocess
import sys

import pytest

from tests.runner import run


def test_list_prints_one_line_per_scenario(capsys):
    code, out, err = run(capsys, "list")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("Gpt2DataParallelOneNode")


def test_run_prints_inputs_and_results(capsys):
    code, out, _ = run(capsys, "run", "Gpt2DataParallelFourNodes10GbE")
    assert code == 0
    assert "4,650.0" in out and "358.98" in out and "0.279" in out


def test_run_json_has_units_spelled_out(capsys):
    code, out, _ = run(capsys, "run", "Gpt2DataParallelOneNode", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["result"]["update_time"]["unit"] == "millisecond"
    assert data["result"]["update_time"]["value"] == pytest.approx(1811.6666666666667)
    assert data["inputs"]["nodes"] == 1


def test_run_with_overrides(capsys):
    code, out, _ = run(
        capsys,
        "run",
        "Gpt2DataParallelOneNode",
        "--set",
        "nodes=4",
        "--set",
        "inter_bandwidth=10 Gbps",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["result"]["inter_time"]["value"] == pytest.approx(4650.0)
    assert data["result"]["efficiency"] == pytest.approx(0.27856590147)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["run", "NoSuchScenario"], "unknown scenario"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes=0"], "nodes"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes=2.5"], "nodes"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes=True"], "nodes"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes=-3"], "nodes"),
        (["run", "Gpt2DataParallelOneNode", "--set", "devices_per_node=0"], "devices_per_node"),
        (["run", "Gpt2DataParallelOneNode", "--set", "per_device_batch=x"], "per_device_batch"),
        (["run", "Gpt2DataParallelOneNode", "--set", "accumulation_steps=0"], "accumulation_steps"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes=4"], "inter_bandwidth"),
        (["run", "Gpt2DataParallelOneNode", "--set", "step_time=3 GB"], "step_time"),
        (["run", "Gpt2DataParallelOneNode", "--set", "step_time=1.8"], "step_time"),
        (["run", "Gpt2DataParallelOneNode", "--set", "step_time=-1 s"], "step_time"),
        (["run", "Gpt2DataParallelOneNode", "--set", "step_time=nan s"], "step_time"),
        (["run", "Gpt2DataParallelOneNode", "--set", "intra_bandwidth=2 s"], "intra_bandwidth"),
        (["run", "Gpt2DataParallelOneNode", "--set", "intra_bandwidth=0 GB/s"], "intra_bandwidth"),
        (["run", "Gpt2DataParallelOneNode", "--set", "node_hour_rate=5 USD"], "node_hour_rate"),
        (["run", "Gpt2DataParallelOneNode", "--set", "precision=fp7"], "fp32"),
        (["run", "Gpt2DataParallelOneNode", "--set", "bogus=1"], "bogus"),
        (["run", "Gpt2DataParallelOneNode", "--set", "nodes"], "FIELD=VALUE"),
        (["run", "Gpt2DataParallelOneNode", "--set", "workload=NoModel"], "workload"),
        (["run", "Gpt2DataParallelOneNode", "--set", "step_time=1.8 parsecs"], "step_time"),
        (["run", "--no-such-option"], "no-such-option"),
        (["no-such-command"], "no-such-command"),
        (["run"], "name"),
    ],
)
def test_user_mistakes_print_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("mlsysim: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


def test_help_lists_commands_with_examples(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for word in ("list", "run", "explain", "Examples"):
        assert word in out


def test_bare_mlsysim_prints_its_usage_and_the_first_commands_on_several_lines(capsys, tmp_path, monkeypatch):
    from mlsysim.cli.app import FIRST_COMMANDS

    code, out, err = run(capsys)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "Usage: mlsysim [OPTIONS] COMMAND [ARGS]..."
    assert "error:" not in err and len(lines) > 8
    assert all(len(line) < 80 for line in lines)
    start = lines.index("Start with:")
    for (command, what), line in zip(FIRST_COMMANDS, lines[start + 1 :], strict=False):
        assert line.split() == [*command.split(), *what.split()]
    monkeypatch.chdir(tmp_path)  # init writes job.toml here
    for command, _ in FIRST_COMMANDS:  # each runs as printed
        assert run(capsys, *command.split()[1:])[0] == 0


def test_a_bare_command_group_prints_its_help_on_several_lines(capsys):
    code, _, err = run(capsys, "validate")
    assert code == 2
    assert err.startswith("Usage: mlsysim validate [OPTIONS] COMMAND [ARGS]...\n")
    assert "error:" not in err and len(err.splitlines()) > 5 and "  published  " in err


def test_run_help_has_examples(capsys):
    code, out, _ = run(capsys, "run", "--help")
    assert code == 0 and "--set" in out and "mlsysim run Gpt2DataParallelOneNode" in out


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "mlsysim", "list"], capture_output=True, text=True)
    assert out.returncode == 0 and "Gpt2DataParallelOneNode" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "mlsysim", "run", "Nope"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_registry_lists_entries_with_figures_and_sources(capsys):
    code, out, _ = run(capsys, "registry", "fabrics", "--sources")
    assert code == 0
    assert (
        "InfiniBand_NDR" in out and "50 GB/s per direction" in out and "source: IEEE 802.3ae" in out
    )
    code, out, _ = run(capsys, "registry")
    assert code == 0
    for group in ("models:", "accelerators:", "nodes:", "fabrics:", "prices:"):
        assert group in out
    assert "Language.GPT2" in out and "DGX_H100" in out and "4 USD/hour" in out


def test_registry_unknown_group_is_one_line(capsys):
    code, out, err = run(capsys, "registry", "gpus")
    assert code == 2 and out == "" and err.count("\n") == 1 and "accelerators" in err


@pytest.mark.parametrize(
    ("word", "want"),
    [(w, 1) for w in ("true", "True", "TRUE", "yes", "Yes", "1")]
    + [(w, 0) for w in ("false", "False", "no", "NO", "0")],
)
def test_set_reads_booleans_as_booleans(capsys, word, want):
    # (a switch that acts on GPT-2 on one node: sequence_parallel would do nothing at t = 1, and is refused)
    code, out, err = run(capsys, "run", "Gpt2DataParallelOneNode", "--set", f"flash_attention={word}", "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"]["flash_attention"] == want


def test_a_word_that_is_not_a_boolean_is_one_line_naming_the_words(capsys):
    code, _, err = run(capsys, "run", "Gpt2DataParallelOneNode", "--set", "sequence_parallel=maybe")
    assert code == 2
    assert err == "mlsysim: error: sequence_parallel: expected true or false (or yes/no, 1/0), got 'maybe'\n"


@pytest.mark.parametrize(
    "sets",
    [
        ["tensor_parallel=5"],
        ["tensor_parallel=2"],
        ["tensor_parallel=25"],
        ["pipeline_parallel=8", "pipeline_chunks=8", "accumulation_steps=8"],
        ["nodes=2", "inter_bandwidth=100 Gbps", "tensor_parallel=2", "pipeline_parallel=5", "accumulation_steps=8"],
        ["zero_stage=1", "shard_group=3"],
        ["pipeline_parallel=2", "pipeline_chunks=2", "accumulation_steps=3"],
    ],
)
def test_each_layout_suggestion_runs(capsys, sets):
    """GPT-2 (25 heads) on 8-GPU nodes: every value a layout error suggests is accepted as given."""
    from tests.physics.test_layout_advice import suggested

    argv = ["run", "Gpt2DataParallelOneNode", *(w for s in sets for w in ("--set", s))]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1
    changes = suggested(err.strip())
    assert changes
    for change in changes:
        again = [*argv, *(w for name, value in change.items() for w in ("--set", f"{name}={value}"))]
        code, _, err = run(capsys, *again)
        assert code == 0, (change, err)


BASE_RUN = ("run", "Gpt2DataParallelOneNode")
LINKED = ("--set", "inter_bandwidth=100 Gbps")


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        ((*BASE_RUN, "--set", "nodes=4"), '--set "inter_bandwidth=100 Gbps", or a fabric (--set fabric=InfiniBand_NDR)'),
        ((*BASE_RUN, "--set", "optimizer=adam"), '--set "memory_bandwidth=2.0 TB/s" or --set memory_bandwidth=A100'),
        ((*BASE_RUN, "--set", "failure_rate=1e-4 failures/device/hour"), '--set "checkpoint_bandwidth=2 GB/s" (per node)'),
        ((*BASE_RUN, "--set", "inter_bandwidth=InfiniBand_NDR", "--set", "nodes=2"), "--set fabric=InfiniBand_NDR"),
        (("plan", "Gpt2DataParallelOneNode", *LINKED, "--set", "node_hour_rate=none", "--axis", "nodes=1,2"),
         '(e.g. --set "node_hour_rate=32 USD/hour") or use --objective time'),
        (("plan", "Gpt2DataParallelOneNode", *LINKED, "--axis", "nodes=1,2", "--confidence", "0.8"),
         "--set assumptions=realistic"),
        (("sweep", "Gpt2DataParallelOneNode", "--axis", "nodes=1,2"), '--set "inter_bandwidth=100 Gbps"'),
    ],
)
def test_suggestions_on_the_command_line_are_in_command_line_syntax(capsys, argv, suggestion):
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1
    assert suggestion in err
    assert "Q_(" not in err and "objective=" not in err and "=Assumptions" not in err


def test_each_suggested_set_runs(capsys):
    code, _, err = run(capsys, *BASE_RUN, "--set", "nodes=4")
    assert code == 2
    for assignment in re.findall(r'--set "?([^")]+)"?', err):
        assert run(capsys, *BASE_RUN, "--set", "nodes=4", "--set", assignment)[0] == 0, assignment


def test_a_note_suggests_in_command_line_syntax_too(capsys):
    from mlsysim import Models, Scenarios

    code, _, err = run(capsys, *BASE_RUN, "--set", "workload=Llama2_7B")
    assert code == 0
    assert "derive them: --set step_time=none with mfu and node (or accelerator), --set training_time=none" in err
    with pytest.warns(UserWarning, match=r"derive them: step_time=None with mfu .* training_time=None"):
        Scenarios.Gpt2DataParallelOneNode.variant(workload=Models.Language.Llama2_7B)
