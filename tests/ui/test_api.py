"""The JSON API through Starlette's test client, compared with the library's own results."""

import json
import math

import pytest

from tests.ui.conftest import need

need("starlette", "httpx", "plotly")

from starlette.testclient import TestClient  # noqa: E402

from mlsysim import Q_, MlsysimError, Scenarios, load_scenario, plan, sweep  # noqa: E402
from mlsysim.core.suggest import caller_syntax  # noqa: E402
from mlsysim.engine.io.overrides import apply_overrides  # noqa: E402
from mlsysim.engine.results import RESULT_NAMES  # noqa: E402
from mlsysim.ui import api  # noqa: E402
from mlsysim.ui.app import CONTENT_SECURITY_POLICY, MAX_BODY_BYTES, create_app  # noqa: E402
from mlsysim.ui.state import CUSTOM_WORKLOAD_FIELDS, NOT_IN_FORM, form_fields  # noqa: E402

ONE = "Gpt2DataParallelOneNode"
FOUR_10G = f"/api/evaluate?scenario={ONE}&nodes=4&inter_bandwidth=10%20Gbps"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def library(*sets, name=ONE):
    return apply_overrides(Scenarios.get(name), list(sets))


def same_figures(result_json, result):
    """Every result field of the JSON equals the library's, in the unit the JSON names."""
    for name in RESULT_NAMES:
        got, want = result_json[name], getattr(result, name)
        if want is None:
            assert got is None, name
        elif hasattr(want, "magnitude"):
            assert got["value"] == pytest.approx(want.to(got["unit"]).magnitude, rel=1e-12), name
        elif name == "cost":
            assert got == {"value": pytest.approx(want, rel=1e-12), "unit": "USD"}
        elif isinstance(want, tuple):
            assert got == list(want), name
        elif isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-12), name
        else:
            assert got == want, name


def test_evaluate_answers_the_query_of_the_page_like_set(client):
    answer = client.get(FOUR_10G)
    assert answer.status_code == 200
    body = answer.json()
    assert body["schema_version"] == 1
    same_figures(body["result"], library("nodes=4", "inter_bandwidth=10 Gbps").result)
    assert body["result"]["efficiency"] == pytest.approx(0.27856590147020893)
    assert body["values"]["inter_bandwidth"] == "10 Gbps"
    assert body["notes"]


def test_post_json_takes_text_numbers_and_quantities(client):
    body = {"scenario": ONE, "set": {"nodes": 4, "inter_bandwidth": {"value": 10, "unit": "Gbps"}}}
    answer = client.post("/api/evaluate", json=body)
    assert answer.status_code == 200
    same_figures(answer.json()["result"], library("nodes=4", "inter_bandwidth=10 Gbps").result)


@pytest.mark.parametrize(("value", "want"), [(True, 1), (False, 0), ("Yes", 1), ("no", 0), (1, 1)])
def test_a_flag_takes_json_booleans_and_words(client, value, want):
    body = {"scenario": ONE, "set": {"flash_attention": value}}
    answer = client.post("/api/evaluate", json=body)
    assert answer.status_code == 200, answer.text
    same_figures(answer.json()["result"], library(f"flash_attention={want}").result)
    assert answer.json()["values"]["flash_attention"] in (str(want), str(bool(want)).lower())


