"""The service's embedded store: one SQLite file (write-ahead log) holding books and sessions.

Books keep their original bytes, so a book reads back exactly as it was sent, with its name, the
SHA-256 of the bytes and what loading it found (format, scope, entry count). Sessions keep a chat's
timed-effect state (sticky and cooldown records, with the hashes that tie them to their entries)
as JSON. Nothing in a request becomes a file path: names are keys in the database.

One connection serves every thread, behind a lock; each write is its own transaction, so what a
reply reports is stored. The log is copied into the database file by a thread of the store's own,
on a connection of its own, every second (:class:`_Checkpointer`), instead of by whichever write
finds it past SQLite's 1,000 pages: that write is the event loop's, and the copy and its disk sync
stalled it for 2-6 ms every thousand writes or so. A write still checkpoints itself past
``AUTOCHECKPOINT_PAGES`` should the thread fall behind. :meth:`Store.close` stops the thread and
checkpoints the log into the database file.

Several processes may share one store (``lorescan serve --processes N``), so nothing kept in
memory is trusted without the database's word on it:

- The list of books is read again when the ``books`` counter in ``meta`` moved (every put and
  delete moves it, in the same transaction).
- Each session row has a revision (``rev``), new at every write. The timed state of the sessions
  used last is kept in memory with its revision (:meth:`Store.read_timed`), and used only while the
  row still has that revision: a generation then costs one small query, not a parse.
- A generation's state is written only if the row still has the revision it was computed from
  (:meth:`Store.save_session` with ``rev``); otherwise another process wrote that chat meanwhile, and
  the caller computes the generation again from the newer state. So two processes never lose each
  other's writes, and a chat's generations stay in one order.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # the model is imported where a state is read: the supervisor of
    from .._model import TimedState  # several processes opens the store without it

#: sessions whose timed state is kept in memory (the most recently used)
TIMED_KEPT = 4096
#: how often the checkpointer thread copies the log into the database file
CHECKPOINT_SECONDS = 1.0
#: pages of log at which a write checkpoints it itself (SQLite's default is 1,000): reached only
#: when the checkpointer falls behind (about 40 MB of log)
AUTOCHECKPOINT_PAGES = 10_000

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
    updated REAL NOT NULL,
    rev TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""

#: ``save_session``'s ``rev`` when the write needs no check
ANY_REV = object()


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
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._migrate()
        self._db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        self._checkpointer = _Checkpointer(path)
        weakref.finalize(self, self._checkpointer.stopping.set)     # a store dropped unclosed
        self._books: dict[str, BookRecord] = {}
        self._books_version: int | None = None
        self._timed: OrderedDict[str, tuple[TimedState, str]] = OrderedDict()
        self._closed = False

    def _migrate(self) -> None:
        """A store written before sessions had revisions gets the column (rows keep their data)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(sessions)")}
        if "rev" not in columns:
            try:
                self._db.execute("ALTER TABLE sessions ADD COLUMN rev TEXT NOT NULL DEFAULT ''")
            except sqlite3.OperationalError:    # another process added it first
                columns = {row[1] for row in self._db.execute("PRAGMA table_info(sessions)")}
                if "rev" not in columns:
                    raise

    # -- books -------------------------------------------------------------------------------
    @property
    def books(self) -> dict[str, BookRecord]:
        """Every stored book by name (read again only when some process changed the list)."""
        with self._lock:
            version = self._version()
            if version != self._books_version:
                rows = self._db.execute("SELECT name, hash, format, scope, entries, size, updated FROM books")
                self._books = {r[0]: BookRecord(*r) for r in rows.fetchall()}
                self._books_version = version
            return self._books

    def _version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'books'").fetchone()
        return int(row[0]) if row else 0

    def _books_changed(self) -> None:
        """Move the books counter (inside the caller's transaction) and forget the list read."""
        self._db.execute("INSERT INTO meta (key, value) VALUES ('books', 1) "
                         "ON CONFLICT(key) DO UPDATE SET value = value + 1")
        self._books_version = None

    def put_book(self, record: BookRecord, data: bytes) -> bool:
        """Store a book (replacing one of the same name); ``True`` when the name is new."""
        with self._lock, self._transaction():
            new = self._db.execute("SELECT 1 FROM books WHERE name = ?", (record.name,)).fetchone() is None
            self._db.execute(
                "INSERT OR REPLACE INTO books (name, hash, format, scope, entries, size, updated, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.name, record.hash, record.format, record.scope, record.entries, record.size,
                 record.updated, data))
            self._books_changed()
        return new

    def book_data(self, name: str) -> bytes | None:
        """A stored book's original bytes, or ``None``."""
        with self._lock:
            row = self._db.execute("SELECT data FROM books WHERE name = ?", (name,)).fetchone()
        return bytes(row[0]) if row else None

    def delete_book(self, name: str) -> bool:
        with self._lock, self._transaction():
            deleted = self._db.execute("DELETE FROM books WHERE name = ?", (name,)).rowcount > 0
            if deleted:
                self._books_changed()
        return deleted

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    # -- sessions ----------------------------------------------------------------------------
    def session(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            row = self._db.execute("SELECT state, generations, updated FROM sessions WHERE id = ?",
                                   (session_id,)).fetchone()
        if row is None:
            return None
        return SessionRecord(session_id, _timed_state(row[0]), row[1], row[2])

    def timed(self, session_id: str) -> TimedState | None:
        """A session's timed state (``None`` for a new session); see :meth:`read_timed`."""
        return self.read_timed(session_id)[0]

    def read_timed(self, session_id: str) -> tuple[TimedState | None, str | None]:
        """A session's timed state and its revision (``None, None`` for a new session). The state
        kept in memory is used while the stored row still has its revision, so a generation reads
        it without a parse. The state is shared: read it, never change it (the engine copies the
        state it is given)."""
        with self._lock:
            kept = self._timed.get(session_id)
            row = self._db.execute("SELECT rev, CASE WHEN rev = ? THEN NULL ELSE state END FROM sessions "
                                   "WHERE id = ?", (kept[1] if kept else None, session_id)).fetchone()
            if row is None:
                if kept is not None:
                    del self._timed[session_id]
                return None, None
            rev, text = row
            if text is None and kept is not None:
                self._timed.move_to_end(session_id)
                return kept
        state = _timed_state(text)
        with self._lock:
            self._remember(session_id, state, rev)
        return state, rev

    def _remember(self, session_id: str, state: TimedState, rev: str) -> None:
        self._timed[session_id] = (state, rev)
        self._timed.move_to_end(session_id)
        if len(self._timed) > TIMED_KEPT:
            self._timed.popitem(last=False)

    def save_session(self, session_id: str, timed: TimedState, generations: int, rev: object = ANY_REV) -> bool:
        """Record a chat's timed state after ``generations`` more generations. Given ``rev`` (from
        :meth:`read_timed`; ``None``: no session yet), only if the stored session still has that
        revision: ``False`` when another process wrote it meanwhile (nothing is written then)."""
        state = json.dumps(timed.to_json(with_hash=True), ensure_ascii=False)
        new_rev = os.urandom(8).hex()
        now = time.time()
        with self._lock:
            if rev is ANY_REV:
                cursor = self._db.execute(
                    "INSERT INTO sessions (id, state, generations, updated, rev) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET state = excluded.state, generations = "
                    "sessions.generations + excluded.generations, updated = excluded.updated, rev = excluded.rev",
                    (session_id, state, generations, now, new_rev))
            elif rev is None:
                cursor = self._db.execute(
                    "INSERT INTO sessions (id, state, generations, updated, rev) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO NOTHING", (session_id, state, generations, now, new_rev))
            else:
                cursor = self._db.execute(
                    "UPDATE sessions SET state = ?, generations = generations + ?, updated = ?, rev = ? "
                    "WHERE id = ? AND rev = ?", (state, generations, now, new_rev, session_id, rev))
            if cursor.rowcount != 1:
                self._timed.pop(session_id, None)
                return False
            self._remember(session_id, timed, new_rev)
        return True

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
            self._checkpointer.stop()
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()


class _Checkpointer:
    """A thread that copies the store's write-ahead log into its database file every
    ``CHECKPOINT_SECONDS``, on a connection of its own: a passive checkpoint, which waits on no
    reader or writer (what a reader still needs is copied at a later turn), while the store's own
    connection serves requests (Python's sqlite3 lets other threads run during the copy)."""

    def __init__(self, path: Path) -> None:
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(str(path), self.stopping),
                                        name="lorescan-store-checkpoint", daemon=True)
        self._thread.start()

    @staticmethod
    def _run(path: str, stopping: threading.Event) -> None:     # holds no reference to the store
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
        except sqlite3.Error:
            return          # the writes' own bound (AUTOCHECKPOINT_PAGES) keeps the log in check
        try:
            while not stopping.wait(CHECKPOINT_SECONDS):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass        # busy, or the disk said no: the next turn, or a write's own bound
        finally:
            db.close()

    def stop(self) -> None:
        """Stop the thread, letting a copy in progress finish."""
        self.stopping.set()
        self._thread.join()


def _timed_state(text: str) -> TimedState:
    from .._model import TimedState

    return TimedState.model_validate(json.loads(text))


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if kind is not None else "COMMIT")
