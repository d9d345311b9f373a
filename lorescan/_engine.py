"""The activation loop: SillyTavern's ``checkWorldInfo``, pass by pass, over compiled books.

:class:`Lore` is built once from the books (``compile``), then :meth:`Lore.activate` runs one
evaluation for a chat state and returns the buckets and the timed-effect state to carry forward.
The engine is pure: no I/O, no printing; randomness comes from the caller's random source.
"""

from __future__ import annotations

import gc
import random as _random
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

from . import _js
from ._budget import BudgetMeter
from ._compile import CompiledEntry, compile_books
from ._emit import emit
from ._index import CONSTANT, UNBUILT, BoundIndex, KeyIndex
from ._macros import MacroEnv, substitute
from ._mode import Mode, mode_for
from ._model import (
    GENERATION_TYPES,
    Activation,
    ActivationResult,
    ChatMessage,
    Lorebook,
    Settings,
)
from ._request import ActivationRequest
from ._scan import ScanBuffer, ScanMessages
from ._select import (
    FORCED,
    INITIAL,
    MIN_ACTIVATIONS,
    RECURSION,
    STATE_NAMES,
    filter_groups,
    forced_entries,
    gate,
    plain_gate,
)
from ._timed import TimedEffects
from ._tokens import TokenCounter, get_counter
from ._trace import Trace


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived objects, then move them
    (with any other young objects) straight to its oldest generation. A compiled book lives as long
    as its ``Lore``: the young passes would walk its ~300k new objects twice (~100 ms each at 100k
    entries) and find nothing; full collections still walk them, as before. Objects frozen with
    ``gc.freeze()`` already are left alone (unfreezing would release them), and so is a collector
    that was disabled."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()      # both are list splices: no object is visited
                gc.unfreeze()
            gc.enable()


class _Plan:
    """Scan order for one book selection: chat, persona, then strategy-ordered global/character."""

    def __init__(self, entries: list[CompiledEntry], total: int) -> None:
        self.entries = entries
        # gid → place in scan order (-1: not read); a list, as the engine maps many gids each pass
        self.pos = pos = [-1] * total
        self.constants: list[int] = []
        levels: dict[float | str, None] = {}    # SillyTavern's Set: first-seen order
        self.delayed: list[CompiledEntry] = []
        depth = 0.0
        truthy = _js.truthy
        for i, ce in enumerate(entries):    # one pass (100k entries): every per-entry fact at once
            pos[ce.gid] = i
            if ce.constant or (ce.decorators and "@@activate" in ce.decorators):
                self.constants.append(ce.gid)
            if ce.delay_until_recursion:
                levels[ce.dur_level] = None
            if ce.delay is not None and truthy(ce.delay):
                self.delayed.append(ce)
            if ce.scan_depth is not None:
                d = _js.to_number(ce.scan_depth)
                if d == d and d > depth:
                    depth = d
        self.levels = _js.ascending_set(levels)
        self._by_key: dict[str, CompiledEntry] | None = None
        self.max_scan_depth = depth if depth else 0


    def by_key(self) -> dict[str, CompiledEntry]:
        """Entries by ``"<book>.<uid>"`` (the first one in scan order wins), built on first use."""
        got = self._by_key
        if got is None:   # built aside and published whole: another thread never sees it half-built
            got = {}
            for ce in self.entries:
                got.setdefault(ce.key, ce)
            self._by_key = got
        return got


def _desc(entries: list[CompiledEntry]) -> list[CompiledEntry]:
    """Descending ``order``, stable (Python keeps equal elements in order under ``reverse``)."""
    return sorted(entries, key=_ORDER, reverse=True)


_ORDER = attrgetter("order_num")


