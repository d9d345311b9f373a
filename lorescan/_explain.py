"""Explain one entry at one evaluation in plain words, from the engine's trace and the scan text.

The trace says which gate decided; this module adds where each key matched or why it did not, so
an author sees at a glance why an entry fired or stayed silent. Every match names the piece of
scan text it was found in: a chat message, an entry's content recursed after an earlier pass, a
character field or an injected prompt.

Messages are numbered one way everywhere: ``#1`` is the first message of the chat, counting
forward (a replay's ``msg`` column and ``explain --at`` use the same numbers).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from . import _js
from ._compile import CompiledEntry
from ._engine import Lore, scanned_injections
from ._jsregex import parse_regex_key
from ._macros import MacroEnv, evaluation_env, match_fields, names_env, substitute
from ._match import (
    SILLYTAVERN,
    UNICODE,
    edge_checks,
    word_rule_words,
)
from ._model import GENERATION_TYPES, ActivationResult, Character, ChatMessage, Settings
from ._occurrence import plain_occurrence, unicode_occurrence
from ._replay import NUMBERING
from ._scan import MAX_SCAN_DEPTH, ScanMessages

LOGIC_NAMES = {0: "AND ANY", 1: "NOT ALL", 2: "NOT ANY", 3: "AND ALL"}
FIELD_NAMES = {
    "persona_description": "the persona description", "character_description": "the character's description",
    "character_personality": "the character's personality", "character_depth_prompt": "the character's depth prompt",
    "scenario": "the character's scenario", "creator_notes": "the character's creator notes",
}
_KEY_REASONS = ("primary key ", "no primary key matched")
#: the engine's gate reasons that say more in a few more words
GATE_WORDS = {
    "constant": "constant (always active)",
    "sticky": "sticky (still active from an earlier generation)",
    "suppressed by cooldown": "on cooldown after an earlier activation",
    "suppressed by delay": "delayed: the chat is not yet as long as its delay",
    "delayed until recursion": "delayed until recursion (only a recursion pass can activate it)",
    "excluded from recursion": "excluded from recursion (only the chat can activate it)",
    "no keys": "it has no keys",
}


@dataclass
class KeyMatch:
    """Where one key occurs in one piece of the text an entry scanned in one pass."""

    key: str
    kind: str                       # "plain", "regex" or "blank"
    role: str = "primary"           # or "secondary"
    where: str = ""                 # plain words: "message #3 (Rowan)", "the content of book.2, ..."
    piece: str = "message"          # "message", "recursion", "field" or "injection"
    scan_pass: int | None = None    # the pass whose scan text this is
    message: int | None = None      # chat number (#1 = the first message), for a message
    source: str | None = None       # the recursed entry, for recursion text
    offset: int | None = None
    word: str | None = None
    inside_word: bool = False
    counts: bool = True             # whether SillyTavern counts it as a match
    length: int | None = None       # the match's length in the text as written, where the word
                                    # rule compares another form (unicode: NFC, folded)
    within_depth: bool = True


@dataclass
class Explanation:
    """Why one entry did or did not activate: a verdict, one line per key, the steps in words."""

    entry: str
    activated: bool
    verdict: str
    lines: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    matches: list[KeyMatch] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "activated": self.activated, "verdict": self.verdict,
                "numbering": NUMBERING, "lines": self.lines, "steps": self.steps,
                "matches": [asdict(m) for m in self.matches], "events": self.events}


@dataclass(frozen=True)
class _Piece:
    kind: str
    text: str
    where: str
    message: int | None = None
    source: str | None = None


def quote(text: Any) -> str:
    """A key or name in single quotes, as typed (no Python escaping); newlines shown as ``\\n``."""
    return "'" + str(text).replace("\n", "\\n") + "'"


def _as_written(value: Any) -> str:
    """A JSON value as the book holds it: a string as it is, any other value as JSON (``5``,
    ``null``, ``{"a": 1}``), never Python's own spelling of it."""
    return value if isinstance(value, str) else _js.json_text(value)


def message_label(chat: Sequence[ChatMessage], index: int) -> str:
    """``message #N (Name)`` for the message at 0-based ``index`` of ``chat``."""
    name = chat[index].name if 0 <= index < len(chat) else ""
    return f"message #{index + 1}" + (f" ({name})" if name else "")


