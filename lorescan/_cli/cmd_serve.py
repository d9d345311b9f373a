"""``lorescan serve``: the activation service over HTTP (needs the ``serve`` extra)."""

from __future__ import annotations

import argparse
import os
import socket
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._errors import LorescanError
from .common import add_match_args, whole_number

SERVE_MODULES = ("fastapi", "uvicorn", "prometheus_client", "httptools")

EPILOG = """routes:
  PUT    /v1/books/{name}     store a book (the file's bytes, any format lorescan reads)
  GET    /v1/books            list stored books;  GET /v1/books/{name}[?format=F]  read one back
  DELETE /v1/books/{name}     remove a book
  POST   /v1/activate         activate (a scenario's inputs, plus stored_books, session, seed, trace)
  GET    /v1/sessions/{id}    a chat's timed-effect state;  DELETE /v1/sessions/{id}  forget it
  GET    /healthz, /metrics, /openapi.json, /docs
  GET    /                    the workbench page (see lorescan workbench); POST /v1/chats/read reads a chat file
  POST   /v1/chat/completions, GET /v1/models   with --upstream: the OpenAI-compatible proxy that puts the
         lore a LORESCAN_SYSTEM header asks for into each chat completion

Stop with Ctrl-C or SIGTERM: requests in flight finish and the store is flushed."""


def register(sub: argparse._SubParsersAction) -> None:
    from .._service.config import (
        DEFAULT_CACHE_MB,
        DEFAULT_HOST,
        DEFAULT_MAX_BODY_MB,
        DEFAULT_PORT,
        DEFAULT_UPSTREAM_TIMEOUT,
        DEFAULT_WORKERS,
        default_data_dir,
    )

    p = sub.add_parser("serve", help="run the activation service over HTTP (pip install 'lorescan[serve]')",
                       description="Serve world-info activation over HTTP for frontends in any language: "
                                   "books are stored and compiled once, each generation is one POST, and "
                                   "each chat's timed effects are kept in an embedded SQLite store.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}: this machine only)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 takes a free one, shown as the service starts)")
    p.add_argument("--data", metavar="DIR", type=Path, default=None,
                   help=f"data directory holding the store (default {default_data_dir()})")
    p.add_argument("--token", default=None,
                   help="require 'Authorization: Bearer TOKEN' on every route but /healthz "
                        "(default: $LORESCAN_TOKEN; none when unset)")
    p.add_argument("--max-body-mb", type=_positive, default=DEFAULT_MAX_BODY_MB, metavar="MB",
                   help=f"largest request body (default {DEFAULT_MAX_BODY_MB:g})")
    p.add_argument("--cache-mb", type=_positive, default=DEFAULT_CACHE_MB, metavar="MB",
                   help=f"memory for compiled books, estimated; least recently used go first "
                        f"(default {DEFAULT_CACHE_MB:g})")
    p.add_argument("--workers", type=whole_number(1), default=DEFAULT_WORKERS, metavar="N",
                   help=f"threads that run the long activations: traced ones, and those on books whose "
                        f"evaluations take over 20 ms (default {DEFAULT_WORKERS}); short ones run on the "
                        "event loop, and activations of one book run one at a time")
    p.add_argument("--processes", type=_processes, default=1, metavar="N",
                   help="service processes sharing the port and the store, each on a core of its own "
                        "(default 1; 'auto': one per core); each compiles and caches books for itself")
    p.add_argument("--cors", metavar="ORIGIN", action="append", default=[],
                   help="let pages from ORIGIN (e.g. http://localhost:8000, or '*') call the service from a "
                        "browser; repeatable (default: none)")
    p.add_argument("--upstream", metavar="URL", default=None,
                   help="forward POST /v1/chat/completions to this OpenAI-compatible base URL, up to and "
                        "including /v1 (e.g. http://127.0.0.1:8080/v1); without it those routes answer 503")
    p.add_argument("--upstream-key-env", metavar="NAME", default=None,
                   help="send the key held by environment variable NAME to the upstream (default: pass the "
                        "client's own Authorization on)")
    p.add_argument("--upstream-timeout", type=_positive, default=DEFAULT_UPSTREAM_TIMEOUT, metavar="S",
                   help=f"seconds to wait for the upstream to connect, answer or send its next chunk; 504 "
                        f"after that (default {DEFAULT_UPSTREAM_TIMEOUT:g})")
    p.add_argument("--list-plugins", action="store_true",
                   help="list the proxy's plugins (entry-point group lorescan.plugins) and exit")
    add_match_args(p)
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                   help="server log level (default info)")
    p.set_defaults(func=run)


