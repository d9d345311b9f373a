"""The OpenAI-compatible proxy: ``POST /v1/chat/completions`` and ``GET /v1/models``.

A chat completion whose messages hold a ``LORESCAN_SYSTEM`` header is activated exactly as
``POST /v1/activate`` activates (the same function: stored books, the session's timed effects,
settings, version and generation type), its lore is placed into the messages (``placement``),
the plugins' ``before_prompt_rendered`` hooks run, and it is forwarded to the upstream given with
``--upstream`` (over kept-alive HTTP/1.1 connections: ``upstream.UpstreamPool``). A request without
a header is forwarded as it came, byte for byte.

The upstream's answer is relayed as it comes: its status, its body and its headers (less the
hop-by-hop ones), plus ``X-Lorescan-Activated`` (the activated entries as ``book.uid``, in
activation order, comma-separated; a comma, a percent sign or a character beyond ASCII in a name
is percent-encoded). With ``stream: true`` the server-sent events are relayed chunk by chunk as
they arrive; a client that disconnects closes the upstream request. Without ``--upstream-key-env``
the client's ``Authorization`` is passed on (unless it is the service's own ``--token``); the key
is never logged nor shown in an error. Errors of the proxy's own: 400 for a header it cannot read,
a book it does not know or a misspelt marker, 502 when the upstream cannot be reached or its answer
is not HTTP/1.1, 504 when it does not answer within ``--upstream-timeout``, 503 when the service
was started without ``--upstream``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from .._errors import LorescanError
from .activation import run_activate
from .config import ServiceConfig, shown_url
from .errors import ServiceError, error_body
from .models import ActivateBody
from .placement import HEADER, Header, PlacementError, chat_of, find_header, place
from .plugins import CompletionContext, CompletionResponse, Plugins
from .service import Service, json_bytes
from .upstream import UpstreamError, UpstreamPool, UpstreamResponse, UpstreamTimeout

log = logging.getLogger("lorescan.serve")
router = APIRouter()

ACTIVATED = "X-Lorescan-Activated"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade"})
#: request headers not passed on: hop-by-hop, those the upstream client sets itself, and encodings
#: the answer would come in that the proxy does not decode
DROP_REQUEST = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
#: response headers not passed back: hop-by-hop, and those the answer is re-framed with
DROP_RESPONSE = HOP_BY_HOP | {"content-length", "content-encoding", "date", "server"}
#: the header's names, as the activation body calls them
HEADER_FIELDS = {"books": "stored_books", "settings": "settings", "user": "user_name", "char": "char_name",
                 "session": "session", "st_version": "st_version", "type": "type", "character": "character",
                 "persona_description": "persona_description", "trace": "trace", "tokenizer": "tokenizer",
                 "seed": "seed", "macro_engine": "macro_engine"}
_BODY_NAMES = {v: k for k, v in HEADER_FIELDS.items()}
_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in ",%")
_PLAIN_KEYS = re.compile(r"[\x21-\x24\x26-\x7e]*")     # what quote() keeps, and commas


class Proxy:
    """The proxy of one running service: its upstream, HTTP client and plugins."""

    def __init__(self, config: ServiceConfig, service: Service) -> None:
        self.service = service
        self.base = config.upstream.rstrip("/") if config.upstream else None
        self.shown = shown_url(self.base) if self.base else ""
        self.key = config.upstream_key
        self.own_token = config.token is not None
        self.timeout = config.upstream_timeout
        self.plugins = Plugins.load(service.metrics.registry)
        self._transport: UpstreamPool | None = None

    @property
    def transport(self) -> UpstreamPool:
        """The keep-alive connection pool to the upstream (``upstream.UpstreamPool``, 1,000
        connections, 100 kept alive): no cookie jar (an upstream's cookies must not pass from one
        client to the next), no redirects, no auth; ``--upstream-timeout`` bounds connecting,
        sending, each read and the wait for a free connection."""
        if self._transport is None:
            self._transport = UpstreamPool(self.timeout, max_connections=1000, max_idle=100)
        return self._transport

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()

    def upstream_url(self, request: Request, path: str) -> str:
        raw = request.scope.get("query_string", b"")
        query = urlsplit("?" + raw.decode()).query if raw else ""    # as ``request.url.query`` reads it
        return f"{self.base}{path}" + (f"?{query}" if query else "")

    def unconfigured(self) -> Response | None:
        """The 503 reply of a service started without ``--upstream`` (``None`` with one)."""
        if self.base is not None:
            return None
        return proxy_error(503, error_body("no_upstream", "no upstream is configured: start lorescan serve with "
                                           "--upstream URL (an OpenAI-compatible base URL up to and including /v1)"))

    def request_headers(self, request: Request) -> list[tuple[bytes, bytes]]:
        """The client's headers to pass on (see the module docstring for ``Authorization``)."""
        named = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
        out = []
        for raw_name, value in request.headers.raw:
            name = raw_name.decode("latin-1").lower()
            if name in DROP_REQUEST or name in named:
                continue
            if name == "authorization" and (self.key is not None or self.own_token):
                continue
            out.append((raw_name, value))
        if self.key is not None:
            out.append((b"authorization", f"Bearer {self.key}".encode("latin-1")))
        return out

    async def forward(self, request: Request, path: str, content: bytes | None,
                      context: CompletionContext | None) -> Response:
        """Send the request upstream and relay its answer (streamed, chunk by chunk, when the
        upstream answers a chat completion with server-sent events)."""
        unconfigured = self.unconfigured()
        if unconfigured is not None:
            return unconfigured
        url = self.upstream_url(request, path)
        activated = activated_header(context.activated if context else [])
        started = time.perf_counter()
        try:
            upstream = await self.transport.request(request.method, url, self.request_headers(request), content)
        except UpstreamError as exc:
            return self.transport_error(exc, activated)
        headers = [(k.lower(), v) for k, v in upstream.headers if k.lower().decode("latin-1") not in DROP_RESPONSE]
        headers.append((ACTIVATED.lower().encode(), activated.encode("latin-1")))
        kind = upstream.header("content-type") or ""
        if context is not None and kind.startswith("text/event-stream"):
            streamed = StreamingResponse(self.relay(upstream, context, started), status_code=upstream.status,
                                         background=BackgroundTask(upstream.aclose))   # also if never started
            streamed.raw_headers.extend(headers)
            return streamed
        try:
            data = await upstream.read()
        except UpstreamError as exc:
            return self.transport_error(exc, activated)
        finally:
            await upstream.aclose()
        told = None
        if context is not None:
            context.upstream_seconds = time.perf_counter() - started
            data, answer = self.answered(context, upstream.status, kind, data)
            told = BackgroundTask(self.plugins.after, context, answer)      # once the reply is sent
        reply = Response(data, status_code=upstream.status, background=told)
        reply.raw_headers.extend(headers)
        return reply

    def answered(self, context: CompletionContext, status: int, kind: str,
                 data: bytes) -> tuple[bytes, CompletionResponse]:
        """A complete non-streamed answer, with the trace added when asked for, and what the plugins see."""
        parsed = json_object(data) if "json" in kind else None
        if parsed is not None and context.result is not None and 200 <= status < 300 \
                and (context.header or {}).get("trace") is True:
            parsed["lorescan"] = context.result
            data = json_bytes(parsed)
        return data, CompletionResponse(status, parsed)

    async def relay(self, upstream: UpstreamResponse, context: CompletionContext,
                    started: float) -> AsyncIterator[bytes]:
        """The upstream's events as they arrive; the plugins are told once the stream is complete."""
        collector = StreamCollector()
        complete = False
        try:
            async for chunk in upstream.stream():
                collector.feed(chunk)
                yield chunk
            complete = True
        except UpstreamError as exc:
            err = self.transport_error(exc, "")
            log.warning("the upstream's stream broke off: %s", exc)      # names no header, so no key
            yield b"data: " + bytes(err.body) + b"\n\n"
        finally:
            with anyio.CancelScope(shield=True):    # a client that left cancels this: close the upstream anyway
                await upstream.aclose()
                if complete:
                    context.upstream_seconds = time.perf_counter() - started
                    await self.plugins.after(context, CompletionResponse(upstream.status, collector.body(),
                                                                         streamed=True))

    def transport_error(self, exc: UpstreamError, activated: str) -> Response:
        """The 504 of an upstream too slow, or the 502 of one that cannot be reached or answers
        malformed HTTP (the message names the upstream without credentials, never a header)."""
        if isinstance(exc, UpstreamTimeout):
            body = error_body("upstream_timeout", f"the upstream {self.shown} did not answer within "
                                                  f"{self.timeout:g} s (--upstream-timeout)")
            return proxy_error(504, body, activated)
        reason = str(exc) or type(exc).__name__
        return proxy_error(502, error_body("upstream_unreachable", f"the upstream {self.shown} cannot be reached: "
                                                                   f"{reason}"), activated)