def message_range(numbers: Sequence[int]) -> str:
    """``message #4``, ``messages #3 to #6`` or ``no messages`` for chat numbers (any order)."""
    if not numbers:
        return "no messages"
    lo, hi = min(numbers), max(numbers)
    return f"message #{lo}" if lo == hi else f"messages #{lo} to #{hi}"


class _Context:
    """What one evaluation scanned, rebuilt from its inputs and its trace."""

    def __init__(self, lore: Lore, result: ActivationResult, chat: Sequence[ChatMessage], settings: Settings,
                 env: MacroEnv, generation_type: str, fields: dict[str, str], injections: list[tuple[str, str]],
                 text_label: str | None) -> None:
        self.lore, self.settings, self.env, self.fields, self.injections = lore, settings, env, fields, injections
        self.chat = chat
        self.trigger = generation_type if generation_type in GENERATION_TYPES else "normal"
        scan = ScanMessages(chat, generation_type, settings.world_info_include_names, env)
        n = len(scan)
        # newest first, as SillyTavern scans: (chat number, label, text as scanned)
        self.messages: list[tuple[int, str, str]] = []
        for i in range(min(n, MAX_SCAN_DEPTH)):
            j = scan.kept[n - 1 - i]
            label = text_label if text_label is not None and n == 1 else message_label(chat, j)
            self.messages.append((j + 1, label, _js.trim(scan[i] or "")))
        self._older: dict[int, list[_Piece]] = {}
        self.passes: dict[int, tuple[str, float]] = {}
        self.recursion: list[tuple[int, list[_Piece]]] = []   # (pass that produced it, its pieces)
        contents = {a.key: a.content for a in result.activated}
        for ev in result.trace or []:
            if ev["event"] == "pass":
                self.passes[ev["pass"]] = (ev["state"], ev["scan_depth"])
            elif ev["event"] == "recursion_text":
                self.recursion.append((ev["pass"], self._recursed(ev["pass"], ev["text"], ev["sources"], contents)))

    def _recursed(self, pas: int, text: str, sources: list[str], contents: dict[str, str]) -> list[_Piece]:
        """One pass's recursion text, split into its entries' contents when they join up to it."""
        parts = [contents.get(k) if k in contents else self._content(k) for k in sources]
        if all(p is not None for p in parts) and "\n".join(parts) == text:  # type: ignore[arg-type]
            return [_Piece("recursion", p or "", f"the content of {k}, recursed after pass {pas}", source=k)
                    for k, p in zip(sources, parts)]
        return [_Piece("recursion", text, f"the contents recursed after pass {pas} ({', '.join(sources)})")]

    def _content(self, key: str) -> str | None:
        ce = entries_by_key(self.lore).get(key)
        if ce is None or not isinstance(ce.content, str):
            return None
        return substitute(ce.content, self.env) if ce.macros else ce.content

    def older(self, start: int) -> list[_Piece]:
        """The messages from the ``start``-th newest back, as pieces (built once per start)."""
        got = self._older.get(start)
        if got is None:
            got = self._older[start] = [_Piece("message", text, label, message=number)
                                        for number, label, text in self.messages[start:] if text]
        return got

    def depth(self, ce: CompiledEntry, pas: int | None) -> float:
        if ce.scan_depth is not None:
            return _js.to_number(ce.scan_depth)
        if pas in self.passes:
            return self.passes[pas][1]
        return self.settings.world_info_depth

    def pieces(self, ce: CompiledEntry, pas: int | None) -> tuple[list[_Piece], str]:
        """The pieces of text the entry scanned in pass ``pas``, and a short summary of them."""
        depth = self.depth(ce, pas)
        if not depth > 0:
            return [], "nothing (its scan depth is 0)"
        count = len(self.messages) if depth != depth or depth >= len(self.messages) else int(depth)
        shown = self.messages[:count]
        out = [_Piece("message", text, label, message=number) for number, label, text in shown if text]
        summary = [message_range([number for number, _, _ in shown])]
        for name in ce.match_fields if self.lore.mode.match_sources else ():
            if self.fields.get(name):
                out.append(_Piece("field", self.fields[name], FIELD_NAMES.get(name, name)))
                summary.append(FIELD_NAMES.get(name, name))
        for label, text in self.injections:
            out.append(_Piece("injection", text, label))
            summary.append(label)
        state = self.passes.get(pas, ("initial", 0))[0] if pas is not None else "initial"
        if state != "min_activations":
            earlier = [(p, pieces) for p, pieces in self.recursion if pas is None or p < pas]
            for _, pieces in earlier:
                out.extend(pieces)
            if earlier:
                summary.append("the contents recursed after " + _passes([p for p, _ in earlier]))
        return out, " and ".join([", ".join(summary[:-1]), summary[-1]] if len(summary) > 1 else summary)


