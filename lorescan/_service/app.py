"""The application: :func:`create_app` builds it from a :class:`ServiceConfig`.

Plain ASGI layers wrap the routes, outermost first: metrics (requests and latency per route),
CORS when ``--cors`` names origins (a browser's preflight request carries no token), the token
check (every path but ``/healthz`` and the workbench page's static files), the body limit (a
declared length over ``--max-body-mb`` is refused before the body is read; a streamed one as soon
as it crosses the limit), and the direct routes (:class:`DirectRoutes`), which answer the two
routes every generation calls without the framework's per-request work (routing, dependencies, a
second pass over the body): a ``POST /v1/activate`` whose body is a JSON object that reads as a
valid :class:`ActivateBody` is answered by the same function the route calls, and any other body
goes on to the route itself, as read, so its error is the route's; a ``POST /v1/chat/completions``
is answered by the proxy's route function itself. Every error reply,
an unknown route's included, is ``{"error": {"type", "message", "field"}}``; an unexpected
exception is logged with its traceback and answered with a one-line ``internal`` error, never the
traceback.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

from .. import __version__
from .._errors import LorescanError
from .api import activation_reply, router
from .config import ServiceConfig
from .errors import ServiceError, error_body, from_lorescan
from .metrics import Metrics
from .models import UNION_TAGS, ActivateBody
from .proxy import Proxy, chat_completions
from .proxy import router as proxy_router
from .service import Service, json_bytes
from .workbench import is_public
from .workbench import router as workbench_router

log = logging.getLogger("lorescan.serve")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DESCRIPTION = """SillyTavern-exact world-info (lorebook) activation over HTTP.

Store books once (`PUT /v1/books/{name}`), then activate each generation (`POST /v1/activate`)
with the chat; give a `session` (a chat id) and the service keeps that chat's sticky, cooldown and
delay state between calls. The activation body takes a conformance scenario's inputs under the
same names, and the result has exactly the shape of a scenario's `expected`.

