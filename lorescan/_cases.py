"""Lorebook regression tests: expectations about one evaluation, checked against its result.

A case file (YAML or JSON) names books, settings and cases; each case gives a chat and what the
author expects: entries activated or not, where an entry lands, whether everything fits the budget.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._model import ActivationResult, ChatMessage

POSITION_NAMES = {"before": 0, "after": 1, "an_top": 2, "an_bottom": 3, "depth": 4, "at_depth": 4,
                  "em_top": 5, "em_bottom": 6, "outlet": 7}


class Expect(BaseModel):
    """What a case expects. Entries are named ``"<book>.<uid>"``."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    activated: list[str] = Field(default_factory=list, description="each must be activated")
    activated_exactly: list[str] | None = Field(default=None, description="the exact activation list, in order")
    not_activated: list[str] = Field(default_factory=list)
    position: dict[str, str | int] = Field(default_factory=dict, description="entry → position name or number")
    within_budget: bool | None = None
    before_contains: list[str] = Field(default_factory=list)
    after_contains: list[str] = Field(default_factory=list)


class Case(BaseModel):
    """One regression case: a chat (inline messages, or a chat file and a generation) and expectations."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    name: str
    chat: list[ChatMessage] | str | None = None
    at: int | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    user: str | None = None
    char: str | None = None
    type: str = "normal"
    expect: Expect


class CaseFile(BaseModel):
    """A file of cases sharing books and settings (paths are relative to the file)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    books: list[str]
    settings: dict[str, Any] = Field(default_factory=dict)
    user: str = "User"
    char: str = "Character"
    st_version: str = "1.18"
    macro_engine: str | None = None
    tokenizer: str = "cl100k"
    seed: int = 0
    cases: list[Case]


def check(result: ActivationResult, expect: Expect) -> list[str]:
    """Every way ``result`` falls short of ``expect`` (empty when the case passes)."""
    failures: list[str] = []
    keys = result.activated_keys()
    for k in expect.activated:
        if k not in keys:
            failures.append(f"expected {k} to be activated; activated: {_names(keys)}")
    if expect.activated_exactly is not None and keys != expect.activated_exactly:
        failures.append(f"expected exactly {_names(expect.activated_exactly)}; got {_names(keys)}")
    for k in expect.not_activated:
        if k in keys:
            failures.append(f"expected {k} not to be activated")
    by_key = {a.key: a for a in result.activated}
    for k, want in expect.position.items():
        number = POSITION_NAMES.get(want, want) if isinstance(want, str) else want
        act = by_key.get(k)
        if act is None:
            failures.append(f"expected {k} at position {want}, but it was not activated")
        elif act.position != number:
            failures.append(f"expected {k} at position {want}; it is at position {act.position}")
    if expect.within_budget is not None and expect.within_budget == result.overflowed:
        failures.append(f"expected within_budget={expect.within_budget}; the budget of {result.budget} "
                        f"tokens {'overflowed' if result.overflowed else 'was not reached'} "
                        f"({result.budget_used} used)")
    for text in expect.before_contains:
        if text not in result.before:
            failures.append(f"expected the before-character text to contain {text!r}")
    for text in expect.after_contains:
        if text not in result.after:
            failures.append(f"expected the after-character text to contain {text!r}")
    return failures


def _names(keys: list[str]) -> str:
    return ", ".join(keys) if keys else "nothing"