def test_a_json_integer_of_5000_digits_is_refused_by_its_size(client):
    body = json.dumps({"scenario": ONE, "set": {"nodes": 0}}).replace(": 0", ": " + "9" * 5000)
    answer = client.post("/api/evaluate", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422
    assert answer.json()["error"] == "expected integers of at most 18 digits, got one of 5,000 digits"


def test_registry_names_and_assumptions_go_through_set(client):
    q = f"scenario={ONE}&nodes=8&fabric=InfiniBand_NDR&assumptions=realistic&assumptions.overlap=false&workload=Llama2_7B&device_memory=H100"
    answer = client.get(f"/api/evaluate?{q}")
    assert answer.status_code == 200, answer.text
    want = library(
        "nodes=8",
        "fabric=InfiniBand_NDR",
        "assumptions=realistic",
        "assumptions.overlap=false",
        "workload=Llama2_7B",
        "device_memory=H100",
    )
    same_figures(answer.json()["result"], want.result)


def message_of(*sets):
    """The library's message, its examples written as the page's form fields take them."""
    with caller_syntax("form"), pytest.raises(MlsysimError) as caught:
        library(*sets)
    return str(caught.value)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("nodes", "zero"),
        ("step_time", "3 furlongs"),
        ("inter_bandwidth", "fast"),
        ("precision", "fp12"),
        ("assumptions.inter_efficiency", "1.5"),
        ("workload", "NoSuchModel"),
    ],
)
def test_a_bad_value_is_422_naming_the_field_with_the_librarys_words(client, field, text):
    answer = client.get(
        "/api/evaluate",
        params={"scenario": ONE, "nodes": "2", "inter_bandwidth": "100 Gbps", field: text},
    )
    assert answer.status_code == 422
    body = answer.json()
    assert body["field"] == field
    expected = (
        message_of("nodes=2", "inter_bandwidth=100 Gbps", f"{field}={text}")
        if field not in ("nodes",)
        else message_of(f"nodes={text}")
    )
    assert body["errors"][field] == expected
    assert body["error"] == expected


def test_a_request_may_not_name_a_file_on_the_server(client, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"format": "mlsysim cluster file"}')
    for path in (secret, tmp_path / "none.json"):  # the same answer whether the file exists or not
        answer = client.get("/api/evaluate", params={"scenario": ONE, "cluster_file": str(path)})
        assert answer.status_code == 422 and answer.json()["field"] == "cluster_file"
        assert "does not read files on the machine serving it" in answer.json()["error"]
        assert str(tmp_path) not in answer.json()["error"]


def test_every_bad_field_gets_its_own_message(client):
    answer = client.get("/api/evaluate", params={"nodes": "0", "step_time": "fast"})
    assert answer.status_code == 422
    assert set(answer.json()["errors"]) == {"nodes", "step_time"}


def test_a_rule_across_fields_is_reported_on_the_field_it_names(client):
    answer = client.get(f"/api/evaluate?scenario={ONE}&nodes=4")
    assert answer.status_code == 422
    assert answer.json()["field"] == "inter_bandwidth"
    assert "required when nodes > 1" in answer.json()["error"]


def test_unknown_field_and_unknown_scenario(client):
    answer = client.get("/api/evaluate?nodez=4")
    assert answer.status_code == 422 and answer.json()["field"] == "nodez"
    assert answer.json()["error"] == message_of("nodez=4")
    answer = client.get("/api/evaluate?scenario=Nope")
    assert answer.status_code == 422 and answer.json()["field"] == "scenario"


def test_sweep_matches_the_library_and_exports_csv(client):
    answer = client.get(f"/api/sweep?scenario={ONE}&inter_bandwidth=100%20Gbps&axis=nodes=1..16")
    assert answer.status_code == 200
    body = answer.json()
    table = sweep(library("inter_bandwidth=100 Gbps"), nodes=range(1, 17))
    assert body["rows"] == 16 and body["axes"][0]["field"] == "nodes"
    assert body["columns"]["efficiency"]["values"] == pytest.approx(
        table["efficiency"].tolist(), rel=1e-12
    )
    assert body["columns"]["update_time"]["unit"] == "millisecond"
    csv = client.get(
        f"/api/sweep?scenario={ONE}&inter_bandwidth=100%20Gbps&axis=nodes=1..16&format=csv"
    )
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    lines = csv.text.splitlines()
    assert lines[0].split(",")[:3] == ["nodes", "n_devices", "gradient_bytes [byte]"]
    assert len(lines) == 17


def test_the_default_sweep_follows_nodes_or_devices(client):
    body = client.get(FOUR_10G.replace("evaluate", "sweep")).json()
    assert body["axes"][0]["field"] == "nodes" and body["rows"] == 64
    body = client.get(f"/api/sweep?scenario={ONE}").json()  # one node, no inter-node link
    assert body["axes"][0]["field"] == "devices_per_node"


