"""Terminal output for the commands: rich tables when ``rich`` is installed, plain text otherwise."""

from __future__ import annotations

import os
import sys
import textwrap
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


NBSP = "\u00a0"
PIPED_WIDTH = 100
"""Line width of tables written to a pipe or a file when ``COLUMNS`` does not say otherwise."""


def output_width() -> int:
    """The width to print at when stdout is no terminal: ``COLUMNS`` when it holds a number (at
    least 20), else the width of the terminal stderr is on (``lorescan lint book.json | less``),
    else :data:`PIPED_WIDTH`."""
    try:
        return max(20, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        pass
    try:
        return max(20, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return PIPED_WIDTH


def column_widths(natural: list[int], floor: list[int], total: int) -> list[int]:
    """Widths for columns whose contents want ``natural`` characters, within ``total`` in all.

    The columns that cannot shrink (``floor`` equals ``natural``) keep their width; the others share
    what is left in proportion to their natural widths, never below their floor nor above their
    natural width. No line runs past ``total`` unless even the floors do not fit.
    """
    if sum(natural) <= total:
        return list(natural)
    widths = [min(f, n) for f, n in zip(floor, natural)]
    flexible = [i for i in range(len(natural)) if widths[i] < natural[i]]
    while flexible:
        room = total - sum(w for i, w in enumerate(widths) if i not in flexible)
        weight = sum(natural[i] for i in flexible)
        share = {i: room * natural[i] // weight for i in flexible}
        pinned = [i for i in flexible if share[i] >= natural[i] or share[i] <= floor[i]]
        if not pinned:
            for n, i in enumerate(sorted(flexible, key=lambda i: -natural[i])):
                widths[i] = share[i] + (1 if n < room - sum(share.values()) else 0)
            break
        for i in pinned:
            widths[i] = natural[i] if share[i] >= natural[i] else min(floor[i], natural[i])
            flexible.remove(i)
    return widths


def wrap_cell(text: str, width: int) -> list[str]:
    """A cell's lines: its own line breaks kept, each line wrapped at spaces, long words folded.

    A no-break space (U+00A0) holds two words together; it is printed as a plain space.
    """
    out: list[str] = []
    for line in text.splitlines() or [""]:
        out.extend(textwrap.wrap(line, width, break_long_words=True, break_on_hyphens=False) or [""])
    return [line.replace(NBSP, " ") for line in out]


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.replace(NBSP, "_").split()), default=0)


def plain_table(columns: list[str], rows: list[list[str]], width: int, gap: int = 2) -> list[str]:
    """Aligned plain-text lines, none longer than ``width``: cells wrap inside their column."""
    n = len(columns)
    natural = [max([len(columns[i])] + [max(map(len, (r[i].splitlines() or [""]))) for r in rows]) for i in range(n)]
    total = max(width - gap * (n - 1), n)
    heads = [max(_longest_word(columns[i]), 1) for i in range(n)]
    # a column's floor: its longest word (at most 24 characters), which is all of it when its cells
    # are single words (names, codes); the widest floors are cut first until they all fit
    longest = [max([_longest_word(r[i]) for r in rows], default=0) for i in range(n)]
    floor = [max(heads[i], min(24, longest[i])) for i in range(n)]
    while sum(floor) > total:
        i = max(range(n), key=lambda i: floor[i] - heads[i] and floor[i])
        if floor[i] <= heads[i]:
            break
        floor[i] -= 1
    widths = column_widths(natural, floor, total)
    sep = " " * gap

    def lines_of(cells: list[str]) -> list[str]:
        wrapped = [wrap_cell(c, widths[i]) for i, c in enumerate(cells)]
        height = max(len(w) for w in wrapped)
        return [sep.join((w[k] if k < len(w) else "").ljust(widths[i]) for i, w in enumerate(wrapped)).rstrip()
                for k in range(height)]

    out = lines_of(columns)
    out.append(sep.join("-" * w for w in widths))
    for r in rows:
        out.extend(lines_of(r))
    return out


class Table:
    """A table that prints with rich in a terminal, and as aligned, wrapped plain text otherwise."""

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
            print_wrapped(self.title)
        print("\n".join(plain_table(self.columns, self.rows, output_width())))


def print_wrapped(text: str) -> None:
    """Print a paragraph: as it is in a terminal, wrapped at :func:`output_width` otherwise."""
    if sys.stdout.isatty():
        print(text)
    else:
        print("\n".join(textwrap.wrap(text, output_width(), break_on_hyphens=False)) or "")


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
