"""``mlsysim validate parallel``: every published model-parallel run, per family, held out (issue 21)."""

from mlsysim.cli import main


def test_parallel_table_lists_runs_families_and_exclusions(capsys):
    code = main(["validate", "parallel"])
    out = capsys.readouterr().out
    assert code == 0
    assert "fitted math-kernel efficiency u: A100 0.591, H100 0.731" in out
    assert "narayanan2021_table1_1T" in out and "llama3_405b_8192gpu_seq8192" in out
    assert "all 38 runs: median |error| 4.4%" in out
    assert "leave one family out:" in out and "excluded:" in out
