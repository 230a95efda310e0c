"""Run the page: bind a socket, serve the app with uvicorn, open the browser."""

from __future__ import annotations

import logging
import socket
import sys
import threading
import urllib.parse
import webbrowser
from typing import TYPE_CHECKING, cast

from mlsysim.core.exceptions import InputError
from mlsysim.ui.app import LOOPBACK_HOSTS, create_app
from mlsysim.ui.state import SCENARIO_PARAM, text_values

if TYPE_CHECKING:
    import asyncio

    from mlsysim.engine.scenario_types import TrainingScenario

HEADER_SECONDS = 10.0
"""Longest wait for a request's headers, on a new connection or a kept-alive one (then the
connection is closed): a client that sends a few bytes and stalls holds no connection for long."""

log = logging.getLogger("mlsysim.ui")


def header_timeout_protocol(seconds: float = HEADER_SECONDS) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers are not complete
    within ``seconds`` of its first byte (or of the connection). uvicorn's own
    ``timeout_keep_alive`` covers only an idle connection between requests.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeout(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _armed_at: object = None  # the request cycle current when the timer started

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(cast("asyncio.Transport", transport))  # a stream's, as uvicorn takes it
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._timer is not None and self.cycle is not self._armed_at:
                self._disarm()  # a new request's headers arrived
            elif self._timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the first bytes of the next request

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._armed_at = self.cycle
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            if self.cycle is self._armed_at and not self.transport.is_closing():
                peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                log.debug("closed %s: no complete request headers within %g s", peer, seconds)
                self.transport.close()

    return HeaderTimeout


def query_of(scenario: TrainingScenario) -> str:
    """The page's query string for ``scenario``: the closest named scenario and the fields that differ.

    Raises :class:`InputError` when the page cannot express the scenario (an
    inline workload with more than a name and a parameter count).
    """
    from mlsysim.engine.scenarios import Scenarios
    from mlsysim.ui.state import FieldErrors, scenario_from

    wanted = text_values(scenario)
    best: tuple[int, TrainingScenario, dict[str, str]] | None = None
    for base in Scenarios:
        have = text_values(base)
        diff = {k: v for k, v in wanted.items() if have.get(k) != v}
        diff = _assumption_changes(diff)
        if best is None or len(diff) < best[0]:
            best = (len(diff), base, diff)
    assert best is not None
    _, base, diff = best
    try:
        rebuilt = scenario_from(base.name, diff)
    except FieldErrors:
        rebuilt = None
    if rebuilt is None or text_values(rebuilt) != wanted or rebuilt.workload != scenario.workload:
        raise InputError(
            "the page takes registry workloads, or a custom one given by its parameter count "
            f"and name only; this scenario's workload {scenario.workload.name!r} is neither",
            field="workload",
        )
    return urllib.parse.urlencode(
        [(SCENARIO_PARAM, base.name), *diff.items()], quote_via=urllib.parse.quote
    )


def _assumption_changes(diff: dict[str, str]) -> dict[str, str]:
    """A preset (``assumptions=realistic``) replaces its field-by-field changes."""
    preset = diff.get("assumptions")
    if preset in ("seed", "realistic"):
        return {k: v for k, v in diff.items() if not k.startswith("assumptions.")}
    diff.pop("assumptions", None)
    return diff


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; :class:`InputError` when the port is taken or the host is unknown."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InputError(f"--host {host!r}: {exc.strerror or exc}", field="host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {host}:{port} ({exc.strerror}); choose another with --port",
            field="port",
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    *, host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True, query: str = ""
) -> None:
    """Serve the page until interrupted, printing its address (``--port 0`` picks a free port)."""
    import uvicorn

    loopback = host in LOOPBACK_HOSTS
    if not loopback:
        print(
            f"mlsysim ui: warning: --host {host} serves the page and its API, without any "
            "authentication, to every machine that can reach this one",
            file=sys.stderr,
        )
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown
    url = f"http://{shown}:{actual}/" + (f"?{query}" if query else "")
    allowed = (*LOOPBACK_HOSTS, *(f"{h}:{actual}" for h in LOOPBACK_HOSTS)) if loopback else None
    app = create_app(initial_query=query, allowed_hosts=_hosts(allowed), warm=True)
    config = uvicorn.Config(
        app,
        http=header_timeout_protocol(),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.01)
        if server.started:
            print(f"mlsysim ui: serving {url} (Ctrl+C to stop)", flush=True)
            if open_browser:
                webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])


def _hosts(allowed: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Host-header values (without the port, as Starlette compares them)."""
    if allowed is None:
        return None
    return tuple(sorted({h.rsplit(":", 1)[0] if h.count(":") == 1 else h for h in allowed}))