class Lore:
    """Compiled lorebooks, reusable across evaluations (build with :func:`lorescan.compile`).

    Threads: :meth:`activate` may be called from several threads at once on one ``Lore``, a new
    one included, with any settings, names, forced activations, timed state or ``trace``; each
    call gets the result a lone caller would. What it builds on first use (scan orders, key
    indexes, macro keys per pair of names, entry records, memos) is built aside and published with
    one assignment, so a thread sees it whole or not at all (two threads may build the same thing
    at once; the copies are equal). The same holds for :func:`lorescan.activate`,
    :func:`lorescan.replay` and :func:`lorescan.compile` (``cache=True`` too). Not to be shared
    between threads: a :class:`~lorescan.Session` (one per chat), a random source passed as ``rng``
    (the draws would interleave), and a token counter of your own unless it is thread-safe; the
    books must not change once compiled. Evaluation is pure Python and holds the GIL, so threads
    serve requests concurrently but do not run faster together, and a regex key's time limit is
    wall-clock time, which a heavily loaded process spends waiting too.
    """

    def __init__(self, books: Sequence[Lorebook], compat: Mode | str = "1.18",
                 tokenizer: str | TokenCounter = "cl100k", quirks: bool = True,
                 prepare: Settings | None = None) -> None:
        self.books = list(books)
        self.mode = mode_for(compat, quirks)
        self.counter = get_counter(tokenizer)
        self._plans: dict[tuple, _Plan] = {}
        self._indexes: dict[tuple, KeyIndex] = {}
        self._bound: dict[tuple, BoundIndex] = {}     # per (case/word settings, names)
        self._contents: dict[MacroEnv, dict[str, str]] = {}   # see _substituted
        self._activations: dict[int, Activation] = {}          # see emit
        with _gc_paused():
            self._compiled = compile_books(self.books)
            self._all = [ce for _, entries in self._compiled for ce in entries]
            self._has_character_books = any(b.scope == "character" for b in self.books)
            if prepare is not None:
                self._key_index(prepare)
                self._plan(int(prepare.world_info_character_strategy), True, None, None)

    # -- book selection ---------------------------------------------------------------------
    def _plan(self, strategy: int, has_character: bool, persona_book: str | None,
              extra_books: tuple[str, ...] | None) -> _Plan:
        if not self._has_character_books:
            has_character, extra_books = False, None
        ck = (strategy, has_character, persona_book, extra_books)
        plan = self._plans.get(ck)
        if plan is not None:
            return plan
        by_scope: dict[str, list[tuple[Lorebook, list[CompiledEntry]]]] = {}
        for book, entries in self._compiled:
            by_scope.setdefault(book.scope, []).append((book, entries))
        globals_ = by_scope.get("global", [])
        global_names = {b.name for b, _ in globals_}
        chat = by_scope.get("chat", [])[:1]
        chat_name = chat[0][0].name if chat else None
        if chat and chat_name in global_names:
            chat = []
        chars = by_scope.get("character", []) if has_character else []
        if chars and extra_books is not None:
            named = {b.name: (b, e) for b, e in chars[1:]}
            chars = chars[:1] + [named[n] for n in extra_books if n in named]
        persona: list[tuple[Lorebook, list[CompiledEntry]]] = []
        if self.mode.persona_book:
            if persona_book is not None:
                persona = [(b, e) for b, e in self._compiled if b.name == persona_book][:1]
            else:
                persona = by_scope.get("persona", [])[:1]
            if persona and (persona[0][0].name == chat_name or persona[0][0].name in global_names):
                persona = []
        persona_name = persona[0][0].name if persona else None
        seen: set[str] = set()
        char_entries: list[CompiledEntry] = []
        for book, entries in chars:
            if book.name in seen or book.name in global_names or book.name == chat_name \
                    or book.name == persona_name:
                continue
            seen.add(book.name)
            char_entries.extend(entries)
        glob = [ce for _, entries in globals_ for ce in entries]
        if strategy == 1:
            ordered = _desc(char_entries) + _desc(glob)
        elif strategy == 2:
            ordered = _desc(glob) + _desc(char_entries)
        else:
            ordered = _desc(glob + char_entries)
        chat_entries = [ce for _, entries in chat for ce in entries]
        persona_entries = [ce for _, entries in persona for ce in entries]
        plan = _Plan(_desc(chat_entries) + _desc(persona_entries) + ordered, len(self._all))
        self._plans[ck] = plan
        return plan

    def _key_index(self, settings: Settings) -> KeyIndex:
        """The names-independent key index for the global case/whole-word settings."""
        ck = (bool(settings.world_info_case_sensitive), bool(settings.world_info_match_whole_words))
        index = self._indexes.get(ck)
        if index is None:
            with _gc_paused():
                index = self._indexes[ck] = KeyIndex(self._all, ck[0], ck[1])
        return index

    def _substituted(self, env: MacroEnv) -> dict[str, str]:
        """Entry contents with the macros of ``env`` substituted, remembered (contents recur)."""
        got = self._contents.get(env)
        if got is None or len(got) > 20_000:
            if len(self._contents) > 16:
                self._contents.clear()
            got = self._contents[env] = {}
        return got

    def _index(self, env: MacroEnv, settings: Settings) -> BoundIndex:
        """The key index for the global case/whole-word settings, bound to the names in ``env``
        (keys with macros prepared for them; built on the first evaluation with those names)."""
        ck = (bool(settings.world_info_case_sensitive), bool(settings.world_info_match_whole_words))
        bound = self._bound.get((ck, env))
        if bound is None:
            index = self._key_index(settings)
            with _gc_paused():
                if len(self._bound) > 16:
                    self._bound.clear()
                bound = self._bound[(ck, env)] = index.bind(env)
        bound.refresh()
        return bound

    # -- one evaluation ---------------------------------------------------------------------
    def activate(self, chat: ActivationRequest | Sequence[ChatMessage | dict[str, Any]] = (),
                 **fields: Any) -> ActivationResult:
        """Run SillyTavern's world-info activation once.

        Pass an :class:`ActivationRequest`, or the chat (oldest first) and the request's fields as
        keyword arguments: ``settings``, ``user_name``, ``char_name``, ``character`` (``None``: no
        character selected), ``timed`` (the state the previous call returned),
        ``generation_type``, ``dry_run``, ``authors_note``, ``authors_note_scan``,
        ``quiet_prompt``, ``persona_description``, ``persona_book``, ``force_activate``, ``rng``
        and ``trace``.
        """
        if isinstance(chat, ActivationRequest):
            if fields:
                raise TypeError("give an ActivationRequest or keyword arguments, not both")
            request = chat
        else:
            request = ActivationRequest.build(chat, **fields)
        return _Evaluation(self, request).run(request.chat)


