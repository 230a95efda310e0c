"""--json documents and `mlsysim schema`: one encoding, valid against the printed schema."""

import json

import pytest

from mlsysim.cli import main

FOUR = "Gpt2DataParallelFourNodes10GbE"


@pytest.fixture
def cli(capsys):
    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def _json(cli):
    def read(*argv):
        code, out, err = cli(*argv)
        assert code == 0, err
        return json.loads(out)

    return read


def test_run_json_is_a_result_document_that_reads_back_as_a_scenario(_json):
    from mlsysim.engine.io.files import scenario_from_dict

    doc = _json("run", FOUR, "--json")
    assert (doc["schema_version"], doc["kind"]) == (1, "result")
    inputs = {
        k: (f"{v['value']} {v['unit']}" if isinstance(v, dict) and "unit" in v else v)
        for k, v in doc["inputs"].items()
        if k != "assumptions"
    }
    again = scenario_from_dict(inputs)
    assert again.result.update_time.magnitude == doc["result"]["update_time"]["value"]


def test_explain_json_lists_the_steps(_json):
    doc = _json("explain", FOUR, "--json")
    assert doc["kind"] == "explanation"
    quantities = [s["quantity"] for s in doc["steps"]]
    assert "inter time" in quantities and "efficiency" in quantities
    step = doc["steps"][quantities.index("inter time")]
    assert step["value"] == "4650 ms"


def test_schema_command_prints_each_kind_and_refuses_an_unknown_one(_json, cli):
    for kind in ("scenario", "result", "explanation"):
        schema = _json("schema", kind)
        assert schema["properties"]["kind"]["const"] == kind
    code, out, err = cli("schema", "plans")
    assert code == 2 and "expected one of" in err and len(err.splitlines()) == 1


def test_result_document_matches_its_schema_keys(_json):
    doc = _json("run", FOUR, "--json")
    schema = _json("schema", "result")
    result_props = schema["$defs"]["Result"]["properties"]
    assert set(doc["result"]) == set(result_props)
    scenario_props = schema["$defs"]["DataParallelScaleOutScenario"]["properties"]
    assert set(doc["inputs"]) <= set(scenario_props)


def test_sweep_and_plan_json_use_the_one_encoding(_json):
    sweep = _json(
        "sweep", "Gpt2DataParallelOneNode", "--set", "inter_bandwidth=100 Gbps",
        "--axis", "nodes=1..3", "--json",
    )  # fmt: skip
    assert (sweep["kind"], sweep["layouts"], len(sweep["rows"])) == ("sweep", 3, 3)
    row = sweep["rows"][2]
    assert row["nodes"] == 3 and row["update_time"]["unit"] == "millisecond"
    assert row["cost"]["unit"] == "USD" and 0 < row["efficiency"] <= 1
    plan = _json(
        "plan", "Gpt2DataParallelOneNode", "--axis", "nodes=1..8",
        "--axis", "inter_bandwidth=100 Gbps,400 Gbps", "--json",
    )  # fmt: skip
    assert plan["kind"] == "plan" and plan["objective"] == "cost"
    costs = [r["cost"]["value"] for r in plan["pareto"]]
    best = plan["best"]["result"]["cost"]["value"]
    assert best == min(costs)
    assert plan["best"]["inputs"]["nodes"] in {r["nodes"] for r in plan["pareto"]}


DEEPSEEK = ["--set", "workload=DeepSeek_V3", "--set", "node=HGX_H800", "--set", "nodes=32", "--set", "per_device_batch=1",
            "--set", "accumulation_steps=32", "--set", "pipeline_parallel=4", "--set", "expert_parallel=64",
            "--set", "zero_stage=1", "--set", "flash_attention=1", "--set", "matmul_format=fp8",
            "--set", "training_tokens=1e12 token"]


def test_run_json_carries_the_context_and_expert_terms(_json):
    """The exposed all-to-alls are a figure of the result (in its schema); the ring, absent with cp = 1, is null;
    the explanation prints the all-to-all steps and an update that adds them."""
    doc = _json("run", *DEEPSEEK, "--json")
    result = doc["result"]
    schema = _json("schema", "result")["$defs"]["Result"]["properties"]
    assert {"context_parallel_time", "expert_parallel_time"} <= set(schema)
    assert result["context_parallel_time"] is None
    experts = result["expert_parallel_time"]
    assert experts["unit"] == "millisecond" and experts["value"] > 0.3 * result["update_time"]["value"]
    assert any("expert all-to-alls" in note for note in result["constraint_trace"])
    steps = {s["quantity"].split(" (")[0]: s for s in _json("explain", *DEEPSEEK, "--json")["steps"]}
    assert "one all-to-all" in steps and "expert-parallel time" in steps
    assert "t_ep" in steps["update"]["equation"]
