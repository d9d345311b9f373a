"""The workbench: a web page for lorebook authors, served at ``/`` from package data
(``lorescan/data/workbench/``), and the two small routes it needs beside the public API.

The page and its assets are public (they hold no data: everything the page shows it fetches from
the API, which keeps its token check). With ``--token``, the page asks for the token the first
time the API answers 401, or takes it from the URL fragment (``#token=...``, never sent to the
server), and keeps it for the browser tab only (``sessionStorage``).

``POST /v1/chats/read`` reads a chat file in any format lorescan reads and answers its messages, so
the page loads chats without parsing formats itself. ``GET /v1/workbench`` answers what the page
opens on: the book and chat ``lorescan workbench`` was started with (``null`` under ``serve``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from .._errors import FormatError
from .._load import load_bytes
from .errors import ServiceError, not_found

router = APIRouter()
#: the URL prefix of the page's assets (public, like ``/``)
ASSETS = "/workbench/"
_MEDIA = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
#: served as they are: no framing by other sites, no scripts or styles from elsewhere
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"}


class ChatMessageReply(BaseModel):
    name: str
    is_user: bool
    is_system: bool
    mes: str


class ChatReply(BaseModel):
    """A chat file read by lorescan."""

    format: str
    user_name: str | None
    char_name: str | None
    messages: list[ChatMessageReply]


class WorkbenchStart(BaseModel):
    """What the page opens on when ``lorescan workbench`` started the service."""

    book: str | None = Field(description="the stored book to open (else the most recently stored)")
    chat: ChatReply | None = Field(description="the chat to load into the page")


@cache
def _asset(name: str) -> bytes | None:
    folder = resources.files("lorescan") / "data" / "workbench"
    if "/" in name or "\\" in name or name.startswith("."):
        return None
    file = folder / name
    return file.read_bytes() if file.is_file() else None


def _file_reply(name: str) -> Response:
    data = _asset(name)
    suffix = name[name.rfind("."):] if "." in name else ""
    if data is None or suffix not in _MEDIA:
        raise not_found("workbench file", name)
    return Response(data, media_type=_MEDIA[suffix], headers=_HEADERS)


@router.get("/", include_in_schema=False)
async def page() -> Response:
    """The workbench page (``?book=NAME`` opens a stored book)."""
    return _file_reply("index.html")


@router.get(ASSETS + "{name}", include_in_schema=False)
async def asset(name: Annotated[str, PathParam()]) -> Response:
    return _file_reply(name)


@router.post("/v1/chats/read", response_model=ChatReply, responses={422: {"description": "not a chat"}},
             openapi_extra={"requestBody": {"required": True, "description": "a chat file's bytes, in any "
                                            "format lorescan reads (SillyTavern JSONL, OpenAI JSON/JSONL, ...)",
                                            "content": {"application/octet-stream": {"schema": {
                                                "type": "string", "format": "binary"}}}}})
async def read_chat(request: Request, name: Annotated[str, Query(description="the file's name, for messages "
                                                                 "and format detection")] = "chat") -> Response:
    """Read a chat file into messages (the workbench's "load chat")."""
    data = await request.body()
    svc = request.app.state.service
    body = await svc.run_io(chat_json_job, data, name)
    return svc.json_response(body)


def chat_json_job(data: bytes, name: str) -> dict[str, Any]:
    """A chat file's messages as JSON (422 for a file that holds no chat)."""
    if not data:
        raise ServiceError(422, "invalid_request", "the body is empty: send the chat file as the body")
    try:
        loaded = load_bytes(data, name)
    except FormatError as exc:
        raise ServiceError(422, "invalid_request", exc.message, "body") from None
    if loaded.chat is None:
        raise ServiceError(422, "invalid_request", f"this {loaded.format} {loaded.kind} holds no chat", "body")
    chat = loaded.chat
    return {"format": loaded.format, "user_name": chat.user_name, "char_name": chat.character_name,
            "messages": [{"name": m.name, "is_user": bool(m.is_user), "is_system": bool(m.is_system),
                          "mes": m.mes if isinstance(m.mes, str) else ""} for m in chat.messages]}


@router.get("/v1/workbench", response_model=WorkbenchStart)
async def start(request: Request) -> dict[str, Any]:
    """What the workbench page opens on (set by ``lorescan workbench``; both null otherwise)."""
    got: dict[str, Any] | None = getattr(request.app.state, "workbench_start", None)
    return got or {"book": None, "chat": None}


def is_public(path: str) -> bool:
    """Whether a path is the page or one of its assets (served without the token)."""
    return path == "/" or path.startswith(ASSETS)