def explain(lore: Lore, result: ActivationResult, entry_key: str, chat: Sequence[ChatMessage], *,
            settings: Settings, user_name: str, char_name: str, generation_type: str = "normal",
            character: Character | None = None, persona_description: str = "", authors_note: str = "",
            authors_note_scan: bool = False, quiet_prompt: str = "",
            text_label: str | None = None) -> Explanation:
    """Explain entry ``entry_key`` (``"<book>.<uid>"``) in ``result``, which must have been traced.

    Pass the evaluation's own inputs (chat, settings, names, character, prompts) so each match can
    be located; ``text_label`` names a one-message chat (``scan`` calls it "the text").
    """
    return explain_many(lore, result, [entry_key], chat, settings=settings, user_name=user_name,
                        char_name=char_name, generation_type=generation_type, character=character,
                        persona_description=persona_description, authors_note=authors_note,
                        authors_note_scan=authors_note_scan, quiet_prompt=quiet_prompt, text_label=text_label)[0]


def explain_many(lore: Lore, result: ActivationResult, entry_keys: Sequence[str], chat: Sequence[ChatMessage], *,
                 settings: Settings, user_name: str, char_name: str, generation_type: str = "normal",
                 character: Character | None = None, persona_description: str = "", authors_note: str = "",
                 authors_note_scan: bool = False, quiet_prompt: str = "",
                 text_label: str | None = None) -> list[Explanation]:
    """:func:`explain` for several entries of one evaluation: what it scanned is rebuilt once and
    its trace read once, so explaining many entries of a large book stays cheap."""
    ces = [_find_entry(lore, key) for key in entry_keys]
    version = lore.mode.version
    base_env = names_env(user_name, char_name, version, lore.mode.macro_engine)
    env = evaluation_env(base_env, character, persona_description, version)    # as the engine's
    fields = match_fields(env, character is not None)
    injections = scanned_injections(authors_note, authors_note_scan, quiet_prompt, character, env, base_env)
    ctx = _Context(lore, result, chat, settings, env, generation_type, fields, injections, text_label)
    wanted = set(entry_keys)
    by_entry: dict[str, list[dict[str, Any]]] = {}
    for e in result.trace or []:
        key = e.get("entry")
        if key in wanted:
            by_entry.setdefault(key, []).append(e)
    active = set(result.activated_keys())
    out = []
    for entry_key, ce in zip(entry_keys, ces):
        events = by_entry.get(entry_key, [])
        activated = entry_key in active
        decisive = _decisive_pass(events, activated, ctx)
        keys = _KeyReport(ctx, ce, settings)
        lines, matches = keys.describe(decisive)
        verdict = _verdict(ce, activated, events, decisive, keys, result)
        steps = _steps(ce, events, ctx, keys)
        out.append(Explanation(entry=entry_key, activated=activated, verdict=verdict, lines=lines, steps=steps,
                               matches=matches, events=events))
    return out


_BY_KEY: weakref.WeakKeyDictionary[Lore, dict[str, CompiledEntry]] = weakref.WeakKeyDictionary()


def entries_by_key(lore: Lore) -> dict[str, CompiledEntry]:
    """The compiled entries by ``"<book>.<uid>"`` (the first of equal keys), built once per ``Lore``."""
    got = _BY_KEY.get(lore)
    if got is None:
        got = {}
        for ce in lore._all:
            got.setdefault(ce.key, ce)
        _BY_KEY[lore] = got
    return got


def _find_entry(lore: Lore, key: str) -> CompiledEntry:
    from ._errors import LorescanError

    ce = entries_by_key(lore).get(key)
    if ce is None:
        raise LorescanError(f"no entry {key!r} in the books (use <book>.<uid>)", field="entry")
    return ce


