"""Forced activations (SillyTavern's WORLDINFO_FORCE_ACTIVATE): order, rolls, and caller fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import lorescan
from lorescan import ChatMessage, ForcedActivation, Lorebook, Settings


class Draws:
    """A random source that hands out fixed values and counts how many were drawn."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.drawn = 0

    def random(self) -> float:
        self.drawn += 1
        return self.values.pop(0) if self.values else 0.0


CHAT = [ChatMessage(name="U", is_user=True, mes="hello")]
RECURSIVE = Settings(world_info_recursive=True)


def _book(*entries: dict) -> Lorebook:
    return Lorebook.from_entries("w", list(entries))


def _run(book: Lorebook, forced: list, rng: Draws, compat: str = "1.18", settings: Settings = RECURSIVE):
    lore = lorescan.compile([book], compat=compat, tokenizer="chars4")
    return lore.activate(CHAT, settings=settings, force_activate=forced, rng=rng)


def test_activate_decorator_wins_over_force_so_the_entry_sorts_at_its_place() -> None:
    book = _book({"uid": 0, "key": ["hello"], "content": "first", "order": 200},
                 {"uid": 1, "content": "@@activate\nsecond", "order": 100})
    # A plain forced entry sorts first; one carrying @@activate is an ordinary candidate.
    plain = _run(_book({"uid": 0, "key": ["hello"], "content": "first", "order": 200},
                       {"uid": 1, "content": "second", "order": 100}), [{"world": "w", "uid": 1}], Draws())
    assert plain.activated_keys() == ["w.1", "w.0"]
    decorated = _run(book, [{"world": "w", "uid": 1}], Draws())
    assert decorated.activated_keys() == ["w.0", "w.1"]
    assert decorated.before == plain.before == "second\nfirst"   # prompt text goes by order, not activation


def test_activate_decorator_with_force_keeps_a_failed_roll_and_draws_no_extra() -> None:
    # uid 1 rolls 0.9*100 > 50 and fails; uid 0's content "hello" makes a recursion pass.
    entries = ({"uid": 0, "key": ["hello"], "content": "hello again"},
               {"uid": 1, "content": "@@activate\nlucky", "probability": 50, "useProbability": True})
    rng = Draws(0.9, 0.0, 0.0)
    result = _run(_book(*entries), [{"world": "w", "uid": 1}], rng)
    assert result.activated_keys() == ["w.0"]
    assert rng.drawn == 1          # the failed roll is remembered: no roll in the recursion pass
    # Without the decorator the forced entry rolls again in the next pass, and wins there.
    rng = Draws(0.9, 0.0, 0.0)
    plain = (entries[0], {"uid": 1, "content": "lucky", "probability": 50, "useProbability": True})
    result = _run(_book(*plain), [{"world": "w", "uid": 1}], rng)
    assert result.activated_keys() == ["w.0", "w.1"]
    assert rng.drawn == 2


def test_caller_fields_replace_the_entry_for_that_evaluation() -> None:
    book = _book({"uid": 0, "key": ["nothing"], "content": "stored text", "position": 0, "order": 7})
    lore = lorescan.compile([book], tokenizer="chars4")
    forced = [{"world": "w", "uid": 0, "content": "caller text", "position": 1, "order": 9}]
    got = lore.activate(CHAT, force_activate=forced, rng=Draws())
    assert got.before == "" and got.after == "caller text"
    (act,) = got.activated
    assert (act.key, act.content, act.position, act.order) == ("w.0", "caller text", 1, 9)
    # The stored entry is unchanged, in the next evaluation and in the same one's records.
    again = lore.activate(CHAT, force_activate=[{"world": "w", "uid": 0}], rng=Draws())
    assert again.before == "stored text" and again.after == ""
    assert (again.activated[0].content, again.activated[0].position) == ("stored text", 0)
    assert lore.activate(CHAT, force_activate=forced, rng=Draws()).after == "caller text"


def test_caller_content_is_taken_as_given_and_gates_read_the_stored_entry() -> None:
    book = _book({"uid": 0, "content": "x", "disable": True},
                 {"uid": 1, "content": "y"})
    lore = lorescan.compile([book], tokenizer="chars4")
    forced = [{"world": "w", "uid": 0, "content": "z", "disable": False},
              {"world": "w", "uid": 1, "content": "@@dont_activate\nkept"}]
    got = lore.activate(CHAT, force_activate=forced, rng=Draws())
    assert got.activated_keys() == ["w.1"]          # uid 0 is disabled as stored
    assert got.before == "@@dont_activate\nkept"    # no decorator parsing of a caller's content


