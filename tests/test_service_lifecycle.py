"""``lorescan serve`` as a process: the token, the body and cache limits, a restart in the middle of
a chat, SIGTERM with a request in flight, the command line, and a core that imports without the
``serve`` extra."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import CONFORMANCE
from .serve_helpers import ROOT, STOPPED, Server, free_port, httpx
from .test_service_api import BOOK, assert_error
from .test_service_conformance import turn_bodies

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with a token (from the environment), a 0.05 MB body limit and a tiny cache."""
    srv = Server(tmp_path_factory.mktemp("guarded") / "data", "--max-body-mb", "0.05", "--cache-mb", "0.001",
                 "--cors", "http://frontend.test", env={"LORESCAN_TOKEN": TOKEN})
    try:
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


def test_a_token_guards_every_route_but_healthz(guarded: Server) -> None:
    with guarded.client() as anonymous, guarded.client("wrong") as wrong, guarded.client(TOKEN) as right:
        assert anonymous.get("/healthz").json()["status"] == "ok"
        for path in ("/v1/books", "/metrics", "/openapi.json", "/docs", "/v1/sessions/x", "/nowhere"):
            reply = anonymous.get(path)
            assert_error(reply, 401, "unauthorized", None, "no token was given")
            assert reply.headers["www-authenticate"] == "Bearer"
            assert_error(wrong.get(path), 401, "unauthorized", None, "a wrong token was given")
        assert right.get("/v1/books").json() == {"books": []}
        assert_error(right.get("/nowhere"), 404, "not_found")


def test_a_browser_page_from_an_allowed_origin_may_call_it(guarded: Server) -> None:
    asks = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    with guarded.client() as anonymous, guarded.client(TOKEN) as right:
        preflight = anonymous.options("/v1/activate", headers={"Origin": "http://frontend.test", **asks})
        assert preflight.status_code == 200           # no token on a preflight
        assert preflight.headers["access-control-allow-origin"] == "http://frontend.test"
        assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
        assert_error(anonymous.options("/v1/activate", headers={"Origin": "http://elsewhere.test", **asks}), 400,
                     "cors", None, "Disallowed CORS origin")
        reply = right.post("/v1/activate", json={"chat": []}, headers={"Origin": "http://frontend.test"})
        assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == "http://frontend.test"
        assert_error(anonymous.post("/v1/activate", json={}, headers={"Origin": "http://frontend.test"}), 401,
                     "unauthorized")


def test_a_body_over_the_limit_is_refused(guarded: Server) -> None:
    big = BOOK.read_bytes() * 6                         # ~66 KB, over 0.05 MB
    with guarded.client(TOKEN) as c:
        assert_error(c.put("/v1/books/big", content=big), 413, "body_too_large", None, "--max-body-mb")

        def chunks() -> Iterator[bytes]:            # no declared length: refused as it streams in
            for _ in range(6):
                yield BOOK.read_bytes()

        assert_error(c.put("/v1/books/big", content=chunks()), 413, "body_too_large", None, "0.05 MB")
        assert_error(c.post("/v1/activate", json={"chat": [{"mes": "x" * 60_000}]}), 413, "body_too_large")
        assert c.put("/v1/books/small", content=BOOK.read_bytes()).status_code == 201
        assert c.get("/healthz").status_code == 200


def test_the_cache_evicts_beyond_its_bound_and_results_stay_right(guarded: Server) -> None:
    with guarded.client(TOKEN) as c:
        for _ in range(2):
            for word in ("gull", "tern", "skua"):
                entries = [{"uid": 0, "key": [word], "content": f"About {word}."}]
                got = c.post("/v1/activate", json={"entries": entries,
                                                   "chat": [{"name": "U", "is_user": True, "mes": word}]})
                assert got.json()["result"]["before"] == f"About {word}."
        metrics = c.get("/metrics").text
    evictions = next(float(line.split()[-1]) for line in metrics.splitlines()
                     if line.startswith("lorescan_cache_evictions_total"))
    assert evictions >= 5      # a 1 KB bound holds one of these books at a time


def _timed_scenarios() -> list[dict[str, Any]]:
    out = []
    for path in sorted((CONFORMANCE / "st-1.18").glob("*.json")):
        sc = json.loads(path.read_text(encoding="utf-8"))
        if len(sc.get("turns") or ()) >= 3 and "timed_state" in sc.get("tags", ()):
            out.append({**sc, "name": path.stem})
    return out[:24]


