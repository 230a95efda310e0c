"""Every "Next:" command that ``mlsysim run`` prints runs as printed (pasted into a shell)."""

import shlex

import pytest

from mlsysim.cli import main

LLAMA = [
    "--set", "workload=Llama2_7B", "--set", "node=DGX_H100", "--set", "fabric=InfiniBand_NDR",
    "--set", "nodes=16", "--set", "mfu=0.4", "--set", "training_tokens=1e12 token",
    "--set", "per_device_batch=1",
]  # fmt: skip


def next_commands(out: str) -> list[str]:
    """The suggested commands: the ``Next:`` line and the indented ``mlsysim`` lines after it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Next: "))
    commands = []
    for line in lines[start:]:
        text = line.removeprefix("Next: ").strip()
        if not text.startswith("mlsysim "):
            break
        commands.append(text.split("   (", 1)[0])
    return commands


def write_assumptions(tmp_path):
    """An assumptions file as ``mlsysim validate mine`` writes it, in a folder with a space."""
    from pathlib import Path

    runs = Path(__file__).parents[2] / "docs" / "examples" / "cluster_runs.csv"
    path = tmp_path / "my cluster" / "mine.toml"
    path.parent.mkdir()
    assert main(["validate", "mine", str(runs), "--out", str(path)]) == 0
    return str(path)


def write_job(tmp_path):
    path = tmp_path / "my job.toml"
    assert main(["init", str(path)]) == 0
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "Gpt2DataParallelFourNodes10GbE"],
        ["run", "Gpt2DataParallelOneNode", "--set", "nodes=2", "--set", "inter_bandwidth=25 Gbps"],
        ["run", *LLAMA],
        ["run", *LLAMA, "--set", "zero_stage=0", "--set", "per_device_batch=64"],
        ["run", "FILE", "--set", "nodes=3"],
        ["run", "Gpt2DataParallelFourNodes10GbE", "--set", "nodes=1000000000"],
        ["run", "Gpt2DataParallelFourNodes10GbE", "--assumptions", "ASSUMPTIONS"],
    ],
    ids=[
        "named",
        "named-with-sets",
        "no-name-no-file",
        "does-not-fit",
        "file-with-space",
        "huge",
        "assumptions-file",
    ],
)
def test_each_next_command_runs_as_printed(argv, tmp_path, capsys):
    if "FILE" in argv:
        argv = ["run", "--file", write_job(tmp_path), *argv[2:]]
    if "ASSUMPTIONS" in argv:
        argv = [*argv[:-1], write_assumptions(tmp_path)]
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    commands = next_commands(out)
    assert len(commands) >= (1 if "--assumptions" in argv else 2), out
    if "--assumptions" in argv:  # every suggestion keeps the file's constants
        assert all(f"--assumptions {shlex.quote(argv[-1])}" in c or argv[-1] in c for c in commands)
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "mlsysim"
        assert "" not in words, command  # no empty --file
        code = main(words[1:])
        err = capsys.readouterr().err
        assert code == 0, (command, err)


def test_the_seed_models_output_says_that_intervals_exist(capsys):
    assert main(["run", "Gpt2DataParallelFourNodes10GbE"]) == 0
    out = capsys.readouterr().out
    assert "mlsysim run Gpt2DataParallelFourNodes10GbE --set assumptions=realistic   (80% intervals" in out
    assert main(["run", "Gpt2DataParallelFourNodes10GbE", "--set", "assumptions=realistic"]) == 0
    out = capsys.readouterr().out
    assert "80% interval" in out and "(80% intervals; the seed model is a bound)" not in out