def _decisive_pass(events: list[dict[str, Any]], activated: bool, ctx: _Context) -> int | None:
    """The pass that settled the entry: its activation, else its last candidacy, else its last gate."""
    for kinds in (("activated",) if activated else (), ("candidate",), ("candidate", "skipped")):
        found = [e["pass"] for e in events if e["event"] in kinds]
        if found:
            return found[-1]
    return max(ctx.passes) if ctx.passes else None


# ------------------------------------------------------------------------------ keys

class _KeyReport:
    """Where each key of one entry occurs, pass by pass (worked out on demand, remembered)."""

    def __init__(self, ctx: _Context, ce: CompiledEntry, settings: Settings) -> None:
        self.ctx, self.ce = ctx, ce
        self.cs = _js.truthy(_js.nullish(ce.case_sensitive, settings.world_info_case_sensitive))
        self.ww = _js.truthy(_js.nullish(ce.match_whole_words, settings.world_info_match_whole_words))
        self.rule = ctx.lore.mode.word_boundaries     # the word rule whole-word keys match with
        self.primary = [k for k in ce.keys] if isinstance(ce.keys, list) else []
        sec = ce.keys_secondary if isinstance(ce.keys_secondary, list) else []
        self.secondary = sec if ce.selective else []
        self.ignored_secondary = bool(sec) and not ce.selective
        self._memo: dict[tuple[str, int, int | None], list[KeyMatch]] = {}

    def found(self, role: str, i: int, pas: int | None) -> list[KeyMatch]:
        """Every piece the key scanned in ``pas`` where it occurs (counted or not)."""
        ck = (role, i, pas)
        got = self._memo.get(ck)
        if got is None:
            key = (self.primary if role == "primary" else self.secondary)[i]
            pieces, _ = self.ctx.pieces(self.ce, pas)
            got = self._memo[ck] = _locate(key, role, pieces, pas, self.ctx.env, self.cs, self.ww, self.rule)
        return got

    def first_hit(self, role: str, pas: int | None) -> tuple[int, KeyMatch] | None:
        """The first key (in the entry's order) that matches in ``pas``, and where."""
        keys = self.primary if role == "primary" else self.secondary
        for i in range(len(keys)):
            hit = next((m for m in self.found(role, i, pas) if m.counts), None)
            if hit is not None:
                return i, hit
        return None

    def describe(self, pas: int | None) -> tuple[list[str], list[KeyMatch]]:
        lines: list[str] = []
        matches: list[KeyMatch] = []
        for role, keys in (("primary", self.primary), ("secondary", self.secondary)):
            for i, key in enumerate(keys):
                found = self.found(role, i, pas)
                matches.extend(found)
                lines.append(self._line(role, key, found, pas))
        if self.ignored_secondary:
            lines.append("the secondary keys are ignored: the entry is not selective")
        return lines, matches

    def _line(self, role: str, key: Any, found: list[KeyMatch], pas: int | None) -> str:
        name = f"{role} key {quote(key)}"
        if not isinstance(key, str):
            return f"{name} is not text, so it never matches"
        hit = next((m for m in found if m.counts), None)
        if hit is not None and hit.kind == "blank":
            return f"{name} is blank, so it matches any text"
        if hit is not None:
            word = "" if hit.word is None or hit.word == key else (
                f" inside the word {quote(hit.word)}" if hit.inside_word else f" as {quote(hit.word)}")
            note = "; whole-word matching is off" if hit.inside_word else self._rule_note(key, hit)
            return f"{name} matched{word} in {hit.where}{note}"
        if found:
            m = found[0]
            return (f"{name} occurs only inside the word {quote(m.word)}, in {m.where}; whole-word matching "
                    f"is on, so it does not match{self._rule_note(key, m)}")
        _, scanned = self.ctx.pieces(self.ce, pas)
        beyond = self._beyond_depth(key, role, pas)
        if beyond is not None:
            depth = _js.js_string(self.ctx.depth(self.ce, pas))
            return (f"{name} occurs only in {beyond.where}, beyond the scan depth of {depth} "
                    f"(pass {pas or 1} scanned {scanned})")
        case = ""
        if self.cs and _locate(key, role, self.ctx.pieces(self.ce, pas)[0], pas, self.ctx.env, False, self.ww,
                                   self.rule):
            case = "; it occurs in another case, and case-sensitive matching is on"
        return f"{name} does not occur in the text pass {pas or 1} scanned ({scanned}){case}"

    def _rule_note(self, key: str, hit: KeyMatch) -> str:
        """Which word rule decided a whole-word match, where it matters: always under the unicode
        rule, and under SillyTavern's for a key with a non-ASCII character at an edge."""
        if not self.ww or hit.kind != "plain":
            return ""
        text = _js.trim(key)
        if self.rule == SILLYTAVERN and not any(not ch.isascii() and edge_checks(ch) for ch in (text[:1], text[-1:])):
            return ""
        return f"; whole words decided by {word_rule_words(self.rule)}"

    def _beyond_depth(self, key: str, role: str, pas: int | None) -> KeyMatch | None:
        depth = self.ctx.depth(self.ce, pas)
        start = int(min(depth, MAX_SCAN_DEPTH)) if depth > 0 else 0
        older = self.ctx.older(start)
        found = _locate(key, role, older, pas, self.ctx.env, self.cs, self.ww, self.rule)
        return next((m for m in found if m.counts), None)


