"""Lint lorebooks: entries and keys that SillyTavern will treat differently from what they seem to say.

Pure: :func:`lint` reads books and returns :class:`Finding` objects; it prints nothing and reads no
files except the bundled word list (``lorescan/data/common_words.txt``). Every check follows the
engine's own reading of the raw values (JavaScript truthiness, strict equality, trimmed keys).

Disabled entries get only the ``disabled`` finding; the keys of constant (and ``@@activate``)
entries are not checked, since they never decide activation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from . import _js
from ._compile import CompiledEntry, compile_books
from ._construct import BULK, gc_paused, make
from ._errors import LorescanError
from ._jsregex import JsRegex, JsRegexSyntaxError, parse_regex_key
from ._lint_types import CODES as TYPE_CODES
from ._lint_types import type_findings
from ._macros import MacroEnv, may_change, substitute
from ._match import (
    LOOKS_LIKE_REGEX,
    REGEX_KEY,
    SILLYTAVERN,
    UNICODE,
    edge_checks,
    split_regex_key,
    word_rule_words,
)
from ._mode import mode_for, with_options
from ._model import GENERATION_TYPES, Lorebook, Settings
from ._redos import bound, catastrophic
from ._tokens import TOKENIZERS, TokenCounter, get_counter

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "info": 2}

#: Every finding code with its usual severity and what it means.
CODES: dict[str, tuple[Severity, str]] = {
    "invalid-regex": ("error", "looks like /regex/flags but JavaScript rejects it: matched as literal text"),
    "regex-sticky-flag": ("warning", "a regex key with the y flag can only match at the scan text's first character"),
    "regex-start-anchor": ("warning", "a regex key starting with ^ cannot match at the start of a message"),
    "regex-catastrophic": ("warning", "a regex key whose repetition can match the same text in many ways: "
                                      "the browser's regex engine can take exponential time and hang SillyTavern"),
    "empty-key": ("warning", "an empty key never matches"),
    "whitespace-key": ("warning", "a whitespace-only key is trimmed to nothing and matches everything"),
    "key-inside-words": ("warning", "with whole-word matching off the key matches inside common words "
                                    "(info for keys longer than 3 characters)"),
    "word-rule-script": ("info", "a whole-word key that starts or ends in a letter of a script other than Latin: "
                                 "SillyTavern's word rule (ASCII) also matches it inside longer words"),
    "duplicate-key": ("info", "the same key triggers two or more entries"),
    "no-keys": ("warning", "an entry with no keys that is not constant can never fire"),
    "disabled": ("info", "the entry is disabled"),
    "delay-never-recursion": ("error", "delayUntilRecursion with no recursion pass to run it: never fires"),
    "bad-selective-logic": ("error", "selectiveLogic outside 0..3: the secondary stage always fails"),
    "and-all-empty-secondary": ("error", "AND ALL with an empty secondary key never fires"),
    "unknown-trigger": ("error", "triggers names a generation type that does not exist"),
    "unknown-position": ("error", "position is not one SillyTavern emits: activated, budgeted, emitted nowhere"),
    "outlet-without-name": ("warning", "an outlet entry (position 7) without outletName is emitted nowhere"),
    "probability-zero": ("warning", "probability 0 with useProbability on: never passes its roll"),
    "content-over-budget": ("error", "the content alone reaches the budget: it can never fit"),
    "case-mismatch-own-content": ("info", "a case-sensitive key appears in its own content only in another case"),
    "single-member-group": ("warning", "an inclusion group with a single member"),
    "duplicate-uid": ("error", "two entries share one <book>.<uid>: SillyTavern keeps one activation per uid"),
    "macros-too-deep": ("warning", "macros nested too deeply for lorescan to substitute (about 140 levels)"),
    "new-macro-engine": ("info", "SillyTavern's two macro engines substitute this text differently: installs "
                                 "with the \"Experimental Macro Engine\" setting off see another text"),
    **TYPE_CODES,
}


@dataclass(frozen=True)
class Finding:
    """One problem found in one entry (or in the books as a whole when ``uid`` is ``None``)."""

    code: str
    severity: Severity
    book: str
    uid: Any
    field: str | None
    message: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=1)
def common_words() -> tuple[str, ...]:
    """The bundled list of common English words (lowercase)."""
    text = resources.files("lorescan").joinpath("data/common_words.txt").read_text(encoding="utf-8")
    return tuple(w for w in (line.strip() for line in text.splitlines()) if w and not w.startswith("#"))


@lru_cache(maxsize=2)
def _word_blob(capitalized: bool) -> str:
    return _joined(_words(capitalized))


def _joined(words: tuple[str, ...] | list[str]) -> str:
    """Words one per line, with a newline before the first: a word is what lies between two."""
    return "\n" + "\n".join(words) + "\n"


def _words(capitalized: bool) -> tuple[str, ...]:
    words = common_words()
    return tuple(w[:1].upper() + w[1:] for w in words) if capitalized else words


@lru_cache(maxsize=2)
def _pair_blobs(capitalized: bool) -> dict[str, str]:
    """For each two characters that occur in a common word, :func:`_word_blob` of just the words
    holding them: a key of two characters or more is looked for in those (a book's lint looks
    up tens of thousands of keys)."""
    holding: dict[str, list[str]] = {}
    for w in _words(capitalized):
        for pair in dict.fromkeys(w[i:i + 2] for i in range(len(w) - 1)):
            holding.setdefault(pair, []).append(w)
    return {pair: _joined(ws) for pair, ws in holding.items()}


_INFLECTIONS = ("s", "es", "ed", "d", "ing", "er", "ers", "ly", "'s")


def words_containing(key: str, case_sensitive: bool = False, limit: int = 0) -> list[str]:
    """Common words that contain ``key`` without being it (or an inflection of it), shortest first.

    A key longer than three characters is only reported inside a word it does not begin
    (``amber`` in ``chamber``, not ``magic`` in ``magical``).

    Case-insensitive keys are compared lowercase; a case-sensitive key is looked for in the words
    as written and capitalized (as at the start of a sentence).
    """
    needle = key if case_sensitive else key.lower()
    if not needle or "\n" in needle:
        return []
    found: set[str] = set()
    for capitalized in ((False, True) if case_sensitive else (False,)):
        blob = _word_blob(capitalized) if len(needle) < 2 else _pair_blobs(capitalized).get(needle[:2], "")
        i = blob.find(needle)
        while i >= 0:
            start = blob.rfind("\n", 0, i) + 1
            end = blob.find("\n", i)
            word = blob[start:end]
            low, key_low = word.lower(), needle.lower()
            # a longer key extended at its end (magic -> magical) is usually meant to match
            if low != key_low and not (len(key_low) > 3 and low.startswith(key_low)) \
                    and not any(low == key_low + s for s in _INFLECTIONS):
                found.add(low)
            i = blob.find(needle, i + 1)
    out = sorted(found, key=lambda w: (len(w), w))
    return out[:limit] if limit else out


# -- regex keys ----------------------------------------------------------------------------------

_START_ANCHOR = re.compile(r"\^(?:\((?:\?:)?)?[A-Za-z0-9]")


def regex_problem(text: str) -> str | None:
    """Why a key that looks like ``/pattern/flags`` is plain text to SillyTavern, or ``None``."""
    shape = LOOKS_LIKE_REGEX.fullmatch(text)
    if shape is None or parse_regex_key(text) is not None:
        return None
    m = REGEX_KEY.fullmatch(text)
    if m is None:
        flags = shape.group(2)
        bad = sorted(set(flags) - set("gimsuy"))
        return f"flag(s) {_j(''.join(bad))} are not accepted (only g, i, m, s, u, y)" if bad \
            else "it is not /pattern/flags"
    parts = split_regex_key(text)
    if parts is None:
        return "the pattern contains an unescaped '/'"
    try:
        JsRegex(*parts)
    except JsRegexSyntaxError as exc:
        return f"JavaScript rejects it: {exc}"
    except RecursionError:
        return "the pattern is too deeply nested"
    return "JavaScript rejects it"


# -- the checks ----------------------------------------------------------------------------------

#: the default names under each macro engine (the ``new-macro-engine`` check)
_NEW_ENV, _LEGACY_ENV = MacroEnv(engine="new", outlets=True), MacroEnv(engine="legacy", outlets=True)


def _shown(text: str) -> str:
    """A text in a finding: as JSON writes it, cut after 60 characters."""
    return _j(text if len(text) <= 60 else text[:57] + "...")


class _Linter:
    def __init__(self, books: list[Lorebook], settings: Settings | None, compat: str,
                 tokenizer: str | TokenCounter, word_boundaries: str = SILLYTAVERN,
                 macro_engine: str | None = None) -> None:

        self.books = books
        self.word_rule = with_options(mode_for(compat), word_boundaries).word_boundaries
        self.explicit_settings = settings is not None
        self.settings = settings or make(Settings)
        self.mode = with_options(mode_for(compat), macro_engine=macro_engine)
        #: the macros' values where lint substitutes a key or a content: the default names
        self.env = MacroEnv(engine=self.mode.macro_engine, outlets=self.mode.outlets)
        self.counter = get_counter(tokenizer)
        self.findings: list[tuple[tuple[int, int, int], Finding]] = []
        self.compiled = compile_books(books)
        self._pos: tuple[int, int] = (0, 0)

    def add(self, code: str, ce: CompiledEntry | None, book: str, field: str | None, message: str,
            fix: str, severity: Severity | None = None) -> None:
        sev = severity or CODES[code][0]
        uid = ce.uid if ce is not None else None
        self.findings.append(((*self._pos, len(self.findings)),
                              Finding(code, sev, book, uid, field, message, fix)))

    def run(self) -> list[Finding]:
        live: list[tuple[int, int, CompiledEntry]] = []
        levels = {ce.dur_level for _, entries in self.compiled for ce in entries if ce.delay_until_recursion}
        for bi, (book, entries) in enumerate(self.compiled):
            for ei, ce in enumerate(entries):
                self._pos = (bi, ei)
                if ce.disable:
                    self.add("disabled", ce, book.name, "disable",
                             f"disabled (disable: {_j(ce.entry.disable)}); SillyTavern skips it",
                             "enable it or delete it")
                    continue
                live.append((bi, ei, ce))
                self.entry(book.name, ce, levels)
        self.duplicates(live)
        self.groups(live)
        self.uids()
        return [f for _, f in sorted(self.findings, key=lambda x: x[0])]

    # per entry ---------------------------------------------------------------------------------
    def entry(self, book: str, ce: CompiledEntry, levels: set[float | str]) -> None:
        always = ce.constant or "@@activate" in ce.decorators
        keys = ce.keys if isinstance(ce.keys, list) else []
        if not always:
            if not keys or all(k == "" for k in keys):
                vec = _js.truthy(ce.entry.vectorized)
                self.add("no-keys", ce, book, "key",
                         "no keys and not constant: " + ("only the Vector Storage extension can activate it"
                                                         if vec else "it can never fire"),
                         "add keys, or set constant: true", "info" if vec else None)
            self.keys(book, ce, "key", keys)
            sec = ce.keys_secondary if isinstance(ce.keys_secondary, list) else []
            if ce.selective and sec:
                self.keys(book, ce, "keysecondary", sec)
                self.selective(book, ce, sec)
        self.delay(book, ce, levels)
        if self.mode.version == "1.18":
            self.macro_engine(book, ce, keys)
        self.triggers(book, ce)
        self.position(book, ce)
        self.probability(book, ce)
        self.budget(book, ce)
        for code, field, message, fix, severity in type_findings(ce.entry, self.mode.version == "1.18"):
            self.add(code, ce, book, field, message, fix, severity)

    def _effective(self, value: Any, default: bool) -> bool:
        return default if value is None else _js.truthy(value)

    def keys(self, book: str, ce: CompiledEntry, field: str, keys: list[str]) -> None:
        cs = self._effective(ce.case_sensitive, self.settings.world_info_case_sensitive)
        ww = self._effective(ce.match_whole_words, self.settings.world_info_match_whole_words)
        secondary = field == "keysecondary"
        logic = ce.selective_logic
        for i, raw in enumerate(keys):
            where = f"{field}[{i}]"
            if raw == "":
                if secondary and _strict(logic, 3):
                    continue              # reported by selective() as never firing
                what = ("never matches" if not secondary else
                        "never matches, so NOT ALL is always satisfied: the primary key alone fires the entry"
                        if _strict(logic, 1) else "never matches (it counts as a miss)")
                self.add("empty-key", ce, book, where, f"empty key {what}", "remove the empty key")
                continue
            macro = may_change(raw)
            text = _js.trim(self.substituted(raw, ce, book, where) if macro else raw)
            if not text:
                self.add("whitespace-key", ce, book, where,
                         f"key {_j(raw)} is blank after trimming and matches every scan text"
                         + ("" if secondary else ": the entry fires on every generation"),
                         "remove the key, or write the word it was meant to be")
                continue
            if LOOKS_LIKE_REGEX.fullmatch(text):
                why = regex_problem(text)
                if why is not None:
                    self.add("invalid-regex", ce, book, where,
                             f"{_j(raw)} looks like a regex but {why}; SillyTavern matches it as literal text, "
                             "slashes included", "fix the pattern (test it in a browser console with "
                             "new RegExp(...)) or remove the slashes for a plain key")
                else:
                    self.regex(book, ce, where, raw, parse_regex_key(text))
                continue
            if macro:
                continue
            if not ww and len(_js.split_ws(text)) == 1:
                words = words_containing(text, cs)
                if words:
                    shown = ", ".join(words[:5]) + (f" and {len(words) - 5} more" if len(words) > 5 else "")
                    self.add("key-inside-words", ce, book, where,
                             f"key {_j(text)} matches inside common words ({shown}) because whole-word matching "
                             "is off", "set matchWholeWords: true on this entry, or use a regex key like "
                             f"/\\b{re.escape(text)}\\b/{'' if cs else 'i'}",
                             None if len(text) <= 3 else "info")
            if ww and self.word_rule == SILLYTAVERN:
                self.word_rule_script(book, ce, where, text)
            if not secondary and cs:
                content = ce.content
                if text not in content and _js.lower(text) in _js.lower(content):
                    self.add("case-mismatch-own-content", ce, book, where,
                             f"case-sensitive key {_j(text)} appears in the entry's own content only in another "
                             "case, so text like it (recursion included) does not match",
                             "check the key's capitalisation, or set caseSensitive: false")

    def word_rule_script(self, book: str, ce: CompiledEntry, where: str, text: str) -> None:
        """A whole-word key with a letter of a spaced script other than Latin at an edge: SillyTavern's
        word rule sees no word character there, so the key matches inside longer words of its
        script (an accented Latin edge is left alone: the letters beside it are mostly ASCII)."""
        edges = [ch for ch in (text[:1], text[-1:])
                 if not ch.isascii() and edge_checks(ch) and not unicodedata.name(ch, "").startswith("LATIN")]
        if edges:
            self.add("word-rule-script", ce, book, where,
                     f"whole-word key {_j(text)} is decided by {word_rule_words(SILLYTAVERN)}: "
                     f"{_j(edges[0])} is not a word character to it, so the key also matches where it is only "
                     "the start or the end of a longer word",
                     "compile with word_boundaries=\"unicode\" (--word-boundaries unicode), which decides "
                     "with " + word_rule_words(UNICODE))

    def regex(self, book: str, ce: CompiledEntry, where: str, raw: str, rx: JsRegex | None) -> None:
        if rx is None:
            return
        if "y" in rx.flags:
            self.add("regex-sticky-flag", ce, book, where,
                     f"{_j(raw)} has the y (sticky) flag: it can only match at the scan text's first character, "
                     "which is always the \\x01 marker, so it practically never matches", "remove the y flag")
        if _START_ANCHOR.match(rx.source):
            m_flag = "m" in rx.flags
            self.add("regex-start-anchor", ce, book, where,
                     f"{_j(raw)} starts with ^, but every message in the scan text starts with a \\x01 marker, "
                     + ("so it matches only at line starts inside a message" if m_flag
                        else "so it never matches"),
                     "drop the ^ (use \\b for a word start)")
        part = catastrophic(rx.source, rx.flags)
        if part is not None:
            from . import _jsregex

            n = bound(part)
            cost = "exponential time" if n is None else f"time growing like the text length to the power {n}"
            self.add("regex-catastrophic", ce, book, where,
                     f"{_j(raw)} can take {cost}: the repetition {part} can match the same text in many different "
                     "ways, and when what follows it fails the browser's regex engine tries every one, so a long "
                     "message can freeze SillyTavern (lorescan gives up on such a search after "
                     f"{_jsregex.REGEX_TIMEOUT_SECONDS:g} s and counts it as no match)",
                     "make the parts of the repetition unable to match the same text (a+ for (a+)+, (\\w+\\s)+ "
                     "for (\\w+\\s?)+), or drop the outer quantifier")

    def selective(self, book: str, ce: CompiledEntry, sec: list[str]) -> None:
        logic = ce.selective_logic
        if not (logic is None or any(_strict(logic, n) for n in range(4))):
            self.add("bad-selective-logic", ce, book, "selectiveLogic",
                     f"selectiveLogic {_j(logic)} is not 0, 1, 2 or 3 (compared with ===): the secondary "
                     "stage always fails and the entry never fires",
                     "set selectiveLogic to 0 (AND ANY), 1 (NOT ALL), 2 (NOT ANY) or 3 (AND ALL)")
        elif _strict(logic, 3) and "" in sec:
            self.add("and-all-empty-secondary", ce, book, f"keysecondary[{sec.index('')}]",
                     "AND ALL with an empty secondary key: the empty key never matches, so the entry "
                     "never fires", "remove the empty secondary key")

    def delay(self, book: str, ce: CompiledEntry, levels: set[float | str]) -> None:
        if not ce.delay_until_recursion:
            return
        s = self.settings
        steps = s.world_info_max_recursion_steps
        why = None
        if steps == 1:
            why = "world_info_max_recursion_steps is 1, so no recursion pass ever runs"
        elif not s.world_info_recursive and len(levels) < 2:
            why = ("recursion is off" + ("" if self.explicit_settings else " (the default; pass settings)")
                   + " and there is only one delay level, so no recursion pass ever runs")
        if why is not None:
            self.add("delay-never-recursion", ce, book, "delayUntilRecursion",
                     f"delayUntilRecursion {_j(ce.entry.delayUntilRecursion)}: {why}; the entry never fires",
                     "turn world_info_recursive on, or clear delayUntilRecursion",
                     None if self.explicit_settings else "warning")

    def substituted(self, text: str, ce: CompiledEntry, book: str, field: str) -> str:
        """``text`` with its macros substituted; as it is, with a finding, when they nest too deeply
        for the new engine's parser (said once per entry and field)."""
        try:
            return substitute(text, self.env)
        except LorescanError as exc:
            if not any(f.code == "macros-too-deep" and f.uid == ce.uid and f.book == book and f.field == field
                       for _, f in self.findings):
                self.add("macros-too-deep", ce, book, field, exc.message,
                         "nest fewer macros inside each other (SillyTavern itself fails beyond a few hundred)")
            return text

    def macro_engine(self, book: str, ce: CompiledEntry, keys: list[Any]) -> None:
        """Texts SillyTavern 1.18's two macro engines substitute differently, for the names User
        and Character (see the README's *Macros*)."""
        sec = ce.keys_secondary if isinstance(ce.keys_secondary, list) else []
        texts = [("key", k) for k in keys] + [("keysecondary", k) for k in sec] + [("content", ce.raw_content)]
        for field, text in texts:
            if not isinstance(text, str) or not may_change(text):
                continue
            try:
                new = substitute(text, _NEW_ENV)
            except LorescanError:       # macros-too-deep says so where the text is read
                continue
            legacy = substitute(text, _LEGACY_ENV)
            if new != legacy:
                self.add("new-macro-engine", ce, book, field,
                         f"{field} {_shown(text)} substitutes to {_shown(new)} under SillyTavern's default macro "
                         f"engine and to {_shown(legacy)} with \"Experimental Macro Engine\" off (as an install "
                         "upgraded from 1.16 or earlier has it)",
                         "write the macros plainly ({{user}}: no spaces, escapes, flags or {{if}}) for one "
                         "result under both engines")

    def triggers(self, book: str, ce: CompiledEntry) -> None:
        raw = ce.entry.triggers
        if self.mode.generation_triggers and raw not in (None, []) and not isinstance(raw, list):
            self.add("unknown-trigger", ce, book, "triggers",
                     f"triggers is {_j(raw)}, not a list: SillyTavern ignores it, so the entry fires on every "
                     "generation type", 'write it as a list, e.g. ["normal"]', "warning")
            return
        trig = ce.triggers
        unknown = [t for t in trig if t not in GENERATION_TYPES]
        if not unknown:
            return
        known = ", ".join(GENERATION_TYPES)
        if not self.mode.generation_triggers:
            self.add("unknown-trigger", ce, book, "triggers",
                     f"unknown trigger(s) {_j(unknown)}; SillyTavern {self.mode.version} ignores triggers",
                     f"use only {known}", "info")
        elif len(unknown) == len(trig):
            self.add("unknown-trigger", ce, book, "triggers",
                     f"triggers {_j(trig)} names no real generation type, so the entry never fires",
                     f"use {known}, or clear triggers to fire on every type")
        else:
            self.add("unknown-trigger", ce, book, "triggers",
                     f"unknown trigger(s) {_j(unknown)} never match", f"use only {known}", "warning")

    def position(self, book: str, ce: CompiledEntry) -> None:
        pos = ce.position
        top = 7 if self.mode.outlets else 6
        number = isinstance(pos, (int, float)) and not isinstance(pos, bool) and pos == pos \
            and (isinstance(pos, int) or pos.is_integer())
        if not number or not 0 <= pos <= top:
            self.add("unknown-position", ce, book, "position",
                     f"position {_j(pos)} is not a number from 0 to {top} (compared with ===): the entry "
                     "activates and uses budget but its content is emitted nowhere",
                     "set position to a number: 0 before, 1 after the character, 4 at depth, …")
        elif pos == 7 and not ce.outlet_name:
            self.add("outlet-without-name", ce, book, "outletName",
                     "position 7 (outlet) with no outletName: the content goes into no outlet",
                     "set outletName, or choose another position")

    def probability(self, book: str, ce: CompiledEntry) -> None:
        p = ce.probability
        if not ce.use_probability or (isinstance(p, (int, float)) and not isinstance(p, bool) and p == 100):
            return
        n = _js.to_number(p) if p is not None else 0.0
        if n != n or n <= 0:
            self.add("probability-zero", ce, book, "probability",
                     f"probability {_j(p)} with useProbability on: the roll never passes, the entry never fires",
                     "set probability above 0 (100 = always), or disable the entry")

    def budget(self, book: str, ce: CompiledEntry) -> None:
        if ce.ignore_budget and self.mode.budget_skip:
            return
        content = self.substituted(ce.content, ce, book, "content")
        budget = self.settings.budget_tokens()
        if self.counter.name in TOKENIZERS and len(content.encode("utf-8", "surrogatepass")) + 7 < budget:
            return                         # the built-in counters never exceed UTF-8 bytes (+6 overhead)
        tokens = self.counter.count(content + "\n")
        if tokens >= budget:
            self.add("content-over-budget", ce, book, "content",
                     f"content is {tokens} tokens ({self.counter.name}, with its newline) and the budget is "
                     f"{budget}: it can never fit, so it never activates",
                     "shorten the content, raise world_info_budget"
                     + (", or set ignoreBudget: true" if self.mode.budget_skip else ""))

    # across entries ----------------------------------------------------------------------------
    def duplicates(self, live: list[tuple[int, int, CompiledEntry]]) -> None:
        seen: dict[str, list[tuple[int, int, CompiledEntry, int]]] = {}
        for bi, ei, ce in live:
            if ce.constant or "@@activate" in ce.decorators or not isinstance(ce.keys, list):
                continue
            mine: set[str] = set()
            for i, raw in enumerate(ce.keys):
                norm = _js.lower(_js.trim(raw))
                if norm and norm not in mine:
                    mine.add(norm)
                    seen.setdefault(norm, []).append((bi, ei, ce, i))
        for where in seen.values():
            if len(where) < 2:
                continue
            shared = set(where[0][2].group_names)
            for _, _, ce, _ in where[1:]:
                shared &= set(ce.group_names)
            if shared:
                continue                  # one inclusion group: sharing keys is the point
            bi, ei, first, i = where[0]
            self._pos = (bi, ei)
            others = ", ".join(ce.key for _, _, ce, _ in where[1:])
            self.add("duplicate-key", first, self.compiled[bi][0].name, f"key[{i}]",
                     f"key {_j(first.keys[i])} is also a primary key of {others}",
                     "merge the entries, put them in one inclusion group, or make the keys more specific")

    def groups(self, live: list[tuple[int, int, CompiledEntry]]) -> None:
        members: dict[str, list[tuple[int, int, CompiledEntry]]] = {}
        for bi, ei, ce in live:
            for name in ce.group_names:
                members.setdefault(name, []).append((bi, ei, ce))
        for name, group in members.items():
            if len(group) != 1:
                continue
            bi, ei, ce = group[0]
            self._pos = (bi, ei)
            near = [n for n in members if n != name and _js.lower(_js.trim(n)) == _js.lower(_js.trim(name))]
            fix = f"did you mean group {_j(near[0])}? (group names are exact strings)" if near \
                else "add the other members, or clear the group field"
            self.add("single-member-group", ce, self.compiled[bi][0].name, "group",
                     f"inclusion group {_j(name)} has only this entry, so it never competes", fix)


    def uids(self) -> None:
        first: dict[str, CompiledEntry] = {}
        for bi, (book, entries) in enumerate(self.compiled):
            for ei, ce in enumerate(entries):
                other = first.setdefault(ce.key, ce)
                if other is not ce:
                    self._pos = (bi, ei)
                    self.add("duplicate-uid", ce, book.name, "uid",
                             f"another entry already has the id {ce.key} (activation is keyed by <book>.<uid>): "
                             "once one of them is activated the other cannot be, and in one pass the later "
                             "replaces the earlier", "give every entry its own uid")


