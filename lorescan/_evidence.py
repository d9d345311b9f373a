"""What a viewer of one traced evaluation needs beyond the explanations: where each entry's keys
occur in the chat (spans a page can highlight), how the budget was spent entry by entry, and, for
an entry that did not activate, the closest it came.

Pure: every function reads an evaluation's inputs, its result and its trace. Span offsets count
UTF-16 code units of the message's own text (``mes``), as JavaScript strings do, so a web page can
slice the text it shows with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from . import _js
from ._engine import Lore
from ._explain import Explanation, entries_by_key
from ._jsregex import parse_regex_key
from ._keys import match_key_text
from ._macros import names_env, substitute
from ._match import UNICODE, continues_word, folded_spans, key_form, unicode_continues_word
from ._model import ActivationResult, ChatMessage, Settings


@dataclass
class Span:
    """One occurrence of an entry's key in a chat message."""

    entry: str
    key: str
    role: str           # "primary" or "secondary"
    message: int        # 0-based index into the chat as given
    start: int          # UTF-16 offsets into the message's text
    end: int
    counts: bool        # False: inside a word while whole-word matching is on, so SillyTavern ignores it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _utf16(text: str, index: int) -> int:
    """A code point index of ``text`` as a UTF-16 code unit index."""
    return index + sum(1 for ch in text[:index] if ord(ch) > 0xFFFF)


def message_spans(lore: Lore, entry_keys: Sequence[str], chat: Sequence[ChatMessage], *, settings: Settings,
                  user_name: str, char_name: str) -> list[Span]:
    """Every occurrence of the keys of ``entry_keys`` in the chat's messages (system messages, which
    SillyTavern does not scan, left out), by message then offset. Regex keys give their first match
    in each message; a first message whose macros change its text gives none (its offsets would not
    be the text's)."""
    env = names_env(user_name, char_name, lore.mode.version, lore.mode.macro_engine)   # as the engine reads keys
    found = entries_by_key(lore)
    keyed: list[tuple[str, str, str, str, Any, bool, bool]] = []
    for entry in entry_keys:
        ce = found.get(entry)
        if ce is None:
            continue
        cs = _js.truthy(_js.nullish(ce.case_sensitive, settings.world_info_case_sensitive))
        ww = _js.truthy(_js.nullish(ce.match_whole_words, settings.world_info_match_whole_words))
        roles = [("primary", ce.keys)] + ([("secondary", ce.keys_secondary)] if ce.selective else [])
        for role, keys in roles:
            for key in keys if isinstance(keys, list) else ():
                if isinstance(key, str) and key.strip():
                    needle = _js.trim(substitute(key, env))
                    keyed.append((entry, role, key, needle, parse_regex_key(needle), cs, ww))
    out: list[Span] = []
    for j, m in enumerate(chat):
        text = m.mes if isinstance(m.mes, str) else ""
        if m.is_system or not text or (j == 0 and substitute(text, env) != text):
            continue
        lowered = _js.lower(text)
        same_length = len(lowered) == len(text)
        for entry, role, key, needle, rx, cs, ww in keyed:
            if rx is None and lore.mode.word_boundaries == UNICODE:
                found_at = _unicode_occurrences(needle, text, cs, ww)
            else:
                found_at = _occurrences(needle, rx, text, lowered if same_length else None, cs, ww)
            for start, end, counts in found_at:
                out.append(Span(entry, key, role, j, _utf16(text, start), _utf16(text, end), counts))
    out.sort(key=lambda s: (s.message, s.start, s.end))
    return out


def _occurrences(needle: str, rx: Any, text: str, lowered: str | None, cs: bool,
                 ww: bool) -> list[tuple[int, int, bool]]:
    """(start, end, counted) of each occurrence of a key (``rx``: its regex, if it is one) in
    ``text`` by SillyTavern's rules."""
    if rx is not None:
        span = rx.search_span("\x01" + text)
        if span is None or span[1] - 1 <= span[0] - 1:
            return []
        return [(max(span[0] - 1, 0), span[1] - 1, True)]
    if not needle:
        return []
    if cs:
        hay, pat = text, needle
    elif lowered is not None:
        hay, pat = lowered, _js.lower(needle)
    else:
        return []               # lowercasing changed the length: offsets would drift
    counts_inside = not ww or len(_js.split_ws(pat)) > 1
    out: list[tuple[int, int, bool]] = []
    start = hay.find(pat)
    while start != -1 and pat:
        end = start + len(pat)
        out.append((start, end, counts_inside or not continues_word(hay, start, end)))
        start = hay.find(pat, end)
    if out and not any(c for _, _, c in out) and match_key_text(text, needle, cs, ww):
        out[0] = (out[0][0], out[0][1], True)       # SillyTavern's own rule has the last word
    return out


def _unicode_occurrences(needle: str, text: str, cs: bool, ww: bool) -> list[tuple[int, int, bool]]:
    """:func:`_occurrences` of a plain key under the unicode word rule: looked for in the
    comparison form (NFC, folded unless case-sensitive), offsets mapped back to ``text``."""
    hay, where = folded_spans(text, cs)
    pat = key_form(needle, cs)
    out: list[tuple[int, int, bool]] = []
    start = hay.find(pat) if pat else -1
    while start != -1:
        end = start + len(pat)
        s = where[start]
        out.append((s, max(where[end], s + 1), not ww or not unicode_continues_word(hay, start, end, pat)))
        start = hay.find(pat, end)
    return out


# ------------------------------------------------------------------------------ the budget

