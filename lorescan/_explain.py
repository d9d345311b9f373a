"""Explain one entry at one evaluation in plain words, from the engine's trace and the scan text.

The trace says which gate decided; this module adds where each key matched (message, offset,
the word around it) or why it did not (only inside longer words, outside the scan depth, case),
so an author can see at a glance why an entry fired or stayed silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from . import _js
from ._jsregex import parse_regex_key
from ._compile import CompiledEntry
from ._engine import Lore
from ._scan import scan_messages
from ._macros import MacroEnv, substitute
from ._model import ActivationResult, ChatMessage, Settings
from ._keys import is_word_char


@dataclass
class KeyMatch:
    """Where one key occurs in the chat window (``message`` counts from the newest, 1-based)."""

    key: str
    kind: str
    message: int | None = None
    offset: int | None = None
    word: str | None = None
    inside_word: bool = False
    within_depth: bool = True


@dataclass
class Explanation:
    """Why one entry did or did not activate."""

    entry: str
    activated: bool
    verdict: str
    lines: list[str] = field(default_factory=list)
    matches: list[KeyMatch] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry, "activated": self.activated, "verdict": self.verdict, "lines": self.lines,
            "matches": [m.__dict__ for m in self.matches], "events": self.events,
        }


def _word_at(text: str, start: int, end: int) -> str:
    a, b = start, end
    while a > 0 and (is_word_char(text[a - 1]) or not text[a - 1].isascii() and text[a - 1].isalnum()):
        a -= 1
    while b < len(text) and (is_word_char(text[b]) or not text[b].isascii() and text[b].isalnum()):
        b += 1
    return text[a:b]


def find_key(key_raw: str, messages: Sequence[str], depth: int, env: MacroEnv, case_sensitive: bool,
             whole_words: bool) -> list[KeyMatch]:
    """Every message where a key occurs (first occurrence per message), newest first."""
    sub = substitute(key_raw, env) if isinstance(key_raw, str) else ""
    if not sub:
        return []
    needle = _js.trim(sub)
    rx = parse_regex_key(needle)
    out: list[KeyMatch] = []
    for i, raw in enumerate(messages[:1000]):
        text = _js.trim(raw or "")
        if rx is not None:
            span = rx.search_span("\x01" + text)
            if span is not None:
                s, e = max(span[0] - 1, 0), max(span[1] - 1, 0)
                out.append(KeyMatch(key_raw, "regex", i + 1, s, text[s:e], False, i < depth))
            continue
        hay = text if case_sensitive else _js.lower(text)
        pat = needle if case_sensitive else _js.lower(needle)
        if not pat:
            out.append(KeyMatch(key_raw, "empty", i + 1, 0, "", False, i < depth))
            continue
        start = hay.find(pat)
        best: KeyMatch | None = None
        while start != -1:
            end = start + len(pat)
            inside = (start > 0 and is_word_char(hay[start - 1])) or (end < len(hay) and is_word_char(hay[end]))
            m = KeyMatch(key_raw, "plain", i + 1, start, _word_at(text, start, end), inside, i < depth)
            if best is None or (best.inside_word and not inside):
                best = m
            if not inside:
                break
            start = hay.find(pat, start + 1)
        if best is not None:
            out.append(best)
    return out


def explain(lore: Lore, result: ActivationResult, entry_key: str, chat: Sequence[ChatMessage], *,
            settings: Settings, user_name: str, char_name: str, generation_type: str = "normal") -> Explanation:
    """Explain entry ``entry_key`` (``"<book>.<uid>"``) in ``result``, which must have been traced."""
    ce = _find_entry(lore, entry_key)
    events = [e for e in (result.trace or []) if e.get("entry") == entry_key]
    activated = entry_key in result.activated_keys()
    env = MacroEnv(user=user_name, char=char_name)
    messages = scan_messages(list(chat), generation_type, settings.world_info_include_names, env)
    cs = _js.truthy(_js.nullish(ce.case_sensitive, settings.world_info_case_sensitive))
    ww = _js.truthy(_js.nullish(ce.match_whole_words, settings.world_info_match_whole_words))
    depth = int(_js.to_number(ce.scan_depth)) if ce.scan_depth is not None else settings.world_info_depth
    lines: list[str] = []
    matches: list[KeyMatch] = []
    keys = ce.keys if isinstance(ce.keys, list) else []
    for k in keys:
        found = find_key(k, messages, depth, env, cs, ww)
        matches.extend(found)
        lines.append(_describe_key(k, found, depth, ww, cs))
    sec = ce.keys_secondary if isinstance(ce.keys_secondary, list) else []
    if sec and ce.selective:
        for k in sec:
            found = find_key(k, messages, depth, env, cs, ww)
            matches.extend(found)
            lines.append("secondary " + _describe_key(k, found, depth, ww, cs))
    elif sec:
        lines.append("secondary keys are ignored: the entry is not selective")
    gates = [e for e in events if e["event"] in ("candidate", "skipped")]
    last_gate = gates[-1] if gates else None
    verdict = _verdict(activated, events, last_gate, keys)
    return Explanation(entry=entry_key, activated=activated, verdict=verdict, lines=lines, matches=matches,
                       events=events)


def _find_entry(lore: Lore, key: str) -> CompiledEntry:
    from ._errors import LorescanError

    for ce in lore._all:
        if ce.key == key:
            return ce
    raise LorescanError(f"no entry {key!r} in the books (use <book>.<uid>)", field="entry")


def _describe_key(key: str, found: list[KeyMatch], depth: int, ww: bool, cs: bool) -> str:
    if not found:
        case = " (case-sensitive)" if cs else ""
        return f"key {key!r} does not occur in the chat{case}"
    visible = [m for m in found if m.within_depth]
    if not visible:
        first = found[0]
        return (f"key {key!r} occurs only in message {first.message} (newest = 1), "
                f"beyond the scan depth of {depth}")
    m = visible[0]
    if m.kind == "regex":
        return f"regex key {key!r} matched {m.word!r} in message {m.message} at offset {m.offset}"
    if m.kind == "empty":
        return f"key {key!r} is blank after trimming, so it matches any text"
    if m.inside_word and ww and len(_js.split_ws(key.strip())) == 1:
        return (f"key {key!r} occurs only inside the word {m.word!r} (message {m.message}); "
                f"whole-word matching is on, so it does not match")
    if m.inside_word:
        return (f"key {key!r} matched {m.word!r} inside a word (message {m.message}, offset {m.offset}); "
                f"whole-word matching is off")
    return f"key {key!r} matched {m.word!r} in message {m.message} at offset {m.offset}"


def _verdict(activated: bool, events: list[dict[str, Any]], last_gate: dict[str, Any] | None,
             keys: list[Any]) -> str:
    for e in events:
        if e["event"] == "group":
            return f"not activated: {e['why']}" if not activated else f"activated; {e['why']}"
    if activated:
        why = last_gate["why"] if last_gate else "activated"
        pas = next((e["pass"] for e in events if e["event"] == "activated"), None)
        return f"activated in pass {pas}: {why}"
    for e in reversed(events):
        if e["event"] == "probability" and not e["passed"]:
            return f"not activated: failed its probability roll ({e['roll']:.1f} > {e['probability']})"
        if e["event"] == "budget" and e["outcome"] != "fits":
            return (f"not activated: the budget of {e['budget']} tokens was reached "
                    f"({e['outcome']}; first overflow at {e['overflowed_by']})")
    if last_gate is not None:
        return f"not activated: {last_gate['why']}"
    if not keys:
        return "not activated: the entry has no keys and is not constant"
    return "not activated: no primary key matched"
