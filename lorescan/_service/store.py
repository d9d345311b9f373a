"""The service's embedded store: one SQLite file (write-ahead log) holding books and sessions.

Books keep their original bytes, so a book reads back exactly as it was sent, with its name, the
SHA-256 of the bytes and what loading it found (format, scope, entry count). Sessions keep a chat's
timed-effect state (sticky and cooldown records, with the hashes that tie them to their entries)
as JSON. Nothing in a request becomes a file path: names are keys in the database.

One connection serves every thread, behind a lock; each write is its own transaction, so what a
reply reports is stored. :meth:`Store.close` checkpoints the log into the database file. The
timed state of the sessions used last is also kept in memory (:meth:`Store.timed`), so a
generation reads its session's state without a query and a parse; the database stays the truth
(written on every generation, read after a restart).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._model import TimedState

#: sessions whose timed state is kept in memory (the most recently used)
TIMED_KEPT = 4096

SCHEMA = """
CREATE TABLE IF NOT EXISTS books (
    name TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    format TEXT NOT NULL,
    scope TEXT NOT NULL,
    entries INTEGER NOT NULL,
    size INTEGER NOT NULL,
    updated REAL NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    generations INTEGER NOT NULL,
    updated REAL NOT NULL
);
"""


@dataclass(frozen=True)
class BookRecord:
    """A stored book without its bytes: what ``GET /v1/books`` lists."""

    name: str
    hash: str
    format: str
    scope: str
    entries: int
    size: int
    updated: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SessionRecord:
    """A chat's timed-effect state and how many generations wrote it."""

    id: str
    timed: TimedState
    generations: int
    updated: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "timed": self.timed.to_json(with_hash=True), "generations": self.generations,
                "updated": self.updated}


class Store:
    """Books and sessions in ``path`` (created with its directory when missing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        rows = self._db.execute("SELECT name, hash, format, scope, entries, size, updated FROM books").fetchall()
        #: every stored book by name (kept in memory: a request names books on every activation)
        self.books: dict[str, BookRecord] = {r[0]: BookRecord(*r) for r in rows}
        self._timed: OrderedDict[str, TimedState] = OrderedDict()
        self._closed = False

    # -- books -------------------------------------------------------------------------------
    def put_book(self, record: BookRecord, data: bytes) -> bool:
        """Store a book (replacing one of the same name); ``True`` when the name is new."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO books (name, hash, format, scope, entries, size, updated, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.name, record.hash, record.format, record.scope, record.entries, record.size,
                 record.updated, data))
            new = record.name not in self.books
            self.books[record.name] = record
        return new

    def book_data(self, name: str) -> bytes | None:
        """A stored book's original bytes, or ``None``."""
        with self._lock:
            row = self._db.execute("SELECT data FROM books WHERE name = ?", (name,)).fetchone()
        return bytes(row[0]) if row else None

    def delete_book(self, name: str) -> bool:
        with self._lock:
            deleted = self._db.execute("DELETE FROM books WHERE name = ?", (name,)).rowcount > 0
            self.books.pop(name, None)
        return deleted

    # -- sessions ----------------------------------------------------------------------------
    def session(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            row = self._db.execute("SELECT state, generations, updated FROM sessions WHERE id = ?",
                                   (session_id,)).fetchone()
        if row is None:
            return None
        return SessionRecord(session_id, TimedState.model_validate(json.loads(row[0])), row[1], row[2])

    def timed(self, session_id: str) -> TimedState | None:
        """A session's timed state (``None`` for a new session), from memory when it was used lately.
        The state is shared: read it, never change it (the engine copies the state it is given)."""
        with self._lock:
            state = self._timed.get(session_id)
            if state is not None:
                self._timed.move_to_end(session_id)
                return state
        record = self.session(session_id)
        if record is None:
            return None
        with self._lock:
            self._remember(session_id, record.timed)
        return record.timed

    def _remember(self, session_id: str, state: TimedState) -> None:
        self._timed[session_id] = state
        self._timed.move_to_end(session_id)
        if len(self._timed) > TIMED_KEPT:
            self._timed.popitem(last=False)

    def save_session(self, session_id: str, timed: TimedState, generations: int) -> None:
        """Record a chat's timed state after ``generations`` more generations."""
        state = json.dumps(timed.to_json(with_hash=True), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions (id, state, generations, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET state = excluded.state, "
                "generations = sessions.generations + excluded.generations, updated = excluded.updated",
                (session_id, state, generations, time.time()))
            self._remember(session_id, timed)

    def delete_session(self, session_id: str) -> bool:
        with self._lock:
            self._timed.pop(session_id, None)
            return self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def session_count(self) -> int:
        with self._lock:
            if self._closed:
                return 0
            return int(self._db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Write the log into the database file and close it (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()
