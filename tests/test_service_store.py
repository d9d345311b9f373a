"""The service's store shared by several processes (``lorescan serve --processes N``): each process
sees the others' books, never uses a timed state another process has moved on from, and never
overwrites a session another process wrote meanwhile. Two ``Store`` objects (or two apps) on one
data directory stand in for two processes here; ``test_service_processes.py`` runs real ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from lorescan._model import TimedState  # noqa: E402
from lorescan._service import activation  # noqa: E402
from lorescan._service.app import create_app  # noqa: E402
from lorescan._service.config import ServiceConfig  # noqa: E402
from lorescan._service.store import BookRecord, Store  # noqa: E402

from .test_service_conformance import turn_bodies  # noqa: E402
from .test_service_lifecycle import _timed_scenarios  # noqa: E402


def _state(end: int) -> TimedState:
    return TimedState.model_validate({"sticky": {"g.0": {"hash": 7, "start": 1, "end": end, "protected": False}}})


def _record(name: str, digest: str = "h") -> BookRecord:
    return BookRecord(name, digest, "json", "global", 1, 2, 0.0)


def test_a_book_stored_or_deleted_by_one_process_is_seen_by_the_other(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "s.sqlite3"), Store(tmp_path / "s.sqlite3")
    assert one.books == {} and two.books == {}
    assert one.put_book(_record("tide"), b"{}") is True
    assert list(two.books) == ["tide"] and two.books["tide"].hash == "h"
    assert two.put_book(_record("tide", "h2"), b"{ }") is False        # the name was stored already
    assert one.books["tide"].hash == "h2" and one.book_data("tide") == b"{ }"
    assert two.delete_book("tide") is True
    assert one.books == {} and one.delete_book("tide") is False
    one.close()
    two.close()


def test_a_timed_state_kept_in_memory_is_not_used_once_another_process_wrote_the_session(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "s.sqlite3"), Store(tmp_path / "s.sqlite3")
    assert one.read_timed("chat") == (None, None)
    assert one.save_session("chat", _state(5), 1, rev=None)
    kept, rev = one.read_timed("chat")
    assert kept is not None and kept.sticky["g.0"].end == 5
    assert one.read_timed("chat")[0] is kept                           # from memory: the row did not move
    read, rev2 = two.read_timed("chat")
    assert read is not None and read.sticky["g.0"].end == 5 and rev2 == rev
    assert two.save_session("chat", _state(9), 1, rev=rev2)             # the other process moves on
    now, rev3 = one.read_timed("chat")
    assert now is not None and now is not kept and now.sticky["g.0"].end == 9 and rev3 != rev
    assert two.delete_session("chat")
    assert one.read_timed("chat") == (None, None)
    one.close()
    two.close()


def test_a_session_written_meanwhile_is_never_overwritten(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "s.sqlite3"), Store(tmp_path / "s.sqlite3")
    assert one.save_session("chat", _state(5), 1, rev=None)
    assert not two.save_session("chat", _state(6), 1, rev=None)         # not new any more
    _, rev = one.read_timed("chat")
    assert two.save_session("chat", _state(7), 1, rev=rev)
    assert not one.save_session("chat", _state(8), 1, rev=rev)          # computed from a state now gone
    record = one.session("chat")
    assert record is not None and record.generations == 2 and record.timed.sticky["g.0"].end == 7
    one.save_session("chat", _state(8), 3)                              # unconditional (a restore)
    assert two.session("chat").generations == 5                         # type: ignore[union-attr]
    one.close()
    two.close()


def test_a_store_written_before_sessions_had_revisions_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE books (name TEXT PRIMARY KEY, hash TEXT NOT NULL, format TEXT NOT NULL, scope TEXT NOT NULL,
                            entries INTEGER NOT NULL, size INTEGER NOT NULL, updated REAL NOT NULL, data BLOB NOT NULL);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, state TEXT NOT NULL, generations INTEGER NOT NULL,
                               updated REAL NOT NULL);
        INSERT INTO books VALUES ('tide', 'h', 'json', 'global', 1, 2, 0.0, x'7b7d');
    """)
    db.execute("INSERT INTO sessions VALUES ('chat', ?, 4, 0.0)", (_state(6).model_dump_json(),))
    db.commit()
    db.close()
    store = Store(path)
    assert list(store.books) == ["tide"]
    state, rev = store.read_timed("chat")
    assert state is not None and state.sticky["g.0"].end == 6 and rev == ""
    assert store.save_session("chat", _state(7), 1, rev=rev)
    assert store.session("chat").generations == 5                       # type: ignore[union-attr]
    store.close()


