"""``mlsysim validate parallel``: every published model-parallel run, per family, held out (issue 21)."""

from mlsysim.cli import main


def test_parallel_table_leads_with_the_held_out_figure_and_lists_what_is_not_predicted(capsys):
    code = main(["validate", "parallel"])
    out = capsys.readouterr().out
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("Model-parallel runs through the scenario: 86 runs, each family left out: median")
    assert first.index("each family left out") < first.index("in sample")
    assert "narayanan2021_table1_1T" in out and "llama3_405b_8192gpu_seq8192" in out
    assert "in-training ceilings per generation and format (matmul_ceiling" in out and "[bound: the best" in out
    assert "torchtitan_t1_llama8b_8gpu_fsdp_compile_float8" in out
    assert "deepseek_v3_pretrain_2048xH800" in out and "mcore_moe_dsv3_gb200_256gpu_mxfp8" in out
    assert "sharding_rate of ZeRO-3 baseline" in out and "pipeline_rate of MT-NLG 530B" in out
    assert "llama3_405b_16384gpu_seq131072" in out  # context parallelism: predicted now
    assert "not expressible: Qwen3-Next's hybrid attention" in out


def test_validate_parallel_json_and_published_report_both_sets():
    import json

    from click.testing import CliRunner

    from mlsysim.cli.app import app

    runner = CliRunner()
    out = runner.invoke(app, ["validate", "parallel", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["kind"] == "parallel_validation" and data["held_out"]["runs"] == len(data["runs"])
    assert data["held_out"]["median_abs_error"] <= 0.075  # 7.4% over 86 runs (5.5% over the 40 of 2021-2024)
    assert all("scenario" in run and "held_out_scenario" in run for run in data["runs"])
    text = runner.invoke(app, ["validate", "published"]).output
    assert "Model-parallel runs through the scenario" in text and "each family left out" in text
    published = json.loads(runner.invoke(app, ["validate", "published", "--json"]).output)
    assert published["parallel"]["held_out"] == data["held_out"]