@pytest.mark.parametrize("axis", ["nodes=1..1000000000000", "nodes=1..200,inter_bandwidth=1 Gbps"])
def test_a_sweep_too_large_is_refused_with_a_message(client, axis):
    params = [
        ("scenario", ONE),
        ("inter_bandwidth", "100 Gbps"),
        ("axis", "nodes=1..200"),
        ("axis", "devices_per_node=1..200"),
    ]
    if axis.startswith("nodes=1..1000"):
        params = [("scenario", ONE), ("inter_bandwidth", "100 Gbps"), ("axis", axis)]
    answer = client.get("/api/sweep", params=params)
    assert answer.status_code == 422
    assert "too large" in answer.json()["error"] and answer.json()["field"] == "axis"


def test_plan_matches_the_library(client):
    q = f"scenario={ONE}&inter_bandwidth=100%20Gbps&deadline=2%20hour&budget=300%20USD&plan_axis=nodes=1..16&plan_axis=inter_bandwidth=25%20Gbps,400%20Gbps"
    answer = client.get(f"/api/plan?{q}")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    want = plan(
        library("inter_bandwidth=100 Gbps"),
        nodes=range(1, 17),
        inter_bandwidth=[Q_(25, "Gbps"), Q_(400, "Gbps")],
        deadline=Q_(2, "hour"),
        budget=Q_(300, "USD"),
    )
    assert body["best"] == want.best_row
    assert body["feasible"] == want.feasible.tolist()
    front = [want.pareto.grid_index(i) for i in range(len(want.pareto))]
    assert body["pareto"] == front
    assert body["labels"][body["best"]].startswith("nodes=")
    assert body["summary"] == want.summary()


