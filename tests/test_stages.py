"""Each stage of an evaluation on its own, driven by one fixture file per stage.

``tests/fixtures/stages/<stage>.yaml`` holds small cases for one stage (plan, select, budget, timed,
emit): each has a ``name``, its inputs and its exact expected output, under a comment naming the
SillyTavern rule it pins. The head of each file describes its case format. Test ids are
``<file>:<name>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import lorescan
from lorescan import ActivationRequest, Character, ChatMessage, Lorebook, Settings, TimedState
from lorescan._budget import BudgetMeter
from lorescan._compile import CompiledEntry, compile_books
from lorescan._emit import KeptRecords, emit
from lorescan._engine import stage_state
from lorescan._mode import mode_for
from lorescan._plan import Plan, plan_books
from lorescan._scenario import ListRandom
from lorescan._select import INITIAL, MIN_ACTIVATIONS, RECURSION, filter_groups, gate, pass_candidates, score
from lorescan._state import EvalState
from lorescan._timed import TimedEffects
from lorescan._tokens import get_counter

STAGES = Path(__file__).resolve().parent / "fixtures" / "stages"
FILES = sorted(STAGES.glob("*.yaml"))
PASSES = {"initial": INITIAL, "recursion": RECURSION, "min_activations": MIN_ACTIVATIONS}


def _cases() -> list[Any]:
    params = []
    for path in FILES:
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            params.append(pytest.param(path.stem, case, id=f"{path.name}:{case['name']}"))
    return params


# -- inputs shared by the stages --------------------------------------------------------------

def _books(case: dict[str, Any]) -> list[Lorebook]:
    """``books`` (name, scope, entries), or ``entries``: one global book named ``B``."""
    if "entries" in case:
        return [Lorebook.from_entries("B", case["entries"])]
    return [Lorebook.from_entries(b["name"], b["entries"], b.get("scope", "global")) for b in case["books"]]


def _plan(case: dict[str, Any]) -> Plan:
    """The plan of the case's books, as ``Lore`` makes it (character selected unless told not)."""
    compiled = compile_books(_books(case))
    extra = case.get("extra_books")
    return plan_books(compiled, sum(len(entries) for _, entries in compiled), mode_for(case.get("version", "1.18")),
                      case.get("strategy", 1), case.get("character", True), case.get("persona_book"),
                      tuple(extra) if extra is not None else None)


def _entries(plan: Plan, keys: list[str]) -> list[CompiledEntry]:
    by_key = plan.by_key()
    return [by_key[k] for k in keys]


def _state(case: dict[str, Any], trace: bool) -> EvalState:
    """The stage state the engine builds for the case's request, as its first pass reads it.

    Inputs: ``books``/``entries``, ``version``, ``quirks``, ``settings``, ``chat`` (message texts,
    oldest first, said by ``User``), ``character`` (card fields; absent: none selected),
    ``generation_type``, ``forced`` (``force_activate``), ``random`` (the draws). Then the running
    state a pass reads: delays come from the entries' ``delay`` and the chat length, ``timed``
    gives the sticky and cooldown entries (keys), ``recursion`` the recursion texts of earlier
    passes, ``recursion_level`` the delay-until-recursion level (default: the first one, as the
    loop starts), ``activated_groups`` the groups earlier passes activated (``names``, and the
    raw ``fields`` 1.12.6 and the quirk compare).
    """
    lore = lorescan.compile(_books(case), compat=case.get("version", "1.18"), tokenizer="chars4",
                            quirks=case.get("quirks", True))
    character = case.get("character")
    request = ActivationRequest.build(
        [ChatMessage(name="User", is_user=True, mes=m) for m in case.get("chat", [])],
        settings=Settings(**case.get("settings", {})), user_name="User", char_name="Alice",
        character=Character(**character) if character is not None else None,
        generation_type=case.get("generation_type", "normal"), force_activate=case.get("forced", []),
        rng=ListRandom(case.get("random")), trace=trace)
    st = stage_state(lore, request)
    st.timed.check(read_sticky_cooldown=False, apply_delay=True)
    timed = case.get("timed", {})
    st.timed.sticky.update(ce.gid for ce in _entries(st.plan, timed.get("sticky", [])))
    st.timed.cooldown.update(ce.gid for ce in _entries(st.plan, timed.get("cooldown", [])))
    buf = st.buffer
    buf.ensure_scanned(max(buf.current_depth(), st.plan.max_scan_depth))
    for text in case.get("recursion", []):
        buf.add_recursion(text)
    st.recursion_level = case.get("recursion_level", st.plan.levels[0] if st.plan.levels else 0.0)
    groups = case.get("activated_groups", {})
    st.activated_group_names.update(groups.get("names", []))
    st.activated_group_fields.update(groups.get("fields", []))
    return st


