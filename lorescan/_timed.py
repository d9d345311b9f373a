"""Timed effects: sticky, cooldown and delay, read at the start of an evaluation and written at its end.

The state is keyed ``"<book>.<uid>"`` and measured in chat lengths (the number of scanned
messages). Each record names its entry by a hash; lorescan matches SillyTavern's own hash when
the state came from a SillyTavern chat file, and otherwise the entry key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from . import _js
from ._compile import CompiledEntry
from ._construct import construct
from ._model import TimedEffect, TimedState
from ._plan import Plan


class TimedEffects:
    """The effects in force for one evaluation, and the state it leaves behind."""

    def __init__(self, state: TimedState | None, plan: Plan, chat_length: int) -> None:
        # made as TimedState(sticky=..., cooldown=...) makes it, without its per-call validation
        # (every value is the engine's own: this runs once per evaluation)
        self.state = construct(TimedState, {
            "sticky": {k: v.model_copy() for k, v in state.sticky.items()} if state is not None else {},
            "cooldown": {k: v.model_copy() for k, v in state.cooldown.items()} if state is not None else {},
        })
        self.plan = plan
        self.entries = plan.entries
        self.chat_length = chat_length
        self.sticky: set[int] = set()
        self.cooldown: set[int] = set()
        self.delay: set[int] = set()
        self.events: list[tuple[str, str, str]] = []

    def _find(self, key: str, effect: TimedEffect) -> CompiledEntry | None:
        """The entry a record belongs to: by SillyTavern's hash when it has one, else by key."""
        ce = self.plan.by_key().get(key)
        h = effect.hash
        if h is None:
            return ce
        want = str(h)
        if ce is not None and str(ce.st_hash) == want:
            return ce
        for other in self.entries:
            if str(other.st_hash) == want:
                return other
        return None

    def check(self, read_sticky_cooldown: bool, apply_delay: bool) -> None:
        """``checkTimedEffects``: expire records, start cooldowns of ended stickies, find delays."""
        if read_sticky_cooldown:
            self._check_type("sticky", self.sticky)
            self._check_type("cooldown", self.cooldown)
        if apply_delay:
            for ce in self.plan.delayed:
                if self.chat_length < _js.to_number(ce.delay):
                    self.delay.add(ce.gid)

    def _check_type(self, kind: str, active: set[int]) -> None:
        records: dict[str, TimedEffect] = getattr(self.state, kind)
        for key, effect in list(records.items()):
            ce = self._find(key, effect)
            if self.chat_length <= _js.to_number(effect.start) and not effect.protected:
                del records[key]
                self.events.append((key, kind, "removed: the chat did not advance"))
                continue
            end = _js.to_number(effect.end)     # Number(value.end): a saved Infinity reads back as null, 0
            if ce is None:
                if self.chat_length >= end:
                    del records[key]
                continue
            if not _js.truthy(getattr(ce, kind)):
                del records[key]
                continue
            if self.chat_length >= end:
                del records[key]
                self.events.append((key, kind, "ended"))
                if kind == "sticky" and _js.truthy(ce.cooldown):
                    self.state.cooldown[ce.key] = self._effect(ce, "cooldown", protected=True)
                    self.cooldown.add(ce.gid)
                continue
            active.add(ce.gid)

    def _effect(self, ce: CompiledEntry, kind: str, protected: bool) -> TimedEffect:
        span = _js.to_number(getattr(ce, kind))
        end = self.chat_length + span
        end_value = int(end) if math.isfinite(end) and end == int(end) else end
        return construct(TimedEffect, {"start": self.chat_length, "end": end_value, "protected": protected,
                                       "hash": ce.st_hash})

    def record(self, activated: Sequence[CompiledEntry]) -> None:
        """``setTimedEffects``: start sticky/cooldown for activated entries that have none yet."""
        for ce in activated:
            for kind in ce.timed_kinds:   # "sticky" and/or "cooldown", when truthy
                records: dict[str, TimedEffect] = getattr(self.state, kind)
                if ce.key not in records:
                    records[ce.key] = self._effect(ce, kind, protected=False)