def test_a_restart_between_generations_changes_nothing(tmp_path: Path) -> None:
    """Half of each chat, then SIGTERM while a slow request is in flight (it finishes, the store is
    flushed), then a new process on the same data finishes the chats with the same results."""
    scenarios = _timed_scenarios()
    assert len(scenarios) >= 20
    data = tmp_path / "data"
    first = Server(data)
    got: dict[str, list[Any]] = {sc["name"]: [] for sc in scenarios}
    plans = {sc["name"]: turn_bodies(sc, session=sc["name"]) for sc in scenarios}
    with first.client() as c:
        assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code == 201
        for name, bodies in plans.items():
            for body in bodies[:len(bodies) // 2]:
                got[name].append(c.post("/v1/activate", json=body).json()["result"])
        slow = _slow_book()
        reply: list[httpx.Response] = []
        sender = threading.Thread(target=lambda: reply.append(c.put("/v1/books/slow", content=slow)))
        sender.start()
        time.sleep(0.5)                       # the request is in: linting 5,000 entries takes a while
        status = first.stop()
        sender.join()
    assert status in STOPPED, first.output()
    assert reply and reply[0].status_code == 201, "the request in flight was not finished"
    assert not (data / "lorescan.sqlite3-wal").exists() or (data / "lorescan.sqlite3-wal").stat().st_size == 0
    second = Server(data)
    try:
        with second.client() as c:
            names = {b["name"]: b["entries"] for b in c.get("/v1/books").json()["books"]}
            assert names == {"saltmere": 12, "slow": 5000}
            for name, bodies in plans.items():
                for body in bodies[len(bodies) // 2:]:
                    got[name].append(c.post("/v1/activate", json=body).json()["result"])
    finally:
        assert second.stop() in STOPPED
    for sc in scenarios:
        assert got[sc["name"]] == sc["expected"]["turns"], sc["name"]


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")
def test_a_closed_terminal_stops_the_service_gracefully(tmp_path: Path) -> None:
    """SIGHUP (its terminal closed) used to end the process at once, failing the requests in flight;
    now it is SIGTERM's graceful stop, and the process then ends by SIGHUP."""
    data = tmp_path / "data"
    srv = Server(data)
    body = _slow_book()
    sent = threading.Event()

    def chunks() -> Iterator[bytes]:
        yield body[:1024]
        sent.set()                            # the first chunk is on the wire: the request is in
        yield body[1024:]

    with srv.client() as c:
        reply: list[httpx.Response | Exception] = []

        def send() -> None:
            try:
                reply.append(c.put("/v1/books/slow", content=chunks(), headers={"content-length": str(len(body))}))
            except httpx.HTTPError as exc:
                reply.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        assert sent.wait(30)
        time.sleep(0.3)                       # the body is in: linting 5,000 entries takes a while
        srv.proc.send_signal(signal.SIGHUP)
        status = srv.proc.wait(60)
        sender.join()
    assert status == -signal.SIGHUP, srv.output()
    assert reply and isinstance(reply[0], httpx.Response) and reply[0].status_code == 201, reply
    assert not (data / "lorescan.sqlite3-wal").exists() or (data / "lorescan.sqlite3-wal").stat().st_size == 0


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")
def test_under_nohup_a_closed_terminal_leaves_the_service_running(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lorescan", "serve", "--port", str(port), "--log-level",
                                 "warning", "--data", str(tmp_path / "data")], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))   # as nohup
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url, timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert proc.poll() is None, log.read_text()
        assert httpx.get(url, timeout=5.0).json()["process"] == proc.pid
    finally:
        proc.terminate()
        status = proc.wait(30)
    assert status in STOPPED, log.read_text()


def _slow_book() -> bytes:
    entries = {str(i): {"uid": i, "key": [f"word{i}", "the"], "keysecondary": [f"also{i}"], "content": "x " * 40}
               for i in range(5000)}
    return json.dumps({"entries": entries}).encode()


# ---------------------------------------------------------------- the command line and the core

