r"""The straightforward algorithm: SillyTavern's ``checkWorldInfo`` loop, entry by entry, key by key.

This is the reference lorescan is measured against (and checked against, in
``test_baseline_agrees.py``). It follows the spec (§5–§10, SillyTavern 1.18 behaviour, quirks on)
the way SillyTavern's JavaScript does it: on every pass it walks **every** entry in scan order,
builds that entry's scan text (``"\x01" + messages.join("\n\x01")`` + injections + recursion
buffer), and tests **every** key with ``needle in haystack``, the whole-word regex
``(?:^|\W)(needle)(?:$|\W)`` or the entry's JavaScript regex key, then applies the secondary
logic, inclusion groups, probability, the budget and the recursion rules.

It is a *careful* port, not a deliberately slow one, so the speed-up it shows is conservative:

* the lowercased scan text is computed once per entry per pass (SillyTavern lowercases it for
  every key), and a whole-word key is tested by finding its occurrences with ``str.find`` and
  checking the characters around them, which answers exactly like SillyTavern's
  ``(?:^|\W)(needle)(?:$|\W)`` regex (``_word_regex``, kept for the test that proves it) but
  without Python ``re``'s ~20 ns per character on long texts;
* JavaScript regex keys are parsed once (``lorescan._jsregex.parse_regex_key`` is memoised), as
  any port would cache ``new RegExp``.

Supported: one or more global books, chat, author's-note-style injections, per-entry scan depth,
case sensitivity and whole words, regex and macro keys, secondary keys, ``selective``, constants,
disabled entries, ``excludeRecursion``/``preventRecursion``/``delayUntilRecursion`` (levels),
inclusion groups (override, weighted roll, the ``splice(-1)`` quirk, exact-field "already
activated"), probability, the budget with SillyTavern 1.18's overflow rule, max recursion steps,
generation-type triggers. **Not** supported (raises :class:`Unsupported` when an entry or the
settings use them): timed effects (sticky, cooldown, delay), group scoring, ``ignoreBudget``,
character filters, decorators (content starting with ``@@``), ``match*`` card fields, minimum
activations, character/chat/persona books. The generated benchmark books use none of them.

Only lorescan's JavaScript helpers are used (``_js`` semantics, ``_jsregex.parse_regex_key``,
``macros.substitute``) and its token counters (so both sides count the same tokens).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lorescan import _js
from lorescan._jsregex import parse_regex_key
from lorescan._macros import MacroEnv, substitute
from lorescan._tokens import get_counter

INITIAL, RECURSION, MIN_ACTIVATIONS = 1, 2, 3
MAX_DEPTH = 1000

_WORD_RX: dict[str, re.Pattern[str]] = {}
_ESCAPE = re.compile(r"[/\-\\^$*+?.()|\[\]{}]")


class Unsupported(ValueError):
    """The input uses a feature this baseline does not implement."""


def _word_regex(needle: str) -> re.Pattern[str]:
    rx = _WORD_RX.get(needle)
    if rx is None:
        escaped = _ESCAPE.sub(lambda m: "\\" + m.group(0), needle)
        rx = re.compile(r"(?:^|[^A-Za-z0-9_])(" + escaped + r")(?:\Z|[^A-Za-z0-9_])")
        _WORD_RX[needle] = rx
    return rx


def match_keys(haystack: str, lowered: Callable[[], str], needle: str, case_sensitive: bool,
               whole_words: bool) -> bool:
    """``matchKeys(haystack, needle, entry)`` (spec §6.2); ``lowered()`` is the lowercased haystack."""
    rx = parse_regex_key(needle)
    if rx is not None:
        return rx.test(haystack)
    if not case_sensitive:
        haystack = lowered()
        needle = needle.lower()
    if whole_words:
        if len(_js.split_ws(needle)) > 1:
            return needle in haystack
        return _whole_word(haystack, needle)
    return needle in haystack


def _whole_word(haystack: str, needle: str) -> bool:
    r"""``/(?:^|\W)(needle)(?:$|\W)/.test(haystack)`` with ASCII ``\W``: some occurrence of the
    needle has a non-word character (or the text's edge) on both sides. Python's ``re`` runs that
    regex at ~20 ns per character on long texts, so occurrences are found with ``str.find``
    instead (the same answer; see ``test_baseline_agrees.py``)."""
    n, k = len(haystack), len(needle)
    i = haystack.find(needle)
    while i >= 0:
        if (i == 0 or not _word_char(haystack[i - 1])) and (i + k >= n or not _word_char(haystack[i + k])):
            return True
        i = haystack.find(needle, i + 1)
    return False


def _word_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


class _E:
    """An entry as SillyTavern holds it after loading: raw JSON values, template defaults."""

    def __init__(self, world: str, raw: dict[str, Any]) -> None:
        g = raw.get
        self.raw = raw
        self.world = world
        self.uid = g("uid")
        self.key = f"{world}.{_js.js_string(self.uid)}"
        self.keys = g("key") or []
        self.keysecondary = g("keysecondary") or []
        self.content = g("content") or ""
        self.order = g("order", 100)
        self.position = g("position", 0)
        self.constant = _js.truthy(g("constant", False))
        self.disable = _js.loose_eq_true(g("disable", False))
        self.selective = _js.truthy(g("selective", True))
        self.logic = g("selectiveLogic", 0)
        self.exclude_recursion = _js.truthy(g("excludeRecursion", False))
        self.prevent_recursion = _js.truthy(g("preventRecursion", False))
        dur = g("delayUntilRecursion", 0)
        self.dur = _js.truthy(dur)
        self.dur_level = (1.0 if dur is True else _js.to_number(dur)) if self.dur else 0.0
        self.probability = g("probability", 100)
        self.use_probability = _js.truthy(g("useProbability", True))
        self.group = g("group", "")
        self.group_override = _js.truthy(g("groupOverride", False))
        gw = g("groupWeight", 100)
        self.group_weight = 100 if gw is None else gw
        self.scan_depth = g("scanDepth")
        self.case_sensitive = g("caseSensitive")
        self.match_whole_words = g("matchWholeWords")
        self.triggers = g("triggers") or []
        for name in ("sticky", "cooldown", "delay", "ignoreBudget", "useGroupScoring",
                     "matchPersonaDescription", "matchCharacterDescription", "matchCharacterPersonality",
                     "matchCharacterDepthPrompt", "matchScenario", "matchCreatorNotes"):
            if _js.truthy(g(name)):
                raise Unsupported(f"{self.key}: {name} is not implemented by the baseline")
        cf = g("characterFilter")
        if cf and (cf.get("names") or cf.get("tags")):
            raise Unsupported(f"{self.key}: characterFilter is not implemented by the baseline")
        if isinstance(self.content, str) and self.content.startswith("@@"):
            raise Unsupported(f"{self.key}: decorators are not implemented by the baseline")


def sorted_entries(books: Sequence[tuple[str, dict[str, dict[str, Any]] | list[dict[str, Any]]]]) -> list[_E]:
    """``getSortedEntries`` for global books only: each book in ``Object.keys`` order, then a stable
    sort by descending ``order`` (a missing order sorts as 0)."""
    out: list[_E] = []
    for name, entries in books:
        if isinstance(entries, dict):
            keys = list(entries)
            out.extend(_E(name, entries[keys[i]]) for i in _js.object_key_order(keys))
        else:
            keys = [_js.js_string(e.get("uid")) for e in entries]
            out.extend(_E(name, entries[i]) for i in _js.object_key_order(keys))
    out.sort(key=lambda e: -_js.sort_key_number(e.order))
    return out


def _strict(value: Any, number: int) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == number


class Baseline:
    """``checkWorldInfo`` over a fixed set of global books; :meth:`activate` runs one generation."""

    def __init__(self, books: Sequence[tuple[str, Any]], tokenizer: str = "cl100k") -> None:
        self.entries = sorted_entries(books)
        self.counter = get_counter(tokenizer)

    def activate(self, chat: Sequence[Any], settings: Any, user_name: str = "User",
                 char_name: str = "Character", rng: Any = None, injections: Iterable[str] = (),
                 generation_type: str = "normal") -> list[str]:
        """The ``"<book>.<uid>"`` keys activated, in activation order."""
        return _Run(self, chat, settings, user_name, char_name,
                    rng if rng is not None else random.Random(), list(injections), generation_type).run()


class _Run:
    def __init__(self, base: Baseline, chat: Sequence[Any], s: Any, user: str, char: str, rng: Any,
                 injections: list[str], generation_type: str) -> None:
        if s.world_info_min_activations or s.world_info_use_group_scoring:
            raise Unsupported("minimum activations and group scoring are not implemented by the baseline")
        self.base, self.s, self.rng = base, s, rng
        self.env = MacroEnv(user=user, char=char, engine="new")    # 1.18's default macro engine
        self.trigger = generation_type
        msgs = [m if isinstance(m, dict) else m.model_dump() for m in chat]
        kept = [(i, m) for i, m in enumerate(msgs) if not m.get("is_system")]
        if generation_type == "swipe" and kept:
            kept.pop()
        texts = []
        for i, m in kept:
            mes = m.get("mes") or ""
            if i == 0:
                mes = substitute(mes, self.env)
            texts.append(f"{m.get('name', '')}: {mes}" if s.world_info_include_names else mes)
        texts.reverse()                                          # newest first
        # WorldInfoBuffer: depthBuffer[i] = messages[i].trim() for truthy messages (holes otherwise)
        self.depth_buffer: list[str] = []
        for i, t in enumerate(texts[:MAX_DEPTH]):
            if t:
                self.depth_buffer.extend([""] * (i - len(self.depth_buffer)))
                self.depth_buffer.append(_js.trim(t))
        self.injections = [x for x in (substitute(t, self.env) for t in injections) if x]
        self.recursion: list[str] = []
        self.skew = 0

    def get(self, e: _E, state: int) -> str:
        """``WorldInfoBuffer.get(entry, state)``: the text this entry is matched against."""
        depth = _js.to_number(e.scan_depth) if e.scan_depth is not None else self.s.world_info_depth + self.skew
        if not depth > 0:
            return ""
        depth = min(int(depth), MAX_DEPTH)
        result = "\x01" + "\n\x01".join(self.depth_buffer[:depth])
        if self.injections:
            result += "\n\x01" + "\n\x01".join(self.injections)
        if self.recursion and state != MIN_ACTIVATIONS:
            result += "\n\x01" + "\n\x01".join(self.recursion)
        return result

    def run(self) -> list[str]:
        s, entries, rng = self.s, self.base.entries, self.rng
        count_tokens = self.base.counter.count
        budget = s.budget_tokens()
        levels = sorted({e.dur_level for e in entries if e.dur})
        level = levels.pop(0) if levels else 0.0
        activated: dict[str, _E] = {}
        contents: dict[str, str] = {}
        failed: set[str] = set()
        all_text = ""
        overflowed = False
        group_fields: set[Any] = set()
        state, count = INITIAL, 0
        cs_default, ww_default = s.world_info_case_sensitive, s.world_info_match_whole_words
        while state:
            if s.world_info_max_recursion_steps and s.world_info_max_recursion_steps <= count:
                break
            count += 1
            now: list[_E] = []
            for e in entries:                                   # every entry, every pass
                if e.key in failed or e.key in activated:
                    continue
                if e.disable:
                    continue
                if e.triggers and self.trigger not in e.triggers:
                    continue
                if e.dur and state != RECURSION:
                    continue
                if e.dur and state == RECURSION and e.dur_level > level:
                    continue
                if state == RECURSION and s.world_info_recursive and e.exclude_recursion:
                    continue
                if e.constant:
                    now.append(e)
                    continue
                if not isinstance(e.keys, list) or not e.keys:
                    continue
                text = self.get(e, state)
                low: list[str] = []

                def lowered(text: str = text, low: list[str] = low) -> str:
                    if not low:
                        low.append(text.lower())
                    return low[0]

                cs = _js.truthy(_js.nullish(e.case_sensitive, cs_default))
                ww = _js.truthy(_js.nullish(e.match_whole_words, ww_default))
                primary = False
                for k in e.keys:
                    sub = substitute(k, self.env) if isinstance(k, str) else ""
                    if sub and match_keys(text, lowered, _js.trim(sub), cs, ww):
                        primary = True
                        break
                if not primary:
                    continue
                sec = e.keysecondary
                if not (e.selective and isinstance(sec, list) and sec):
                    now.append(e)
                    continue
                logic = 0 if e.logic is None else e.logic
                any_m, all_m, ok = False, True, False
                for k in sec:
                    sub = substitute(k, self.env) if isinstance(k, str) else ""
                    m = bool(sub) and match_keys(text, lowered, _js.trim(sub), cs, ww)
                    any_m = any_m or m
                    all_m = all_m and m
                    if (m and _strict(logic, 0)) or (not m and _strict(logic, 1)):
                        ok = True
                        break
                if ok or (_strict(logic, 2) and not any_m) or (_strict(logic, 3) and all_m):
                    now.append(e)
            scan_tokens = count_tokens(all_text)                 # before group filtering
            self.filter_groups(now, group_fields, rng)
            new_content = ""
            for e in now:
                if overflowed:
                    continue                                    # 1.18: skipped before the roll
                p = e.probability
                if e.use_probability and not _strict(p, 100):
                    if not rng.random() * 100 <= (_js.to_number(p) if p is not None else 0.0):
                        failed.add(e.key)
                        continue
                content = substitute(e.content, self.env)
                contents[e.key] = content
                new_content += content + "\n"
                if scan_tokens + count_tokens(new_content) >= budget:
                    overflowed = True
                    continue
                activated[e.key] = e
                if isinstance(e.group, str) and e.group:
                    group_fields.add(e.group)
            successful = [e for e in now if e.key not in failed]
            for_rec = [e for e in successful if not e.prevent_recursion]
            nxt = 0
            if s.world_info_recursive and not overflowed and for_rec:
                nxt = RECURSION
            if not nxt and levels:
                nxt = RECURSION
                level = levels.pop(0)
            state = nxt
            if state:
                text = "\n".join(contents.get(e.key, e.content) for e in for_rec)
                if text:
                    self.recursion.append(text)
                    all_text = text + "\n" + all_text
        return list(activated)

    def filter_groups(self, now: list[_E], group_fields: set[Any], rng: Any) -> None:
        """``filterByInclusionGroups`` without timed effects or scoring (spec §9.2)."""
        groups: dict[str, list[_E]] = {}
        for e in now:
            if e.group and isinstance(e.group, str):
                for name in re.split(r",[" + re.escape(_js.JS_WHITESPACE) + r"]*", e.group):
                    if name:
                        groups.setdefault(name, []).append(e)
        if not groups:
            return
        names = list(groups)

        def remove(e: _E) -> None:                              # splice(indexOf(e), 1), quirk included
            for i, x in enumerate(now):
                if x is e:
                    del now[i]
                    return
            if now:
                del now[-1]

        for name in (names[i] for i in _js.object_key_order(names)):
            group = groups[name]
            if name in group_fields:
                for e in group:
                    remove(e)
                continue
            if len(group) <= 1:
                continue
            prios = [e for e in group if e.group_override]
            if prios:
                winner = max(prios, key=lambda e: _js.sort_key_number(e.order))
                best = _js.sort_key_number(winner.order)
                winner = next(e for e in prios if _js.sort_key_number(e.order) == best)
            else:
                weights = [_js.to_number(e.group_weight) for e in group]
                roll = rng.random() * sum(weights)
                acc, winner = 0.0, None
                for e, w in zip(group, weights):
                    acc += w
                    if roll <= acc:
                        winner = e
                        break
                if winner is None:
                    continue
            for e in group:
                if e is not winner:
                    remove(e)


__all__ = ["Baseline", "Unsupported", "match_keys", "sorted_entries"]
