"""``lorescan serve`` through HTTP: books, activation with stored books, sessions, traces, the
OpenAPI document, metrics, and one error shape for every class of bad input."""

from __future__ import annotations

import gc
import hashlib
import json
import random
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lorescan
from lorescan import ChatMessage, Settings
from lorescan._load import load_bytes, render
from lorescan._results import result_json

from .serve_helpers import ROOT, Server, httpx, serving

BOOK = ROOT / "corpora" / "saltmere.json"
CHAT = ROOT / "corpora" / "saltmere-chat.jsonl"
CHARX = ROOT / "tests" / "fixtures" / "formats" / "sample.charx"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(tmp_path_factory, "serve-api")


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code in (200, 201)
        yield c


def chat_json(upto: int | None = None) -> list[dict[str, Any]]:
    messages = lorescan.load(CHAT).chat.messages[:upto]  # type: ignore[union-attr]
    return [{"name": m.name, "is_user": m.is_user, "mes": m.mes} for m in messages]


def library_result(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    lore = lorescan.compile([lorescan.load(BOOK).books[0]], tokenizer="chars4")
    return result_json(lore.activate([ChatMessage(**m) for m in messages], **fields))


def assert_error(reply: httpx.Response, status: int, kind: str, field: str | None = None,
                 says: str = "") -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message", "field"}, body
    assert body["error"]["type"] == kind, body
    assert body["error"]["field"] == field, body
    assert says in body["error"]["message"], body
    assert "Traceback" not in reply.text
    return body["error"]


# ---------------------------------------------------------------- books

def test_a_book_is_stored_listed_read_back_and_deleted(client: httpx.Client) -> None:
    data = BOOK.read_bytes()
    reply = client.put("/v1/books/harbour", content=data)
    assert reply.status_code == 201
    body = reply.json()
    assert (body["name"], body["entries"], body["hash"], body["format"], body["scope"]) == (
        "harbour", 12, hashlib.sha256(data).hexdigest(), "st", "global")
    codes = {w["code"] for w in body["warnings"]}
    assert "key-inside-words" in codes              # lint's findings for this book
    assert client.put("/v1/books/harbour", content=data).status_code == 200     # replaced
    listed = {b["name"]: b for b in client.get("/v1/books").json()["books"]}
    assert listed["harbour"]["entries"] == 12 and listed["harbour"]["size"] == len(data)
    got = client.get("/v1/books/harbour").json()
    original = json.loads(data)["entries"]
    assert [e["uid"] for e in got["entries"]] == [e["uid"] for e in original.values()]
    assert got["entries"][1] == original["1"]
    assert client.get("/v1/books/harbour", params={"format": "original"}).content == data
    as_kobold = client.get("/v1/books/harbour", params={"format": "kobold"})
    assert as_kobold.content == render(load_bytes(data, "harbour", name="harbour"), "kobold")[0]
    assert client.delete("/v1/books/harbour").status_code == 204
    assert_error(client.get("/v1/books/harbour"), 404, "not_found", "name", "no stored book named 'harbour'")
    assert_error(client.delete("/v1/books/harbour"), 404, "not_found", "name")


def test_a_card_archive_is_stored_and_written_as_png(client: httpx.Client) -> None:
    reply = client.put("/v1/books/harbor card", content=CHARX.read_bytes())
    assert reply.status_code == 201 and reply.json()["format"] == "charx" and reply.json()["entries"] == 2
    png = client.get("/v1/books/harbor card", params={"format": "png"})
    assert png.headers["content-type"] == "image/png"
    again = load_bytes(png.content, "card.png")
    assert [e.content for e in again.books[0].entries] == [e.content for e in lorescan.load(CHARX).books[0].entries]


def test_a_stored_book_activates_as_the_library_does(client: httpx.Client) -> None:
    chat = chat_json(6)
    settings = {"world_info_recursive": True, "world_info_depth": 4}
    reply = client.post("/v1/activate", json={"stored_books": ["saltmere"], "chat": chat, "settings": settings,
                                              "user_name": "Rowan", "char_name": "Ines", "seed": 7})
    expected = library_result(chat, settings=Settings(**settings), user_name="Rowan", char_name="Ines",
                              rng=random.Random(7))
    assert reply.json() == {"result": expected}
    assert reply.json()["result"]["activated"][:2] == ["saltmere.0", "saltmere.1"]
    # OpenAI-style messages are the same chat
    roles = [{"role": "user" if m["is_user"] else "assistant", "content": m["mes"]} for m in chat]
    same = client.post("/v1/activate", json={"stored_books": [{"name": "saltmere", "scope": "global"}],
                                             "chat": roles, "settings": settings, "user_name": "Rowan",
                                             "char_name": "Ines", "seed": 7})
    assert same.json() == reply.json()


def test_seed_draws_as_a_seeded_random_and_a_random_list_wins(client: httpx.Client) -> None:
    lore_entries = [{"uid": 0, "key": ["bell"], "content": "A bell.", "probability": 50},
                    {"uid": 1, "key": ["bell"], "content": "Another.", "probability": 50}]
    chat = [{"name": "U", "is_user": True, "mes": "the bell rings"}]
    lore = lorescan.compile([lorescan.Lorebook.from_entries("global", lore_entries)], tokenizer="chars4")
    seen = set()
    for seed in range(6):
        got = client.post("/v1/activate", json={"entries": lore_entries, "chat": chat, "seed": seed}).json()
        want = result_json(lore.activate([ChatMessage(**chat[0])], rng=random.Random(seed)))
        assert got["result"] == want
        seen.add(tuple(want["activated"]))
    assert len(seen) > 1                 # the seeds made different rolls
    listed = client.post("/v1/activate", json={"entries": lore_entries, "chat": chat, "seed": 1,
                                               "random": [0.99, 0.0]}).json()["result"]
    assert listed["activated"] == ["global.1"] and listed["rolls"] == 2


def test_an_empty_book_given_is_a_book_of_its_own(client: httpx.Client) -> None:
    # an empty character_entries is the character's primary book: "mine" becomes an extra book,
    # which this card leaves out; the two requests must not share a compiled book
    book = {"entries": {"0": {"uid": 0, "key": ["x"], "content": "X"}}}
    assert client.put("/v1/books/mine", params={"scope": "character"}, content=json.dumps(book)).status_code == 201
    body = {"stored_books": ["mine"], "character": {"extra_books": []},
            "chat": [{"name": "U", "is_user": True, "mes": "x"}]}
    first = client.post("/v1/activate", json=body).json()["result"]["activated"]
    second = client.post("/v1/activate", json={**body, "character_entries": []}).json()["result"]["activated"]
    assert (first, second) == (["mine.0"], [])


def test_trace_adds_events_and_explanations(client: httpx.Client) -> None:
    reply = client.post("/v1/activate", json={"stored_books": ["saltmere"], "trace": True,
                                              "chat": [{"name": "Rowan", "is_user": True,
                                                        "mes": "The keeper lit the beacon."}]})
    result = reply.json()["result"]
    assert result["activated"] == ["saltmere.0", "saltmere.1", "saltmere.2"]
    assert {e["event"] for e in result["trace"]} >= {"pass", "candidate", "activated"}
    verdicts = {e["entry"]: e["verdict"] for e in result["explain"]}
    assert verdicts["saltmere.1"] == "activated in pass 1: primary key 'beacon' matched in message #1 (Rowan)"
    assert verdicts["saltmere.0"] == "activated in pass 1: constant (always active)"
    assert "saltmere.4" not in verdicts      # its keys did not match: the trace says so, no explanation


def test_the_activation_layer_answers_as_the_route_does(client: httpx.Client) -> None:
    # a +json media type is JSON to the route but not taken by the direct routes: the two
    # replies must be the same bytes, and so must their errors
    body = {"stored_books": ["saltmere"], "chat": chat_json(6), "seed": 3, "user_name": "Rowan",
            "settings": {"world_info_recursive": True}}
    data = json.dumps(body).encode()
    layer = client.post("/v1/activate", content=data, headers={"Content-Type": "application/json"})
    route = client.post("/v1/activate", content=data, headers={"Content-Type": "application/vnd.api+json"})
    assert layer.status_code == route.status_code == 200
    assert layer.content == route.content
    assert layer.headers["content-type"] == route.headers["content-type"] == "application/json"
    bad = json.dumps({"stored_books": ["nowhere"], "chat": []}).encode()
    for kind in ("application/json", "application/vnd.api+json"):
        assert_error(client.post("/v1/activate", content=bad, headers={"Content-Type": kind}), 404,
                     "not_found", "stored_books[0]")
        assert_error(client.post("/v1/activate", content=b"{", headers={"Content-Type": kind}), 400, "invalid_json")
        assert_error(client.post("/v1/activate", content=b'{"chat": 3}', headers={"Content-Type": kind}), 422,
                     "invalid_request", "chat")


def test_short_untraced_activations_run_on_the_event_loop() -> None:
    from lorescan._service.cache import Compiled
    from lorescan._service.service import INLINE_SECONDS, Service

    compiled = Compiled(lorescan.compile([]), 0)
    assert not Service.runs_inline(compiled, False, 0)         # not measured yet: a worker thread
    compiled.note(0.002)
    assert Service.runs_inline(compiled, False, 0)
    assert not Service.runs_inline(compiled, True, 0)          # traced
    assert not Service.runs_inline(compiled, False, int(INLINE_SECONDS / 0.002) + 1)    # too many turns
    for _ in range(20):
        compiled.note(0.5)                                     # the book turned slow
    assert not Service.runs_inline(compiled, False, 0)


# ---------------------------------------------------------------- sessions

def test_a_session_keeps_timed_state_and_can_be_read_and_deleted(client: httpx.Client) -> None:
    entries = [{"uid": 0, "key": ["bell"], "content": "The bell.", "sticky": 5, "cooldown": 1}]
    chat = [{"name": "U", "is_user": True, "mes": "the bell"}]
    assert_error(client.get("/v1/sessions/tide"), 404, "not_found", "session_id", "no session named 'tide'")
    dry = client.post("/v1/activate", json={"entries": entries, "chat": chat, "session": "tide", "dry_run": True})
    assert dry.status_code == 200
    assert client.get("/v1/sessions/tide").status_code == 404          # a dry run stores nothing
    client.post("/v1/activate", json={"entries": entries, "chat": chat, "session": "tide"})
    stored = client.get("/v1/sessions/tide").json()
    assert stored["generations"] == 1
    sticky = stored["timed"]["sticky"]["global.0"]
    assert (sticky["start"], sticky["end"], sticky["protected"]) == (1, 6, False) and "hash" in sticky
    # the next generation: the chat moved on, the keyword is gone, the entry stays (sticky)
    chat2 = chat + [{"name": "C", "mes": "Quiet."}, {"name": "U", "is_user": True, "mes": "and now?"}]
    held = client.post("/v1/activate", json={"entries": entries, "chat": chat2, "session": "tide"}).json()
    assert held["result"]["activated"] == ["global.0"]
    fresh = client.post("/v1/activate", json={"entries": entries, "chat": chat2}).json()
    assert fresh["result"]["activated"] == []
    assert client.delete("/v1/sessions/tide").status_code == 204
    assert_error(client.delete("/v1/sessions/tide"), 404, "not_found", "session_id")


def test_the_store_keeps_recent_timed_states_in_memory_and_the_database_agrees(tmp_path: Path) -> None:
    from lorescan._model import TimedState
    from lorescan._service.store import Store

    state = TimedState.model_validate({"sticky": {"g.0": {"hash": 7, "start": 1, "end": 6, "protected": False}}})
    store = Store(tmp_path / "s.sqlite3")
    assert store.timed("chat") is None
    store.save_session("chat", state, 1)
    assert store.timed("chat") is state                        # from memory
    store.close()
    again = Store(tmp_path / "s.sqlite3")
    read = again.timed("chat")                                 # from the database after a restart
    assert read is not None and read.to_json(with_hash=True) == state.to_json(with_hash=True)
    assert again.delete_session("chat") and again.timed("chat") is None
    again.close()


# ---------------------------------------------------------------- bad input

def test_a_malformed_book_is_refused(client: httpx.Client) -> None:
    assert_error(client.put("/v1/books/broken", content=b'{"entries": {"0": {"key": '), 422, "invalid_book",
                 None, "broken")
    assert_error(client.put("/v1/books/empty", content=b""), 422, "invalid_book", None, "the body is empty")
    assert_error(client.put("/v1/books/chat", content=CHAT.read_bytes()), 422, "invalid_book", None,
                 "holds no lorebook")
    assert_error(client.post("/v1/activate", json={"entries": [{"uid": 1, "key": "dragon"}]}), 422,
                 "invalid_request", "key", "entry 1")
    assert client.get("/v1/books/broken").status_code == 404


def test_an_unknown_book_is_not_found(client: httpx.Client) -> None:
    assert_error(client.post("/v1/activate", json={"stored_books": ["saltmere", "atlantis"]}), 404, "not_found",
                 "stored_books[1]", "no stored book named 'atlantis'")


def test_a_bad_regex_key_is_a_lint_error_refused_in_strict_mode(client: httpx.Client) -> None:
    book = {"entries": {"0": {"uid": 0, "key": ["/drag(on/i"], "content": "Dragons."},
                        "1": {"uid": 1, "key": ["/(a|a)+$/"], "content": "Slow."}}}
    data = json.dumps(book).encode()
    assert_error(client.put("/v1/books/regex", params={"strict": "true"}, content=data), 422, "lint_error",
                 "entries[uid=0].key[0]", "regex.0")
    assert client.get("/v1/books/regex").status_code == 404
    stored = client.put("/v1/books/regex", content=data)      # SillyTavern reads it: stored, with the finding
    assert stored.status_code == 201
    assert {"invalid-regex", "regex-catastrophic"} <= {w["code"] for w in stored.json()["warnings"]}
    # the invalid key is matched as plain text, as SillyTavern does; the catastrophic one costs only its
    # own request, up to the regex time limit, and the service keeps serving
    chat = [{"name": "U", "is_user": True, "mes": "/drag(on/i and " + "a" * 40 + "!"}]
    reply = client.post("/v1/activate", json={"stored_books": ["regex"], "chat": chat})
    assert reply.status_code == 200 and reply.json()["result"]["activated"] == ["regex.0"]
    assert client.get("/healthz").json()["status"] == "ok"


@pytest.mark.parametrize(("body", "field", "says"), [
    ({"dry_run": "maybe"}, "dry_run", "valid boolean"),
    ({"chat": "hello"}, "chat", "valid list"),
    ({"chat": [{"name": "U", "mes": 5}]}, "chat[0].mes", "valid string"),
    ({"chat": [{"role": 5, "content": "x"}]}, "chat[0]", "'role' must be a string"),
    ({"turns": [{"dry_run": []}]}, "turns[0].dry_run", "valid boolean"),
    ({"stored_books": [{"name": "saltmere", "scope": "sideways"}]}, "stored_books[0].scope", "'global'"),
    ({"character": {"tags": "x"}}, "character.tags", "valid list"),
    ({"force_activate": [{"world": "global"}]}, "force_activate[0].uid", "Field required"),
    ({"st_version": "1.13"}, "st_version", "unsupported SillyTavern version '1.13'"),
    ({"tokenizer": "gpt2"}, "tokenizer", "'cl100k'"),
    ({"session": "a\nb"}, "session", "pattern"),
    ({"user_nmae": "Bob"}, "user_nmae", "unknown field 'user_nmae' (did you mean 'user_name'?)"),
    ({"turns": [{"apend": []}]}, "turns[0].apend", "unknown field 'apend' (did you mean 'append'?)"),
    ({"settings": {"max_context": "big"}}, "settings.max_context", "valid integer"),
])
def test_wrong_types_and_unknown_names_name_the_field(client: httpx.Client, body: dict[str, Any], field: str,
                                                      says: str) -> None:
    assert_error(client.post("/v1/activate", json=body), 422, "invalid_request", field, says)


def test_an_unknown_setting_suggests_the_closest(client: httpx.Client) -> None:
    assert_error(client.post("/v1/activate", json={"settings": {"world_info_depht": 3}}), 422, "invalid_request",
                 "settings.world_info_depht", "unknown setting 'world_info_depht' (did you mean 'world_info_depth'?)")
    assert_error(client.post("/v1/activate", json={"turns": [{"settings": {"max_contxt": 1}}]}), 422,
                 "invalid_request", "turns[0].settings.max_contxt", "did you mean 'max_context'?")


def test_not_json_unknown_routes_methods_and_names(client: httpx.Client) -> None:
    assert_error(client.post("/v1/activate", content=b"{nope", headers={"content-type": "application/json"}),
                 400, "invalid_json", None, "not valid JSON")
    assert_error(client.post("/v1/activate", json=[1, 2]), 422, "invalid_request", None, "a JSON object")
    for kind in ("text/plain", "application/x-www-form-urlencoded", None):     # curl -d sends the second
        sent = client.post("/v1/activate", content=b'{"chat": []}', headers={"content-type": kind} if kind else {})
        assert_error(sent, 422, "invalid_request", None, "not sent as JSON: send it with Content-Type: "
                                                         "application/json")
    assert_error(client.get("/v2/anything"), 404, "not_found", None, "no route GET /v2/anything")
    assert_error(client.delete("/v1/activate"), 405, "method_not_allowed", None, "DELETE")
    assert_error(client.put("/v1/books/%2E%2E", content=BOOK.read_bytes()), 422, "invalid_request", "name")
    assert_error(client.put("/v1/books/a%01b", content=BOOK.read_bytes()), 422, "invalid_request", "name")
    assert_error(client.get("/v1/books/saltmere", params={"format": "docx"}), 422, "invalid_request", "format",
                 "unknown output format 'docx'")
    assert client.get("/healthz").status_code == 200      # still serving


# ---------------------------------------------------------------- the document and the metrics

def test_openapi_is_generated_from_the_library_models(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    assert {"/v1/activate", "/v1/books", "/v1/books/{name}", "/v1/sessions/{session_id}", "/healthz",
            "/metrics"} <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    assert {"ActivateBody", "Entry", "Settings", "ChatMessage", "RoleMessage", "Character",
            "ForcedActivation", "ErrorReply"} <= set(schemas)
    assert set(schemas["Settings"]["properties"]) == set(Settings.model_fields)
    assert schemas["ActivateBody"]["additionalProperties"] is False
    assert client.get("/docs").status_code == 200


def test_metrics_count_requests_activations_cache_and_sessions(client: httpx.Client) -> None:
    body = {"entries": [{"uid": 0, "key": ["gull"], "content": "Gulls."}],
            "chat": [{"name": "U", "is_user": True, "mes": "a gull"}], "session": "metrics"}
    for _ in range(3):
        client.post("/v1/activate", json=body)
    text = client.get("/metrics").text
    values = _metrics(text)
    assert values['lorescan_requests_total{method="POST",route="/v1/activate",status="200"}'] >= 3
    assert values["lorescan_activations_total"] >= 3 and values["lorescan_entries_activated_total"] >= 3
    assert values["lorescan_cache_hits_total"] >= 2 and values["lorescan_cache_misses_total"] >= 1
    assert values["lorescan_sessions"] >= 1
    assert values["lorescan_compile_seconds_count"] >= 1
    assert 'lorescan_request_seconds_bucket{le="0.05",method="POST",route="/v1/activate"}' in values
    assert "lorescan_budget_overflows_total" in values and "lorescan_cache_evictions_total" in values


def _metrics(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            if "{" in name:        # labels in a fixed order, whatever order the client wrote them
                base, labels = name[:-1].split("{", 1)
                name = base + "{" + ",".join(sorted(labels.split(","))) + "}"
            out[name] = float(value)
    return out


def test_a_book_asked_for_by_many_requests_at_once_compiles_once(client: httpx.Client) -> None:
    entries = [{"uid": i, "key": [f"word{i}", f"other{i}"], "content": f"Entry {i} mentions word{i + 1}."}
               for i in range(3000)]
    body = {"entries": entries, "chat": [{"name": "U", "is_user": True, "mes": "word7 and word8"}],
            "settings": {"world_info_recursive": True}}
    before = _metrics(client.get("/metrics").text)
    replies: list[Any] = []
    threads = [threading.Thread(target=lambda: replies.append(client.post("/v1/activate", json=body)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = _metrics(client.get("/metrics").text)
    assert [r.status_code for r in replies] == [200] * 6
    assert len({json.dumps(r.json()) for r in replies}) == 1
    assert replies[0].json()["result"]["activated"][:3] == ["global.7", "global.8", "global.9"]
    assert after["lorescan_cache_misses_total"] - before["lorescan_cache_misses_total"] == 1
    assert after["lorescan_compile_seconds_count"] - before["lorescan_compile_seconds_count"] == 1
    assert after["lorescan_cache_hits_total"] - before["lorescan_cache_hits_total"] == 5


def test_a_bug_is_a_500_in_the_error_shape_without_a_traceback(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from lorescan._service import activation
    from lorescan._service.app import create_app
    from lorescan._service.config import ServiceConfig

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(activation, "evaluate_scenario", broken)
    app = create_app(ServiceConfig(data_dir=tmp_path))

    async def run() -> tuple[httpx.Response, httpx.Response]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://service") as c:
                return await c.post("/v1/activate", json={"chat": []}), await c.get("/healthz")

    frozen = gc.get_freeze_count()
    reply, health = asyncio.run(run())
    assert_error(reply, 500, "internal", None, "internal error (RuntimeError); please report it")
    assert "a bug" not in reply.text and health.status_code == 200
    # an app embedded in another process leaves its collector alone (only `lorescan serve` freezes)
    assert gc.get_freeze_count() == frozen


def test_openai_messages_are_read_once_per_role_content_name_and_names() -> None:
    from lorescan._service.activation import _messages

    chat = [{"role": "user", "content": "the bell"}, {"role": "assistant", "content": "It rings.", "name": "Bo"}]
    first = _messages(chat, "chat", "Rowan", "Ines")
    assert [(m.name, m.is_user, m.mes) for m in first] == [("Rowan", True, "the bell"), ("Bo", False, "It rings.")]
    assert all(a is b for a, b in zip(_messages(chat, "chat", "Rowan", "Ines"), first))    # remembered
    other = _messages(chat, "chat", "Sam", "Ines")                # other names: read again
    assert [m.name for m in other] == ["Sam", "Bo"]
    parts = _messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                       {"name": "U", "is_user": True, "mes": "as is"}], "chat", "Rowan", "Ines")
    assert (parts[0].name, parts[0].mes) == ("Rowan", "hi")
    assert parts[1] == {"name": "U", "is_user": True, "mes": "as is"}


def test_only_a_service_that_owns_its_process_tunes_the_collector_and_malloc(tmp_path: Path) -> None:
    import asyncio

    from lorescan import _construct
    from lorescan._service import service
    from lorescan._service.app import create_app
    from lorescan._service.cache import GC_THRESHOLDS
    from lorescan._service.config import ServiceConfig

    def activate(app: Any) -> int:
        async def run() -> int:
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://service") as c:
                    reply = await c.post("/v1/activate", json={"entries": [{"uid": 0, "key": ["bell"], "content": "x"}],
                                                               "chat": [{"name": "U", "is_user": True, "mes": "bell"}]})
                    return reply.status_code
        return asyncio.run(run())

    arenas: list[int] = []
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(service, "limit_malloc_arenas", arenas.append)
            mp.setattr(_construct, "_frozen_here", False)     # restored after (it says lorescan froze)
            assert activate(create_app(ServiceConfig(data_dir=tmp_path / "embedded"))) == 200
            # an embedding app keeps its collector and its malloc as they are
            assert (gc.get_threshold(), gc.get_freeze_count(), arenas) == (before, frozen, [])
            served = create_app(ServiceConfig(data_dir=tmp_path / "served", owns_process=True))
            assert arenas == [service.MALLOC_ARENAS] == [2] and gc.get_threshold() == before
            assert activate(served) == 200      # the thresholds go up once books are compiled
            assert _construct._frozen_here       # known frozen: gc_paused need not count them
        assert gc.get_threshold() == GC_THRESHOLDS == (50_000, 20, 20)
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_malloc_arenas_are_limited_with_glibc() -> None:
    import platform

    from lorescan._service.service import limit_malloc_arenas

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert limit_malloc_arenas(8) is True     # glibc takes the limit (its own default is 8 per core)


def test_openai_messages_read_once_and_the_older_half_forgotten_when_full(monkeypatch: Any) -> None:
    from lorescan._service import activation

    monkeypatch.setattr(activation, "_ROLE_MESSAGES", {})
    monkeypatch.setattr(activation, "_ROLE_MESSAGES_KEPT", 4)
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"message {i}"} for i in range(6)]
    first = activation._messages(chat, "chat", "Bob", "Alice")
    assert [(m.name, m.is_user, m.mes) for m in first] == [
        ("Bob" if i % 2 else "Alice", bool(i % 2), f"message {i}") for i in range(6)]
    # four kept, then the older two forgotten before the fifth: messages 2 to 5 are left
    assert [key[1] for key in activation._ROLE_MESSAGES] == [f"message {i}" for i in range(2, 6)]
    again = activation._messages(chat[4:], "chat", "Bob", "Alice")
    assert again[0] is first[4] and again[1] is first[5]      # read once, the same objects
