"""The OpenAI-compatible proxy of ``lorescan serve``, driven with the official ``openai`` client
against a real fake upstream (``fake_upstream``) that records the exact messages it receives."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_helpers import ROOT, STOPPED, Server, free_port, httpx

openai = pytest.importorskip("openai")

from .fake_upstream import FakeUpstream  # noqa: E402

HARBOUR = {"entries": {str(e["uid"]): e for e in [
    {"uid": 0, "key": [], "constant": True, "position": 0, "order": 100, "content": "Saltmere harbour is cold."},
    {"uid": 1, "key": ["bell"], "position": 1, "content": "The bell is bronze."},
    {"uid": 2, "key": ["bell"], "position": 2, "content": "Bells ring at low tide."},
    {"uid": 3, "key": ["bell"], "position": 3, "content": "Keep the bell in mind."},
    {"uid": 4, "key": ["bell"], "position": 5, "order": 10, "content": "Example: the keeper never rings it."},
    {"uid": 5, "key": ["bell"], "position": 5, "order": 20, "content": "Example: the bell woke the town."},
    {"uid": 6, "key": ["bell"], "position": 6, "content": "Example: the bell is silent."},
    {"uid": 7, "key": ["bell"], "position": 4, "depth": 0, "role": 0, "content": "[The bell hangs silent.]"},
    {"uid": 8, "key": ["bell"], "position": 4, "depth": 0, "role": 1, "content": "(Rowan thinks of the bell.)"},
    {"uid": 9, "key": ["bell"], "position": 4, "depth": 2, "role": 2, "content": "Ines glances at the tower."},
    {"uid": 10, "key": ["bell"], "position": 7, "outletName": "weather", "content": "Fog rolls in off the water."},
    {"uid": 11, "key": ["lighthouse"], "position": 0, "order": 50, "content": "The lighthouse is dark."},
]}}
TIDES = {"entries": {"0": {"uid": 0, "key": ["bell"], "position": 1, "sticky": 3, "content": "The tide bell is ringing."}}}
KEY = "sk-upstream-secret-7f3a"
PLUGIN = '''
import json, os
from lorescan._service.plugins import Plugin


class Recorder(Plugin):
    """Signs the requests of session plugin-check and records every answer."""

    def before_prompt_rendered(self, context):
        if (context.header or {}).get("session") != "plugin-check":
            return None
        return context.messages + [{"role": "system", "content": "Signed by the recorder."}]

    async def after_response_generation(self, context, response):
        with open(os.environ["LORESCAN_TEST_PLUGIN_LOG"], "a") as out:
            out.write(json.dumps({"session": (context.header or {}).get("session"), "activated": context.activated,
                                  "status": response.status, "streamed": response.streamed,
                                  "body": response.body}) + "\\n")


class Boom(Plugin):
    """Raises in both hooks."""

    name = "boom"

    def before_prompt_rendered(self, context):
        raise RuntimeError("boom before")

    def after_response_generation(self, context, response):
        raise RuntimeError("boom after")
'''
ENTRY_POINTS = "[lorescan.plugins]\nrecorder = lorescan_test_plugins:Recorder\nboom = lorescan_test_plugins:Boom\n" \
               "broken = lorescan_test_plugins:Missing\n"


def header(**fields: Any) -> dict[str, str]:
    return {"role": "system", "content": "LORESCAN_SYSTEM " + json.dumps(fields)}


def sys_(text: str) -> dict[str, str]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plugins")
    (path / "lorescan_test_plugins.py").write_text(PLUGIN)
    info = path / "lorescan_test_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lorescan-test-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return path


def plugin_env(plugin_dir: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(plugin_dir), "LORESCAN_TEST_PLUGIN_LOG": str(plugin_dir / "calls.jsonl")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream, plugin_dir: Path) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("proxy") / "data", "--upstream", upstream.url, env=plugin_env(plugin_dir))
    try:
        with srv.client() as c:
            for name, book in (("harbour", HARBOUR), ("tides", TIDES)):
                assert c.put(f"/v1/books/{name}", json=book).status_code == 201
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


@pytest.fixture
def client(server: Server, upstream: FakeUpstream) -> Any:
    upstream.reset()
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-client", max_retries=0)


def sent(upstream: FakeUpstream) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = upstream.last()["messages"]
    return messages


# ---------------------------------------------------------------- placement

def test_placement_headers_put_each_bucket_where_the_client_asked(client: Any, upstream: FakeUpstream) -> None:
    reply = client.chat.completions.with_raw_response.create(model="m", messages=[
        header(books=["harbour"], user="Rowan", char="Ines"),
        sys_("You are Ines, the harbour keeper."),
        sys_("LORESCAN_BEFORE"), sys_("LORESCAN_AFTER"), sys_("LORESCAN_EM_TOP"), sys_("LORESCAN_EM_BOTTOM"),
        user("Good evening."), bot("Evening, Rowan."),
        sys_("LORESCAN_AN_TOP"), sys_("Author's note: keep it short."), sys_(" LORESCAN_AN_BOTTOM\n"),
        user("Who rings the bell?")])
    assert reply.parse().choices[0].message.content == "The bell rings."
    assert reply.headers["x-lorescan-activated"] == ",".join(f"harbour.{uid}" for uid in
                                                             (0, 1, 2, 3, 6, 7, 8, 9, 10, 5, 4))
    assert sent(upstream) == [
        sys_("You are Ines, the harbour keeper."),
        sys_("Saltmere harbour is cold."),
        sys_("The bell is bronze."),
        sys_("Example: the bell woke the town.\nExample: the keeper never rings it."),
        sys_("Example: the bell is silent."),
        user("Good evening."),
        bot("Ines glances at the tower."),      # depth 2: two chat messages (and the depth-0 ones) after it
        bot("Evening, Rowan."),
        sys_("Bells ring at low tide."),
        sys_("Author's note: keep it short."),
        sys_("Keep the bell in mind."),
        user("Who rings the bell?"),
        user("(Rowan thinks of the bell.)"),    # depth 0: after the last message, the system one last
        sys_("[The bell hangs silent.]"),
    ]
    assert upstream.last()["json"]["model"] == "m"


def test_buckets_without_a_marker_join_the_first_system_message(client: Any, upstream: FakeUpstream) -> None:
    client.chat.completions.create(model="m", messages=[
        sys_("You are Ines."), header(books=["harbour"]), sys_("Stay in character."), sys_("LORESCAN_AN_TOP"),
        user("The bell, and the lighthouse?")])
    assert sent(upstream)[:3] == [
        sys_("The lighthouse is dark.\nSaltmere harbour is cold.\nYou are Ines.\nThe bell is bronze.\n"
             "Keep the bell in mind.\nExample: the bell woke the town.\nExample: the keeper never rings it.\n"
             "Example: the bell is silent."),
        sys_("Stay in character."),
        sys_("Bells ring at low tide.")]
    # no system message: one is created at the start
    client.chat.completions.create(model="m", messages=[header(books=["harbour"]), user("Hello.")])
    assert sent(upstream) == [sys_("Saltmere harbour is cold."), user("Hello.")]


def test_empty_buckets_drop_their_markers(client: Any, upstream: FakeUpstream) -> None:
    client.chat.completions.create(model="m", messages=[
        header(books=["harbour"]), sys_("LORESCAN_BEFORE"), sys_("Main."), sys_("LORESCAN_AFTER"),
        sys_("LORESCAN_AN_TOP"), sys_("LORESCAN_AN_BOTTOM"), sys_("LORESCAN_EM_TOP"), sys_("LORESCAN_EM_BOTTOM"),
        sys_("LORESCAN_OUTLET weather"), user("Hello.")])
    assert sent(upstream) == [sys_("Saltmere harbour is cold."), sys_("Main."), user("Hello.")]


def test_outlets_are_placed_only_where_a_marker_names_them(client: Any, upstream: FakeUpstream) -> None:
    chat = [sys_("Main."), user("The bell?")]
    client.chat.completions.create(model="m", messages=[
        header(books=["harbour"], settings={"world_info_depth": 1}), sys_("LORESCAN_OUTLET weather"),
        sys_("LORESCAN_OUTLET elsewhere"), *chat])
    assert sent(upstream)[0] == sys_("Fog rolls in off the water.")
    assert [m for m in sent(upstream) if "Fog" in m["content"]] == [sys_("Fog rolls in off the water.")]
    client.chat.completions.create(model="m", messages=[header(books=["harbour"]), *chat])
    assert not [m for m in sent(upstream) if "Fog" in m["content"]]     # no marker: nowhere, as in SillyTavern


def test_a_request_without_a_header_passes_through_byte_for_byte(server: Server, upstream: FakeUpstream) -> None:
    upstream.reset()
    raw = ('{ "model":"m",\n  "messages": [{"role": "system", "content": "LORESCAN_BEFORE"},'
           ' {"content": "Caf\\u00e9 \u2014 the bell", "role": "user", "name": "Rowan"}],'
           ' "temperature": 0.70, "extra_field": [1, 2.50]}').encode()
    with httpx.Client(base_url=server.url) as c:
        reply = c.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json",
                                                                     "Authorization": "Bearer sk-client",
                                                                     "X-Custom": "kept"})
    assert reply.status_code == 200 and reply.headers["x-lorescan-activated"] == ""
    assert reply.headers["x-upstream"] == "fake"
    got = upstream.last()
    assert got["body"] == raw
    assert got["headers"]["authorization"] == "Bearer sk-client"
    assert got["headers"]["x-custom"] == "kept" and got["headers"]["content-type"] == "application/json"
    assert reply.headers["set-cookie"] == "upstream=seen; Path=/"      # relayed to its client, kept by none
    with httpx.Client(base_url=server.url) as c:
        assert c.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"}).is_success
    assert "cookie" not in upstream.last()["headers"]


# ---------------------------------------------------------------- sessions

def test_a_session_keeps_sticky_entries_across_requests_and_a_swipe(client: Any, server: Server,
                                                                    upstream: FakeUpstream) -> None:
    def generate(chat: list[dict[str, str]], **fields: Any) -> list[dict[str, Any]]:
        client.chat.completions.create(model="m", messages=[
            header(books=["tides"], session="harbour-chat", **fields), sys_("Main."), *chat])
        return sent(upstream)

    lore = sys_("Main.\nThe tide bell is ringing.")
    first = [user("The bell!")]
    second = [*first, bot("It rings."), user("What now?")]
    assert generate(first) == [lore, *first]
    assert generate(second) == [lore, *second]              # sticky: the keyword is out of the window
    assert generate(second, type="swipe") == [lore, *second]  # the swipe: the same chat, generated again
    third = [*second, bot("Silence."), user("And then?")]
    assert generate(third) == [sys_("Main."), *third]        # the sticky window has passed
    with httpx.Client(base_url=server.url) as c:
        stored = c.get("/v1/sessions/harbour-chat").json()
        assert stored["generations"] == 4
        # the same requests through POST /v1/activate on another session give the same results
        results = []
        for chat, kind in ((first, "normal"), (second, "normal"), (second, "swipe"), (third, "normal")):
            got = c.post("/v1/activate", json={"stored_books": ["tides"], "session": "mirror", "type": kind,
                                               "chat": chat}).json()["result"]
            results.append(got["activated"])
        assert results == [["tides.0"], ["tides.0"], ["tides.0"], []]
        assert c.get("/v1/sessions/mirror").json()["timed"] == stored["timed"]


# ---------------------------------------------------------------- streaming

def test_streaming_relays_the_first_chunk_before_the_upstream_has_finished(client: Any,
                                                                           upstream: FakeUpstream) -> None:
    reply = client.chat.completions.with_raw_response.create(
        model="held", stream=True, messages=[header(books=["harbour"]), user("The bell?")])
    assert reply.headers["x-lorescan-activated"].startswith("harbour.0,harbour.1,")
    assert reply.headers["content-type"].startswith("text/event-stream")
    stream = reply.parse()
    chunks = iter(stream)
    first = next(chunks)
    assert first.choices[0].delta.content == "The"
    assert not upstream.finished.is_set()        # the upstream is still holding the rest back
    upstream.release()
    rest = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert rest == [" bell", " rings."]
    assert upstream.finished.is_set()
    assert sent(upstream)[0]["content"].startswith("Saltmere harbour is cold.")


def test_a_client_that_disconnects_cancels_the_upstream_stream(server: Server, upstream: FakeUpstream) -> None:
    upstream.reset()
    body = {"model": "endless", "stream": True, "messages": [header(books=["harbour"]), user("Hello.")]}
    with httpx.Client(base_url=server.url, timeout=30) as c, c.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        assert b'"content": "The"' in next(r.iter_raw())
    assert upstream.cancelled.wait(30)       # the proxy closed its upstream request
    assert not upstream.finished.is_set()


# ---------------------------------------------------------------- answers and errors

def test_trace_adds_the_activation_result_to_the_answer(server: Server, upstream: FakeUpstream) -> None:
    body = {"model": "m", "messages": [header(books=["harbour"], trace=True), user("The lighthouse.")]}
    with httpx.Client(base_url=server.url) as c:
        got = c.post("/v1/chat/completions", json=body).json()
        plain = c.post("/v1/chat/completions", json={**body, "messages": [header(books=["harbour"]),
                                                                          user("The lighthouse.")]}).json()
    assert got["choices"][0]["message"]["content"] == "The bell rings."
    assert got["lorescan"]["activated"] == ["harbour.0", "harbour.11"]
    assert got["lorescan"]["before"] == "The lighthouse is dark.\nSaltmere harbour is cold."   # ascending order
    assert {e["event"] for e in got["lorescan"]["trace"]} >= {"pass", "activated"}
    assert "lorescan" not in plain and plain["usage"] == {"prompt_tokens": 11, "completion_tokens": 3,
                                                          "total_tokens": 14}


def assert_error(reply: httpx.Response, status: int, kind: str, field: str | None, says: str) -> None:
    assert reply.status_code == status, reply.text
    assert reply.json() == {"error": {"type": kind, "message": reply.json()["error"]["message"], "field": field}}
    assert says in reply.json()["error"]["message"], reply.text


def test_a_bad_header_or_an_unknown_book_is_a_400_naming_it(server: Server, client: Any,
                                                            upstream: FakeUpstream) -> None:
    with httpx.Client(base_url=server.url) as c:
        def post(*messages: dict[str, str]) -> httpx.Response:
            return c.post("/v1/chat/completions", json={"model": "m", "messages": list(messages)})

        assert_error(post(sys_('LORESCAN_SYSTEM {"books": ["harbour"'), user("x")), 400, "invalid_header",
                     "messages[0].content", "the LORESCAN_SYSTEM header is not valid JSON")
        assert_error(post(header(books=["harbour", "atlantis"]), user("x")), 400, "invalid_header",
                     "LORESCAN_SYSTEM.books[1]", "no stored book named 'atlantis'")
        assert_error(post(header(bookz=["harbour"]), user("x")), 400, "invalid_header", "LORESCAN_SYSTEM.bookz",
                     "unknown LORESCAN_SYSTEM field 'bookz' (did you mean 'books'?)")
        assert_error(post(header(settings={"world_info_depht": 2}), user("x")), 400, "invalid_header",
                     "LORESCAN_SYSTEM.settings.world_info_depht", "did you mean 'world_info_depth'?")
        assert_error(post(header(st_version="0.9"), user("x")), 400, "invalid_header", "LORESCAN_SYSTEM.st_version",
                     "0.9")
        assert_error(post(header(macro_engine="old"), user("x")), 400, "invalid_header",
                     "LORESCAN_SYSTEM.macro_engine", "unknown macro engine 'old' (accepted: new, legacy)")
        assert_error(post(header(), sys_("LORESCAN_OUTLET"), user("x")), 400, "invalid_header",
                     "messages[1].content", "needs an outlet name")
    assert upstream.received == []              # none of them was forwarded
    with pytest.raises(openai.BadRequestError, match="no stored book named 'atlantis'"):
        client.chat.completions.create(model="m", messages=[header(books=["atlantis"]), user("x")])


def test_upstream_errors_reach_the_client_unchanged(server: Server, client: Any, upstream: FakeUpstream) -> None:
    with httpx.Client(base_url=server.url) as c:
        reply = c.post("/v1/chat/completions", json={"model": "error", "messages": [header(books=["harbour"]),
                                                                                    user("x")]})
    assert reply.status_code == 429 and reply.headers["retry-after"] == "7"
    assert reply.json() == {"error": {"message": "Rate limit reached", "type": "rate_limit", "param": None,
                                      "code": "rate_limit"}}
    assert reply.headers["x-lorescan-activated"] == "harbour.0"
    with pytest.raises(openai.RateLimitError, match="Rate limit reached"):
        client.chat.completions.create(model="error", messages=[user("x")])


def test_models_are_relayed(server: Server, client: Any, upstream: FakeUpstream) -> None:
    assert [m.id for m in client.models.list()] == ["fake-model"]
    assert upstream.last()["headers"]["authorization"] == "Bearer sk-client"
    assert upstream.last()["query"] == ""
    with httpx.Client(base_url=server.url) as c:                  # the query goes on as it came
        assert c.get("/v1/models?limit=2&after=a%20b").status_code == 200
    assert upstream.last()["query"] == "limit=2&after=a%20b"


def test_an_unreachable_upstream_is_a_502_and_no_upstream_a_503(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    body = {"model": "m", "messages": [user("x")]}
    srv = Server(tmp_path / "data", "--upstream", dead)
    try:
        with srv.client() as c:
            assert_error(c.post("/v1/chat/completions", json=body), 502, "upstream_unreachable", None,
                         f"the upstream {dead} cannot be reached")
            assert_error(c.get("/v1/models"), 502, "upstream_unreachable", None, "cannot be reached")
            assert c.get("/healthz").status_code == 200          # still serving
    finally:
        assert srv.stop() in STOPPED, srv.output()
    bare = Server(tmp_path / "bare")
    try:
        with bare.client() as c:
            assert_error(c.post("/v1/chat/completions", json=body), 503, "no_upstream", None,
                         "no upstream is configured: start lorescan serve with --upstream URL")
    finally:
        assert bare.stop() in STOPPED, bare.output()


def test_a_slow_upstream_is_a_504_and_the_key_goes_upstream_only(tmp_path: Path, upstream: FakeUpstream) -> None:
    srv = Server(tmp_path / "data", "--upstream", upstream.url, "--upstream-key-env", "LORESCAN_TEST_KEY",
                 "--upstream-timeout", "0.5", "--log-level", "debug", env={"LORESCAN_TEST_KEY": KEY})
    try:
        oc = openai.OpenAI(base_url=srv.url + "/v1", api_key="sk-client", max_retries=0)
        upstream.reset()
        assert oc.chat.completions.create(model="m", messages=[user("x")]).choices[0].message.content
        assert upstream.last()["headers"]["authorization"] == f"Bearer {KEY}"
        with srv.client() as c:
            slow = c.post("/v1/chat/completions", json={"model": "slow", "messages": [user("x")]})
            assert_error(slow, 504, "upstream_timeout", None, "did not answer within 0.5 s (--upstream-timeout)")
            assert c.get("/healthz").status_code == 200
            metrics = c.get("/metrics").text
        assert KEY not in slow.text and KEY not in metrics
    finally:
        assert srv.stop() in STOPPED, srv.output()
    assert KEY not in srv.output()


class RawUpstream(socketserver.BaseRequestHandler):
    """Answers each request with bytes of its own, whatever HTTP allows: ``/v1/models`` with a
    body that ends when the connection does (no length, not chunked), a chat completion with a
    malformed status line."""

    def handle(self) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            got = self.request.recv(65536)
            if not got:
                return
            data += got
        if data.startswith(b"GET /v1/models "):
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"object\": \"list\", ")
            self.request.sendall(b'"data": []}')
        else:
            self.request.sendall(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}")


def test_a_malformed_answer_is_a_502_and_a_close_delimited_one_is_relayed(tmp_path: Path) -> None:
    raw = socketserver.ThreadingTCPServer(("127.0.0.1", 0), RawUpstream)
    raw.daemon_threads = True
    thread = threading.Thread(target=raw.serve_forever, daemon=True)
    thread.start()
    srv = Server(tmp_path / "data", "--upstream", f"http://127.0.0.1:{raw.server_address[1]}/v1")
    try:
        with srv.client() as c:
            models = c.get("/v1/models")
            assert models.status_code == 200 and models.content == b'{"object": "list", "data": []}'
            for _ in range(2):      # the first connection ended with its answer: the second gets a new one
                assert c.get("/v1/models").content == b'{"object": "list", "data": []}'
            assert_error(c.post("/v1/chat/completions", json={"model": "m", "messages": [user("x")]}), 502,
                         "upstream_unreachable", None, f"the upstream http://127.0.0.1:{raw.server_address[1]}/v1 "
                         "cannot be reached: its answer is not valid HTTP/1.1")
            assert c.get("/healthz").status_code == 200
    finally:
        assert srv.stop() in STOPPED, srv.output()
        raw.shutdown()
        raw.server_close()


# ---------------------------------------------------------------- plugins and metrics

def recorded(log: Path, count: int) -> list[dict[str, Any]]:
    """The recorder plugin's lines, once there are ``count`` (a non-streamed answer's hook runs just
    after the reply is sent)."""
    for _ in range(3000):
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= count:
            return [json.loads(line) for line in lines]
        time.sleep(0.01)
    raise AssertionError(f"the recorder wrote {len(lines)} lines, not {count}")


def test_plugins_run_around_each_completion_and_a_raising_one_is_skipped(
        server: Server, client: Any, upstream: FakeUpstream, plugin_dir: Path) -> None:
    log = plugin_dir / "calls.jsonl"
    log.unlink(missing_ok=True)
    messages = [header(books=["harbour"], session="plugin-check"), sys_("Main."), user("Hello.")]
    assert client.chat.completions.create(model="m", messages=messages).choices[0].message.content
    assert sent(upstream) == [sys_("Saltmere harbour is cold.\nMain."), user("Hello."),
                              sys_("Signed by the recorder.")]
    chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[-1].usage.completion_tokens == 3
    calls = sorted(recorded(log, 2), key=lambda c: c["streamed"])
    assert [(c["session"], c["activated"], c["status"], c["streamed"]) for c in calls] == [
        ("plugin-check", ["harbour.0"], 200, False), ("plugin-check", ["harbour.0"], 200, True)]
    assert calls[0]["body"]["usage"] == calls[1]["body"]["usage"] == {"prompt_tokens": 11, "completion_tokens": 3,
                                                                      "total_tokens": 14}
    assert calls[1]["body"]["choices"] == [{"index": 0, "message": {"role": "assistant", "content": "The bell rings."},
                                            "finish_reason": "stop"}]
    output = server.output()
    assert "plugin boom failed in before_prompt_rendered; skipped" in output
    assert "plugin boom failed in after_response_generation; skipped" in output
    assert "plugin broken (lorescan_test_plugins:Missing) does not load" in output


def test_the_proxy_metrics_are_exported(server: Server, client: Any) -> None:
    def figure(text: str, name: str) -> float:
        line = next((ln for ln in text.splitlines() if ln.startswith(name + " ")), None)
        return float(line.split()[-1]) if line else 0.0

    latency = 'lorescan_upstream_seconds_count{status="200"}'
    with httpx.Client(base_url=server.url) as c:
        before = c.get("/metrics").text
        client.chat.completions.create(model="m", messages=[header(books=["harbour"]), user("The bell.")])
        for _ in range(3000):       # the plugins hear of a non-streamed answer just after it is sent
            after = c.get("/metrics").text
            if figure(after, latency) > figure(before, latency):
                break
            time.sleep(0.01)
    assert figure(after, "lorescan_entries_injected_total") - figure(before, "lorescan_entries_injected_total") == 11
    for direction, tokens in (("in", 11), ("out", 3)):
        name = f'lorescan_upstream_tokens_total{{direction="{direction}"}}'
        assert figure(after, name) - figure(before, name) == tokens
    assert figure(after, latency) - figure(before, latency) == 1


def test_list_plugins(plugin_dir: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "lorescan", "serve", "--list-plugins"], cwd=ROOT, text=True,
                         capture_output=True, env={**os.environ, **plugin_env(plugin_dir)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "metrics\tbuilt-in\tBuilt in: upstream latency, tokens in and out (when the upstream reports usage), "
        "entries injected.",
        "boom\tlorescan_test_plugins:Boom\tRaises in both hooks.",
        "broken\tlorescan_test_plugins:Missing\tdoes not load: AttributeError: module 'lorescan_test_plugins' "
        "has no attribute 'Missing'",
        "recorder\tlorescan_test_plugins:Recorder\tSigns the requests of session plugin-check and records every "
        "answer.",
    ]


# ---------------------------------------------------------------- the README

def test_the_readme_example_sends_the_messages_the_readme_shows(server: Server, upstream: FakeUpstream,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Proxy\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    activated = section.split("`X-Lorescan-Activated: ", 1)[1].split("`", 1)[0]
    with httpx.Client(base_url=server.url) as c:
        assert c.put("/v1/books/saltmere", content=(ROOT / "corpora" / "saltmere.json").read_bytes()).is_success
        c.delete("/v1/sessions/chat-7")
    headers: list[httpx.Headers] = []

    class Recording(openai.OpenAI):   # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            hook = {"response": [lambda r: headers.append(r.headers)]}
            super().__init__(**kwargs, http_client=httpx.Client(event_hooks=hook), max_retries=0)

    monkeypatch.setattr(openai, "OpenAI", Recording)
    upstream.reset()
    exec(compile(code.replace("http://127.0.0.1:8765", server.url), "README.md", "exec"), {})
    assert capsys.readouterr().out == "The bell rings.\n"
    assert sent(upstream) == shown
    assert upstream.last()["json"]["model"] == "llama-3.1-8b"
    assert headers[-1]["x-lorescan-activated"] == activated


def test_bad_upstream_options_are_one_line_errors(tmp_path: Path) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "LORESCAN_TEST_UNSET"}
        return subprocess.run([sys.executable, "-m", "lorescan", "serve", "--data", str(tmp_path), *args], cwd=ROOT,
                              text=True, capture_output=True, env=env, timeout=60)

    for args, says in ((["--upstream", "ftp://127.0.0.1/v1"], "--upstream: not an http(s) URL: 'ftp://127.0.0.1/v1' (e.g. http://127.0.0.1:8080/v1)"),
                       (["--upstream-key-env", "LORESCAN_TEST_UNSET"], "--upstream-key-env needs --upstream"),
                       (["--upstream", "http://127.0.0.1:9/v1", "--upstream-key-env", "LORESCAN_TEST_UNSET"],
                        "--upstream-key-env: the environment variable LORESCAN_TEST_UNSET is not set")):
        out = serve(*args)
        assert out.returncode == 2 and out.stderr == f"lorescan: error: {says}\n", out.stderr


@pytest.mark.parametrize("keys", [
    [], [""], ["harbour.0", "harbour.12"], ["a,b", "c"], ["x%y"], ["é.2", "plain.1"], ["sp ace.3"],
    [chr(c) + ".1" for c in range(0x20, 0x80)], ["tab\t.1", "\x7f.2"],
])
def test_the_activated_header_encodes_exactly_what_needs_it(keys: list[str]) -> None:
    from urllib.parse import quote

    from lorescan._service.proxy import _SAFE, activated_header

    assert activated_header(keys) == ",".join(quote(k, safe=_SAFE) for k in keys)
    assert activated_header(["a,b", "c"]) == "a%2Cb,c"