# -- one runner per stage ---------------------------------------------------------------------

def run_plan(case: dict[str, Any]) -> None:
    assert [ce.key for ce in _plan(case).entries] == case["expect"]


def run_select(case: dict[str, Any]) -> None:
    if "removed" in case["expect"]:
        _run_groups(case)
    else:
        _run_gates(case)


def _run_gates(case: dict[str, Any]) -> None:
    """``gate`` per listed entry (``yes: why`` / ``no: why``), then ``pass_candidates`` in order,
    both through the gates (traced) and on the fast path given the order its caller makes."""
    expect = case["expect"]
    state = PASSES[case.get("pass", "initial")]
    traced = _state(case, trace=True)
    got = {}
    for ce in _entries(traced.plan, list(expect["gates"])):
        ok, why = gate(traced, ce, state)
        got[ce.key] = f"{'yes' if ok else 'no'}: {why}"
    assert got == expect["gates"]
    everything = range(len(traced.plan.entries))
    assert _pass_keys(traced, case, state, lambda st, done, failed: everything) == expect["candidates"]
    fast = _state(case, trace=False)
    assert _pass_keys(fast, case, state, _callers_order) == expect["candidates"]


def _pass_keys(st: EvalState, case: dict[str, Any], state: int,
               order: Callable[[EvalState, set[int], set[int]], Any]) -> list[str]:
    """The keys ``pass_candidates`` returns, given entries activated (``activated``) and failing a
    probability roll (``failed``) in earlier passes."""
    earlier = _entries(st.plan, case.get("activated", []))
    activated = {(ce.key if st.mode.activation_by_key else ce.gid): ce for ce in earlier}
    failed = {ce.gid for ce in _entries(st.plan, case.get("failed", []))}
    done = {ce.gid for ce in earlier}
    return [ce.key for ce in pass_candidates(st, order(st, done, failed), state, activated, failed)]


def _callers_order(st: EvalState, done: set[int], failed: set[int]) -> list[int]:
    """What ``pass_candidates`` expects from its caller: places in scan order, less the entries
    already activated, failed (bar forced ones, in 1.18), delayed, or on cooldown and not sticky."""
    timed = st.timed
    out = done | (failed - st.forced if st.mode.forced_first else failed) | timed.delay \
        | (timed.cooldown - timed.sticky)
    return [i for i, ce in enumerate(st.plan.entries) if ce.gid not in out]


def _run_groups(case: dict[str, Any]) -> None:
    """``filter_groups`` over the pass's ``candidates`` (in candidate order) with the ``random``
    draws: the removals (key, why), the candidates kept, the draws made and any ``scores``."""
    expect = case["expect"]
    state = PASSES[case.get("pass", "initial")]
    st = _state(case, trace=False)
    for key, want in expect.get("scores", {}).items():
        assert score(st, st.plan.by_key()[key], state) == want, key
    candidates = _entries(st.plan, case["candidates"])
    removed = filter_groups(st, candidates, state, st.draw)
    assert [list(r) for r in removed] == expect["removed"]
    assert [ce.key for ce in candidates] == expect["kept"]
    assert st.rolls == expect.get("rolls", 0)


