"""Start ``lorescan serve`` for a test: a real uvicorn process on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

import httpx  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: exit statuses of a server stopped by SIGTERM: uvicorn shuts down gracefully, then re-raises the signal
STOPPED = (0, -signal.SIGTERM)


def hangup_as_from_a_terminal() -> None:
    """A server process's ``preexec_fn``: SIGHUP at its default, as in a process started from a
    terminal, whatever the test run inherited (a run under ``nohup`` ignores it, and a service
    leaves an ignored SIGHUP ignored)."""
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``lorescan serve --data DATA`` in a subprocess; :meth:`stop` sends SIGTERM."""

    def __init__(self, data: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / f"serve-{self.port}.log"
        cmd = [sys.executable, "-m", "lorescan", "serve", "--port", str(self.port), "--data", str(data),
               "--log-level", "warning", *args]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=hangup_as_from_a_terminal,
                                         env={**os.environ, **(env or {})})
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lorescan serve exited with {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"lorescan serve did not answer within {timeout} s: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait for the process; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)


def serving(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Server]:
    """A module fixture's body: a server on a fresh data dir, stopped (gracefully) at the end."""
    srv = Server(tmp_path_factory.mktemp(name) / "data")
    try:
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


def asgi_calls(data_dir: Path, calls: list[tuple[str, str, Any]], **config: Any) -> list[httpx.Response]:
    """Requests to a service in this process (``create_app`` with ``ServiceConfig(data_dir,
    **config)``, its lifespan run, through httpx's ASGI transport), in order: each a (method, URL,
    body); a PUT sends the body as bytes, a POST as JSON."""
    import asyncio

    from lorescan._service.app import create_app
    from lorescan._service.config import ServiceConfig

    app = create_app(ServiceConfig(data_dir=data_dir, **config))

    async def run() -> list[httpx.Response]:
        out = []
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://service") as c:
                for method, url, body in calls:
                    out.append(await (c.put(url, content=body) if method == "PUT" else c.post(url, json=body)))
        return out

    return asyncio.run(run())
