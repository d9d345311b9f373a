"""Every error reply has one shape: ``{"error": {"type", "message", "field"}}``.

``type`` is one of: ``invalid_request`` (a value of the wrong type, an unknown name, a bad
version), ``invalid_json``, ``invalid_book`` (a body lorescan cannot read as a book),
``lint_error`` (``?strict=true`` and the book has lint errors), ``not_found`` (a book, session or
route), ``method_not_allowed``, ``body_too_large``, ``unauthorized``, ``cors`` (a browser asked
for an origin or header ``--cors`` does not allow), ``conflict`` and ``internal`` (a bug: never
bad input, and never with a traceback).
"""

from __future__ import annotations

from typing import Any

from .._errors import FormatError, LorescanError


class ServiceError(Exception):
    """An error reply: HTTP ``status``, and the body's ``type``, ``message`` and ``field``."""

    def __init__(self, status: int, type: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.field = field

    def body(self) -> dict[str, Any]:
        return error_body(self.type, self.message, self.field)


def error_body(type: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"type": type, "message": message, "field": field}}


def from_lorescan(exc: LorescanError) -> ServiceError:
    """A library error as a 422 reply: its one line (naming the book, the entry and the field) and
    its field."""
    kind = "invalid_book" if isinstance(exc, FormatError) else "invalid_request"
    return ServiceError(422, kind, str(exc), exc.field)


def not_found(what: str, name: str, field: str | None = None) -> ServiceError:
    return ServiceError(404, "not_found", f"no {what} named {name!r}", field)
