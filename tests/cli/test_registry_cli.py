"""The global --registry option and 'mlsysim registry' through the CLI's runner."""

import json

import pytest

from mlsysim.cli import main
from tests.registry_files import TINY_TRANSFORMER, write_registry
from tests.runner import run

pytestmark = pytest.mark.usefixtures("fresh_registry")

MY_CLUSTER = TINY_TRANSFORMER + """
[fabrics.Ethernet_10G]
name = "10 Gb Ethernet, measured"
bandwidth = "9.4 Gbps"
latency = "25 us"
source = "our iperf3 run"
note = "achieved, not nominal"
"""


@pytest.fixture
def my_cluster(tmp_path):
    return write_registry(tmp_path, MY_CLUSTER)


def test_registry_shows_where_each_entry_comes_from(capsys, my_cluster):
    code, out, err = run(capsys, "--registry", my_cluster, "registry", "fabrics")
    assert code == 0 and err == ""
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert lines["Ethernet_10G"].endswith(f"[{my_cluster}:12]")
    assert "1.175 GB/s per direction, latency 25 us" in lines["Ethernet_10G"]
    assert lines["Ethernet_25G"].endswith("[built-in fabrics.toml:16]")


def test_a_users_entries_are_names_that_set_accepts(capsys, my_cluster):
    code, out, err = run(
        capsys,
        "--registry",
        my_cluster,
        "run",
        "Gpt2DataParallelOneNode",
        "--set",
        "workload=Tiny",
        "--set",
        "nodes=2",
        "--set",
        "fabric=Ethernet_10G",
        "--json",
    )
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert inputs["workload"].endswith("Tiny")
    # the user's measured 10 GbE, not the nominal 10 Gbps
    assert inputs["inter_bandwidth"] == {"value": 9.4, "unit": "Gbps"}


def test_a_bad_registry_file_is_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[nodes.Box]\naccelerator = 'Z9000'\n", encoding="utf-8")
    code, out, err = run(capsys, "--registry", bad, "list")
    assert code == 2 and out == ""
    assert err.startswith(f"mlsysim: error: {bad}:2: nodes.Box.accelerator: unknown accelerators")
    assert err.count("\n") == 1


def test_the_option_is_in_the_help(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "--registry" in out


def test_registry_help_names_every_group_it_lists(capsys):
    from mlsysim.core.registry import CATALOG

    assert main(["registry", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    kinds = {kind for kind, *_ in CATALOG.listing()}
    assert kinds >= {"grids", "failures"}
    for kind in kinds:
        assert kind in help_text, kind
        assert main(["registry", kind]) == 0
        assert capsys.readouterr().out.startswith(f"{kind}:\n")


def test_registry_kernels_lists_every_shipped_table_through_the_runner():
    from click.testing import CliRunner

    from mlsysim.cli.app import app
    from mlsysim.kernels.tables import shipped_tables

    result = CliRunner().invoke(app, ["registry", "kernels"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == "kernels:"
    for table in shipped_tables():
        line = next(line for line in lines if line.split()[0] == table.name)
        assert f"{table.kind}, {table.accelerator}, {table.split}, {len(table)} rows: {table.source.title}" in line
    assert "source:" not in result.output


def test_registry_kernels_sources_prints_each_tables_citation():
    from click.testing import CliRunner

    from mlsysim.cli.app import app
    from mlsysim.kernels.tables import shipped_tables

    result = CliRunner().invoke(app, ["registry", "kernels", "--sources"])
    assert result.exit_code == 0
    for table in shipped_tables():
        assert f"source: {table.source.cite()}" in result.output


def test_an_unknown_registry_group_suggests_kernels(capsys):
    code, out, err = run(capsys, "registry", "kernel")
    assert code == 2 and out == ""
    assert "did you mean 'kernels'" in err and len(err.strip().splitlines()) == 1