def test_in_1_12_a_changed_object_matches_no_entry() -> None:
    book = _book({"uid": 0, "content": "stored"})
    same = _run(book, [{"world": "w", "uid": 0, "content": "stored"}], Draws(), compat="1.12")
    assert same.activated_keys() == ["w.0"] and same.before == "stored"
    changed = _run(book, [{"world": "w", "uid": 0, "content": "changed"}], Draws(), compat="1.12")
    assert changed.activated_keys() == []


@pytest.mark.parametrize("field, hint", [("contnet", "'content'"), ("postion", "'position'"),
                                         ("banana", None)])
def test_unknown_fields_are_rejected_by_name(field: str, hint: str | None) -> None:
    with pytest.raises(ValidationError) as err:
        ForcedActivation.model_validate({"world": "w", "uid": 0, field: 1})
    text = str(err.value)
    assert f"unknown entry field {field!r}" in text
    assert (f"did you mean {hint}?" in text) if hint else "did you mean" not in text


def test_wrongly_typed_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="key"):
        ForcedActivation(world="w", uid=0, key="not a list")


@pytest.mark.parametrize(("compat", "content", "draws", "activated"), [
    ("1.12", "{{char}} waits at the gate", 1, ["w.0"]),   # substituted: no longer the object forced
    ("1.12", "Nobody waits at the gate", 2, ["w.0"]),     # unchanged: still forced, rolls again
])
def test_a_forced_entry_cut_by_the_budget_after_its_roll(compat: str, content: str, draws: int,
                                                         activated: list[str]) -> None:
    """The budget cuts uid 1 after it passed its roll, so its content was substituted (SillyTavern
    writes the substituted content back into the entry). A pending delay level then runs one more
    pass (the levels are 1 and 2: the first pass is at level 1). SillyTavern 1.12.6 finds an external activation by comparing the entry's whole JSON with
    the object it was given, so once the content changed the entry is not forced there and, with no
    keys, not a candidate: no second roll (found against SillyTavern 1.12.6's own code). 1.18 keys
    forced entries by book and uid instead."""
    book = _book({"uid": 0, "key": ["hello"], "content": "one two three four five six seven eight nine ten",
                  "order": 300},
                 {"uid": 1, "content": content, "order": 200, "probability": 90, "useProbability": True},
                 {"uid": 2, "content": "never", "delayUntilRecursion": 1},
                 {"uid": 3, "key": ["hello"], "content": "late", "delayUntilRecursion": 2})
    rng = Draws()
    lore = lorescan.compile([book], compat=compat, tokenizer="words")
    result = lore.activate(CHAT, settings=Settings(max_context=100, world_info_budget=12),
                           force_activate=[{"world": "w", "uid": 1}], rng=rng, char_name="Ash")
    assert result.activated_keys() == activated
    assert rng.drawn == draws


@pytest.mark.parametrize(("compat", "user", "before"), [
    # 1.12.6 reads <USER>'s value as a replacement pattern ($& is what it replaces): substituted
    # twice, the entry's text grows twice
    ("1.12", "$&x", "late\n<USER>xx waits\none two three four five six seven eight"),
    ("1.12", "Bo", "late\nBo waits\none two three four five six seven eight"),
])
def test_an_entry_the_budget_cut_is_substituted_again_when_a_later_pass_takes_it(
        compat: str, user: str, before: str) -> None:
    """SillyTavern writes an entry's substituted content back into the entry before the budget
    check. uid 1 is cut in the first pass and taken again in the delay-level pass, where the budget
    has room (the first pass's entries prevent recursion, so the budget does not count them there):
    its content is the once-substituted text, substituted again (found against SillyTavern 1.12.6's
    own code)."""
    book = _book({"uid": 0, "key": ["hello"], "content": "one two three four five six seven eight", "order": 300,
                  "preventRecursion": True},
                 {"uid": 1, "constant": True, "content": "<USER> waits", "order": 200, "preventRecursion": True},
                 {"uid": 2, "content": "never", "delayUntilRecursion": 1},
                 {"uid": 3, "key": ["hello"], "content": "late", "delayUntilRecursion": 2})
    lore = lorescan.compile([book], compat=compat, tokenizer="words")
    result = lore.activate(CHAT, settings=Settings(max_context=100, world_info_budget=10), rng=Draws(),
                           user_name=user, char_name="Ash")
    assert result.activated_keys() == ["w.0", "w.1", "w.3"]
    assert result.before == before
