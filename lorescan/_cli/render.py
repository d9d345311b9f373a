"""Terminal output for the commands: rich tables when ``rich`` is installed, plain text otherwise."""

from __future__ import annotations

import sys
from typing import Any

POSITION_LABELS = {0: "before", 1: "after", 2: "AN top", 3: "AN bottom", 4: "at depth",
                   5: "EM top", 6: "EM bottom", 7: "outlet"}


def position_label(position: Any) -> str:
    if isinstance(position, (int, float)) and not isinstance(position, bool) and position in POSITION_LABELS:
        return POSITION_LABELS[int(position)]
    return f"nowhere: position {position!r}"


def _rich() -> Any:
    try:
        from rich.console import Console

        return Console(soft_wrap=False)
    except ImportError:  # pragma: no cover - rich is optional
        return None


class Table:
    """A table that prints with rich in a terminal and as aligned plain text otherwise."""

    def __init__(self, columns: list[str], title: str = "") -> None:
        self.columns = columns
        self.title = title
        self.rows: list[list[str]] = []

    def add(self, row: list[str]) -> None:
        self.rows.append(row)

    def print(self) -> None:
        console = _rich() if sys.stdout.isatty() else None
        if console is not None:
            from rich.table import Table as RichTable

            t = RichTable(title=self.title, show_lines=False)
            for c in self.columns:
                t.add_column(c, overflow="fold")
            for r in self.rows:
                t.add_row(*r)
            console.print(t)
            return
        if self.title:
            print(self.title)
        widths = [len(c) for c in self.columns]
        for r in self.rows:
            for i, cell in enumerate(r):
                widths[i] = min(max(widths[i], len(cell)), 80)
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(self.columns)))
        print("  ".join("-" * w for w in widths))
        for r in self.rows:
            print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)))


class _Bar:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._p = Progress(transient=True, console=Console(stderr=True))
        self._p.start()
        self._task = self._p.add_task("replaying", total=total)

    def update(self, done: int, total: int) -> None:
        self._p.update(self._task, completed=done)

    def close(self) -> None:
        self._p.stop()


def progress_bar(total: int) -> _Bar | None:
    """A progress bar on stderr (rich), or ``None`` when rich is not installed."""
    try:
        return _Bar(total)
    except ImportError:  # pragma: no cover
        return None