@dataclass
class BudgetRow:
    """One entry that reached the budget: its share of the tokens and what the budget did."""

    entry: str
    outcome: str            # "fits", "overflow" or "skipped" (after an overflow)
    tokens: int | None      # this entry's tokens (its content and the line break after it)
    used: int | None        # tokens used with it (the earlier passes' and this pass's so far)
    scan_pass: int


def budget_use(lore: Lore, result: ActivationResult) -> dict[str, Any]:
    """The budget of a traced evaluation: its size, the tokens used, whether and where it overflowed,
    and every entry that reached it in order (``rows``), the entries it dropped included."""
    trace = result.trace or []
    rows: list[BudgetRow] = []
    budget: int | None = None
    used = 0
    last_pass_tokens: dict[int, int] = {}
    decided: set[str] = set()
    for ev in trace:
        if ev["event"] == "probability" and not ev.get("passed"):
            decided.add(ev["entry"])
        if ev["event"] != "budget":
            continue
        budget = ev.get("budget", budget)
        pas, entry = ev["pass"], ev["entry"]
        decided.add(entry)
        outcome = str(ev.get("outcome"))
        if outcome in ("fits", "overflow") and ev.get("pass_tokens") is not None:
            total = (ev.get("before") or 0) + ev["pass_tokens"]
            tokens = ev["pass_tokens"] - last_pass_tokens.get(pas, 0)
            last_pass_tokens[pas] = ev["pass_tokens"]
            if outcome == "fits":
                used = max(used, total)
            rows.append(BudgetRow(entry, outcome, tokens, total, pas))
        else:
            rows.append(BudgetRow(entry, "skipped", _content_tokens(lore, entry), None, pas))
    rows.extend(_cut_off(lore, trace, decided, set(result.activated_keys())))
    return {"budget": budget, "used": used, "overflowed": result.overflowed,
            "overflow_entry": next((r.entry for r in rows if r.outcome == "overflow"), None),
            "rows": [asdict(r) for r in rows]}


def _cut_off(lore: Lore, trace: list[dict[str, Any]], decided: set[str], activated: set[str]) -> list[BudgetRow]:
    """Candidates of the overflowing pass that the budget never reached (SillyTavern 1.12.6 stops
    the pass at the overflow)."""
    over = next((ev["pass"] for ev in trace if ev["event"] == "budget" and ev.get("outcome") == "overflow"), None)
    if over is None:
        return []
    removed = {ev["entry"] for ev in trace if ev["event"] == "group" and ev["pass"] == over}
    out = []
    for ev in trace:
        entry = str(ev.get("entry"))
        if ev["event"] == "candidate" and ev["pass"] == over and entry not in decided and entry not in removed \
                and entry not in activated:
            decided.add(entry)
            out.append(BudgetRow(entry, "skipped", _content_tokens(lore, entry), None, over))
    return out


def _content_tokens(lore: Lore, entry: str) -> int | None:
    ce = entries_by_key(lore).get(entry)
    if ce is None or not isinstance(ce.content, str):
        return None
    return lore.counter.count(ce.content + "\n")


# ------------------------------------------------------------------------------ the closest miss

#: the engine's gate reasons (their start) and the kind of miss each is
_GATE_KINDS = (("disabled", "disabled"), ("generation type", "trigger"), ("filtered out", "character_filter"),
               ("suppressed by delay", "delay"), ("suppressed by cooldown", "cooldown"),
               ("delayed until recursion", "recursion"), ("excluded from recursion", "recursion"),
               ("@@dont_activate", "decorator"))


def closest_miss(exp: Explanation) -> dict[str, str] | None:
    """For an entry that did not activate, the nearest thing to activating it: ``{"kind", "text"}``.

    ``kind`` is one of ``secondary`` (a primary key matched, the secondary keys failed),
    ``whole_words`` (a key occurs only inside a word), ``scan_depth`` (only in older messages),
    ``case`` (only in another case), ``group``, ``probability``, ``budget``, ``cooldown``,
    ``delay``, ``recursion``, ``trigger``, ``character_filter``, ``decorator``, ``disabled``,
    ``no_keys`` or ``no_match``; ``text`` says it in words. ``None`` for an activated entry."""
    if exp.activated:
        return None
    for ev in reversed(exp.events):
        kind = ev["event"]
        if kind == "group":
            return {"kind": "group", "text": exp.verdict}
        if kind == "probability" and not ev.get("passed"):
            return {"kind": "probability", "text": exp.verdict}
        if kind == "budget" and ev.get("outcome") != "fits":
            return {"kind": "budget", "text": exp.verdict}
    gate = next((ev for ev in reversed(exp.events) if ev["event"] == "skipped"), None)
    why = str(gate["why"]) if gate is not None else ""
    if "secondary keys failed" in why:
        return {"kind": "secondary", "text": exp.verdict}
    for start, kind in _GATE_KINDS:
        if why.startswith(start):
            return {"kind": kind, "text": exp.verdict}
    if why == "no keys":
        return {"kind": "no_keys", "text": exp.verdict}
    for match in exp.matches:
        if match.inside_word and not match.counts:
            inside = next((t for t in exp.lines if "only inside the word" in t), exp.verdict)
            return {"kind": "whole_words", "text": inside}
    for marker, kind in (("beyond the scan depth", "scan_depth"), ("in another case", "case")):
        line = next((t for t in exp.lines if marker in t), None)
        if line is not None:
            return {"kind": kind, "text": line}
    return {"kind": "no_match", "text": exp.verdict}