class _Evaluation:
    """The state of one ``checkWorldInfo`` call."""

    def __init__(self, lore: Lore, request: ActivationRequest) -> None:
        r = request
        self.lore = lore
        self.mode = lore.mode
        self.settings = r.settings
        self.character = character = r.character
        self.user_name = r.user_name
        self.char_name = r.char_name
        self.timed_in = r.timed
        self.type = r.generation_type
        self.trigger = r.generation_type if r.generation_type in GENERATION_TYPES else "normal"
        self.dry_run = r.dry_run
        self.authors_note = r.authors_note
        self.authors_note_scan = r.authors_note_scan
        self.quiet_prompt = r.quiet_prompt
        self.persona_description = r.persona_description
        self.persona_book = r.persona_book
        self.forced_refs = r.force_activate
        rng = r.rng if r.rng is not None else _random.Random()
        self.rng = rng
        self.rolls = 0
        self.trace = Trace() if r.trace else None
        self.char_file = character.file_name(r.char_name) if character is not None else None
        self.char_tags = list(character.tags or []) if character is not None else None
        self.recursion_level = 0.0
        self.activated_group_fields: set[str] = set()
        self.activated_group_names: set[str] = set()

    def draw(self) -> float:
        self.rolls += 1
        return float(self.rng.random())

    def note_roll(self, what: str, roll: float, total: float) -> None:
        if self.trace is not None:
            self.trace.roll(what, roll, total)

    def _card_field(self, text: str | None, env: MacroEnv) -> str:
        return substitute(_js.trim(text or ""), env)

    def run(self, chat: list[ChatMessage]) -> ActivationResult:
        s = self.settings
        c = self.mode
        ch = self.character
        base_env = MacroEnv(user=self.user_name, char=self.char_name)
        fields: dict[str, str] = {}
        if c.match_sources:
            fields["persona_description"] = self._card_field(self.persona_description, base_env)
            if ch is not None:
                fields["character_description"] = self._card_field(ch.description, base_env)
                fields["character_personality"] = self._card_field(ch.personality, base_env)
                fields["character_depth_prompt"] = self._card_field(ch.depth_prompt_text(), base_env)
                fields["scenario"] = self._card_field(ch.scenario, base_env)
                fields["creator_notes"] = self._card_field(ch.creator_notes, base_env)
        self.env = MacroEnv(user=self.user_name, char=self.char_name, variables=(
            ("description", fields.get("character_description", "")),
            ("personality", fields.get("character_personality", "")),
            ("scenario", fields.get("scenario", "")),
            ("persona", fields.get("persona_description", "")),
            ("creatorNotes", fields.get("creator_notes", "")),
            ("charDepthPrompt", fields.get("character_depth_prompt", "")),
        ))
        messages = ScanMessages(chat, self.type, s.world_info_include_names, base_env)
        injections: list[str] = []
        note = substitute(self.authors_note, base_env) if self.authors_note else ""
        if self.authors_note_scan and note:
            injections.append(note)
        quiet = substitute(self.quiet_prompt, base_env) if self.quiet_prompt else ""
        if quiet:
            injections.append(quiet)
        depth_prompt = fields.get("character_depth_prompt", "")
        if self.authors_note_scan and depth_prompt:
            injections.append(depth_prompt)

        plan = self.lore._plan(int(s.world_info_character_strategy), ch is not None, self.persona_book,
                               tuple(ch.extra_books) if ch is not None and ch.extra_books is not None else None)
        self.plan = plan
        self.index = self.lore._index(base_env, s)
        self.buffer = ScanBuffer(messages, injections, fields, self.index, s.world_info_depth,
                                 c.skip_empty_recursion)
        self.forced, self.forced_as = forced_entries(self.forced_refs, plan.by_key, c)
        self.timed = TimedEffects(self.timed_in, plan, len(messages))
        if not self.dry_run:
            self.timed.check(read_sticky_cooldown=True, apply_delay=True)
        elif c.dry_run_delay:
            self.timed.check(read_sticky_cooldown=False, apply_delay=True)
        meter = BudgetMeter(self.lore.counter, s.budget_tokens())
        activated: list[CompiledEntry] = []
        if plan.entries:
            activated = self._loop(meter)
        if not self.dry_run:
            self.timed.record(activated)
        return emit(self, activated, meter)

    def _loop(self, meter: BudgetMeter) -> list[CompiledEntry]:
        s, c, plan, buf = self.settings, self.mode, self.plan, self.buffer
        levels = list(plan.levels)
        self.recursion_level = levels.pop(0) if levels else 0.0
        state = INITIAL
        count = 0
        # 1.18 keeps activations in a Map keyed "<book>.<uid>" (a second entry with the same key is
        # skipped, or replaces the first in place); 1.12.6 in a Set of entry objects.
        activated: dict[int | str, CompiledEntry] = {}
        by_key = c.activation_by_key
        failed: set[int] = set()
        done: set[int] = set()      # the activated entries
        contents: dict[int, str] = {}
        substituted = self.lore._substituted(self.env)
        pass_of: dict[int, int] = {}
        self.content, self.pass_of = contents, pass_of
        static = None
        tr = self.trace
        timed = self.timed
        while state:
            if s.world_info_max_recursion_steps and s.world_info_max_recursion_steps <= count:
                if tr is not None:
                    tr.stop(f"max recursion steps ({s.world_info_max_recursion_steps}) reached")
                break
            count += 1
            buf.ensure_scanned(max(buf.current_depth(), plan.max_scan_depth))
            if static is None or state == MIN_ACTIVATIONS:
                static = buf.candidates(self.index.always)
            gids = set(static)
            gids.update(plan.constants)
            gids.update(timed.sticky)
            gids.update(self.forced)
            gids.update(*map(self.index.needle_entries, buf.recursion_hits))
            pos = plan.pos
            sticky, forced, delay, cooldown = timed.sticky, self.forced, timed.delay, timed.cooldown
            if tr is None:
                # left out before sorting: entries the gate rejects whatever their keys (activated,
                # failed a roll unless forced ones re-roll, delayed, on cooldown and not sticky)
                gids -= done
                if failed:
                    gids -= failed - forced if c.forced_first else failed
                if delay:
                    gids -= delay
                if cooldown:
                    gids -= cooldown - sticky
                order: Iterable[int] = sorted(map(pos.__getitem__, gids))
                if order and order[0] < 0:           # entries outside this book selection
                    order = order[bisect_left(order, 0):]
            else:  # a trace explains every entry, so every entry goes through the gates
                order = range(len(plan.entries))
            if tr is not None:
                tr.begin_pass(count, STATE_NAMES[state], buf.current_depth(), self.recursion_level)
            now: list[CompiledEntry] = []
            plain = self.index.plain if tr is None else None
            records = self.index.plain_records
            with_rec = state != MIN_ACTIVATIONS
            # needles visible at the global depth (per depth: plain_gate adds the others)
            seen = buf.visible_set(buf.current_depth(), with_rec)
            visible: dict[float | None, set[int] | frozenset[int]] = {None: seen}
            special = sticky | forced if forced else sticky     # these take the full gate
            excluding = state == RECURSION and bool(s.world_info_recursive)
            entries = plan.entries
            for i in order:
                ce = entries[i]
                g = ce.gid
                if (ce.key if by_key else g) in activated:
                    continue
                if plain is not None and g not in special:
                    rec = records[g]
                    if rec is UNBUILT:
                        rec = plain(ce)
                    if rec is not None:
                        # plain_gate's commonest cases, inline (delay and cooldown were left out above)
                        if rec.simple:
                            if (excluding and rec.exclude_recursion) or seen.isdisjoint(rec.primary):
                                continue
                            sec = rec.secondary
                            if sec is None:
                                now.append(ce)
                                continue
                            logic = rec.logic   # secondary_ok for needle ids only
                            if (not seen.isdisjoint(sec) if logic == 0 else seen.isdisjoint(sec) if logic == 2
                                    else seen.issuperset(sec) if logic == 3
                                    else not seen.issuperset(sec) if logic == 1 else False):
                                now.append(ce)
                        elif rec.kind == CONSTANT:
                            if not (excluding and rec.exclude_recursion):
                                now.append(ce)
                        elif plain_gate(self, rec, ce, visible, with_rec, excluding):
                            now.append(ce)
                        continue
                if g in failed and not (c.forced_first and g in forced):
                    continue
                ok, why = gate(self, ce, state)
                if tr is not None:
                    tr.gate(ce, ok, why)
                if ok:
                    now.append(self.forced_as.get(g, ce) if why is FORCED else ce)
            forced_first = c.forced_first
            if timed.sticky or (forced_first and self.forced):   # else ``now`` is in scan order already
                now.sort(key=lambda ce: (ce.gid not in timed.sticky,
                                         not (forced_first and ce.gid in self.forced), pos[ce.gid]))
            scan_tokens = meter.activated_tokens()
            removed = filter_groups(self, now, state, self.draw)
            if tr is not None:
                for key, why in removed:
                    tr.group_removed(key, why)
            new_text = meter.new_pass()
            add, skip = new_text.add, c.budget_skip
            for ce in now:
                g = ce.gid
                if meter.overflowed and skip and not ce.ignore_budget:
                    if tr is not None:
                        tr.budget(ce, "skipped: the budget overflowed earlier", meter)
                    continue
                if ce.rolls and not self._roll(ce):
                    failed.add(g)
                    continue
                content = (substituted.get(ce.content) or self._substitute(ce.content)) if ce.macros else ce.content
                contents[g] = content
                if not add(content, skip and ce.ignore_budget, scan_tokens):
                    meter.overflowed = True
                    meter.overflow_entry = meter.overflow_entry or ce.key
                    if tr is not None:
                        tr.budget(ce, "overflow", meter, new_text)
                    if c.budget_skip:
                        continue
                    break
                if tr is not None:
                    tr.budget(ce, "fits", meter, new_text)
                activated[ce.key if by_key else g] = ce
                done.add(g)
                pass_of[g] = count
                if ce.group_names:
                    self.activated_group_names.update(ce.group_names)
                if isinstance(ce.group, str):
                    self.activated_group_fields.add(ce.group)
                if tr is not None:
                    tr.activated(ce, count)
            # the entries whose content recursion scans: every candidate that did not fail a roll (even
            # one the budget skipped), unless it prevents recursion (worked out only when needed)
            for_rec: list[CompiledEntry] | None = None
            nxt = 0
            if s.world_info_recursive and not meter.overflowed:
                for_rec = [ce for ce in now if ce.gid not in failed and not ce.prevent_recursion]
                if for_rec:
                    nxt = RECURSION
            if s.world_info_recursive and not meter.overflowed and state == MIN_ACTIVATIONS \
                    and buf.has_recursion():
                nxt = RECURSION
            if not nxt and not meter.overflowed and s.world_info_min_activations > 0 \
                    and len(activated) < s.world_info_min_activations:
                depth = buf.current_depth()
                limit = s.world_info_min_activations_depth_max
                if c.min_depth_overshoot:
                    over = (limit > 0 and depth > limit) or depth > buf.chat_length
                else:
                    over = (limit > 0 and depth >= limit) or depth >= buf.chat_length
                if not over:
                    nxt = MIN_ACTIVATIONS
                    buf.skew += 1
            if not nxt and levels:
                nxt = RECURSION
                self.recursion_level = levels.pop(0)
            state = nxt
            if state:
                if for_rec is None:
                    for_rec = [ce for ce in now if ce.gid not in failed and not ce.prevent_recursion]
                lines = [contents.get(ce.gid, ce.content) for ce in for_rec]
                text = "\n".join(lines)
                if text or not c.skip_empty_recursion:
                    buf.add_recursion(text, lines)
                    meter.add_activated_text(text, lines)
                    if tr is not None:
                        tr.recursion_text(text, [ce.key for ce in for_rec])
        return list(activated.values())

    def _substitute(self, content: str) -> str:
        """An entry content with the evaluation's macros substituted (remembered per names)."""
        got = self.lore._substituted(self.env)[content] = substitute(content, self.env)
        return got

    def _roll(self, ce: CompiledEntry) -> bool:
        """``verifyProbability``: no roll at 100 % or for sticky entries; ``roll <= probability``."""
        if not ce.rolls or ce.gid in self.timed.sticky:
            return True
        p = ce.probability
        roll = self.draw() * 100
        ok = roll <= (_js.to_number(p) if p is not None else 0.0)
        if self.trace is not None:
            self.trace.probability(ce, roll, p, ok)
        return ok


