"""``mlsysim ui``: the command, its lazy imports, its errors, and a real server answering."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from mlsysim import Q_, Models, Scenarios
from mlsysim.cli import main
from tests.ui.conftest import need


def test_help_does_not_import_the_ui_stack():
    code = (
        "import sys; from mlsysim.cli import main; main(['--help']); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'plotly', 'mlsysim.ui.app') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert " ui " in out and out.strip().endswith("[]")


def test_without_the_extra_it_says_how_to_install_and_exits_2(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "starlette" else real(name, *a),
    )
    assert main(["ui", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert (
        err.strip()
        == 'mlsysim: error: mlsysim ui needs the optional extra: pip install "mlsysim[ui]"'
    )


def test_bad_port_and_scenario_are_one_line_errors(capsys):
    need("starlette", "uvicorn", "plotly")
    assert main(["ui", "--port", "70000", "--no-browser"]) == 2
    assert "expected a port" in capsys.readouterr().err
    assert main(["ui", "NoSuchScenario", "--no-browser"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_a_port_in_use_is_a_one_line_error(capsys):
    need("starlette", "uvicorn", "plotly")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["ui", "--no-browser", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err


def test_a_scenario_becomes_the_query_of_the_page():
    need("starlette")
    from mlsysim.ui.server import query_of
    from mlsysim.ui.state import scenario_from

    four = Scenarios.Gpt2DataParallelOneNode.variant(nodes=4, inter_bandwidth=Q_(10, "Gbps"))
    query = query_of(four)
    assert query == "scenario=Gpt2DataParallelFourNodes10GbE"
    custom = four.variant(nodes=8, workload=Models.Language.Llama2_7B)
    query = query_of(custom)
    assert "nodes=8" in query and "workload=Llama2_7B" in query
    import urllib.parse

    params = dict(urllib.parse.parse_qsl(query))
    rebuilt = scenario_from(params.pop("scenario"), params)
    assert rebuilt.result == custom.result


@pytest.mark.filterwarnings("ignore:step_time and training_time measured")
def test_an_inline_workload_of_a_parameter_count_is_a_custom_one_on_the_page(tmp_path):
    need("starlette")
    import urllib.parse

    from mlsysim import load_scenario
    from mlsysim.ui.server import query_of
    from mlsysim.ui.state import scenario_from

    job = tmp_path / "job.toml"
    job.write_text(
        'base = "Gpt2DataParallelOneNode"\n[workload]\nname = "Mine"\nparameters = "3e9 param"\n'
    )
    scenario = load_scenario(job)
    params = dict(urllib.parse.parse_qsl(query_of(scenario)))
    assert params["workload"] == "custom" and params["workload.name"] == "Mine"
    rebuilt = scenario_from(params.pop("scenario"), params)
    assert rebuilt.workload == scenario.workload and rebuilt.result == scenario.result


@pytest.mark.filterwarnings("ignore:step_time and training_time measured")
def test_an_inline_workload_with_more_than_its_count_cannot_be_shown(tmp_path, capsys):
    need("starlette", "uvicorn", "plotly")
    job = tmp_path / "job.toml"
    job.write_text(
        'base = "Gpt2DataParallelOneNode"\n[workload]\nname = "Mine"\nparameters = "3e9 param"\n'
        'model_size = "6 GB"\n'
    )
    assert main(["ui", "--file", str(job), "--no-browser"]) == 2
    assert "a custom one given by its parameter count and name only" in capsys.readouterr().err


def _start(*args):
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlsysim", "ui", "--no-browser", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    return proc, line


def test_the_command_serves_the_page_and_the_api():
    need("starlette", "uvicorn", "plotly")
    started = time.perf_counter()
    proc, line = _start(
        "Gpt2DataParallelOneNode", "--set", "nodes=2", "--set", "fabric=InfiniBand_NDR"
    )
    try:
        assert line.startswith("mlsysim ui: serving http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[3]
        # a fabric named as inter_bandwidth is the fabric (its bandwidth and its latency)
        assert url.endswith("?scenario=Gpt2DataParallelOneNode&nodes=2&fabric=InfiniBand_NDR")
        root = url.split("?")[0]
        with urllib.request.urlopen(url, timeout=10) as page:
            assert b'data-plot="plan"' in page.read()
        with urllib.request.urlopen(
            f"{root}api/evaluate?{url.split('?')[1]}", timeout=10
        ) as answer:
            body = json.loads(answer.read())
        want = Scenarios.Gpt2DataParallelOneNode.variant(nodes=2, fabric="InfiniBand_NDR").result
        assert body["result"]["efficiency"] == pytest.approx(want.efficiency, rel=1e-12)
        request = urllib.request.Request(f"{root}api/registry", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert time.perf_counter() - started < 60  # a hang guard, not a speed claim


def test_any_host_but_loopback_prints_a_warning():
    need("starlette", "uvicorn", "plotly")
    proc, line = _start("--host", "0.0.0.0")
    try:
        assert "serving http://127.0.0.1:" in line
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "warning: --host 0.0.0.0" in err and "without any authentication" in err
