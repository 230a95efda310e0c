"""Cluster files: a user's tables fitted per kind (mlsysim.calibrate.kernels), the file read back
(mlsysim.kernels.cluster), and a device's kernels priced with it (device_kernels(cluster=))."""

import json

import pytest

from mlsysim.calibrate.kernels import calibrate, read_user_tables
from mlsysim.core.exceptions import InputError
from mlsysim.kernels._accelerator import accelerator_entry
from mlsysim.kernels.cluster import FORMAT, VERSION, parse_cluster_file, read_cluster_file
from mlsysim.kernels.device import attention_missing, device_kernels
from mlsysim.kernels.matmul import shipped_fit
from tests.kernels.synthetic_tables import (
    attention_json,
    matmul_csv,
    memory_json,
    shape_efficiencies,
)


def cluster(tmp_path, *paths, **options):
    """The cluster file ``calibrate kernels`` would write for ``paths``, read back."""
    name, tables = read_user_tables(paths, **options)
    result = calibrate(tables, name)
    assert result.refused == ()
    file = tmp_path / "cluster.json"
    file.write_text(json.dumps(result.document("test")), encoding="utf-8")
    return result, read_cluster_file(file)


def test_a_changed_matmul_ceiling_comes_back_and_prices_the_device(tmp_path):
    table = matmul_csv(tmp_path / "gemms.csv", ceiling=0.75)
    result, fits = cluster(tmp_path, table, kind="matmul", accelerator="A100")
    fitted = fits.matmul.ceilings["Ampere"]["bf16"]
    # the ceiling is never above the best efficiency the rows measured (the model's best shape reaches 99% of it)
    assert fitted == pytest.approx(max(shape_efficiencies(0.75)), abs=1e-4) and fitted == pytest.approx(0.75, rel=0.01)
    assert fits.matmul_formats == ("bf16",) and fits.accelerator == "A100"
    kernels = device_kernels("A100", "bf16", cluster=fits)
    assert kernels.matmul_ceiling == fitted and kernels.sixteen_bit_ceiling == fitted
    assert device_kernels("A100", "bf16").matmul_ceiling == shipped_fit().ceilings["Ampere"]["bf16"]
    # the structure is the shipped one: the user's one-GPU table fits the ceilings only
    assert fits.matmul.structure == shipped_fit().structure
    (errors,) = result.kinds["matmul"].errors
    assert errors.before[0] > 0.10 and errors.after[0] < 0.01  # 13% off with the shipped ceiling, <1% after


def test_a_changed_memory_fraction_and_attention_scale_come_back(tmp_path):
    memory, attention = memory_json(tmp_path / "mem.json", 0.75), attention_json(tmp_path / "attn.json", 0.6)
    result, fits = cluster(tmp_path, memory, attention)
    assert fits.memory["accelerators"]["A100"]["fraction"]["value"] == pytest.approx(0.75, rel=0.002)
    group = fits.attention["architectures"]["Ampere"]["groups"]["bf16 forward+backward"]
    assert group["scale"]["value"] == pytest.approx(0.6, rel=0.01)
    assert fits.matmul is None and fits.kinds() == ("attention", "memory")
    kernels = device_kernels("A100", "bf16", cluster=fits)
    assert kernels.constants.memory_fraction == fits.memory["accelerators"]["A100"]["fraction"]["value"]
    assert kernels.constants.attention_both.scale == group["scale"]["value"]
    assert kernels.sources.endswith("cluster.json: attention, memory; matmul shipped")
    for table in result.kinds["attention"].errors + result.kinds["memory"].errors:
        assert table.before[0] > 0.05 and table.after[1] < 0.01


def test_the_kernels_are_kept_per_fits_object(tmp_path):
    _, fits = cluster(tmp_path, memory_json(tmp_path / "mem.json"))
    assert device_kernels("A100", "bf16", cluster=fits) is device_kernels("A100", "bf16", cluster=fits)
    assert device_kernels("A100", "bf16", cluster=fits) is not device_kernels("A100", "bf16")
    assert read_cluster_file(tmp_path / "cluster.json") is fits  # the file unchanged: the same object


def test_attention_measured_one_way_only_is_named_as_missing(tmp_path):
    _, fits = cluster(tmp_path, attention_json(tmp_path / "attn.json", direction="forward"))
    a100 = accelerator_entry("A100")
    missing = attention_missing(a100, device_kernels(a100, "bf16", cluster=fits))
    assert "forward or the backward pass alone" in missing and "cluster.json" in missing


def test_holdout_tables_are_priced_never_fitted(tmp_path):
    document = json.loads(memory_json(tmp_path / "mem.json").read_text())
    (tmp_path / "held.json").write_text(json.dumps({**document, "split": "holdout"}))
    result, _ = cluster(tmp_path, tmp_path / "mem.json", tmp_path / "held.json")
    memory = result.kinds["memory"]
    assert [e.table.name for e in memory.errors] == ["mem.json", "held.json"]
    assert memory.stored["fit"]["accelerators"]["A100"]["tables"] == ["mem.json"]
    with pytest.raises(InputError, match="every table given is held out"):
        calibrate(read_user_tables([tmp_path / "held.json"])[1], "A100")


def _document(**changes):
    base = {"format": FORMAT, "version": VERSION, "accelerator": "A100", "command": "", "forced": [], "kinds": {}}
    return json.dumps({**base, **changes})


@pytest.mark.parametrize("text, words", [
    ("{", "not JSON"),
    ("[]", "must be a JSON object"),
    (json.dumps({"kind": "matmul"}), "not a cluster file"),
    (_document(version=2), "version 2"),
    (_document(accelerator="A101"), "accelerator"),
    (_document(kinds={"dispatch": {}}), "kind 'dispatch'"),
    (_document(kinds={"matmul": {"fit": {"structure": {}}}}), "kinds.matmul.fit is not in the form"),
    (_document(kinds={"memory": {"fit": {"accelerators": {"B200": {}}}}}), "no constants of A100"),
    (_document(kinds={"memory": {"fit": {"accelerators": {"A100": 5}}}}), "kinds.memory.fit is not in the form"),
    (_document(kinds={"memory": {"fit": {"accelerators": {"A100": {"fraction": {"value": 1.5},
                                                                   "floor": {"value": 1e-6}}}}}}),
     "an efficiency of 1.5 is outside (0, 1]"),
    (_document(kinds={"attention": {"fit": {"architectures": {"Ampere": {
        "head_overhead": {"value": -1}, "floor": {"value": 0}, "groups": {}}}}}}), "head_overhead is -1"),
    (_document(forced="yes"), "forced must be a list"),
])
def test_a_file_not_in_the_form_is_refused_at_the_field(text, words):
    with pytest.raises(InputError, match="cluster.json: ") as caught:
        parse_cluster_file(text, "cluster.json")
    assert words in caught.value.message and caught.value.loc == ("cluster_file",)


def test_an_empty_or_missing_file_is_refused(tmp_path):
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(InputError, match="the file is empty"):
        read_cluster_file(tmp_path / "empty.json")
    with pytest.raises(InputError, match="cannot read the file"):
        read_cluster_file(tmp_path / "none.json")