_COMPILED: OrderedDict[tuple, Lore] = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def compile(books: Sequence[Lorebook], *, compat: str | Mode = "1.18",
            tokenizer: str | TokenCounter = "cl100k", quirks: bool = True,
            settings: Settings | None = None, cache: bool = False) -> Lore:
    """Compile lorebooks once for repeated evaluation.

    ``compat`` picks the SillyTavern version to reproduce (``"1.18"`` default, or ``"1.12"``);
    ``tokenizer`` counts budget tokens (``cl100k``, ``cl100k-chat``, ``chars4``, ``words`` or an
    object with ``count(text)``); ``quirks=False`` corrects SillyTavern's known bugs. The key
    index and scan order for ``settings`` (default: :class:`Settings` defaults) are built now;
    other settings build theirs on first use, and keys with macros (``{{char}}``, ``<USER>``) are
    prepared on the first evaluation with a given pair of names.

    ``cache=True`` reuses the compiled books when every book was loaded (:func:`lorescan.load`) from
    the same file content as before — for callers that reload the same files. Books edited after
    loading must not be compiled with ``cache=True``.
    """
    prepare = settings or Settings()
    key = None
    if cache and isinstance(tokenizer, str) and books and all(b.content_hash for b in books):
        key = (tuple((b.content_hash, b.name, b.scope, len(b.entries)) for b in books),
               compat, tokenizer, quirks)
        with _COMPILED_LOCK:    # compile(cache=True) may be called from several threads
            lore = _COMPILED.get(key)
            if lore is not None:
                _COMPILED.move_to_end(key)
        if lore is not None:
            lore._key_index(prepare)
            return lore
    lore = Lore(books, compat=compat, tokenizer=tokenizer, quirks=quirks, prepare=prepare)
    if key is not None:
        with _COMPILED_LOCK:
            _COMPILED[key] = lore
            while len(_COMPILED) > 8:
                _COMPILED.popitem(last=False)
    return lore
