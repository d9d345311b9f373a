"""The routes: books, activation, sessions, health and metrics.

Handlers stay on the event loop to check names, find things in memory and run short activations
(an untraced evaluation of a book whose evaluations take a few ms); reading files, linting,
compiling, long activations and the store's reads and writes outside an activation run in worker
threads (see ``service.Service``). Requests on one session run one after another, in the order
they arrive, so each sees the timed state the previous one stored; other sessions never wait on
them longer than an activation takes. An activation holds its compiled books' lock (see
``cache``) from before it runs (or is handed to a worker thread) until it is done.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from starlette.background import BackgroundTask

from .. import __version__
from .._formats.registry import targets
from .activation import BookRef, books_key, run_activate
from .books import book_json_job, check_book_job, render_job
from .errors import ServiceError, not_found
from .metrics import CONTENT_TYPE
from .models import ActivateBody, ActivateReply, BookReply, ErrorReply, Scope, Tokenizer
from .service import DEFAULT_TOKENIZER, DEFAULT_VERSION, Service, release_memory

router = APIRouter()
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorReply} for code in (401, 404, 409, 413, 422)}
BookName = Annotated[str, PathParam(description="the book's name: 1–200 characters, no control characters "
                                                "or slashes; activation keys are <name>.<uid>")]
SessionId = Annotated[str, PathParam(description="the chat id given as session in /v1/activate")]
_NAME = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}$")


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _check_name(name: str, what: str = "book") -> str:
    if not _NAME.match(name) or name.strip() in ("", ".", ".."):
        raise ServiceError(422, "invalid_request", f"invalid {what} name {name!r}: 1 to 200 characters, "
                                                   "no control characters, no slashes", "name")
    return name


# ---------------------------------------------------------------- books

@router.put("/v1/books/{name}", responses={**ERRORS, 200: {"model": BookReply}, 201: {"model": BookReply}},
            openapi_extra={"requestBody": {"required": True, "description": "the file's bytes: a lorebook or "
                                           "character card in any format lorescan reads (JSON, PNG, CHARX, ...)",
                                           "content": {"application/octet-stream": {"schema": {
                                               "type": "string", "format": "binary"}},
                                               "application/json": {"schema": {"type": "object"}}}}})
async def put_book(name: BookName, request: Request,
                   scope: Annotated[Scope | None, Query(description="the scope a request reads it in when "
                                                                    "it names it alone (default global)")] = None,
                   strict: Annotated[bool, Query(description="refuse a book with lint errors")] = False,
                   st_version: Annotated[str, Query(description="compile it for this version now (as "
                                                    "activations naming it alone will use it)")] = DEFAULT_VERSION,
                   tokenizer: Annotated[Tokenizer, Query(description="... and this token counter")] = DEFAULT_TOKENIZER,
                   ) -> Response:
    """Store a book (replacing one of the same name): it is read, linted, compiled and stored as sent."""
    svc = _service(request)
    _check_name(name)
    mode = svc.mode(st_version)
    data = await request.body()
    checked = await svc.run_io(check_book_job, name, data, scope, strict, st_version, tokenizer)
    await svc.run_io(release_memory)    # reading and linting left tens of MB of garbage: before the compile
    record = checked.record
    key = books_key({}, [BookRef(record.name, record.scope, record.hash)], mode, tokenizer)
    await svc.cache.get(key, lambda: ([checked.book], None), mode, tokenizer)
    new = await svc.run_io(svc.store.put_book, record, data)
    reply = svc.json_response({"name": name, "entries": record.entries, "hash": record.hash,
                               "warnings": checked.warnings, "format": record.format, "scope": record.scope},
                              201 if new else 200)
    reply.background = BackgroundTask(svc.run_io, release_memory)     # once the reply is sent
    return reply


@router.get("/v1/books", responses=ERRORS)
async def list_books(request: Request) -> dict[str, Any]:
    """Every stored book: name, hash, format, scope, entries, size (bytes) and when it was stored."""
    books = sorted(_service(request).store.books.values(), key=lambda r: r.name)
    return {"books": [r.to_json() for r in books]}


@router.get("/v1/books/{name}", responses={**ERRORS, 200: {"content": {
    "application/json": {}, "image/png": {}, "application/zip": {}, "text/plain": {}}}})
async def get_book(name: BookName, request: Request,
                   format: Annotated[str | None, Query(description="write the book as this format: "
                                                       + ", ".join(targets()) + ", or original (the bytes "
                                                       "as sent)")] = None) -> Response:
    """A stored book: its entries as JSON, or the whole book in any ``lorescan convert`` format."""
    svc = _service(request)
    record = svc.store.books.get(name)
    if record is None:
        raise not_found("stored book", name, "name")
    data = await svc.run_io(svc.store.book_data, name)
    if data is None:
        raise not_found("stored book", name, "name")
    if format is None:
        body = await svc.run_io(book_json_job, name, data, record)
        return svc.json_response(body)
    out, media = await svc.run_io(render_job, name, data, format)
    return Response(out, media_type=media)


@router.delete("/v1/books/{name}", status_code=204, responses=ERRORS)
async def delete_book(name: BookName, request: Request) -> Response:
    """Remove a stored book (compiled copies age out of the cache)."""
    svc = _service(request)
    if not await svc.run_io(svc.store.delete_book, name):
        raise not_found("stored book", name, "name")
    return Response(status_code=204)


# ---------------------------------------------------------------- activation

@router.post("/v1/activate", responses={**ERRORS, 200: {"model": ActivateReply}})
async def activate(body: ActivateBody, request: Request) -> Response:
    """Run world-info activation: a conformance scenario's inputs in, ``{"result": <expected shape>}`` out."""
    return await activation_reply(_service(request), body, request.is_disconnected)


async def activation_reply(svc: Service, body: ActivateBody,
                           is_disconnected: Callable[[], Awaitable[bool]]) -> Response:
    """The reply to one activation body: the route's, and that of ``app.DirectRoutes`` in front of it."""
    result = await run_activate(svc, body, is_disconnected)
    if result is None:                  # the client left while it waited
        return Response(status_code=499)
    return svc.json_response({"result": result})


# ---------------------------------------------------------------- sessions

@router.get("/v1/sessions/{session_id}", responses=ERRORS)
async def get_session(session_id: SessionId, request: Request) -> dict[str, Any]:
    """A session: its timed-effect state (sticky and cooldown, with entry hashes), how many
    generations wrote it and when."""
    svc = _service(request)
    _check_name(session_id, "session")
    record = await svc.run_io(svc.store.session, session_id)
    if record is None:
        raise not_found("session", session_id, "session_id")
    return record.to_json()


@router.delete("/v1/sessions/{session_id}", status_code=204, responses=ERRORS)
async def delete_session(session_id: SessionId, request: Request) -> Response:
    """Forget a session's timed-effect state."""
    svc = _service(request)
    async with svc.session_locks.hold(session_id):
        deleted = await svc.run_io(svc.store.delete_session, session_id)
    if not deleted:
        raise not_found("session", session_id, "session_id")
    return Response(status_code=204)


# ---------------------------------------------------------------- health and metrics

@router.get("/healthz")
async def healthz(request: Request) -> dict[str, Any]:
    """Liveness: no token needed. ``process``: the id of the process that answered (one of several
    under ``--processes``); ``compiled``: the book sets that process holds compiled."""
    svc = _service(request)
    return {"status": "ok", "version": __version__, "books": len(svc.store.books), "compiled": len(svc.cache),
            "process": os.getpid()}


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus metrics."""
    svc = _service(request)
    return Response(await svc.run_io(svc.metrics.render), media_type=CONTENT_TYPE)
