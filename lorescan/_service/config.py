"""The service's settings, and where its data lives by default (no web framework imported here)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_MB = 32.0
DEFAULT_CACHE_MB = 1024.0
DEFAULT_WORKERS = 4
DEFAULT_UPSTREAM_TIMEOUT = 300.0
STORE_FILE = "lorescan.sqlite3"


def default_data_dir() -> Path:
    """The user's data directory for lorescan: ``$XDG_DATA_HOME/lorescan`` (``~/.local/share``) on
    Linux, ``~/Library/Application Support/lorescan`` on macOS, ``%LOCALAPPDATA%\\lorescan`` on Windows."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "lorescan"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "lorescan"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lorescan"


@dataclass(frozen=True)
class ServiceConfig:
    """What ``lorescan serve`` is started with.

    ``token``: every route but ``/healthz`` needs ``Authorization: Bearer <token>`` (``None``: open).
    ``max_body_mb``: the largest request body. ``cache_mb``: the bound on compiled books kept in
    memory (estimated sizes). ``workers``: threads that run the long activations (traced, or slow books; short
    ones run on the event loop). ``cors_origins``: web
    origins whose pages may call the service from a browser (``*`` for any). ``owns_process``: the
    service is the whole process (``lorescan serve``), so compiled books may be frozen out of the
    cyclic collector with ``gc.freeze()`` and its thresholds raised after a compile, and glibc's
    malloc kept to two heaps, all process-wide (an embedding app keeps its own as they are).
    ``upstream``: the OpenAI-compatible base URL (up to and including ``/v1``) the proxy forwards
    chat completions to (``None``: no proxy);
    ``upstream_key``: the key it sends there (``None``: the client's own ``Authorization``), never
    shown in a repr;
    ``upstream_timeout``: seconds to wait for the upstream to connect, answer or send the next chunk.
    ``word_boundaries`` and ``card_book_settings``: the matching options beyond SillyTavern every
    activation uses unless its body sets its own; ``macro_engine`` likewise (``None``: each version's
    default, the new engine for 1.18).
    """

    data_dir: Path
    token: str | None = None
    max_body_mb: float = DEFAULT_MAX_BODY_MB
    cache_mb: float = DEFAULT_CACHE_MB
    workers: int = DEFAULT_WORKERS
    cors_origins: tuple[str, ...] = ()
    owns_process: bool = False
    upstream: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT
    word_boundaries: str = "sillytavern"
    card_book_settings: bool = False
    macro_engine: str | None = None

    @property
    def store_path(self) -> Path:
        return self.data_dir / STORE_FILE

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def cache_bytes(self) -> int:
        return int(self.cache_mb * 1024 * 1024)


def shown_url(url: str) -> str:
    """``url`` without any user name or password in it (for messages and logs)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def access_log(log_level: str) -> bool:
    """Whether uvicorn should format an access-log line per request: only when ``log_level`` shows
    them (at ``warning`` and above it would format each line, then drop it)."""
    return log_level in ("info", "debug", "trace")
