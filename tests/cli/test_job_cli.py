"""A job from scratch on the command line: run with --set only, init, notes, the 'from' column."""

import json

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems, load_scenario
from tests.runner import run

JOB = [
    "--set", "workload=Llama3_8B",
    "--set", "node=DGX_H100",
    "--set", "fabric=InfiniBand_NDR",
    "--set", "nodes=16",
    "--set", "mfu=0.4",
    "--set", "training_tokens=1e12 token",
    "--set", "per_device_batch=1",
    "--set", "precision=bf16",
]  # fmt: skip


def test_run_with_set_only_plans_the_job(capsys):
    code, out, err = run(capsys, "run", *JOB)
    assert code == 0, err
    assert err == ""
    assert "(from node DGX_H100)" in out and "(from fabric InfiniBand_NDR)" in out
    assert "(from mfu)" in out and "(from training_tokens)" in out
    assert "1.26401 s" in out  # the derived step time: model FLOPs / (peak x mfu), nothing added
    assert "372.57" in out


def test_run_json_names_what_was_derived(capsys):
    import json

    code, out, err = run(capsys, "run", *JOB, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["derived"]["step_time"] == "mfu"
    assert doc["derived"]["training_time"] == "training_tokens"
    assert doc["inputs"]["node"] == "DGX_H100"
    assert doc["result"]["training_time"]["value"] == __import__("pytest").approx(372.570, rel=1e-5)


def test_run_without_a_scenario_or_set_is_one_line_and_exit_2(capsys):
    code, out, err = run(capsys, "run")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--set" in err


def test_a_job_missing_its_speed_says_how_to_derive_it(capsys):
    # a V100 node: no measured kernels, so nothing prices the operators
    code, _, err = run(
        capsys, "run", *JOB[:2], "--set", "node=DGX1_V100", "--set", "training_time=10 hour",
        "--set", "per_device_batch=1",
    )
    assert code == 2 and err.count("\n") == 1
    assert ("step_time: a step priced from the operators on the NVIDIA V100 SXM2 32GB (Volta): no matmul table "
            "measures fp16 on Volta") in err
    assert "mlsysim calibrate kernels FILE" in err and "or give a measured step_time, or mfu" in err


def test_a_job_on_a_fitted_accelerator_prices_its_step_from_the_operators(capsys):
    code, out, err = run(
        capsys, "run", *JOB[:4], "--set", "training_time=10 hour", "--set", "per_device_batch=1", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["derived"]["step_time"].startswith("operators (fp16 matrix products, ceiling")


def test_a_measured_step_time_carried_to_another_workload_is_a_note(capsys):
    code, out, err = run(capsys, "run", "Gpt2DataParallelOneNode", "--set", "workload=GPT3")
    assert code == 0
    assert err.startswith("mlsysim: note: step_time and training_time measured for GPT-2")
    assert err.count("\n") == 1


def test_init_writes_a_commented_template_that_loads_back(capsys, tmp_path):
    path = tmp_path / "job.toml"
    code, out, err = run(capsys, "init", path)
    assert code == 0, err
    text = path.read_text(encoding="utf-8")
    assert text.count("\n#") > 10  # commented
    loaded = load_scenario(path)
    expected = DataParallelScaleOutScenario(
        name="MyJob",
        description="Llama-3 8B on 16 DGX H100 nodes over InfiniBand NDR",
        workload=Models.Language.Llama3_8B,
        precision="bf16",
        node=Systems.Nodes.DGX_H100,
        nodes=16,
        fabric=Systems.Fabrics.InfiniBand_NDR,
        mfu=0.4,
        per_device_batch=1,
        training_tokens=Q_(1e12, "token"),
        zero_stage=1,
        recompute="selective",
    )
    assert loaded.result == expected.result
    assert loaded.job.origins == expected.job.origins
    code, out, err = run(capsys, "run", "--file", path)
    assert code == 0, err


def test_init_does_not_overwrite_without_force(capsys, tmp_path):
    path = tmp_path / "job.toml"
    path.write_text("mine", encoding="utf-8")
    code, _, err = run(capsys, "init", path)
    assert code == 2 and "--force" in err and path.read_text(encoding="utf-8") == "mine"
    code, _, _ = run(capsys, "init", path, "--force")
    assert code == 0 and path.read_text(encoding="utf-8") != "mine"