def _port(value: str) -> int:
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0 to 65535): {value!r}")
    return int(value)


def _processes(value: str) -> int:
    if value == "auto":
        from .._service.supervisor import cpu_count

        return cpu_count()
    return whole_number(1)(value)


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be above 0: {value!r}")
    return number


def missing_modules() -> list[str]:
    """The serve extra's modules that cannot be imported."""
    import importlib.util

    missing = []
    for name in SERVE_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


def list_plugins() -> int:
    """Print each plugin: name, where it comes from, and its summary (or why it does not load)."""
    from .._service.plugins import discover

    for info in discover()[1]:
        print(f"{info.name}\t{info.source}\t{info.error or info.summary}")
    return 0


def upstream_options(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--upstream`` checked, and the key ``--upstream-key-env`` names (its value never printed)."""
    url = args.upstream
    if url is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LorescanError(f"--upstream: not an http(s) URL: {url!r} (e.g. http://127.0.0.1:8080/v1)")
    if args.upstream_key_env is None:
        return url, None
    if url is None:
        raise LorescanError("--upstream-key-env needs --upstream")
    key = os.environ.get(args.upstream_key_env)
    if not key:
        raise LorescanError(f"--upstream-key-env: the environment variable {args.upstream_key_env} is not set")
    return url, key


#: the exit status of a service that never started (uvicorn's)
STARTUP_FAILURE = 3


def run(args: argparse.Namespace) -> int:
    if args.list_plugins:
        return list_plugins()
    upstream, key = upstream_options(args)
    missing = missing_modules()
    if missing:
        raise LorescanError(f"lorescan serve needs {', '.join(missing)}: pip install 'lorescan[serve]'")
    from .._service.config import ServiceConfig, default_data_dir, shown_url

    data = args.data if args.data is not None else default_data_dir()
    token = args.token if args.token is not None else os.environ.get("LORESCAN_TOKEN") or None
    config = ServiceConfig(data_dir=data, token=token, max_body_mb=args.max_body_mb, cache_mb=args.cache_mb,
                           workers=args.workers, cors_origins=tuple(args.cors), owns_process=True,
                           upstream=upstream, upstream_key=key, upstream_timeout=args.upstream_timeout,
                           word_boundaries=args.word_boundaries, card_book_settings=args.card_book_settings,
                           macro_engine=args.macro_engine)
    proxy = f", proxy to {shown_url(upstream)}" if upstream else ""
    host = f"[{args.host}]" if ":" in args.host else args.host      # an IPv6 address, as a URL writes it
    shown = f"lorescan serve: http://{host}:{{port}} (data {data}{', token required' if token else ''}{proxy}" \
            f"{'' if args.processes == 1 else f', {args.processes} processes'})"
    if args.processes == 1:
        import uvicorn

        from .._service.app import create_app
        from .._service.config import access_log
        from .._service.supervisor import end_by, run_until_stopped

        with listening(args.host, args.port) as sock:      # first: a port in use makes no store
            with store_errors(data):
                app = create_app(config)
            print(shown.format(port=sock.getsockname()[1]), file=sys.stderr, flush=True)
            server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=30,
                                                   access_log=access_log(args.log_level)))
            try:
                end_by(run_until_stopped(server, [sock]))
            except KeyboardInterrupt:       # Ctrl-C: the graceful stop it is, as uvicorn.run ends it
                pass
        return 0 if server.started else STARTUP_FAILURE
    from .._service.store import Store
    from .._service.supervisor import serve_processes

    with listening(args.host, args.port) as sock:
        with store_errors(data):
            Store(config.store_path).close()      # made (or brought up to date) once, before the processes open it
        print(shown.format(port=sock.getsockname()[1]), file=sys.stderr, flush=True)
        return serve_processes(config, sock, args.processes, args.log_level)


def listening(host: str, port: int) -> socket.socket:
    """The service's socket, bound here (so a port in use is a one-line error, and port 0 is shown
    as the port it became); the workbench's too."""
    from .._service.supervisor import bind

    try:
        return bind(host, port)
    except OSError as exc:
        raise LorescanError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


@contextmanager
def store_errors(data: Path) -> Iterator[None]:
    """Opening the store in data directory ``data``: an OS or SQLite error as a one-line error."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        why = "not a directory" if isinstance(exc, (FileExistsError, NotADirectoryError)) and not data.is_dir() \
            else getattr(exc, "strerror", None) or exc
        raise LorescanError(f"cannot open the store: {why}", file=str(data)) from None
