"""Writing a calibrated link into a TOML scenario file."""

import sys

import pytest

from mlsysim import Q_, InputError, ScenarioFileError
from mlsysim.calibrate import Link, write_link

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LINK = Link(bandwidth=Q_(322.07389, "GB/s"), latency=Q_(1.3115934, "us"))


def test_sets_the_two_keys_and_keeps_the_rest(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "mine"\nintra_bandwidth = "450 GB/s"\ndevices_per_node = 8\n'
        "[assumptions]\noverlap = true\n"
    )
    written = write_link(path, LINK, "intra")
    assert written == {"intra_bandwidth": "322.074 GB/s", "intra_latency": "1.31159 us"}
    data = tomllib.loads(path.read_text())
    assert data["intra_bandwidth"] == "322.074 GB/s"
    assert data["intra_latency"] == "1.31159 us"
    assert data["name"] == "mine" and data["devices_per_node"] == 8
    assert data["assumptions"] == {"overlap": True, "measured_links": ["intra"]}  # kept, and marked
    assert [p.name for p in tmp_path.iterdir()] == ["s.toml"]  # no temporary file left


def test_inter_link_goes_into_the_table_that_holds_the_inputs(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[scenario]\ndevices_per_node = 8\nnodes = 4\n")
    write_link(path, LINK, "inter")
    data = tomllib.loads(path.read_text())
    assert data == {
        "scenario": {
            "devices_per_node": 8,
            "nodes": 4,
            "inter_bandwidth": "322.074 GB/s",
            "inter_latency": "1.31159 us",
            "assumptions": {"measured_links": ["inter"]},
        }
    }


def test_a_missing_file_is_created(tmp_path):
    path = tmp_path / "new.toml"
    write_link(path, LINK, "intra")
    assert set(tomllib.loads(path.read_text())) == {"intra_bandwidth", "intra_latency", "assumptions"}


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nnodes = = 2\n')
    with pytest.raises(ScenarioFileError, match=r"bad\.toml:2: TOML syntax error"):
        write_link(path, LINK, "intra")
    assert path.read_text() == 'name = "x"\nnodes = = 2\n'


def test_unknown_link_is_refused(tmp_path):
    with pytest.raises(InputError, match="intra' or 'inter"):
        write_link(tmp_path / "s.toml", LINK, "both")


def test_a_written_link_is_marked_measured_and_not_derated_again(tmp_path):
    from mlsysim import Q_, Assumptions, Scenarios
    from mlsysim.calibrate import write_link
    from mlsysim.calibrate.fit import Link
    from mlsysim.engine.io.files import load_scenario

    path = tmp_path / "job.toml"
    path.write_text('base = "Gpt2DataParallelFourNodes10GbE"\nassumptions = "realistic"\n')
    write_link(path, Link(bandwidth=Q_(45, "GB/s"), latency=Q_(12, "us")), "inter")
    scenario = load_scenario(path)
    assert scenario.assumptions.measured_links == ("inter",)
    assert scenario.result.choices.inter_efficiency == 1.0
    assert scenario.result.choices.intra_efficiency == Assumptions.realistic().intra_efficiency
    derated = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
        inter_bandwidth=Q_(45, "GB/s"), inter_latency=Q_(12, "us"), assumptions=Assumptions.realistic()
    )
    assert scenario.result.inter_time < derated.result.inter_time
    assert "measured (achieved) bandwidth, no efficiency applied: inter" in scenario.explain()
    write_link(path, Link(bandwidth=Q_(370, "GB/s"), latency=Q_(2, "us")), "intra")
    assert load_scenario(path).assumptions.measured_links == ("intra", "inter")
