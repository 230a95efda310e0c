"""The page's plan warns like ``mlsysim plan``: notes, and the largest global batch to set."""

import pytest

from tests.ui.conftest import need

need("starlette", "httpx")

from starlette.testclient import TestClient  # noqa: E402

from mlsysim import Scenarios, plan  # noqa: E402
from mlsysim.core.suggest import caller_syntax  # noqa: E402
from mlsysim.planning.notes import plan_notes  # noqa: E402
from mlsysim.ui.api import default_plan_axes, params_of, plan_payload  # noqa: E402
from mlsysim.ui.app import create_app  # noqa: E402

FOUR = "Gpt2DataParallelFourNodes10GbE"
UNPROVEN = "convergence at this batch is unproven"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_the_plan_answer_carries_the_librarys_notes_in_the_pages_words(client):
    answer = client.get(f"/api/plan?scenario={FOUR}&deadline=1%20hour")
    assert answer.status_code == 200
    notes = answer.json()["notes"]
    assert any(n.split(";")[0].endswith("layouts of the Pareto front carry this note") for n in notes)
    assert any(UNPROVEN in n for n in notes)
    assert notes[-1].endswith("add a largest global batch of 512")
    with caller_syntax("form"):
        direct = plan_payload(params_of({"scenario": FOUR, "deadline": "1 hour"}))
    assert direct["notes"] == notes


def test_the_largest_global_batch_bounds_the_plan_and_silences_the_note(client):
    answer = client.get(f"/api/plan?scenario={FOUR}&deadline=1%20hour&max_global_batch=512")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert not any(UNPROVEN in n for n in body["notes"])
    batches = body["columns"]["global_batch"]["values"]
    assert all(batches[i] <= 512 for i in body["pareto"])
    assert "global batch <= 512" in body["summary"]


@pytest.mark.parametrize("text", ["many", "0", "-4", "1e3"])
def test_a_bad_largest_global_batch_is_422_naming_it(client, text):
    answer = client.get(f"/api/plan?scenario={FOUR}&max_global_batch={text}")
    assert answer.status_code == 422
    assert answer.json()["field"] == "max_global_batch"


def test_the_page_plan_searches_what_the_library_plan_searches():
    scenario = Scenarios.get(FOUR)
    from mlsysim.planning.axes import parse_axis

    axes = dict(parse_axis(t, scenario) for t in default_plan_axes(scenario))
    found = plan(scenario, max_global_batch=512, **axes)
    assert not any(UNPROVEN in n for n in plan_notes(found))
