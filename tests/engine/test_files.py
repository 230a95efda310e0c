"""Scenario files: round trips, clear errors with file/line/field, atomic writes."""

import os

import pytest

from mlsysim import (
    Q_,
    Assumptions,
    Hardware,
    Models,
    ScenarioFileError,
    Scenarios,
    TransformerWorkload,
    Workload,
    load_scenario,
    save_scenario,
)
from mlsysim.core import fileio
from mlsysim.engine.io import files

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE

ROUND_TRIP = [
    Scenarios.Gpt2DataParallelOneNode,
    FOUR,
    FOUR.variant(assumptions=Assumptions.realistic()),
    FOUR.variant(
        assumptions=Assumptions(algorithm="tree", overlap=True, bucket_size=Q_(50, "MiB")),
        nics_per_node=8,
        intra_latency=Q_(2, "us"),
        inter_latency=Q_(5.5, "us"),
        device_memory=Hardware.Cloud.H100,
        zero_stage=3,
        activation_memory=Q_(12.5, "GiB"),
        precision="bf16",
    ),
    FOUR.variant(workload=Models.Language.Llama2_7B, step_time=Q_(2100, "ms"), name=None),
    FOUR.variant(
        workload=Workload(name="mine", parameters=Q_(7e9, "param"), model_size=Q_(14, "GB"))
    ),
    FOUR.variant(
        workload=TransformerWorkload(
            name="t", parameters=Q_(1.3e9, "param"), layers=24, hidden_dim=2048
        ),
        node_hour_rate=None,
        description=None,
    ),
]