def _passes(numbers: list[int]) -> str:
    """``pass 1`` or ``passes 1, 2 and 3``."""
    if len(numbers) == 1:
        return f"pass {numbers[0]}"
    return "passes " + ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"


def _locate(key: Any, role: str, pieces: list[_Piece], pas: int | None, env: MacroEnv, cs: bool,
            ww: bool, rule: str = SILLYTAVERN) -> list[KeyMatch]:
    """The best occurrence of ``key`` in each piece: SillyTavern's match rules, piece by piece."""
    if not isinstance(key, str):
        return []
    needle = _js.trim(substitute(key, env))
    rx = parse_regex_key(needle)
    out: list[KeyMatch] = []
    for p in pieces:
        base = dict(key=key, role=role, where=p.where, piece=p.kind, scan_pass=pas, message=p.message,
                    source=p.source)
        if rx is not None:
            span = rx.search_span("\x01" + p.text)
            if span is not None:
                s, e = max(span[0] - 1, 0), max(span[1] - 1, 0)
                out.append(KeyMatch(kind="regex", offset=s, word=p.text[s:e], **base))  # type: ignore[arg-type]
            continue
        if not needle:
            out.append(KeyMatch(kind="blank", offset=0, word=None, **base))  # type: ignore[arg-type]
            continue
        if rule == UNICODE:
            u = unicode_occurrence(needle, p.text, cs, ww)
            if u is not None:
                out.append(KeyMatch(kind="plain", offset=u[0], word=u[1], inside_word=u[2], counts=u[3],
                                    length=u[4], **base))  # type: ignore[arg-type]
            continue
        m = plain_occurrence(needle, p.text, cs, ww)
        if m is not None:
            start, word, inside, counts = m
            out.append(KeyMatch(kind="plain", offset=start, word=word, inside_word=inside, counts=counts,
                                **base))  # type: ignore[arg-type]
    return out


# ------------------------------------------------------------------------------ verdict and steps

def _verdict(ce: CompiledEntry, activated: bool, events: list[dict[str, Any]], pas: int | None,
             keys: _KeyReport, result: ActivationResult) -> str:
    in_pass = [e for e in events if e["pass"] == pas]
    gate = next((e for e in reversed(in_pass) if e["event"] in ("candidate", "skipped")), None)
    if activated:
        return f"activated in pass {pas}: {_reason(gate, keys, pas, ce)}"
    if gate is None:
        if not isinstance(ce.keys, list) or not ce.keys:
            return "not activated: the entry has no keys and is not constant"
        return "not activated: it was never checked (the evaluation stopped before it)"
    if gate["event"] == "skipped":
        return f"not activated: {_reason(gate, keys, pas, ce)}"
    for e in in_pass:
        if e["event"] == "group":
            return f"not activated: removed by its inclusion group: {e['why']}"
        if e["event"] == "probability" and not e["passed"]:
            return f"not activated: {_roll_words(e)}"
        if e["event"] == "budget" and e["outcome"] != "fits":
            return f"not activated: {_budget_words(e)}"
    if result.overflowed:
        return "not activated: a candidate, but the budget overflowed before its turn"
    return "not activated: a candidate, but it was not activated"


