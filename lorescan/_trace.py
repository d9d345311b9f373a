"""A record of why each entry did or did not activate, kept only when asked for.

The engine calls these hooks only when tracing is on, so an untraced evaluation pays nothing.
Events are plain dicts so reports can render them and ``--json`` can print them as they are.

A focused trace (``focus`` not ``None``) records only the entries the scan text reaches (those the
untraced engine would look at, plus every delayed and cooled-down one) and the entries named in
``focus``: on a large book the full trace names every entry on every pass, which costs far more
than the evaluation itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._compile import CompiledEntry


class Trace:
    """Events of one evaluation, in the order SillyTavern's code would meet them."""

    def __init__(self, focus: Iterable[str] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.pass_index = 0
        #: ``None``: every entry; else the keys (``"<book>.<uid>"``) recorded beyond those reached
        self.focus = frozenset(focus) if focus is not None else None
        self._focus_gids: list[int] | None = None

    def focus_gids(self, by_key: Mapping[str, CompiledEntry]) -> list[int]:
        """The gids of the focus entries (``by_key``: a plan's entries by key), found once."""
        if self._focus_gids is None:
            found = (by_key.get(key) for key in self.focus or ())
            self._focus_gids = [ce.gid for ce in found if ce is not None]
        return self._focus_gids

    def _add(self, kind: str, **data: Any) -> None:
        data["event"] = kind
        data["pass"] = self.pass_index
        self.events.append(data)

    def begin_pass(self, index: int, state: str, depth: int, level: float) -> None:
        self.pass_index = index
        self._add("pass", state=state, scan_depth=depth, recursion_level=level)

    def gate(self, ce: CompiledEntry, ok: bool, why: str) -> None:
        self._add("candidate" if ok else "skipped", entry=ce.key, why=why)

    def group_removed(self, key: str, why: str) -> None:
        self._add("group", entry=key, why=why)

    def roll(self, what: str, roll: float, total: float) -> None:
        self._add("group_roll", what=what, roll=roll, total=total)

    def probability(self, ce: CompiledEntry, roll: float, probability: Any, ok: bool) -> None:
        self._add("probability", entry=ce.key, roll=roll, probability=probability, passed=ok)

    def budget(self, ce: CompiledEntry, outcome: str, meter: Any, content: Any = None) -> None:
        self._add("budget", entry=ce.key, outcome=outcome, budget=meter.budget,
                  before=meter.activated_tokens(), pass_tokens=getattr(content, "tokens", None),
                  overflowed_by=meter.overflow_entry)

    def activated(self, ce: CompiledEntry, pass_index: int) -> None:
        self._add("activated", entry=ce.key)

    def recursion_text(self, text: str, sources: list[str]) -> None:
        self._add("recursion_text", text=text, sources=sources)

    def stop(self, why: str) -> None:
        self._add("stop", why=why)