def test_plan_without_a_feasible_layout_still_answers_with_the_reason(client):
    answer = client.get(
        f"/api/plan?scenario={ONE}&inter_bandwidth=100%20Gbps&deadline=1%20s&plan_axis=nodes=1..4"
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["best"] is None and not any(body["feasible"])
    assert body["infeasible"].startswith("no layout meets the constraints")


def test_plan_limits_are_checked(client):
    answer = client.get(f"/api/plan?scenario={ONE}&deadline=soon")
    assert answer.status_code == 422 and answer.json()["field"] == "deadline"


def test_explain_has_the_derivation_steps(client):
    body = client.get(FOUR_10G.replace("evaluate", "explain")).json()
    text = library("nodes=4", "inter_bandwidth=10 Gbps").explain()
    assert body["text"] == text
    steps = {s["quantity"]: s for s in body["steps"]}
    assert steps["inter time"]["value"] == "4650 ms"
    assert steps["efficiency"]["equation"] == "efficiency = speedup / n"
    assert [s["number"] for s in body["steps"]] == [
        str(i) for i in range(1, len(body["steps"]) + 1)
    ]
    assert body["model"].startswith("seed")
    assert body["kind"] == "explanation" and body["schema_version"] == 1


LAYOUT_QUERY = (
    f"scenario={ONE}&workload=Llama3_70B&node=DGX_H100&fabric=InfiniBand_NDR&nodes=64&mfu=0.5"
    "&step_time=none&training_time=none&training_tokens=1e12%20token&tensor_parallel=8"
    "&pipeline_parallel=32&accumulation_steps=64&zero_stage=1"
)


def test_the_timeline_is_the_librarys_per_stage_and_sums_to_the_update_time(client):
    from mlsysim.engine.reports.timeline import KINDS, timeline

    answer = client.get(f"/api/timeline?{LAYOUT_QUERY}")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["kind"] == "timeline" and body["schema_version"] == 1 and body["unit"] == "s"
    result = apply_overrides(Scenarios.get(ONE), LAYOUT_QUERY.replace("%20", " ").split("&")[1:]).result
    want = timeline(result, max_rows=api.TIMELINE_ROWS)
    assert body["stages"] == 32 and len(body["rows"]) == api.TIMELINE_ROWS == len(want.rows)
    assert list(body["kinds"]) == list(KINDS)
    assert body["update_time"] == pytest.approx(result.update_time.to("s").magnitude, rel=1e-12)
    for got, row in zip(body["rows"], want.rows, strict=True):
        assert got["label"] == row.label
        assert got["segments"]["duration"] == [s.duration for s in row.segments]
        assert got["segments"]["kind"] == [s.kind for s in row.segments]
        assert got["segments"]["figure"] == [s.figure for s in row.segments]
        assert math.fsum(got["segments"]["duration"]) == pytest.approx(body["update_time"], rel=1e-9)
        assert got["hidden"]["start"] == [s.start for s in row.hidden]
    assert body["rows"][0]["label"] == "stage 1" and body["rows"][-1]["label"] == "stage 32"


def test_the_page_draws_every_kind_of_segment_in_the_plots_colour():
    import re
    from importlib import resources

    from mlsysim.engine.reports.timeline import KINDS
    from mlsysim.viz.plots import KIND_COLORS

    script = resources.files("mlsysim.ui").joinpath("static/app.js").read_text(encoding="utf-8")
    table = re.search(r"const KIND_COLORS = \{(.*?)\};", script, re.S)
    assert table is not None
    colours = dict(re.findall(r'(\w+): "(#[0-9a-f]{6})"', table[1]))
    assert colours == {kind: KIND_COLORS[kind] for kind in KINDS}


def test_the_timeline_of_the_data_parallel_model_is_one_row_and_a_bad_value_is_422(client):
    body = client.get(FOUR_10G.replace("evaluate", "timeline")).json()
    (row,) = body["rows"]
    assert row["label"] == "device" and row["segments"]["kind"] == ["compute", "data", "data"]
    assert body["stages"] == 1
    answer = client.get(FOUR_10G.replace("evaluate", "timeline") + "&pipeline_parallel=three")
    assert answer.status_code == 422 and answer.json()["field"] == "pipeline_parallel"


def test_registry_lists_a_form_field_per_scenario_field(client):
    body = client.get("/api/registry").json()
    names = [f["name"] for f in body["fields"]]
    cls = type(Scenarios.get(ONE))
    assert [n for n in names if "." not in n] == [f for f in cls.model_fields if f not in NOT_IN_FORM]
    assert NOT_IN_FORM == ("name", "description", "cluster_file")  # a path on the server is not a form field
    from mlsysim import Assumptions

    assert [n.split(".", 1)[1] for n in names if n.startswith("assumptions.")] == list(
        Assumptions.model_fields
    )
    assert [n for n in names if n.startswith("workload.")] == list(CUSTOM_WORKLOAD_FIELDS)
    assert [s["name"] for s in body["scenarios"]] == Scenarios.names()
    fields = {f["name"]: f for f in body["fields"]}
    assert "InfiniBand_NDR" in fields["fabric"]["suggestions"]
    assert "InfiniBand_NDR" not in fields["inter_bandwidth"]["suggestions"]  # a bandwidth only
    assert body["presets"]["realistic"]["assumptions.algorithm"] == "auto"
    assert form_fields()[0]["name"] == "workload"


def test_toml_download_reads_back_to_the_same_scenario(client, tmp_path):
    answer = client.get(FOUR_10G.replace("evaluate", "scenario.toml"))
    assert answer.status_code == 200 and "attachment" in answer.headers["content-disposition"]
    path = tmp_path / "job.toml"
    path.write_text(answer.text)
    assert load_scenario(path).result == library("nodes=4", "inter_bandwidth=10 Gbps").result


def test_bounds_on_requests(client):
    big = json.dumps({"set": {"description": "x" * (MAX_BODY_BYTES + 10)}})
    answer = client.post("/api/evaluate", content=big, headers={"content-type": "application/json"})
    assert answer.status_code == 413
    answer = client.get("/api/evaluate", params={"step_time": "1" * (api.MAX_TEXT + 1)})
    assert answer.status_code == 422 and answer.json()["field"] == "step_time"
    answer = client.get("/api/evaluate", params=[("nodes", "1")] * (api.MAX_PARAMS + 1))
    assert answer.status_code == 422
    answer = client.get("/api/evaluate?nodes=2&nodes=3")
    assert answer.status_code == 422 and "twice" in answer.json()["error"]
    answer = client.post(
        "/api/evaluate", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422 and answer.json()["field"] == "request"


def test_only_the_shipped_assets_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and 'data-plot="scaling"' in page.text
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "connect-src 'self'" in CONTENT_SECURITY_POLICY
    assert "http" not in page.text.split("<footer")[0].replace("http-equiv", "")  # nothing remote
    for name in ("app.js", "app.css", "plotly.min.js"):
        assert client.get(f"/static/{name}").status_code == 200
    for path in ("/static/index.html", "/static/..%2F..%2Fpyproject.toml", "/static/state.py"):
        assert client.get(path).status_code == 404


def test_the_host_header_is_checked_when_bound_to_loopback():
    guarded = TestClient(
        create_app(allowed_hosts=("127.0.0.1", "localhost")), base_url="http://127.0.0.1"
    )
    assert guarded.get("/api/registry").status_code == 200
    assert guarded.get("/api/registry", headers={"host": "attacker.example"}).status_code == 400


def test_the_initial_state_redirects_a_bare_page():
    app = TestClient(create_app(initial_query="scenario=Gpt2DataParallelOneNode&nodes=2"))
    answer = app.get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"].endswith("nodes=2")
    assert app.get("/?nodes=3").status_code == 200


def test_json_values_are_finite():
    body = api.evaluate(api.params_of({"scenario": ONE}))
    text = json.dumps(body, allow_nan=False)
    assert body["result"]["inter_time"] == {"value": 0.0, "unit": "millisecond"}
    assert not math.isnan(json.loads(text)["result"]["efficiency"])


def test_the_default_plan_searches_nodes_and_links_within_the_limit(client):
    body = client.get(f"/api/plan?scenario={ONE}").json()  # one node: still a search over nodes
    from mlsysim import Systems

    links = [n for n in Systems.Fabrics.entries() if n.startswith(api.SCALE_OUT_FABRICS)]
    assert body["rows"] == 64 * len(links)
    assert body["labels"][0].startswith("nodes=1, fabric=")
    big = client.get(f"/api/plan?scenario={ONE}&nodes=100000&inter_bandwidth=100%20Gbps")
    assert big.status_code == 200 and big.json()["rows"] <= api.MAX_SWEEP_ROWS


# -- prediction intervals ----------------------------------------------------------------------


def test_evaluate_gives_the_librarys_80_percent_intervals_under_realistic_assumptions(client):
    sets = (
        "nodes=4",
        "inter_bandwidth=10 Gbps",
        "assumptions=realistic",
        "node_hour_rate=32 USD/hour",
    )
    query = "&".join(s.replace(" ", "%20").replace("/", "%2F") for s in sets)
    body = client.get(f"/api/evaluate?scenario={ONE}&{query}").json()
    result = library(*sets).result
    assert body["intervals"]["level"] == 0.8
    got = body["intervals"]["fields"]
    assert list(got) == ["efficiency", "speedup", "update_time", "training_time", "cost"]
    for name, band in got.items():
        low, high = result.interval(name, 0.8)
        if name in ("efficiency", "speedup"):
            assert (band["low"], band["high"]) == (pytest.approx(low), pytest.approx(high))
            assert band["low"] <= body["result"][name] <= band["high"]
        elif name == "cost":
            assert band["low"] == {"value": pytest.approx(low), "unit": "USD"}
            assert band["high"] == {"value": pytest.approx(high), "unit": "USD"}
        else:  # in the unit of the figure itself
            unit = body["result"][name]["unit"]
            assert band["low"]["unit"] == band["high"]["unit"] == unit
            assert band["low"]["value"] == pytest.approx(low.to(unit).magnitude)
            assert band["high"]["value"] == pytest.approx(high.to(unit).magnitude)
            assert band["low"]["value"] <= body["result"][name]["value"] <= band["high"]["value"]


def test_the_seed_model_has_no_interval_and_cost_needs_a_price(client):
    assert client.get(FOUR_10G).json()["intervals"] is None  # seed: a bound, not an estimate
    body = client.get(FOUR_10G + "&assumptions=realistic&node_hour_rate=").json()
    assert "cost" not in body["intervals"]["fields"] and "efficiency" in body["intervals"]["fields"]
    assert client.get(FOUR_10G.replace("evaluate", "sweep")).json()["interval"] is None


def test_the_sweep_carries_the_efficiency_band_per_row(client):
    body = client.get(
        FOUR_10G.replace("evaluate", "sweep") + "&assumptions=realistic&axis=nodes=1..8"
    ).json()
    band, eff = body["interval"], body["columns"]["efficiency"]["values"]
    assert band["level"] == 0.8 and len(band["efficiency_low"]) == len(eff) == 8
    for row, nodes in enumerate(range(1, 9)):
        result = library(
            f"nodes={nodes}", "inter_bandwidth=10 Gbps", "assumptions=realistic"
        ).result
        low, high = result.interval("efficiency")
        assert band["efficiency_low"][row] == pytest.approx(low)
        assert band["efficiency_high"][row] == pytest.approx(high)
    # no band when the sweep varies the assumptions themselves
    varied = client.get(
        FOUR_10G.replace("evaluate", "sweep") + "&axis=assumptions=seed,realistic&axis=nodes=1..2"
    ).json()
    assert varied["interval"] is None


# -- a custom workload -------------------------------------------------------------------------


def custom(parameters, name="My 7B"):
    from mlsysim import Workload

    return Scenarios.get(ONE).variant(workload=Workload(name=name, parameters=parameters))


@pytest.mark.filterwarnings("ignore:step_time and training_time measured")
@pytest.mark.parametrize("text", ["7e9", "7e9 param", "7000000000"])
def test_a_custom_workload_by_its_parameter_count(client, text, tmp_path):
    answer = client.get(
        f"/api/evaluate?scenario={ONE}&workload=custom&workload.parameters={text}"
        "&workload.name=My%207B&nodes=2&inter_bandwidth=100%20Gbps"
    )
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    want = custom(Q_(7e9, "param")).variant(nodes=2, inter_bandwidth=Q_(100, "Gbps"))
    same_figures(body["result"], want.result)
    assert body["values"]["workload"] == "custom"
    assert body["values"]["workload.name"] == "My 7B"
    assert body["values"]["workload.parameters"] == "7000000000.0 param"
    # the values read back: the page's state for this scenario is a link that reproduces it
    again = client.get(
        "/api/evaluate",
        params={"scenario": ONE, **{k: body["values"][k] for k in CUSTOM_WORKLOAD_FIELDS}},
    )
    same_figures(again.json()["result"], custom(Q_(7e9, "param")).result)
    # the TOML download is a file that reads back to the same workload
    path = tmp_path / "job.toml"
    path.write_text(client.get(f"/api/scenario.toml?scenario={ONE}&workload.parameters=7e9").text)
    assert load_scenario(path).workload == custom(Q_(7e9, "param"), name="custom").workload


@pytest.mark.filterwarnings("ignore:step_time and training_time measured")
@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"workload": "custom"}, "workload.parameters", "needs its parameter count"),
        ({"workload.parameters": "seven"}, "workload.parameters", "expected a parameter count (e.g. 7e9 param)"),
        ({"workload.parameters": "-3"}, "workload.parameters", "above zero"),
        ({"workload.parameters": "7 GB"}, "workload.parameters", "parameter count"),
        ({"workload": "GPT2", "workload.parameters": "7e9"}, "workload.parameters", "custom"),
        ({"workload.size": "7"}, "workload.size", "unknown"),
    ],
)
def test_a_bad_custom_workload_is_422_naming_its_field(client, params, field, words):
    answer = client.get("/api/evaluate", params={"scenario": ONE, **params})
    assert answer.status_code == 422
    body = answer.json()
    assert body["field"] == field and words in body["errors"][field]


def test_a_bad_parameter_count_has_the_librarys_words(client):
    from mlsysim import Workload

    with pytest.raises(MlsysimError) as caught:
        Workload(name="custom", parameters=-3.0)
    answer = client.get(f"/api/evaluate?scenario={ONE}&workload.parameters=-3")
    assert answer.json()["errors"]["workload.parameters"] == str(caught.value)
