"""``lorescan workbench BOOK [CHAT]``: the service on a free loopback port, with the book stored (and
the chat loaded into the page), and the workbench page opened in a browser (needs the ``serve`` extra)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import webbrowser
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._errors import LorescanError
from .cmd_serve import _port, listening, missing_modules, store_errors

HOST = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("workbench", help="open the workbench page on a book: see why entries fire as you type "
                                         "(pip install 'lorescan[serve]')",
                       description="Start the service on this machine only, store BOOK in it (and load CHAT "
                                   "into the page), and open the workbench page in a browser. Stop with Ctrl-C.")
    p.add_argument("book", help="a lorebook or character card, in any format lorescan reads")
    p.add_argument("chat", nargs="?", default=None, help="a chat to load into the page (any chat format)")
    p.add_argument("--name", default=None, help="store the book under this name (default: the file's name)")
    p.add_argument("--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--data", metavar="DIR", type=Path, default=None,
                   help="data directory for the store (default: a temporary one, removed at exit)")
    p.add_argument("--no-browser", action="store_true", help="print the page's address, open no browser")
    p.set_defaults(func=run)


def page_url(port: int, book: str) -> str:
    """The page's address for a stored book."""
    return f"http://{HOST}:{port}/?book={quote(book, safe='')}"


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise LorescanError(f"cannot read the file: {exc.strerror or exc}", file=path) from None


def _start_state(app: Any, book_path: str, name: str | None, chat_path: str | None) -> str:
    """Store the book in the app's store and set what the page opens on; the book's name."""
    from .._load import book_name
    from .._service.books import check_book_job
    from .._service.errors import ServiceError
    from .._service.workbench import chat_json_job

    stored = name or book_name(book_path)
    data = _read(book_path)
    try:
        checked = check_book_job(stored, data, None, False, "1.18", "chars4")
    except (ServiceError, LorescanError) as exc:
        raise LorescanError(exc.message, file=book_path) from None
    try:
        chat = chat_json_job(_read(chat_path), Path(chat_path).name) if chat_path else None
    except (ServiceError, LorescanError) as exc:
        raise LorescanError(exc.message, file=chat_path) from None
    app.state.service.store.put_book(checked.record, data)
    app.state.workbench_start = {"book": stored, "chat": chat}
    return stored


def run(args: argparse.Namespace) -> int:
    missing = missing_modules()
    if missing:
        raise LorescanError(f"lorescan workbench needs {', '.join(missing)}: pip install 'lorescan[serve]'")
    import uvicorn

    from .._service.app import create_app
    from .._service.config import ServiceConfig
    from .._service.supervisor import end_by, run_until_stopped

    with tempfile.TemporaryDirectory(prefix="lorescan-workbench-") as tmp, listening(HOST, args.port) as sock:
        data = args.data if args.data is not None else Path(tmp)
        with store_errors(data):
            app = create_app(ServiceConfig(data_dir=data, owns_process=True))
        name = _start_state(app, args.book, args.name, args.chat)
        url = page_url(sock.getsockname()[1], name)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))
        print(f"lorescan workbench: {url} (data {data}; Ctrl-C stops it)", file=sys.stderr, flush=True)
        if not args.no_browser:
            threading.Thread(target=_open_when_up, args=(server, url), daemon=True).start()
        stopped_by = run_until_stopped(server, [sock])     # SIGTERM and SIGHUP too leave the with
    end_by(stopped_by)      # the temporary store is gone now
    return 0


def _open_when_up(server: Any, url: str) -> None:
    for _ in range(600):
        if server.started:
            webbrowser.open(url)
            return
        time.sleep(0.05)
