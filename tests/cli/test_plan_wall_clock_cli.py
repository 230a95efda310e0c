"""`mlsysim plan` under failures: the objective and --deadline use the wall clock (issue 30, item 1)."""

import json

from mlsysim.cli import main
from mlsysim.engine.io.files import save_scenario
from tests.planning.test_plan_wall_clock import LLAMA_70B


def test_the_command_line_plan_uses_the_wall_clock(tmp_path, capsys):
    path = save_scenario(LLAMA_70B, tmp_path / "llama.toml")
    argv = ["plan", "--file", str(path), "--axis", "nodes=8,32,128,512", "--objective", "time"]
    assert main([*argv, "--deadline", "100 day", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["best"]["inputs"]["nodes"] == 128
    assert (body["time_figure"], body["cost_figure"]) == ("wall_clock_time", "total_cost")
    assert main([*argv, "--deadline", "100 day"]) == 0
    out = capsys.readouterr().out
    assert "Pareto front: wall-clock time against whole-run cost" in out
    assert main([*argv, "--deadline", "50 day"]) == 2
    _, err = capsys.readouterr()
    assert "shortest wall-clock time 2028 h" in err and "Traceback" not in err
