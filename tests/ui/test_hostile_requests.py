"""Hostile requests to ``mlsysim ui``: every one is answered with a 4xx JSON error whose
message is bounded, or the connection is closed in bounded time; nothing floods the log.

All traffic goes to 127.0.0.1; every loop is bounded.
"""

import json
import logging
import socket
import threading
import time

import pytest

from tests.ui.conftest import need, serving

need("starlette", "uvicorn", "httpx")

from starlette.testclient import TestClient  # noqa: E402

from mlsysim.ui import api  # noqa: E402
from mlsysim.ui import app as ui_app  # noqa: E402
from mlsysim.ui.app import create_app  # noqa: E402
from mlsysim.ui.server import header_timeout_protocol  # noqa: E402

ONE = "Gpt2DataParallelOneNode"
JSON = {"content-type": "application/json"}
ROUTES = ("/api/evaluate", "/api/sweep", "/api/plan", "/api/explain", "/api/scenario.toml")


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def refused(answer, status=None):
    """A JSON error of a 4xx status (or ``status``) with bounded messages."""
    assert 400 <= answer.status_code < 500 if status is None else answer.status_code == status, (
        answer.status_code,
        answer.text[:300],
    )
    body = answer.json()
    assert set(body) >= {"error", "field", "errors"}
    assert len(body["error"]) <= api.MAX_MESSAGE
    assert all(len(m) <= api.MAX_MESSAGE for m in body["errors"].values())
    assert len(answer.content) < 4 * api.MAX_MESSAGE
    return body


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_nested_20000_deep_is_a_4xx(client, route):
    body = b"[" * 20_000 + b"]" * 20_000
    refused(client.post(route, content=body, headers=JSON))
    nested = b'{"set": {"nodes": ' + b"[" * 20_000 + b"]" * 20_000 + b"}}"
    refused(client.post(route, content=nested, headers=JSON))


@pytest.mark.parametrize("depth", [50, 500, 900])
def test_a_value_nested_within_the_parser_limit_is_a_4xx(client, depth):
    value = "[" * depth + "]" * depth
    body = f'{{"scenario": "{ONE}", "set": {{"nodes": {{"value": {value}, "unit": "s"}}}}}}'
    refused(client.post("/api/evaluate", content=body.encode(), headers=JSON))


@pytest.mark.parametrize("route", ["/api/evaluate", "/api/explain", "/api/scenario.toml"])
@pytest.mark.parametrize(
    "body",
    [
        '{"scenario": "' + ONE + '", "set": {"workload.name": "\\ud800"}}',
        '{"scenario": "' + ONE + '", "set": {"\\udfff": "1"}}',
        '{"scenario": "\\ud800"}',
    ],
)
def test_a_lone_surrogate_is_a_422_not_a_500(client, route, body):
    body = refused(client.post(route, content=body.encode(), headers=JSON), 422)
    assert "Unicode" in body["error"]


def test_a_422_does_not_echo_a_huge_value(client):
    huge = "x" * 60_000
    for data in (
        {"scenario": ONE, "set": {"nodes": [huge]}},
        {"scenario": ONE, "set": {"nodes": {"a": huge}}},
        {"scenario": ONE, "set": {huge[:64]: huge}},
        {"scenario": ONE, huge: 1},
    ):
        body = refused(client.post("/api/evaluate", content=json.dumps(data), headers=JSON))
        assert huge[:1000] not in json.dumps(body)


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_post_needs_application_json(client, content_type):
    """A page of another origin can send these without a preflight: they are refused unread."""
    headers = {"content-type": content_type} if content_type else {}
    body = json.dumps({"scenario": ONE}).encode()
    answer = client.post("/api/plan", content=body, headers=headers)
    assert "plan" not in answer.json()
    refused(answer, 415)
    ok = client.post(
        "/api/evaluate", content=body, headers={"content-type": "application/json; charset=utf-8"}
    )
    assert ok.status_code == 200


