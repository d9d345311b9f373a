"""Finding the chats of a batch: files, directories and globs, and files that hold many chats.

A *task* is the unit a worker replays: one chat file, or a run of lines of a many-chat JSONL
file. A ``.jsonl`` file holds many chats when its first line is an object with a ``messages``
list (one conversation per line, as OpenAI-style datasets store them); each line is then a chat
of its own, named ``path:line``. Any other file is one chat, in any format ``load`` reads
(SillyTavern's ``.jsonl`` — a header line, then one message per line — included). The caller
keeps the list of tasks (paths and byte offsets, never chat contents); workers read the files.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

from .._errors import LorescanError
from .._formats.chats import Chat

#: what a directory is searched for (chat formats lorescan reads)
CHAT_SUFFIXES = (".jsonl", ".json", ".txt", ".yaml", ".yml")
#: lines of a many-chat file per task
LINES_PER_TASK = 32
_GLOB = set("*?[")


@dataclass(frozen=True)
class ChatTask:
    """One unit of work: a chat file (``end == -1``), or lines ``[start, end)`` (byte offsets) of
    a many-chat file, the first of them line ``line`` (1-based)."""

    id: int
    path: str
    start: int = 0
    end: int = -1
    line: int = 0

    @property
    def where(self) -> str:
        """How a failure names the task: its path, or ``path:line`` of its first chat."""
        return self.path if self.end < 0 else f"{self.path}:{self.line}"


def expand(paths: list[str]) -> list[str]:
    """Every chat file the paths name, in a stable order: files as given, directories searched
    recursively for :data:`CHAT_SUFFIXES` (hidden files skipped), globs expanded (``**`` too)."""
    out: dict[str, None] = {}
    for raw in paths:
        if os.path.isdir(raw):
            for found in _walk(raw):
                out.setdefault(found)
        elif os.path.isfile(raw):
            out.setdefault(raw)
        elif _GLOB & set(raw):
            hits = sorted(p for p in glob.glob(raw, recursive=True) if os.path.isfile(p))
            if not hits:
                raise LorescanError("matches no file", file=raw)
            for hit in hits:
                out.setdefault(hit)
        else:
            raise LorescanError("no such file or directory", file=raw)
    return list(out)


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and name.lower().endswith(CHAT_SUFFIXES):
                yield os.path.join(dirpath, name)


def is_many_chats(path: str) -> bool:
    """Whether ``path`` is a JSONL file of one conversation (``{"messages": [...]}``) per line."""
    if not path.lower().endswith(".jsonl"):
        return False
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    first = json.loads(raw)
                    return isinstance(first, dict) and isinstance(first.get("messages"), list)
    except (OSError, ValueError):
        return False            # the worker reports the error of reading it as one chat
    return False


def tasks(paths: list[str], lines_per_task: int = LINES_PER_TASK) -> list[ChatTask]:
    """The tasks for every chat the paths name (see the module's note on many-chat files)."""
    out: list[ChatTask] = []
    for path in expand(paths):
        if is_many_chats(path):
            for start, end, line in _chunks(path, lines_per_task):
                out.append(ChatTask(len(out), path, start, end, line))
        else:
            out.append(ChatTask(len(out), path))
    return out


def _chunks(path: str, size: int) -> Iterator[tuple[int, int, int]]:
    """Byte ranges of ``size`` lines each (blank lines count but hold no chat)."""
    offset = start = 0
    line = first = 1
    count = 0
    with open(path, "rb") as f:
        for raw in f:
            if count == 0:
                start, first = offset, line
            offset += len(raw)
            line += 1
            count += 1
            if count == size:
                yield start, offset, first
                count = 0
    if count:
        yield start, offset, first


def read_task(task: ChatTask) -> Iterator[tuple[str, Chat | None, str | None]]:
    """The task's chats: ``(identity, chat, None)``, or ``(identity, None, error)`` for a chat that
    cannot be read (its one-line error). Identity: the path, or ``path:line`` in a many-chat file."""
    from .._formats.common import read_file
    from .._load import load_bytes

    if task.end < 0:
        try:
            yield task.path, _chat(load_bytes(read_file(task.path), task.path), task.path), None
        except Exception as exc:
            yield task.path, None, error_line(exc, task.path)
        return
    try:
        with open(task.path, "rb") as f:
            f.seek(task.start)
            body = f.read(task.end - task.start)
    except OSError as exc:
        yield f"{task.path}:{task.line}", None, f"{task.path}: cannot read: {exc.strerror or exc}"
        return
    for n, raw in enumerate(body.split(b"\n"), task.line):
        if not raw.strip():
            continue
        ident = f"{task.path}:{n}"
        try:
            yield ident, _chat(load_bytes(raw, ident), ident), None
        except Exception as exc:
            yield ident, None, error_line(exc, ident)


def _chat(loaded: object, path: str) -> Chat:
    chat = getattr(loaded, "chat", None)
    if chat is None:
        raise LorescanError(f"is a {getattr(loaded, 'format', '?')} file, not a chat", file=path)
    return chat


def error_line(exc: BaseException, path: str) -> str:
    """A chat's error in one line, without the path the failure list names anyway. An error that
    is not about the input (a bug) is kept too, named by its type, so the batch goes on."""
    if isinstance(exc, LorescanError):
        text = str(exc)
        return text[len(path) + 2:] if text.startswith(f"{path}: ") else text
    return f"unexpected {type(exc).__name__}: {exc}".splitlines()[0]