def proxy_error(status: int, body: dict[str, Any], activated: str = "") -> Response:
    return Response(json_bytes(body), status_code=status, media_type="application/json",
                    headers={ACTIVATED: activated})


def _proxy(request: Request) -> Proxy:
    proxy: Proxy = request.app.state.proxy
    return proxy


# ---------------------------------------------------------------- routes

_COMPLETION_DOC = {"requestBody": {"required": True, "description": "an OpenAI chat completion request; a system "
                                   "message starting with LORESCAN_SYSTEM and a JSON object asks for lore",
                                   "content": {"application/json": {"schema": {"type": "object"}}}}}


@router.post("/v1/chat/completions", openapi_extra=_COMPLETION_DOC)
async def chat_completions(request: Request) -> Response:
    """Activate the lore the ``LORESCAN_SYSTEM`` header asks for, place it in the messages and
    forward the completion to the upstream; the answer is relayed as it comes."""
    proxy = _proxy(request)
    unconfigured = proxy.unconfigured()
    if unconfigured is not None:
        return unconfigured
    raw = await request.body()
    body = json_object(raw)
    messages = body.get("messages") if body is not None else None
    stream = bool(body.get("stream")) if body is not None else False
    try:
        header = find_header(messages) if isinstance(messages, list) else None
    except PlacementError as exc:
        return proxy_error(400, error_body("invalid_header", exc.message, exc.field))
    if body is None or header is None or not isinstance(messages, list):
        context = CompletionContext(body=body, messages=messages if isinstance(messages, list) else [], stream=stream)
        return await proxy.forward(request, "/chat/completions", raw, context)
    try:
        result = await run_activate(proxy.service, activation_body(header, messages), request.is_disconnected)
        if result is None:                    # the client left while it waited
            return Response(status_code=499)
        placed = place(messages, header, result)
    except PlacementError as exc:
        return proxy_error(400, error_body("invalid_header", exc.message, exc.field))
    except (ServiceError, LorescanError) as exc:
        return header_error(exc)
    context = CompletionContext(body=body, messages=placed, header=header.fields, result=result, stream=stream)
    forwarded = {**body, "messages": await proxy.plugins.before(context)}
    context.body = forwarded
    return await proxy.forward(request, "/chat/completions", json_bytes(forwarded), context)