_j = _js.json_text      # a value in the lorebook's own notation


def _strict(value: Any, number: int) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == number


def lint(books: list[Lorebook], settings: Settings | None = None, compat: str = "1.18",
         tokenizer: str | TokenCounter = "cl100k", word_boundaries: str = SILLYTAVERN,
         macro_engine: str | None = None) -> list[Finding]:
    """Every finding for ``books`` (loaded together), in book and scan order.

    ``settings`` supplies the global case/whole-word defaults, recursion and the budget
    (SillyTavern's module defaults when ``None``); ``tokenizer`` counts the budget check's tokens;
    ``word_boundaries`` is the word rule the books are compiled with (``"unicode"``: no
    ``word-rule-script`` findings, as that rule sees those words); ``macro_engine`` the macro engine
    keys and contents are read with (default: the version's).
    """
    books = list(books)
    with gc_paused(sum(len(b.entries) for b in books) >= BULK):    # a compile's worth of objects, and findings
        return _Linter(books, settings, compat, tokenizer, word_boundaries, macro_engine).run()


def worst(findings: list[Finding]) -> Severity | None:
    """The most severe severity among ``findings``."""
    if not findings:
        return None
    return min((f.severity for f in findings), key=lambda s: SEVERITY_RANK[s])


__all__ = ["CODES", "Finding", "lint", "words_containing", "regex_problem", "common_words", "worst"]