def _reason(gate: dict[str, Any] | None, keys: _KeyReport, pas: int | None, ce: CompiledEntry) -> str:
    """A gate's reason in words, with where the keys matched when keys decided."""
    if gate is None:
        return "activated"
    why = str(gate["why"])
    if why.startswith("generation type "):
        triggers = ", ".join(map(_as_written, ce.triggers or []))
        return f"the generation type {quote(keys.ctx.trigger)} is not among its triggers ({triggers})"
    if not why.startswith(_KEY_REASONS):
        return GATE_WORDS.get(why, why)
    hit = keys.first_hit("primary", pas)
    if hit is None:
        return "no primary key matched" if why.startswith("no primary") else why
    text = f"primary key {quote(hit[1].key)} matched in {hit[1].where}"
    if not keys.secondary:
        return text
    logic = ce.selective_logic if ce.selective_logic is not None else 0
    number = isinstance(logic, (int, float)) and not isinstance(logic, bool)
    name = LOGIC_NAMES.get(logic, f"logic {_js.js_string(logic)}") if number else f"logic {_js.js_string(logic)}"
    sec = keys.first_hit("secondary", pas)
    matched = [keys.secondary[i] for i in range(len(keys.secondary))
               if any(m.counts for m in keys.found("secondary", i, pas))]
    if gate["event"] == "skipped":
        detail = ("none of them matched" if not matched else
                  f"{', '.join(quote(k) for k in matched)} matched")
        return f"{text}, but the secondary keys failed ({name}: {detail})"
    if sec is not None and logic == 0:
        return f"{text}, and secondary key {quote(sec[1].key)} in {sec[1].where} ({name})"
    if logic == 1:
        missing = [quote(k) for k in keys.secondary if k not in matched]
        return f"{text}, and secondary key {missing[0] if missing else '?'} did not ({name})"
    if logic == 2:
        return f"{text}, and no secondary key did ({name})"
    return f"{text}, and every secondary key matched ({name})"


def _roll_words(e: dict[str, Any]) -> str:
    verdict = "passed" if e["passed"] else "failed"
    return (f"{verdict} its probability roll (rolled {e['roll']:.1f}; it needs "
            f"{_js.js_string(e['probability'])} or less)")


def _budget_words(e: dict[str, Any]) -> str:
    outcome = str(e["outcome"])
    used = (e.get("before") or 0) + (e.get("pass_tokens") or 0)
    if outcome == "fits":
        return f"fits the budget: {used:,} of {e['budget']:,} tokens used after it"
    if outcome == "overflow":
        return f"does not fit the budget: with it, {used:,} tokens would be used, over the budget of {e['budget']:,}"
    first = f" (at {e['overflowed_by']})" if e.get("overflowed_by") else ""
    return f"skipped: the budget of {e['budget']:,} tokens overflowed earlier in this evaluation{first}"


def pass_label(ctx_passes: dict[int, tuple[str, float]], pas: int) -> str:
    state, depth = ctx_passes.get(pas, ("initial", 0))
    if state == "recursion":
        return f"pass {pas} (recursion)"
    if state == "min_activations":
        return f"pass {pas} (min activations: the newest {_js.js_string(depth)} messages)"
    return f"pass {pas} (the chat)"


def _steps(ce: CompiledEntry, events: list[dict[str, Any]], ctx: _Context, keys: _KeyReport) -> list[str]:
    """Each trace event of the entry in words; consecutive passes that say the same are merged."""
    by_pass: dict[int, list[str]] = {}
    for e in events:
        kind = e["event"]
        if kind == "candidate":
            text = f"a candidate: {_reason(e, keys, e['pass'], ce)}"
        elif kind == "skipped":
            text = f"not a candidate: {_reason(e, keys, e['pass'], ce)}"
        elif kind == "group":
            text = f"removed by its inclusion group: {e['why']}"
        elif kind == "probability":
            text = _roll_words(e)
        elif kind == "budget":
            text = _budget_words(e)
        elif kind == "activated":
            text = "activated"
        else:
            continue
        by_pass.setdefault(e["pass"], []).append(text)
    runs: list[list[int]] = []
    for pas in by_pass:
        if runs and runs[-1][-1] == pas - 1 and by_pass[runs[-1][-1]] == by_pass[pas]:
            runs[-1].append(pas)
        else:
            runs.append([pas])
    out: list[str] = []
    for run in runs:
        head = pass_label(ctx.passes, run[0]) if len(run) == 1 else f"passes {run[0]} to {run[-1]}"
        out.extend(f"{head}: {text}" for text in by_pass[run[0]])
    return out