def test_plans_beyond_the_bound_are_503_with_retry_after_and_evaluate_still_answers(
    monkeypatch,
):
    started, release = threading.Event(), threading.Event()
    real = api.plan_payload

    def slow_plan(request):
        started.set()
        assert release.wait(30)
        return real(request)

    monkeypatch.setattr(api, "plan_payload", slow_plan)
    app = create_app(heavy_at_once=1)
    answers = {}

    def first():
        answers["first"] = TestClient(app).get(f"/api/plan?scenario={ONE}")

    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    try:
        assert started.wait(30)
        client = TestClient(app)
        busy = client.get(f"/api/plan?scenario={ONE}")
        body = refused_5xx(busy)
        assert "busy" in body["error"] and busy.headers["retry-after"].isdigit()
        big = client.get(
            "/api/sweep",
            params=[
                ("scenario", ONE),
                ("axis", "nodes=1..100"),
                ("axis", "devices_per_node=1..40"),
            ],
        )
        assert big.status_code == 503
        default_big = client.get(f"/api/sweep?scenario={ONE}&nodes=5000&inter_bandwidth=100%20Gbps")
        assert default_big.status_code == 503  # the default axis reaches 2 x 5000 nodes
        assert client.get(f"/api/evaluate?scenario={ONE}").status_code == 200
        assert client.get(f"/api/sweep?scenario={ONE}").status_code == 200  # small: not gated
    finally:
        release.set()
        thread.join(60)
    assert answers["first"].status_code == 200
    assert TestClient(app).get(f"/api/plan?scenario={ONE}").status_code == 200  # slot returned


def refused_5xx(answer):
    assert answer.status_code == 503, answer.text[:300]
    body = answer.json()
    assert len(body["error"]) <= api.MAX_MESSAGE
    return body


# a real server: disconnects and slow clients


@pytest.fixture
def server(caplog):
    caplog.set_level(logging.DEBUG, logger="mlsysim.ui")
    # log_config None: uvicorn's records reach caplog
    with serving(create_app(), http=header_timeout_protocol(0.5), log_config=None) as port:
        yield port


def connect(port):
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    return conn


def read_all(conn, seconds=10.0):
    """What the server sends until it closes the connection (bounded by ``seconds``)."""
    conn.settimeout(seconds)
    chunks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


def test_clients_leaving_mid_body_are_one_debug_line_each(server, caplog):
    head = (
        f"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1:{server}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    ).encode()
    for _ in range(5):
        conn = connect(server)
        conn.sendall(head + b'{"scenario"')
        time.sleep(0.05)
        conn.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        gone = [r for r in caplog.records if "went away" in r.getMessage()]
        if len(gone) == 5:
            break
        time.sleep(0.05)
    assert len(gone) == 5
    assert all(r.levelno == logging.DEBUG and "\n" not in r.getMessage() for r in gone)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], [
        r.getMessage() for r in caplog.records
    ]


def test_a_client_that_stalls_in_its_headers_is_cut_off(server, caplog):
    conn = connect(server)
    start = time.monotonic()
    conn.sendall(b"GET /api/evaluate HTTP/1.1\r\nHost: 127.0")
    data, closed = read_all(conn)
    conn.close()
    assert closed and data == b""
    assert (
        time.monotonic() - start < 5
    )  # the 0.5 s bound of this server, with room for a busy machine
    assert any("no complete request headers" in r.getMessage() for r in caplog.records)


def test_a_kept_alive_connection_that_stalls_in_its_next_headers_is_cut_off(server):
    conn = connect(server)
    conn.sendall(f"GET /api/registry HTTP/1.1\r\nHost: 127.0.0.1:{server}\r\n\r\n".encode())
    conn.settimeout(10)
    first = conn.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    conn.sendall(b"GET /api/evaluate HTTP/1.1\r\n")
    _, closed = read_all(conn)
    conn.close()
    assert closed


def test_a_client_that_stalls_in_its_body_gets_408(server, monkeypatch):
    monkeypatch.setattr(ui_app, "BODY_SECONDS", 0.5)
    conn = connect(server)
    conn.sendall(
        (
            f"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1:{server}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        ).encode()
    )
    data, _ = read_all(conn, 10)
    conn.close()
    assert data.startswith(b"HTTP/1.1 408"), data[:200]
    assert b"did not arrive" in data