def test_two_apps_on_one_store_take_turns_on_each_chat_with_the_exact_timed_results(tmp_path: Path) -> None:
    """Every multi-turn timed scenario, its turns sent to the two apps in turn: each app must read
    the state the other one wrote, as one process would have."""
    scenarios = _timed_scenarios()
    assert len(scenarios) >= 20
    config = ServiceConfig(data_dir=tmp_path / "data")
    with TestClient(create_app(config)) as one, TestClient(create_app(config)) as two:
        for sc in scenarios:
            got = [(one, two)[i % 2].post("/v1/activate", json=body).json()["result"]
                   for i, body in enumerate(turn_bodies(sc, session=sc["name"]))]
            assert got == sc["expected"]["turns"], sc["name"]


def test_a_generation_whose_session_moved_meanwhile_is_computed_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process writes the session while this one evaluates: this one's write is refused,
    and it evaluates again from the newer state (the reply is what a serial order gives)."""
    sc = next(s for s in _timed_scenarios() if len(s["turns"]) >= 3)
    bodies = turn_bodies(sc, session="raced")
    config = ServiceConfig(data_dir=tmp_path / "data")
    evaluations: list[int] = []
    real = activation._evaluate
    with TestClient(create_app(config)) as one, TestClient(create_app(config)) as two:
        assert one.post("/v1/activate", json=bodies[0]).status_code == 200
        one.post("/v1/activate", json={**bodies[0], "session": "warm", "dry_run": True})

        def racing(*args: Any, **kwargs: Any) -> Any:
            evaluations.append(1)
            if len(evaluations) == 1:        # the other process answers turn 2 first
                assert two.post("/v1/activate", json=bodies[1]).json()["result"] == sc["expected"]["turns"][1]
            return real(*args, **kwargs)

        monkeypatch.setattr(activation, "_evaluate", racing)
        third = one.post("/v1/activate", json=bodies[2]).json()["result"]
    # turn 3, first computed from turn 1's state, was refused and computed again from turn 2's
    assert len(evaluations) == 3                     # one's two tries, and the other process's one
    assert third == sc["expected"]["turns"][2]
    store = Store(config.store_path)
    assert store.session("raced").generations == 3   # type: ignore[union-attr]
    store.close()


def _sessions_in_file_alone(path: Path, tmp: Path) -> list[str]:
    """The sessions the database file holds without its write-ahead log (a copy of the file alone)."""
    copy = tmp / "file-alone.sqlite3"
    copy.write_bytes(path.read_bytes())
    db = sqlite3.connect(str(copy))
    try:
        if db.execute("SELECT name FROM sqlite_master WHERE name = 'sessions'").fetchone() is None:
            return []           # not even the tables: they are still in the log
        return [row[0] for row in db.execute("SELECT id FROM sessions ORDER BY id")]
    finally:
        db.close()


def test_the_log_is_copied_into_the_file_by_the_stores_own_thread(tmp_path: Path, monkeypatch: Any) -> None:
    import gc
    import time

    from lorescan._service import store as store_module

    path = tmp_path / "s.sqlite3"
    monkeypatch.setattr(store_module, "CHECKPOINT_SECONDS", 3600.0)
    store = Store(path)
    store.save_session("one", _state(3), 1)
    assert _sessions_in_file_alone(path, tmp_path) == []      # no write copies the log itself
    thread = store._checkpointer._thread
    assert thread.name == "lorescan-store-checkpoint" and thread.is_alive()
    store.close()
    assert not thread.is_alive()
    assert _sessions_in_file_alone(path, tmp_path) == ["one"]

    monkeypatch.setattr(store_module, "CHECKPOINT_SECONDS", 0.05)
    store = Store(path)
    store.save_session("two", _state(4), 1)
    deadline = time.monotonic() + 20
    while _sessions_in_file_alone(path, tmp_path) != ["one", "two"]:     # copied with no close
        assert time.monotonic() < deadline, "the checkpointer thread never copied the log"
        time.sleep(0.02)
    thread = store._checkpointer._thread
    del store                           # dropped unclosed: its thread ends too
    gc.collect()
    thread.join(timeout=20)
    assert not thread.is_alive()


def test_storing_a_book_hands_freed_memory_back_before_compiling_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading and linting a large book leaves tens of MB of garbage: it is released before the
    compile (the peak of storing a book), and again once the reply is sent."""
    from lorescan._service import api, cache

    events: list[str] = []
    monkeypatch.setattr(api, "release_memory", lambda: events.append("release"))
    compile_books = cache._compile

    def compiling(*args: Any) -> Any:
        events.append("compile")
        return compile_books(*args)

    monkeypatch.setattr(cache, "_compile", compiling)
    book = (Path(__file__).resolve().parent.parent / "corpora" / "saltmere.json").read_bytes()
    with TestClient(create_app(ServiceConfig(data_dir=tmp_path / "data"))) as client:
        reply = client.put("/v1/books/saltmere", content=book)
        assert reply.status_code == 201, reply.text
        assert reply.json()["name"] == "saltmere"
    assert events == ["release", "compile", "release"]
