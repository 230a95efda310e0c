"""The Starlette application of ``mlsysim ui``: one page, its assets, and the JSON API.

Routes (every API route answers GET with a query string and POST with a JSON body):

* ``GET /``: the page; ``/static/app.js``, ``/static/app.css``, ``/static/plotly.min.js``
  (from the installed ``plotly`` package): read once when the app is made, so no
  request reads or writes a file;
* ``/api/evaluate``, ``/api/sweep`` (``format=csv`` for CSV), ``/api/plan``,
  ``/api/explain``, ``/api/timeline`` (one update per pipeline stage), ``/api/scenario.toml``,
  ``GET /api/registry``.

A bad value is answered with status 422 and ``{"error", "field", "errors"}`` (each
message at most :data:`mlsysim.ui.api.MAX_MESSAGE` characters); request bodies over
:data:`MAX_BODY_BYTES` with 413; a POST whose ``Content-Type`` is not
``application/json`` with 415 (so a page of another origin cannot send one without
a CORS preflight, which this server does not answer); a body not received within
:data:`BODY_SECONDS` with 408. Plans and sweeps of more than :data:`HEAVY_ROWS`
layouts run in worker threads, at most :data:`HEAVY_AT_ONCE` at a time; beyond that
the answer is 503 with ``Retry-After``, so ``/api/evaluate`` stays quick under load.
A client that goes away mid-request is logged as one debug line (logger ``mlsysim.ui``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import MlsysimError
from mlsysim.core.suggest import caller_syntax
from mlsysim.ui import api

if TYPE_CHECKING:  # Starlette is imported when the app is made: this module loads without the extra
    from starlette.applications import Starlette
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from mlsysim.core.jsonio import JSONValue

INSTALL_HINT = 'the mlsysim UI needs the optional extra: pip install "mlsysim[ui]"'

MAX_BODY_BYTES = 64 * 1024
"""Largest request body the server reads."""

BODY_SECONDS = 10.0
"""Longest wait for a request's whole body (then 408)."""

HEAVY_AT_ONCE = 2
"""Most plans and big sweeps computed at once (each takes up to ~2 s of one core)."""

HEAVY_ROWS = 2_000
"""A sweep of more layouts than this counts as heavy work; a plan always does."""

RETRY_AFTER_SECONDS = 2
"""The ``Retry-After`` of a 503 answered when :data:`HEAVY_AT_ONCE` are running."""

log = logging.getLogger("mlsysim.ui")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
"""The page may load and contact nothing but this server (Plotly injects its own styles)."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")

STATIC_TYPES = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "plotly.min.js": "text/javascript; charset=utf-8",
}


def plotly_js() -> bytes:
    """Plotly.js as bundled in the installed ``plotly`` wheel (no network)."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


def _assets() -> dict[str, bytes]:
    static = resources.files("mlsysim.ui") / "static"
    out = {name: (static / name).read_bytes() for name in ("index.html", "app.js", "app.css")}
    out["plotly.min.js"] = plotly_js()
    return out



class _LongInteger(ValueError):
    """A JSON integer of more digits than any input takes (refused before it is converted)."""


def _json_int(text: str) -> int:
    """A JSON integer, at most :data:`~mlsysim.core.text.MAX_INT_DIGITS` digits (Python refuses
    to convert more than a few thousand, with a message about its own settings)."""
    from mlsysim.core.text import MAX_INT_DIGITS

    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _LongInteger(f"expected integers of at most {MAX_INT_DIGITS} digits, got one of {digits:,} digits")
    return int(text)

class BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413 (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _BodyTooLarge:
            await _too_large(self.limit)(scope, receive, send)


class SecurityHeaders:
    """Add the content security policy (nothing but this server) and no-sniff/no-referrer headers."""

    HEADERS = (
        (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _BodyTooLarge(Exception):
    pass


def _too_large(limit: int) -> Response:
    from starlette.responses import JSONResponse

    error = f"request body too large (at most {limit} bytes)"
    return JSONResponse(
        {
            "schema_version": api.SCHEMA_VERSION,
            "error": error,
            "field": "request",
            "errors": {"request": error},
        },
        status_code=413,
    )


async def _request_of(http: HttpRequest) -> api.Request:
    """The parameters of a GET query string or a POST JSON body."""
    if http.method == "POST":
        import anyio

        media = http.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise api.ApiError(
                {
                    "request": f"a POST needs Content-Type: application/json, got {media or 'none'!r}"
                },
                status=415,
            )
        try:
            with anyio.fail_after(BODY_SECONDS):
                body = await http.body()
        except TimeoutError:
            raise api.ApiError(
                {"request": f"the body did not arrive within {BODY_SECONDS:g} s"}, status=408
            ) from None
        try:
            data = json.loads(body or b"{}", parse_int=_json_int)
        except RecursionError:
            raise api.ApiError({"request": "the body is nested too deeply"}) from None
        except _LongInteger as exc:
            raise api.ApiError({"request": str(exc)}) from None
        except ValueError as exc:
            raise api.ApiError({"request": f"the body is not JSON ({exc})"}) from None
        return api.Request.from_json(data)
    return api.Request.from_items(http.query_params.multi_items())


Handler = Callable[[api.Request], object]  # a Response, or JSON data
Heavy = Callable[[api.Request], bool]


class HeavyWork:
    """At most ``limit`` heavy computations at once; the next is refused at once, not queued."""

    def __init__(self, limit: int = HEAVY_AT_ONCE) -> None:
        self.slots = threading.BoundedSemaphore(limit)
        self.limit = limit

    def take(self) -> None:
        """Take a slot, or raise a 503 :class:`~mlsysim.ui.api.ApiError` with ``Retry-After``."""
        if not self.slots.acquire(blocking=False):
            raise api.ApiError(
                {
                    "request": f"the server is busy ({self.limit} plans or large sweeps are "
                    f"running); retry in {RETRY_AFTER_SECONDS} s"
                },
                status=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )

    def give_back(self) -> None:
        self.slots.release()


def _is_plan(request: api.Request) -> bool:
    return True


def _is_big_sweep(request: api.Request) -> bool:
    if not request.axes:  # the default axis: nodes 1 .. max(64, 2 x nodes)
        nodes = request.changes.get("nodes", "").strip()
        return nodes.isdigit() and len(nodes) < 10 and 2 * int(nodes) > HEAVY_ROWS
    size = 1
    for text in request.axes:
        size *= api.axis_size(text)
    return size > HEAVY_ROWS


def _work(handler: Handler, request: api.Request, slot: HeavyWork | None) -> object:
    """Run ``handler`` (in a worker thread): examples in messages as a form field writes them."""
    try:
        with caller_syntax("form"):
            return handler(request)
    except MlsysimError as exc:  # the library's own refusal, not yet named by the API
        raise api.ApiError({getattr(exc, "field", None) or "request": str(exc)}) from None
    except (ValueError, RecursionError, UnicodeError) as exc:
        raise api.ApiError(
            {"request": f"cannot answer this request ({type(exc).__name__})"}
        ) from None
    finally:
        if slot is not None:
            slot.give_back()


def _json_route(
    handler: Handler, heavy: Heavy | None = None, work: HeavyWork | None = None
) -> Callable[[HttpRequest], Awaitable[Response]]:
    async def endpoint(http: HttpRequest) -> Response:
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import ClientDisconnect
        from starlette.responses import JSONResponse, Response

        try:
            request = await _request_of(http)
            slot = work if work is not None and heavy is not None and heavy(request) else None
            if slot is not None:
                slot.take()
            payload = await run_in_threadpool(_work, handler, request, slot)
        except api.ApiError as exc:
            return JSONResponse(exc.payload(), status_code=exc.status, headers=exc.headers)
        except ClientDisconnect:
            log.debug("client %s went away during %s %s", _peer(http), http.method, http.url.path)
            return Response(status_code=400)  # nobody reads it
        if isinstance(payload, Response):
            return payload
        return JSONResponse(payload)

    return endpoint


def _peer(http: HttpRequest) -> str:
    client = http.client
    return f"{client.host}:{client.port}" if client else "?"


def _sweep(request: api.Request) -> Response | dict[str, JSONValue]:
    from starlette.responses import PlainTextResponse

    if request.page.get("format", "json") == "csv":
        return PlainTextResponse(
            api.sweep_csv(request),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="mlsysim-sweep.csv"'},
        )
    return api.sweep_payload(request)


def _toml(request: api.Request) -> Response:
    from starlette.responses import PlainTextResponse

    return PlainTextResponse(
        api.toml_text(request),
        media_type="application/toml; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="scenario.toml"'},
    )


def create_app(
    *,
    initial_query: str = "",
    allowed_hosts: tuple[str, ...] | None = None,
    warm: bool = False,
    heavy_at_once: int = HEAVY_AT_ONCE,
) -> Starlette:
    """The application. ``initial_query`` is the state ``GET /`` without a query redirects to
    (``mlsysim ui --file``); ``allowed_hosts`` limits the Host header (against DNS rebinding);
    ``warm`` prepares the registry answer (and the library's imports) now, not on the first visit;
    ``heavy_at_once`` bounds the plans and big sweeps computed at once.
    Raises :class:`~mlsysim.core.exceptions.MissingDependencyError` without the ``ui`` extra.
    """
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.middleware.trustedhost import TrustedHostMiddleware
        from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
        from starlette.routing import Route
    except ImportError:
        from mlsysim.core.exceptions import MissingDependencyError

        raise MissingDependencyError(INSTALL_HINT) from None
    assets = _assets()
    registry: dict[str, JSONValue] = api.registry_payload() if warm else {}

    async def page(http: HttpRequest) -> Response:
        if initial_query and not http.url.query:
            return RedirectResponse(f"/?{initial_query}", status_code=307)
        return Response(
            assets["index.html"],
            media_type="text/html; charset=utf-8",
            headers={"Cache-Control": "no-store"},
        )

    async def static(http: HttpRequest) -> Response:
        name = http.path_params["name"]
        if name not in STATIC_TYPES:
            return PlainTextResponse("not found", status_code=404)
        return Response(
            assets[name], media_type=STATIC_TYPES[name], headers={"Cache-Control": "max-age=3600"}
        )

    async def registry_route(http: HttpRequest) -> Response:
        if not registry:
            from starlette.concurrency import run_in_threadpool

            registry.update(await run_in_threadpool(api.registry_payload))
        return JSONResponse(registry)

    work = HeavyWork(heavy_at_once)
    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/registry", registry_route),
        Route("/api/evaluate", _json_route(api.evaluate), methods=["GET", "POST"]),
        Route("/api/sweep", _json_route(_sweep, _is_big_sweep, work), methods=["GET", "POST"]),
        Route("/api/plan", _json_route(api.plan_payload, _is_plan, work), methods=["GET", "POST"]),
        Route("/api/explain", _json_route(api.explain_payload), methods=["GET", "POST"]),
        Route("/api/timeline", _json_route(api.timeline_payload), methods=["GET", "POST"]),
        Route("/api/scenario.toml", _json_route(_toml), methods=["GET", "POST"]),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(BodyLimit)]
    if allowed_hosts:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    return Starlette(routes=routes, middleware=middleware)
