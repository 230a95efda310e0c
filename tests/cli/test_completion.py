"""Shell completion, click's: ``eval "$(_MLSYSIM_COMPLETE=bash_source mlsysim)"`` in bash."""

import os
import subprocess
import sys


def _complete(words: str) -> list[str]:
    env = {
        **os.environ,
        "_MLSYSIM_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    out = subprocess.run(
        [sys.executable, "-m", "mlsysim"], env=env, capture_output=True, text=True, check=True
    )
    return [line.split(",", 1)[1] for line in out.stdout.splitlines()]


def test_completion_offers_commands_subcommands_and_options():
    assert _complete("mlsysim ru") == ["run"]
    assert set(_complete("mlsysim validate ")) == {"parallel", "published", "mine", "ddp"}
    assert "--set" in _complete("mlsysim run --se")


def test_the_completion_script_is_printed():
    env = {**os.environ, "_MLSYSIM_COMPLETE": "bash_source"}
    out = subprocess.run([sys.executable, "-m", "mlsysim"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "_mlsysim_completion()" in out.stdout
