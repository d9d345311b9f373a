"""Replay a chat as it was written: one evaluation before each character message.

Each generation sees every message before the one being generated, and the timed-effect state
(sticky, cooldown) carries from one generation to the next, as it would have in SillyTavern.
The first message is the greeting, which nothing generated, so it gets no evaluation.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._construct import make
from ._engine import Lore
from ._model import ActivationResult, Character, ChatMessage, Settings, TimedState
from ._request import RandomSource, chat_messages
from ._results import result_json
from ._scan import KnownChat, kept_indexes

#: how messages are numbered everywhere (a replay's ``msg`` column, ``explain --at``)
NUMBERING = "messages are numbered from #1, the first message of the chat"


@dataclass
class Generation:
    """One replayed generation: which message it produced and what the engine gave for it."""

    index: int
    """Index (0-based, oldest first) of the message this generation produced."""
    result: ActivationResult
    new: list[str] = field(default_factory=list)
    """Entry keys activated now but not in the previous generation."""
    gone: list[str] = field(default_factory=list)
    """Entry keys activated in the previous generation but not now."""

    def to_json(self) -> dict[str, Any]:
        """The conformance-shaped result plus the budget and what changed, for ``--json`` output."""
        r = self.result
        return {
            "generation": self.index,
            **result_json(r),
            "budget": {"limit": r.budget, "used": r.budget_used, "overflowed": r.overflowed},
            "new": self.new,
            "gone": self.gone,
        }


class Session:
    """A chat in progress: append messages, evaluate before each reply, timed state carried along.

    Each message's key hits are computed once and remembered by the compiled books, so a new
    generation scans only the messages it has not seen; results equal a fresh evaluation's.
    Whether a message is a system message is read once, when an evaluation first reaches it:
    append new messages rather than turning old ones into system messages (or back) in place.
    """

    def __init__(self, lore: Lore, *, settings: Settings | None = None, user_name: str = "User",
                 char_name: str = "Character", character: Character | None = None,
                 timed: TimedState | None = None, rng: RandomSource | None = None) -> None:
        self.lore = lore
        self.settings = settings or make(Settings)
        self.user_name = user_name
        self.char_name = char_name
        self.character = character
        self.timed = timed or make(TimedState)
        self.rng = rng
        self.messages: list[ChatMessage] = []
        self._kept: list[int] = []      # indexes of the non-system messages among the first ...
        self._read = 0                  # ... ``_read`` messages
        self._read_list: list[ChatMessage] | None = None   # of this list

    def append(self, *messages: ChatMessage | dict[str, Any]) -> None:
        """Add messages at the end of the chat."""
        self.messages.extend(chat_messages(list(messages)))

    def activate(self, *, upto: int | None = None, trace: bool = False, **kwargs: Any) -> ActivationResult:
        """Evaluate the chat (its first ``upto`` messages); a non-dry run carries the timed state on."""
        result = self.lore.activate(self._chat(upto), settings=self.settings, user_name=self.user_name,
                                    char_name=self.char_name, character=self.character, timed=self.timed,
                                    rng=self.rng, trace=trace, **kwargs)
        if not kwargs.get("dry_run"):
            self.timed = result.timed
        return result

    def _chat(self, upto: int | None) -> list[ChatMessage]:
        """The first ``upto`` messages (all for ``None``), as a :class:`KnownChat` when they are all
        :class:`ChatMessage` objects (its kept indexes extended by the messages not read before)."""
        messages = self.messages
        n = len(range(len(messages))[:upto])
        if messages is not self._read_list or len(messages) < self._read:
            self._kept, self._read, self._read_list = [], 0, messages   # a new list: read it again
        if n > self._read:
            fresh = messages[self._read:n]
            if not all(type(m) is ChatMessage for m in fresh):
                return messages[:n]
            self._kept += kept_indexes(messages, self._read, n)
            self._read = n
        chat = KnownChat(messages[:n])
        chat.kept = self._kept[:bisect_left(self._kept, n)] if n < self._read else self._kept
        return chat


def generation_points(messages: Sequence[ChatMessage]) -> list[int]:
    """Indexes of the messages a replay evaluates before: every character message after the first."""
    return [i for i, m in enumerate(messages) if i > 0 and not m.is_user and not m.is_system]


def replay(
    lore: Lore,
    messages: Sequence[ChatMessage],
    *,
    settings: Settings | None = None,
    user_name: str = "User",
    char_name: str = "Character",
    character: Character | None = None,
    timed: TimedState | None = None,
    rng: RandomSource | None = None,
    trace: bool = False,
    points: Sequence[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Generation]:
    """Yield one :class:`Generation` per character message, oldest first."""
    session = Session(lore, settings=settings, user_name=user_name, char_name=char_name,
                      character=character, timed=timed, rng=rng)
    session.append(*messages)
    previous: list[str] = []
    was: set[str] = set()
    todo = list(points) if points is not None else generation_points(messages)
    for n, index in enumerate(todo):
        result = session.activate(upto=index, trace=trace)
        keys = result.activated_keys()
        now = set(keys)
        gen = Generation(index=index, result=result, new=[k for k in keys if k not in was],
                         gone=[k for k in previous if k not in now])
        previous, was = keys, now
        if progress is not None:
            progress(n + 1, len(todo))
        yield gen
