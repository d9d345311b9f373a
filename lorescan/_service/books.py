"""Stored books: read and check what a ``PUT`` sends, and write a stored book out in any format.

A book is sent as the bytes of any file ``lorescan.load`` reads (JSON, PNG, CHARX, ...; the format
is found from the content, as ``load`` finds it): exactly one lorebook must be in it. It is named
by the URL (its activation keys are ``<name>.<uid>``), linted, and stored as sent. Functions named
``*_job`` run in a worker thread.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from .._errors import FormatError
from .._lint import lint
from .._load import Loaded, load_bytes, render, resolve_target
from .._model import Lorebook
from .errors import ServiceError
from .store import BookRecord

#: media types of ``GET /v1/books/{name}?format=`` replies (JSON otherwise)
MEDIA_TYPES = {"png": "image/png", "novelai-png": "image/png", "charx": "application/zip",
               "transcript": "text/plain; charset=utf-8", "st-chat": "application/x-ndjson",
               "openai-jsonl": "application/x-ndjson"}


@dataclass
class Checked:
    """A book read from a ``PUT`` body: its record, the book, and the warnings to answer with."""

    record: BookRecord
    book: Lorebook
    warnings: list[dict[str, Any]]


def check_book_job(name: str, data: bytes, scope: str | None, strict: bool, st_version: str,
                   tokenizer: str) -> Checked:
    """Read and lint a sent book (SillyTavern's default settings, this version and token counter);
    with ``strict`` a book with lint errors is refused (422)."""
    if not data:
        raise ServiceError(422, "invalid_book", "the body is empty: send the book's file as the body")
    loaded = load_stored(name, data)
    if len(loaded.books) != 1:
        what = "no lorebook" if not loaded.books else f"{len(loaded.books)} lorebooks"
        raise ServiceError(422, "invalid_book", f"{name}: this {loaded.format} {loaded.kind} holds {what}; "
                                                "a stored book is one lorebook")
    book = loaded.books[0]
    findings = lint([book], compat=st_version, tokenizer=tokenizer)
    errors = [f for f in findings if f.severity == "error"]
    if strict and errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more lint errors)" if len(errors) > 1 else ""
        field = f"entries[uid={first.uid}].{first.field}" if first.uid is not None and first.field else first.field
        raise ServiceError(422, "lint_error", f"{first.book}.{first.uid}: {first.message}{more}", field)
    warnings = [{"code": "load", "severity": "warning", "book": name, "uid": None, "field": None,
                 "message": note, "fix": ""} for note in loaded.warnings]
    warnings += [f.to_json() for f in findings]
    record = BookRecord(name=name, hash=hashlib.sha256(data).hexdigest(), format=loaded.format,
                        scope=scope or "global", entries=len(book.entries), size=len(data), updated=time.time())
    book.scope = record.scope  # type: ignore[assignment]
    return Checked(record, book, warnings)


def load_stored(name: str, data: bytes) -> Loaded:
    """A book's bytes read as ``lorescan.load`` reads a file, the book named ``name``."""
    return load_bytes(data, name, name=name)


def book_json_job(name: str, data: bytes, record: BookRecord) -> dict[str, Any]:
    """A stored book as JSON: what it is, and its entries as SillyTavern entry objects."""
    book = load_stored(name, data).books[0]
    return {"name": name, "scope": record.scope, "format": record.format, "hash": record.hash,
            "entries": [e.to_json() for e in book.entries]}


def render_job(name: str, data: bytes, to: str) -> tuple[bytes, str]:
    """A stored book written as ``to`` (any ``lorescan convert`` target, or ``original`` for the
    bytes as sent), and the media type."""
    loaded = load_stored(name, data)
    if to == "original":
        return data, MEDIA_TYPES.get(loaded.format, "application/json")
    try:
        target = resolve_target(loaded, to)
        out, _notes = render(loaded, to)
    except FormatError as exc:
        raise ServiceError(422, "invalid_request", exc.message, "format") from None
    return out, MEDIA_TYPES.get(target, "application/json")
