"""The workbench's routes without a browser: the page and its assets (public, even with a token),
reading a chat file, what the page opens on, the traced additions, and ``lorescan workbench``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_helpers import ROOT, STOPPED, Server, free_port, hangup_as_from_a_terminal, httpx, serving
from .test_service_api import assert_error

BOOK = ROOT / "corpora" / "saltmere.json"
CHAT = ROOT / "corpora" / "saltmere-chat.jsonl"
TOKEN = "page-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(tmp_path_factory, "workbench-api")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("workbench-token") / "data", "--token", TOKEN)
    try:
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


def test_the_page_and_its_assets_are_served_as_files(server: Server) -> None:
    with server.client() as c:
        page = c.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="/workbench/app.js">' in page.text
        for name, media in (("app.js", "text/javascript"), ("api.js", "text/javascript"),
                            ("render.js", "text/javascript"), ("workbench.css", "text/css")):
            reply = c.get(f"/workbench/{name}")
            assert reply.status_code == 200 and reply.headers["content-type"].startswith(media), name
            assert "http://" not in reply.text and "https://" not in reply.text, f"{name} fetches from the network"
        assert_error(c.get("/workbench/nothing.js"), 404, "not_found")
        assert_error(c.get("/workbench/..%2Fpy.typed"), 404, "not_found")


def test_with_a_token_the_page_is_public_and_the_api_is_not(guarded: Server) -> None:
    with guarded.client() as anonymous, guarded.client(TOKEN) as right:
        assert anonymous.get("/").status_code == 200
        assert anonymous.get("/workbench/app.js").status_code == 200
        for path in ("/v1/books", "/v1/workbench", "/openapi.json"):
            assert_error(anonymous.get(path), 401, "unauthorized")
        assert_error(anonymous.post("/v1/chats/read", content=b"{}"), 401, "unauthorized")
        assert right.get("/v1/workbench").json() == {"book": None, "chat": None}


def test_a_chat_file_is_read_into_messages(server: Server) -> None:
    with server.client() as c:
        reply = c.post("/v1/chats/read?name=saltmere-chat.jsonl", content=CHAT.read_bytes())
        body = reply.json()
        assert reply.status_code == 200, body
        assert (body["format"], body["user_name"], body["char_name"]) == ("st-chat", "Rowan", "Ines")
        assert body["messages"][1] == {"name": "Rowan", "is_user": True, "is_system": False,
                                       "mes": "I'm looking for the lighthouse. Is it far?"}
        assert_error(c.post("/v1/chats/read?name=book.json", content=BOOK.read_bytes()), 422, "invalid_request",
                     "body", "holds no chat")
        assert_error(c.post("/v1/chats/read", content=b""), 422, "invalid_request", None, "the body is empty")


def test_a_traced_activation_carries_spans_budget_and_closest_miss(server: Server) -> None:
    with server.client() as c:
        assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code in (200, 201)
        body = {"stored_books": ["saltmere"], "trace": True, "trace_focus": ["saltmere.10"],
                "settings": {"world_info_match_whole_words": True},
                "chat": [{"name": "Rowan", "is_user": True, "mes": "A ship by the lighthouse, concatenated."}]}
        result = c.post("/v1/activate", json=body).json()["result"]
        assert result["activated"] == ["saltmere.0", "saltmere.1"]
        spans = {(s["entry"], s["key"], s["start"], s["end"], s["counts"]) for s in result["spans"]}
        assert ("saltmere.1", "lighthouse", 14, 24, True) in spans
        assert ("saltmere.4", "ship", 2, 6, True) in spans
        assert ("saltmere.10", "cat", 29, 32, False) in spans
        misses = {e["entry"]: e["closest_miss"] for e in result["explain"]}
        assert misses["saltmere.4"]["kind"] == "secondary"
        assert misses["saltmere.10"]["kind"] == "whole_words"
        assert misses["saltmere.1"] is None
        rows = result["budget_use"]["rows"]
        assert [r["entry"] for r in rows] == ["saltmere.0", "saltmere.1"] and not result["budget_use"]["overflowed"]
        assert result["budget_use"]["used"] == rows[-1]["used"] == sum(r["tokens"] for r in rows)
        named = {e["entry"] for e in result["trace"] if "entry" in e}
        assert "saltmere.3" not in named      # a focused trace leaves out what the text never reached
        assert_error(c.post("/v1/activate", json={**body, "trace_focus": ["saltmere.99"]}), 422, "invalid_request",
                     "trace_focus[0]", "no entry 'saltmere.99'")


def test_the_openapi_documents_the_traced_result(server: Server) -> None:
    with server.client() as c:
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
    traced = schemas["TracedResult"]["properties"]
    assert {"trace", "explain", "spans", "budget_use"} <= set(traced)
    assert {"start", "end", "counts", "message"} <= set(schemas["SpanReply"]["properties"])
    assert "closest_miss" in schemas["ExplainItem"]["properties"]
    assert "trace_focus" in schemas["ActivateBody"]["properties"]
    assert "ChatReply" in schemas and "WorkbenchStart" in schemas


def test_the_workbench_command_stores_the_book_and_opens_on_the_chat(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "workbench.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lorescan", "workbench", str(BOOK), str(CHAT), "--no-browser",
                                 "--port", str(port), "--data", str(tmp_path / "data")], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        start = httpx.get(url + "/v1/workbench").json()
        assert start["book"] == "saltmere" and len(start["chat"]["messages"]) == 13
        assert [b["name"] for b in httpx.get(url + "/v1/books").json()["books"]] == ["saltmere"]
        assert httpx.get(url + "/").status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)
    assert f"lorescan workbench: http://127.0.0.1:{port}/?book=saltmere" in log.read_text()


STOP_SIGNALS = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]


@pytest.mark.parametrize("stop", STOP_SIGNALS, ids=lambda s: s.name)
def test_the_workbench_removes_its_temporary_store_when_a_signal_stops_it(tmp_path: Path,
                                                                          stop: signal.Signals) -> None:
    # uvicorn raises SIGTERM again once it has shut down, and leaves SIGHUP (a closed terminal) alone:
    # either used to end the process before the temporary data directory was removed
    temp = tmp_path / "temp"
    temp.mkdir()
    port = free_port()
    log = tmp_path / "workbench.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lorescan", "workbench", str(BOOK), "--no-browser",
                                 "--port", str(port)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "TMPDIR": str(temp)}, preexec_fn=hangup_as_from_a_terminal)
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        stores = [p.name for p in temp.iterdir()]
        assert len(stores) == 1 and stores[0].startswith("lorescan-workbench-"), stores
        assert any((temp / stores[0]).iterdir())    # the store is in it
        proc.send_signal(stop)
        assert proc.wait(30) == -stop, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert list(temp.iterdir()) == [], log.read_text()


def test_the_workbench_command_names_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"x": 1}))
    run = subprocess.run([sys.executable, "-m", "lorescan", "workbench", str(bad), "--no-browser"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.startswith(f"lorescan: error: {bad}: ")
    assert "Traceback" not in run.stderr
    run = subprocess.run([sys.executable, "-m", "lorescan", "workbench", str(BOOK), str(BOOK), "--no-browser"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "holds no chat" in run.stderr


def test_the_workbench_command_opens_the_page_once_the_server_is_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from lorescan._cli import cmd_workbench

    opened: list[str] = []
    monkeypatch.setattr(cmd_workbench.webbrowser, "open", opened.append)

    class Up:
        started = True

    url = cmd_workbench.page_url(8123, "my book/1")
    cmd_workbench._open_when_up(Up(), url)
    assert opened == ["http://127.0.0.1:8123/?book=my%20book%2F1"]


@pytest.mark.parametrize("command", [["workbench", str(BOOK), "--no-browser"], ["serve"]])
def test_a_data_directory_that_is_a_file_is_a_one_line_error(tmp_path: Path, command: list[str]) -> None:
    # the workbench used to call it a bug in lorescan (an unexpected FileExistsError, exit 3)
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    run = subprocess.run([sys.executable, "-m", "lorescan", *command, "--port", "0", "--data", str(taken)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"lorescan: error: {taken}: cannot open the store: not a directory"]
    assert taken.read_text() == "mine"


def test_a_port_in_use_is_a_one_line_error_and_makes_no_store(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "lorescan", "workbench", str(BOOK), "--no-browser", "--port",
                              str(port), "--data", str(tmp_path / "data")], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"lorescan: error: cannot listen on 127.0.0.1:{port}: "
                                               "Address already in use"]
    assert not (tmp_path / "data").exists()
