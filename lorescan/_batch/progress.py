"""Progress of a batch on stderr: a bar on a terminal (rich, the ``cli`` extra), plain lines
otherwise, so ``--json`` / ``--csv`` on stdout stay clean.

The bar shows tasks done, chats replayed, generations per second, failures and the ETA; the plain
lines say the same every few seconds and once at the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .aggregate import Aggregate


class Progress:
    """Counts finished tasks; call :meth:`done` per task and :meth:`close` at the end."""

    def __init__(self, tasks: int, stream: TextIO | None = None, *, bar: bool | None = None,
                 every: float = 5.0, enabled: bool = True) -> None:
        self.enabled = enabled
        self.tasks = tasks
        self.stream = stream or sys.stderr
        self.finished = self.chats = self.generations = self.failures = 0
        self.start = time.monotonic()
        self.every = every
        self._last = self.start
        self._bar: Any = None
        if enabled and (bar if bar is not None else self.stream.isatty()):
            self._bar = _rich_bar(tasks, self.stream)

    def done(self, task_ids: Sequence[int], agg: Aggregate) -> None:
        """Tasks finished with aggregate ``agg`` (theirs together)."""
        self.finished += len(task_ids)
        self.chats += agg.chats
        self.generations += agg.generations
        self.failures += len(agg.failures)
        if self._bar is not None:
            progress, task = self._bar
            progress.update(task, completed=self.finished, info=self._counts())
            return
        now = time.monotonic()
        if self.enabled and now - self._last >= self.every:
            self._last = now
            self._line()

    def _counts(self) -> str:
        rate = self.generations / max(1e-9, time.monotonic() - self.start)
        return (f"{self.chats} chats, {self.generations} generations, {rate:,.0f} gen/s, "
                f"{self.failures} failed")

    def _line(self) -> None:
        elapsed = time.monotonic() - self.start
        left = ""
        if 0 < self.finished < self.tasks:
            left = f", ETA {(self.tasks - self.finished) * elapsed / self.finished:.0f} s"
        print(f"lorescan: {self.finished}/{self.tasks} tasks, {self._counts()}, {elapsed:.1f} s{left}",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar[0].stop()
            self._bar = None
        elif self.enabled and self.finished:
            self._line()


def _rich_bar(tasks: int, stream: TextIO) -> Any:
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:   # pragma: no cover - rich is the cli extra
        return None
    progress = Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                        TimeRemainingColumn(), console=Console(file=stream), transient=True)
    progress.start()
    return progress, progress.add_task("replaying", total=tasks, info="")
