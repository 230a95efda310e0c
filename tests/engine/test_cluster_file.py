"""The scenario's ``cluster_file``: a user's kernel fits price the operators of its accelerator."""

import json

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario
from mlsysim.calibrate.kernels import calibrate, read_user_tables
from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import assumptions_of
from mlsysim.engine.io.files import load_scenario, save_scenario
from mlsysim.kernels.matmul import shipped_fit
from mlsysim.kernels.memory import shipped_memory_fit
from tests.kernels.synthetic_tables import attention_json, matmul_csv, memory_json
from tests.runner import run

JOB = dict(workload="Llama2_7B", node="DGX_A100", per_device_batch=2, training_tokens=Q_(1e9, "token"))


def write_cluster(folder, *tables, **options):
    name, read = read_user_tables(tables, **options)
    path = folder / "my_cluster.json"
    path.write_text(json.dumps(calibrate(read, name).document("test")), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def matmul_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("matmul")
    return write_cluster(folder, matmul_csv(folder / "gemms.csv", 0.75), kind="matmul", accelerator="A100")


@pytest.fixture(scope="module")
def memory_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("memory")
    return write_cluster(folder, memory_json(folder / "mem.json", 0.75), attention_json(folder / "attn.json", 0.6))


def test_an_a100_step_is_priced_at_the_files_ceiling(matmul_file):
    shipped = DataParallelScaleOutScenario(**JOB)
    mine = shipped.variant(cluster_file=str(matmul_file))
    ceiling = json.loads(matmul_file.read_text())["kinds"]["matmul"]["fit"]["ceilings"]["Ampere"]["bf16"]
    assert ceiling == pytest.approx(0.75, rel=0.01)
    kernel = shipped_fit().ceilings["Ampere"]["bf16"]
    # in training, the kernels keep the share of their measured rate fitted on the published runs (priced with
    # the shipped kernels): the file's slower kernels, that share of their rate
    assert mine.job.matmul_ceiling / shipped.job.matmul_ceiling == pytest.approx(ceiling / kernel, rel=1e-12)
    assert mine.job.attention_ceiling / shipped.job.attention_ceiling == pytest.approx(ceiling / kernel, rel=1e-12)
    # the same products as the shipped kernels with that ceiling assumed: only the ceiling moved; the fused
    # attention kernels (no attention table in the file) keep the shipped ones' time
    assumed = shipped.variant(assumptions=assumptions_of("seed").variant(matmul_ceiling=mine.job.matmul_ceiling))
    assert mine.job.operators.matmul_time == pytest.approx(assumed.job.operators.matmul_time, rel=1e-12)
    assert mine.job.operators.attention_time == pytest.approx(shipped.job.operators.attention_time, rel=1e-12)
    ratio = mine.job.operators.matmul_time / shipped.job.operators.matmul_time
    assert ratio == pytest.approx(kernel / ceiling, rel=0.02)  # the products, compute-bound at this size
    assert mine.job.operators.memory_time == shipped.job.operators.memory_time
    assert mine.result.update_time > shipped.result.update_time
    assert shipped.variant(cluster_file=None).step_time == shipped.step_time


def test_memory_and_attention_fits_replace_the_shipped_ones(memory_file):
    shipped = DataParallelScaleOutScenario(**JOB, flash_attention=1)
    mine = shipped.variant(cluster_file=str(memory_file))
    fraction = shipped_memory_fit()["accelerators"]["A100"]["fraction"]["value"]
    ratio = mine.job.operators.memory_time / shipped.job.operators.memory_time
    assert ratio == pytest.approx(fraction / 0.75, rel=0.02)  # streaming kernels at 75% of the bandwidth, not 86%
    assert mine.job.operators.attention_time > 1.15 * shipped.job.operators.attention_time  # a = 0.6, not 0.74
    assert mine.job.operators.matmul_time == shipped.job.operators.matmul_time  # no matmul table: shipped


def test_the_origin_names_the_file_and_what_it_priced(matmul_file):
    mine = DataParallelScaleOutScenario(**JOB, cluster_file=str(matmul_file))
    origin = mine.job.origins["step_time"]
    assert f"kernels from the cluster file {matmul_file}: matmul bf16; attention, memory shipped" in origin
    assert "cluster file" in mine.explain() and mine.to_dict()["inputs"]["cluster_file"] == str(matmul_file)


def test_a_file_of_another_accelerator_is_refused_with_both_names(matmul_file):
    with pytest.raises(InputError, match="calibrated on A100, but the scenario's accelerator is B200") as caught:
        _ = DataParallelScaleOutScenario(**{**JOB, "node": "DGX_B200"}, cluster_file=str(matmul_file)).step_time
    assert caught.value.loc == ("cluster_file",)


@pytest.mark.parametrize("given, words", [
    ({"mfu": 0.4}, "but mfu gives the step; clear one (mfu=none or cluster_file=none)"),
    ({"step_time": Q_(1, "s")}, "but step_time gives the step"),
])
def test_a_file_the_step_would_not_read_is_refused(matmul_file, given, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        DataParallelScaleOutScenario(**JOB, **given, cluster_file=str(matmul_file))


def test_a_variant_with_a_new_power_limit_or_file_derives_again(matmul_file):
    base = DataParallelScaleOutScenario(**JOB)
    for change in ({"power_limit": Q_(250, "W")}, {"cluster_file": str(matmul_file)}):
        assert base.variant(**change).step_time == DataParallelScaleOutScenario(**JOB, **change).step_time
        assert base.variant(**change).step_time > base.step_time


def test_run_with_set_cluster_file(capsys, matmul_file):
    args = ["run", "Gpt2DataParallelOneNode", "--set", "step_time=none", "--set", "node=DGX_A100"]
    code, plain, _ = run(capsys, *args)
    code_mine, out, err = run(capsys, *args, "--set", f"cluster_file={matmul_file}")
    assert code == code_mine == 0 and err == ""
    base = DataParallelScaleOutScenario(**{**JOB, "workload": "GPT2"})
    ceilings = [f"ceiling {s.job.matmul_ceiling:.3g} in training" for s in (base, base.variant(cluster_file=str(
        matmul_file)))]
    assert ceilings[0] in plain and "; measured kernels))" in plain and ceilings[0] != ceilings[1]
    assert ceilings[1] in out and f"kernels from the cluster file {matmul_file}: matmul bf16" in out


def test_a_scenario_file_reads_its_cluster_file_beside_it(capsys, matmul_file, tmp_path):
    folder = matmul_file.parent
    (folder / "job.toml").write_text(
        'workload = "Llama2_7B"\nnode = "DGX_A100"\nper_device_batch = 2\ntraining_tokens = "1e9 token"\n'
        'cluster_file = "my_cluster.json"\n')
    scenario = load_scenario(folder / "job.toml")
    assert scenario.cluster_file == str(matmul_file)
    assert scenario.step_time == DataParallelScaleOutScenario(**JOB, cluster_file=str(matmul_file)).step_time
    code, out, _ = run(capsys, "run", "--file", str(folder / "job.toml"))
    assert code == 0 and "kernels from the cluster file" in out
    (tmp_path / "elsewhere").mkdir()
    saved = save_scenario(scenario, tmp_path / "elsewhere" / "copy.toml")  # the path written whole
    assert 'cluster_file = "' + str(matmul_file.resolve()) + '"' in saved.read_text()
    assert load_scenario(saved).step_time == scenario.step_time


@pytest.mark.parametrize("value, words", [
    ("none.json", "cluster_file: none.json: cannot read the file"),
    ("{bad}", "not a cluster file"),
    ("{other}", "calibrated on A100, but the scenario's accelerator is B200"),
])
def test_bad_cluster_files_are_one_line_and_exit_2(capsys, tmp_path, matmul_file, value, words):
    (tmp_path / "bad.json").write_text('{"kind": "matmul"}')
    typed = value.format(bad=tmp_path / "bad.json", other=matmul_file)
    code, _, err = run(capsys, "run", "Gpt2DataParallelOneNode", "--set", "step_time=none", "--set",
                       "node=DGX_B200", "--set", f"cluster_file={typed}")
    assert code == 2 and err.count("\n") == 1 and err.startswith("mlsysim: error: ") and words in err, err


def test_a_sweep_prices_with_the_file_and_does_not_sweep_it(capsys, matmul_file):
    mine = DataParallelScaleOutScenario(**JOB, cluster_file=str(matmul_file))
    code, out, _ = run(capsys, "sweep", "--set", "workload=Llama2_7B", "--set", "node=DGX_A100", "--set",
                       "per_device_batch=2", "--set", "training_tokens=1e9 token", "--set",
                       f"cluster_file={matmul_file}", "--axis", "nodes=1,2", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert rows[0]["update_time"]["value"] == pytest.approx(mine.result.update_time.to("ms").magnitude, rel=1e-9)
    code, _, err = run(capsys, "sweep", "Gpt2DataParallelOneNode", "--axis", f"cluster_file={matmul_file}")
    assert code == 2 and "cannot sweep 'cluster_file'" in err