@router.get("/v1/models")
async def models(request: Request) -> Response:
    """The upstream's models, relayed."""
    return await _proxy(request).forward(request, "/models", None, None)


# ---------------------------------------------------------------- the header

def activation_body(header: Header, messages: list[Any]) -> ActivateBody:
    """The ``POST /v1/activate`` body a header and its request's messages stand for."""
    fields = header.fields
    unknown = [name for name in fields if name not in HEADER_FIELDS]
    where = f"{HEADER}."
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], list(HEADER_FIELDS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PlacementError(f"unknown {HEADER} field {unknown[0]!r}{hint}", where + unknown[0])
    data: dict[str, Any] = {HEADER_FIELDS[name]: value for name, value in fields.items()}
    data["chat"] = chat_of(messages)
    try:
        return ActivateBody.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [x for x in first.get("loc", ()) if x not in ("by-name", "by-object")]
        raise PlacementError(f"{HEADER}: {first.get('msg', 'invalid value')}", where + field_path(loc)) from None


def field_path(loc: list[Any]) -> str:
    """A body field path in the header's names (``stored_books[1]`` is ``books[1]``)."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = _BODY_NAMES.get(str(part), str(part)) if i == 0 else str(part)
            out += ("." if out else "") + name
    return out


def header_error(exc: ServiceError | LorescanError) -> Response:
    """An activation error caused by the header (an unknown book, a bad setting): 400 naming its
    field in the header's names; a conflict keeps its own status."""
    if isinstance(exc, LorescanError):
        status, message, field = 422, str(exc), exc.field
    else:
        status, message, field = exc.status, exc.message, exc.field
    if status == 409:
        return proxy_error(409, error_body("conflict", message, field))
    if field and field.startswith("chat"):
        return proxy_error(400, error_body("invalid_request", message, "messages"))
    return proxy_error(400, error_body("invalid_header", message, HEADER + ("." + renamed(field) if field else "")))


def renamed(field: str) -> str:
    """An activation body's field path in the header's names (``stored_books[1]`` is ``books[1]``)."""
    name = re.match(r"[A-Za-z_]*", field).group(0)      # type: ignore[union-attr]
    return _BODY_NAMES.get(name, name) + field[len(name):]


# ---------------------------------------------------------------- helpers

def json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def activated_header(keys: list[str]) -> str:
    """The activated keys, comma-separated, each percent-encoded where it needs to be."""
    joined = ",".join(keys)
    if _PLAIN_KEYS.fullmatch(joined) and joined.count(",") == len(keys) - 1:    # the common case: nothing to encode
        return joined
    return ",".join(quote(key, safe=_SAFE) for key in keys)


class StreamCollector:
    """Reads a chat completion's server-sent events as they pass, into the ``chat.completion``
    they add up to (text per choice, finish reasons, usage), for the plugins."""

    def __init__(self) -> None:
        self.pending = b""
        self.meta: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.seen = False

    def feed(self, chunk: bytes) -> None:
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                continue
            event = json_object(payload)
            if event is not None:
                self.add(event)

    def add(self, event: dict[str, Any]) -> None:
        self.seen = True
        for key in ("id", "created", "model"):
            if key in event:
                self.meta[key] = event[key]
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            index = choice.get("index", 0) if isinstance(choice.get("index", 0), int) else 0
            got = self.choices.setdefault(index, {"role": "assistant", "parts": [], "finish_reason": None})
            delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("role"), str):
                got["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                got["parts"].append(delta["content"])
            if choice.get("finish_reason") is not None:
                got["finish_reason"] = choice["finish_reason"]

    def body(self) -> dict[str, Any] | None:
        if not self.seen:
            return None
        choices = [{"index": i, "message": {"role": c["role"], "content": "".join(c["parts"])},
                    "finish_reason": c["finish_reason"]} for i, c in sorted(self.choices.items())]
        return {**self.meta, "object": "chat.completion", "choices": choices, "usage": self.usage}