def test_serve_help_lists_every_option() -> None:
    out = subprocess.run([sys.executable, "-m", "lorescan", "serve", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0
    for option in ("--host", "--port", "--data", "--token", "--max-body-mb", "--cache-mb", "--workers", "--cors"):
        assert option in out.stdout
    assert "127.0.0.1" in out.stdout and "8765" in out.stdout and "LORESCAN_TOKEN" in out.stdout


def test_default_data_dir_follows_the_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lorescan._service.config import default_data_dir

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "lorescan"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == Path.home() / ".local" / "share" / "lorescan"


BLOCKED = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fastapi", "uvicorn", "prometheus_client", "starlette", "httptools", "httpx"):
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Blocker())
"""


def test_the_core_imports_and_runs_without_the_serve_extra() -> None:
    code = BLOCKED + """
import json, lorescan
from lorescan._cli.main import build_parser, main
lore = lorescan.compile(lorescan.load("corpora/saltmere.json").books, tokenizer="chars4")
keys = lore.activate([{"name": "U", "is_user": True, "mes": "the beacon"}]).activated_keys()
build_parser()
status = main(["serve", "--port", "1"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("fastapi", "uvicorn", "prometheus_client"))
print(json.dumps({"keys": keys, "status": status, "loaded": loaded}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"keys": ["saltmere.0", "saltmere.1"], "status": 2, "loaded": []}
    assert out.stderr.strip() == ("lorescan: error: lorescan serve needs fastapi, uvicorn, prometheus_client, httptools: "
                                  "pip install 'lorescan[serve]'")


def test_a_completion_over_the_body_limit_is_refused_as_it_streams_in(tmp_path: Path) -> None:
    from .fake_upstream import FakeUpstream

    fake = FakeUpstream().start()
    srv = Server(tmp_path / "data", "--max-body-mb", "0.05", "--upstream", fake.url)
    try:
        with srv.client() as c:
            def chunks() -> Iterator[bytes]:            # no declared length: refused as it streams in
                for _ in range(6):
                    yield b" " * 10_000

            reply = c.post("/v1/chat/completions", content=chunks(), headers={"Content-Type": "application/json"})
            assert_error(reply, 413, "body_too_large", None, "0.05 MB")
            assert c.post("/v1/chat/completions", json={"model": "m", "messages": []}).status_code == 200
            counted = [ln for ln in c.get("/metrics").text.splitlines()
                       if ln.startswith("lorescan_requests_total{") and "/v1/chat/completions" in ln]
            assert sorted(ln.rsplit("status=", 1)[1] for ln in counted) == ['"200"} 1.0', '"413"} 1.0']
    finally:
        assert srv.stop() in STOPPED, srv.output()
        fake.stop()


def test_access_lines_are_logged_at_info_and_not_formatted_above_it(tmp_path: Path) -> None:
    from lorescan._service.config import access_log

    assert [access_log(level) for level in ("debug", "info", "warning", "error", "critical")] == \
        [True, True, False, False, False]
    for level, logged in (("info", True), ("warning", False)):
        server = Server(tmp_path / level, "--log-level", level)
        try:
            assert httpx.get(server.url + "/v1/books", timeout=10).status_code == 200
        finally:
            server.stop()
        assert ('"GET /v1/books HTTP/1.1" 200' in server.output()) is logged, server.output()


def test_the_cache_counts_the_key_indexes_bound_to_new_names() -> None:
    """A book whose keys hold {{user}} binds a key index per user name as chats come: about 72 bytes
    an entry each. The cache used to count a book at its compile estimate for ever."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from lorescan import Lorebook, Settings
    from lorescan._engine import BOUND_BYTES_PER_ENTRY
    from lorescan._mode import Mode
    from lorescan._service.cache import CompiledCache
    from lorescan._service.metrics import Metrics

    def book(name: str) -> Lorebook:
        return Lorebook.model_validate({"name": name, "entries": [
            {"uid": i, "key": [f"{{{{user}}}}'s blade {i}"], "content": f"Blade {i}."} for i in range(200)]})

    async def run() -> None:
        with ThreadPoolExecutor(2) as pool:
            metrics = Metrics(lambda: 0.0)
            first = await CompiledCache(10**12, pool, metrics).get("probe", lambda: ([book("a")], None),
                                                                   Mode(), "chars4")
            bound = 2 * first.base + 1          # room for two books as compiled, not for more
            cache = CompiledCache(bound, pool, metrics)
            a = await cache.get("a", lambda: ([book("a")], None), Mode(), "chars4")
            await cache.get("b", lambda: ([book("b")], None), Mode(), "chars4")
            assert len(cache) == 2 and cache.bytes == a.size + cache._items["b"].size
            for user in ("Ann", "Bo", "Cy", "Di"):
                got = a.lore.activate([{"name": user, "is_user": True, "mes": f"{user}'s blade 7"}],
                                      settings=Settings(), user_name=user, char_name="Narrator")
                assert got.activated_keys() == ["a.7"]
            assert a.size == a.base       # counted when the book is next asked for
            assert await cache.get("a", lambda: ([book("a")], None), Mode(), "chars4") is a
            pairs = len(a.lore._bound)
            assert pairs == 4
            assert a.size == a.base + (pairs - 1) * BOUND_BYTES_PER_ENTRY * 200
            assert list(cache._items) == ["a"] and cache.bytes == a.size     # b made way

    asyncio.run(run())