Started with `--upstream`, the service is also an OpenAI-compatible proxy (`POST /v1/chat/completions`,
`GET /v1/models`): a system message `LORESCAN_SYSTEM {...}` asks for lore, placement markers say
where it goes, and the completion is forwarded to the upstream."""


def create_app(config: ServiceConfig) -> FastAPI:
    """The service as an ASGI app (its store is opened now and closed at shutdown)."""
    service = Service(config)
    proxy = Proxy(config, service)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await proxy.aclose()
            service.close()

    app = FastAPI(title="lorescan", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    app.state.service = service
    app.state.proxy = proxy
    app.include_router(router)
    app.include_router(proxy_router)
    app.include_router(workbench_router)
    _add_error_handlers(app)
    app.add_middleware(DirectRoutes, service=service, activate=_route(router, "/v1/activate"),
                       completions=_route(proxy_router, "/v1/chat/completions"))
    app.add_middleware(BodyLimit, limit=config.max_body_bytes, mb=config.max_body_mb)   # innermost
    app.add_middleware(TokenCheck, token=config.token)
    if config.cors_origins:     # a browser's preflight carries no token: answered before the check
        app.add_middleware(Cors, allow_origins=list(config.cors_origins), allow_methods=["*"],
                           allow_headers=["Authorization", "Content-Type"], max_age=600)
    app.add_middleware(Measure, metrics=service.metrics)             # outermost
    return app


# ---------------------------------------------------------------- errors

def _reply(status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(json_bytes(body), status_code=status, media_type="application/json", headers=headers)


def _error_reply(exc: ServiceError | LorescanError) -> Response:
    """The reply to an error the service or the library raised for a request."""
    err = from_lorescan(exc) if isinstance(exc, LorescanError) else exc
    return _reply(err.status, err.body())


def _add_error_handlers(app: FastAPI) -> None:
    async def known_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, (ServiceError, LorescanError))
        return _error_reply(exc)

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _reply(*_validation_reply(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _http_reply(request, exc)

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return _reply(500, error_body("internal", f"internal error ({type(exc).__name__}); please report it"))

    app.add_exception_handler(ServiceError, known_error)
    app.add_exception_handler(LorescanError, known_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


def _validation_reply(exc: RequestValidationError) -> tuple[int, dict[str, Any]]:
    """A body or parameter that is not what the route takes: 400 for JSON that does not parse, 422
    naming the first field that is wrong (``turns[0].dry_run``) otherwise."""
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = [x for x in first.get("loc", ()) if x not in ("body", "query", "path")]
    kind = str(first.get("type", ""))
    if kind == "json_invalid":
        return 400, error_body("invalid_json", f"the body is not valid JSON: {first.get('msg')}")
    field = _field_path(loc)
    message = str(first.get("msg", "invalid value"))
    if kind == "missing" and not loc:
        message = "the body is missing: send a JSON object"
    elif kind in ("model_attributes_type", "model_type", "dict_type") and not loc:
        # raw bytes: the body came without Content-Type: application/json, so it was not read as JSON
        message = "the body must be a JSON object" if not isinstance(first.get("input"), bytes) else \
            "the body was not sent as JSON: send it with Content-Type: application/json"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return 422, error_body("invalid_request", message, field)


def _field_path(loc: list[Any]) -> str | None:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in UNION_TAGS:
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or None


def _http_reply(request: Request, exc: HTTPException) -> Response:
    status = exc.status_code
    if status == 404:
        detail = exc.detail if exc.detail != "Not Found" else f"no route {request.method} {request.url.path}"
        return _reply(404, error_body("not_found", str(detail)))
    if status == 405:
        return _reply(405, error_body("method_not_allowed", f"{request.method} is not allowed on "
                                                            f"{request.url.path}"), headers=exc.headers)
    if status == 413:
        return _reply(413, error_body("body_too_large", str(exc.detail)))
    kind = "invalid_request" if 400 <= status < 500 else "internal"
    return _reply(status, error_body(kind, str(exc.detail)), headers=exc.headers)


# ---------------------------------------------------------------- ASGI layers

async def _send_error(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    payload = json_bytes(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


class BodyLimit:
    """Refuse bodies over ``limit`` bytes with 413 (see the module docstring)."""

    def __init__(self, app: ASGIApp, limit: int, mb: float) -> None:
        self.app, self.limit = app, limit
        self.message = f"the body is larger than the limit of {mb:g} MB (--max-body-mb)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, message = self.limit, self.message
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await _send_error(send, 413, error_body("body_too_large", message))
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise HTTPException(413, message)
            return msg

        await self.app(scope, limited, send)


class TokenCheck:
    """With a token, every path but ``/healthz`` and the workbench's static files needs
    ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if self.expected is None or scope["type"] != "http" or path == "/healthz" or is_public(path):
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        if not hmac.compare_digest(given, self.expected):
            what = "a wrong token" if given else "no token"
            await _send_error(send, 401, error_body(
                "unauthorized", f"this service needs 'Authorization: Bearer <token>' ({what} was given)"),
                {"WWW-Authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


class Cors(CORSMiddleware):
    """Starlette's CORS layer, with its refusals in the one error shape."""

    def preflight_response(self, request_headers: Headers) -> Response:
        reply = super().preflight_response(request_headers)
        if reply.status_code >= 400:
            text = bytes(reply.body).decode("utf-8", "replace")
            return _reply(reply.status_code, error_body("cors", f"{text} (see --cors)"))
        return reply


def _route(routes: Any, path: str) -> Any:
    return next(r for r in routes.routes if getattr(r, "path", None) == path)


def _json_type(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json"
    return False


def _activate_body(data: bytes) -> ActivateBody | None:
    """The body as the route reads it, or ``None`` when the route would refuse it."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    try:
        return ActivateBody.model_validate(value)
    except ValidationError:
        return None


def _replay(data: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given again first."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        return await receive()

    return again


class DirectRoutes:
    """The two routes every generation calls, answered without the framework's routing (see the
    module docstring): ``POST /v1/activate`` (a body the route would refuse goes on to the route)
    and ``POST /v1/chat/completions`` (the route's own function, called here). Replies are byte
    for byte the routes'."""

    def __init__(self, app: ASGIApp, service: Service, activate: Any, completions: Any) -> None:
        self.app, self.service, self.activate, self.completions = app, service, activate, completions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path = scope["path"]
            if path == "/v1/activate" and _json_type(scope):
                await self._activate(scope, receive, send)
                return
            if path == "/v1/chat/completions":
                await self._completion(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _activate(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            data = await request.body()
        except HTTPException as exc:                # over the body limit
            await _http_reply(request, exc)(scope, receive, send)
            return
        except Exception:
            await _http_reply(request, HTTPException(400, "There was an error parsing the body"))(scope, receive, send)
            return
        body = _activate_body(data)
        if body is None:
            await self.app(scope, _replay(data, receive), send)
            return
        scope["route"] = self.activate
        try:
            reply = await activation_reply(self.service, body, request.is_disconnected)
        except (ServiceError, LorescanError) as exc:
            reply = _error_reply(exc)
        await reply(scope, receive, send)

    async def _completion(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        scope["route"] = self.completions
        try:
            reply = await chat_completions(request)
        except HTTPException as exc:                # the body over the limit, as the route's handler says
            reply = _http_reply(request, exc)
        await reply(scope, receive, send)


class Measure:
    """Count requests and time them per route template (``unmatched`` for unknown paths)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}    # the two metrics' children

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            series = self._series.get((name, method, status))
            if series is None:
                series = (self.metrics.requests.labels(name, method, str(status)),
                          self.metrics.latency.labels(name, method))
                self._series[(name, method, status)] = series
            series[0].inc()
            series[1].observe(time.perf_counter() - started)