@pytest.mark.parametrize("suffix", [".toml", ".yaml", ".yml"])
@pytest.mark.parametrize("scenario", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_save_then_load_gives_an_equal_scenario(tmp_path, scenario, suffix):
    path = save_scenario(scenario, tmp_path / f"s{suffix}")
    back = load_scenario(path)
    assert back == scenario
    assert back.result == scenario.result


def test_file_spells_units_and_registry_names_as_text(tmp_path):
    text = save_scenario(FOUR, tmp_path / "s.toml").read_text()
    assert 'inter_bandwidth = "10 Gbps"' in text
    assert 'workload = "Language.GPT2"' in text
    assert text.startswith('name = "Gpt2DataParallelFourNodes10GbE"')


def test_hand_written_file_with_base_presets_and_accelerator(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text(
        'base = "Gpt2DataParallelOneNode"\n'
        'workload = "Llama2_7B"\n'
        "nodes = 4\n"
        'inter_bandwidth = "400 Gbps"\n'
        'device_memory = "H100"\n'
        "[assumptions]\n"
        'preset = "realistic"\n'
        "overlap = false\n"
    )
    scenario = load_scenario(path)
    assert scenario.workload == Models.Language.Llama2_7B and scenario.nodes == 4
    assert scenario.device_memory == Hardware.Cloud.H100.memory.capacity
    assert scenario.assumptions == Assumptions.realistic().variant(overlap=False)
    assert scenario.step_time == Q_(1.8, "s")


def _error(tmp_path, text, suffix=".toml"):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    with pytest.raises(ScenarioFileError) as info:
        load_scenario(path)
    return info.value, str(path)


GOOD = (
    'workload = "GPT2"\n'
    'step_time = "1.8 s"\n'
    'training_time = "25 hour"\n'
    "per_device_batch = 16\n"
    "devices_per_node = 8\n"
    'intra_bandwidth = "450 GB/s"\n'
)


def test_good_file_loads(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text(GOOD)
    assert load_scenario(path).result.efficiency == pytest.approx(0.99356025759)


def test_toml_syntax_error_names_file_and_line(tmp_path):
    err, path = _error(tmp_path, GOOD + "nodes = = 4\n")
    assert err.line == 7 and err.path == path
    assert str(err).startswith(f"{path}:7: TOML syntax error")


def test_unknown_field_names_its_line(tmp_path):
    err, path = _error(tmp_path, GOOD + "nodez = 4\n")
    assert (err.line, err.field) == (7, "nodez")
    assert "unknown field" in str(err) and str(err).startswith(f"{path}:7:")


def test_bad_unit_names_its_line_and_field(tmp_path):
    err, _ = _error(tmp_path, GOOD.replace('"1.8 s"', '"1.8 GB"'))
    assert (err.line, err.field) == (2, "step_time")
    assert "time" in str(err)


def test_number_without_units_names_its_line(tmp_path):
    err, _ = _error(tmp_path, GOOD.replace('"450 GB/s"', "450"))
    assert (err.line, err.field) == (6, "intra_bandwidth")


def test_bad_integer_and_unknown_workload(tmp_path):
    err, _ = _error(tmp_path, GOOD.replace("= 16", "= 0"))
    assert (err.line, err.field) == (4, "per_device_batch")
    err, _ = _error(tmp_path, GOOD.replace('"GPT2"', '"GPT9"'))
    assert (err.line, err.field) == (1, "workload")
    assert "GPT9" in str(err)


def test_several_nodes_without_link_points_at_nodes(tmp_path):
    err, _ = _error(tmp_path, GOOD + "nodes = 4\n")
    assert err.line == 7 and "inter_bandwidth" in str(err)


def test_missing_required_field(tmp_path):
    err, _ = _error(tmp_path, GOOD.replace("devices_per_node = 8\n", ""))
    assert err.field == "devices_per_node" and "missing" in str(err)


def test_bad_assumption_names_the_line_in_its_table(tmp_path):
    err, _ = _error(tmp_path, GOOD + "[assumptions]\nalgorithm = 'ring'\noverlap = 'maybe'\n")
    assert (err.line, err.field) == (9, "assumptions.overlap")
    err, _ = _error(tmp_path, GOOD + "[assumptions]\nintra_efficiency = 1.5\n")
    assert (err.line, err.field) == (8, "assumptions.intra_efficiency")


def test_bad_inline_workload_names_the_line(tmp_path):
    err, _ = _error(
        tmp_path,
        GOOD.replace('workload = "GPT2"\n', "") + "[workload]\nname = 'x'\nparameters = '7 GB'\n",
    )
    assert (err.line, err.field) == (8, "workload.parameters")


def test_yaml_errors_name_the_line(tmp_path):
    yaml_good = GOOD.replace(" = ", ": ")
    err, _ = _error(tmp_path, yaml_good + "nodes: [1\n", ".yaml")
    assert err.line is not None and "YAML syntax error" in str(err)
    err, _ = _error(tmp_path, yaml_good.replace('"1.8 s"', '"1.8 GB"'), ".yaml")
    assert (err.line, err.field) == (2, "step_time")
    err, _ = _error(tmp_path, yaml_good + "nodes: 2\nnodes: 3\n", ".yaml")
    assert err.line == 8 and "duplicate key" in str(err)


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(ScenarioFileError, match="unknown scenario file type"):
        load_scenario(tmp_path / "s.json")
    with pytest.raises(ScenarioFileError, match="cannot read"):
        load_scenario(tmp_path / "none.toml")


def test_failed_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = save_scenario(FOUR, tmp_path / "s.toml")
    before = path.read_text()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, "replace", broken_replace)
    with pytest.raises(ScenarioFileError, match="No space left on device"):
        save_scenario(Scenarios.Gpt2DataParallelOneNode, path)
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["s.toml"]  # no temporary file left behind


def test_error_inside_the_with_block_leaves_nothing(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), files.atomic_writer(target) as handle:
        handle.write("half a fi")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.csv"]


def test_unwritable_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ScenarioFileError, match="folder .* does not exist"):
        save_scenario(FOUR, tmp_path / "no" / "such" / "s.toml")


def test_new_file_gets_ordinary_permissions(tmp_path):
    path = save_scenario(FOUR, tmp_path / "s.toml")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize(
    ("suffix", "written", "want"),
    [(".toml", "true", 1), (".toml", "false", 0), (".toml", '"Yes"', 1), (".toml", '"no"', 0),
     (".yaml", "true", 1), (".yaml", "FALSE", 0), (".yaml", "yes", 1), (".yaml", "No", 0), (".yaml", "1", 1)],
)
def test_a_flag_reads_booleans_in_files(tmp_path, suffix, written, want):
    path = tmp_path / f"job{suffix}"
    sep = " = " if suffix == ".toml" else ": "
    base = '"Gpt2DataParallelOneNode"' if suffix == ".toml" else "Gpt2DataParallelOneNode"
    path.write_text(f"base{sep}{base}\nflash_attention{sep}{written}\n")
    assert load_scenario(path).flash_attention == want


def test_an_integer_of_5000_digits_names_its_line_and_field_not_pythons_setting(tmp_path):
    err, _ = _error(tmp_path, GOOD + f"nodes = {'9' * 5000}\n")
    assert (err.line, err.field) == (7, "nodes")
    assert "at most 18 digits, got 5,000 digits" in str(err) and "sys." not in str(err)