def run_budget(case: dict[str, Any]) -> None:
    budget = case["budget"] if "budget" in case else Settings(**case["settings"]).budget_tokens()
    meter = BudgetMeter(get_counter(case["counter"]), budget)
    for lines in case.get("activated", []):
        meter.add_activated_text("\n".join(lines), lines)
    base = meter.activated_tokens()
    new = meter.new_pass()
    fits = [new.add(c["content"], c.get("ignore", False), base) for c in case["contents"]]
    got = {"budget": meter.budget, "activated_tokens": base, "fits": fits, "tokens": new.tokens, "used": meter.used}
    assert got == case["expect"]


def run_timed(case: dict[str, Any]) -> None:
    plan = _plan(case)
    state = TimedState.model_validate(case["state"]) if "state" in case else None
    timed = TimedEffects(state, plan, case["chat_length"])
    timed.check(read_sticky_cooldown=case.get("read_sticky_cooldown", True),
                apply_delay=case.get("apply_delay", True))

    def keys(gids: set[int]) -> list[str]:
        return [ce.key for ce in plan.entries if ce.gid in gids]

    expect = case["expect"]
    assert {"sticky": keys(timed.sticky), "cooldown": keys(timed.cooldown), "delay": keys(timed.delay)} \
        == expect["active"]
    assert [list(event) for event in timed.events] == expect["events"]
    timed.record(_entries(plan, case.get("record", [])))
    assert timed.state.to_json() == expect["state"]


EMPTY_BUCKETS: dict[str, Any] = {"before": "", "after": "", "an_top": [], "an_bottom": [], "em": [], "depth": [],
                                 "outlets": {}}


def run_emit(case: dict[str, Any]) -> None:
    st = _state(case, trace=False)
    by_key = st.plan.by_key()
    st.content.update({by_key[k].gid: text for k, text in case.get("contents", {}).items()})
    st.pass_of.update({by_key[k].gid: n for k, n in case.get("passes", {}).items()})
    result = emit(st, _entries(st.plan, case["activated"]), BudgetMeter(get_counter("chars4"), 100),
                  KeptRecords(len(st.plan.entries)))
    expect = dict(case["expect"])
    records = expect.pop("records", None)
    got = {"before": result.before, "after": result.after, "an_top": result.an_top, "an_bottom": result.an_bottom,
           "em": [e.model_dump() for e in result.em], "depth": [g.model_dump() for g in result.depth],
           "outlets": result.outlets}
    assert got == {**EMPTY_BUCKETS, **expect}
    assert [a.key for a in result.activated] == case["activated"]
    if records is not None:
        assert [[a.key, a.position, a.order, a.content, a.pass_index] for a in result.activated] == records


RUNNERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "plan": run_plan, "select": run_select, "budget": run_budget, "timed": run_timed, "emit": run_emit,
}


@pytest.mark.parametrize("stage,case", _cases())
def test_stage_case(stage: str, case: dict[str, Any]) -> None:
    RUNNERS[stage](case)


def test_every_stage_has_its_fixture_file() -> None:
    assert sorted(p.stem for p in FILES) == sorted(RUNNERS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_case_is_named_once_and_says_what_it_pins(path: Path) -> None:
    """Names are unique in a file, and each case follows a comment citing the spec section it pins."""
    lines = path.read_text(encoding="utf-8").splitlines()
    names = []
    for i, line in enumerate(lines):
        m = re.match(r"- name: (.+)$", line)
        if m:
            names.append(m.group(1))
            above = lines[i - 1] if i else ""
            assert re.match(r"# §\d", above), f"{path.name}: case {m.group(1)!r} needs a '# §N …' comment above it"
    assert names and len(names) == len(set(names))
    assert len(names) == len(yaml.safe_load(path.read_text(encoding="utf-8")))
