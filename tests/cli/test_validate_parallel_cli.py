"""``mlsysim validate parallel``: every published model-parallel run, per family, held out (issue 21)."""

from mlsysim.cli import main


def test_parallel_table_lists_runs_families_and_exclusions(capsys):
    code = main(["validate", "parallel"])
    out = capsys.readouterr().out
    assert code == 0
    assert "fitted math-kernel efficiency u: A100 0.592, H100 0.731" in out
    assert "narayanan2021_table1_1T" in out and "llama3_405b_8192gpu_seq8192" in out
    assert "all 37 runs: median |error| 4.0%" in out
    assert "leave one family out:" in out and "excluded:" in out
    assert "ZeRO-3 diagnostic" in out and "bloom176b_tr11_gbs16_rampup: one micro-batch" in out


def test_validate_parallel_json_and_published_report_both_sets():
    import json

    from typer.testing import CliRunner

    from mlsysim.cli.app import app

    runner = CliRunner()
    out = runner.invoke(app, ["validate", "parallel", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["kind"] == "parallel_validation" and data["all"]["runs"] == len(data["runs"])
    assert data["all"]["median_abs_error"] <= data["targets"]["median_abs_error"]
    assert set(data["leave_one_family_out"]) == set(data["families"])
    text = runner.invoke(app, ["validate", "published"]).output
    assert "Model-parallel runs" in text and "family left out" in text
    published = json.loads(runner.invoke(app, ["validate", "published", "--json"]).output)
    assert published["parallel"]["all"] == data["all"]
