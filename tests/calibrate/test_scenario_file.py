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
    assert data["assumptions"] == {"overlap": True}
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
        }
    }


def test_a_missing_file_is_created(tmp_path):
    path = tmp_path / "new.toml"
    write_link(path, LINK, "intra")
    assert set(tomllib.loads(path.read_text())) == {"intra_bandwidth", "intra_latency"}


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nnodes = = 2\n')
    with pytest.raises(ScenarioFileError, match=r"bad\.toml:2: TOML syntax error"):
        write_link(path, LINK, "intra")
    assert path.read_text() == 'name = "x"\nnodes = = 2\n'


def test_unknown_link_is_refused(tmp_path):
    with pytest.raises(InputError, match="intra' or 'inter"):
        write_link(tmp_path / "s.toml", LINK, "both")
