"""The activation loop: SillyTavern's ``checkWorldInfo``, pass by pass, over compiled books.

:class:`Lore` is built once from the books (``compile``), then :meth:`Lore.activate` runs one
evaluation for a chat state and returns the buckets and the timed-effect state to carry forward.
The engine is pure: no I/O, no printing; randomness comes from the caller's random source, or,
given none, from one the process shares, as SillyTavern's ``Math.random`` is.
"""

from __future__ import annotations

import itertools
import os
import random as _random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from . import _index, _js
from ._budget import BudgetMeter, _LinesPass
from ._card_book import BookBudgets, apply_card_book_settings
from ._compile import CompiledEntry, compile_books, hash_imports_as_1_12, lorebooks
from ._construct import BULK, gc_paused, make
from ._emit import KeptRecords, emit
from ._index import BoundIndex, KeyIndex
from ._macros import MacroEnv, depth_prompt, evaluation_env, match_fields, names_env, substitute
from ._match import MatchMode
from ._mode import Mode, mode_for, with_options
from ._model import GENERATION_TYPES, ActivationResult, Character, ChatMessage, Lorebook, Settings
from ._plan import Plan, card_books_first, plan_books
from ._request import ActivationRequest, checked_field
from ._scan import Candidates, ScanBuffer, ScanMessages, known_chat
from ._select import (
    INITIAL,
    MIN_ACTIVATIONS,
    RECURSION,
    STATE_NAMES,
    filter_groups,
    forced_entries,
    pass_candidates,
    pass_order,
)
from ._state import EvalState
from ._timed import TimedEffects
from ._tokens import TokenCounter, get_counter
from ._trace import Trace

#: the cyclic collector's thresholds in a process lorescan owns and runs many evaluations in (a
#: ``lorescan serve`` process once books are compiled, a batch pool worker); Python's are 700, 10,
#: 10. An evaluation leaves next to no cyclic garbage, but the long-lived leftovers of evaluations
#: (memos, session states) make each young collection walk thousands of objects: at Python's
#: thresholds the collector took about a tenth of a generation's time in the load benchmark, and
#: 4-5 % of a batch worker's CPU; at these about a fiftieth. Every cycle is still collected, later.
OWNED_GC_THRESHOLDS = (50_000, 20, 20)
#: the key indexes bound to pairs of names a ``Lore`` keeps (:func:`bound_kept`): as many as fit in
#: ``BOUND_BUDGET`` bytes at about ``BOUND_BYTES_PER_ENTRY`` each per entry of its books (a pair's
#: own entry records, gate tables, needle lists and automaton: 1.39 MB at 20,000 entries), from 16
#: to 256; past it, the least recently used pair makes way. A service's chats carry many user and
#: character names, and a pair is bound per user even when the keys name only ``{{char}}``: with a
#: fixed 16, 50 users on a 20,000-entry book with ``{{char}}`` keys bound their names again on
#: nearly every request (about 20 ms each).
BOUND_BUDGET = 96 << 20
BOUND_BYTES_PER_ENTRY = 72
BOUND_KEPT_MIN, BOUND_KEPT_MAX = 16, 256


def bound_kept(entries: int) -> int:
    """How many pairs of names a ``Lore`` of ``entries`` entries keeps bound key indexes for."""
    return max(BOUND_KEPT_MIN, min(BOUND_KEPT_MAX, BOUND_BUDGET // (BOUND_BYTES_PER_ENTRY * max(entries, 1))))


#: the random source of evaluations given none, shared as SillyTavern's ``Math.random`` is: a
#: fresh :class:`random.Random` per evaluation is seeded from the system's entropy (a system call
#: reading 2.5 kB, about 1 % of a generation's time at 20,000 entries). Seeded again in a forked
#: child, as the ``random`` module's own instance is, so pool workers do not draw alike.
_SHARED_RANDOM = _random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SHARED_RANDOM.seed)


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
    books must not change once compiled. Evaluation holds the GIL (its optional C steps too), so threads
    serve requests concurrently but do not run faster together, and a regex key's time limit is
    wall-clock time, which a heavily loaded process spends waiting too.
    """

    def __init__(self, books: Sequence[Lorebook], compat: Mode | str = "1.18",
                 tokenizer: str | TokenCounter = "cl100k", quirks: bool = True,
                 prepare: Settings | None = None, word_boundaries: str | None = None,
                 card_book_settings: bool | None = None, macro_engine: str | None = None) -> None:
        self.books = lorebooks(books)
        self.mode = with_options(mode_for(compat, quirks), word_boundaries, card_book_settings, macro_engine)
        self.counter = get_counter(tokenizer)
        self._plans: dict[tuple, Plan] = {}
        self._indexes: dict[MatchMode, KeyIndex] = {}
        self._bound: dict[tuple, BoundIndex] = {}     # per (case/word settings, names), see _index
        self._uses = itertools.count(1)                # stamps BoundIndex.used
        self._user_free: dict[tuple[MatchMode, MacroEnv], MacroEnv] = {}   # see _names_of
        self._contents: dict[MacroEnv, dict[str, str]] = {}   # see _substituted
        self._activations: KeptRecords        # see emit
        self._named: dict[str, str] = {}           # see ScanMessages
        with gc_paused(sum(len(b.entries) for b in self.books) >= BULK):    # long-lived, if many
            self._compiled = compile_books(self.books)
            self._all = [ce for _, entries in self._compiled for ce in entries]
            self._activations = KeptRecords(len(self._all))
            self._bound_kept = bound_kept(len(self._all))
            self._has_character_books = any(b.scope == "character" for b in self.books)
            if self.mode.card_book_settings:
                apply_card_book_settings(self._compiled)
            if self.mode.version == "1.12":
                hash_imports_as_1_12(self._all)
            if prepare is not None:
                self._key_index(prepare)
                self._plan(int(prepare.world_info_character_strategy), True, None, None)

    # -- book selection ---------------------------------------------------------------------
    def _plan(self, strategy: int, has_character: bool, persona_book: str | None,
              extra_books: tuple[str, ...] | None) -> Plan:
        if not self._has_character_books:
            has_character, extra_books = False, None
        ck = (strategy, has_character, persona_book, extra_books)
        plan = self._plans.get(ck)
        if plan is not None:
            return plan
        plan = plan_books(self._compiled, len(self._all), self.mode, strategy, has_character, persona_book,
                          extra_books)
        if self.mode.card_book_settings:
            plan = card_books_first(plan, self.books)
        self._plans[ck] = plan
        return plan

    def _key_index(self, settings: Settings) -> KeyIndex:
        """The names-independent key index for the global case/whole-word settings."""
        ck = MatchMode.of(bool(settings.world_info_case_sensitive), bool(settings.world_info_match_whole_words),
                          self.mode.word_boundaries)
        index = self._indexes.get(ck)
        if index is None:
            with gc_paused(len(self._all) >= BULK):
                index = self._indexes[ck] = KeyIndex(self._all, ck.case_sensitive, ck.whole_words, ck.word_rule)
        return index

    def _substituted(self, env: MacroEnv) -> dict[str, str]:
        """Entry contents with the macros of ``env`` substituted, remembered (contents recur)."""
        got = self._contents.get(env)
        if got is None or len(got) > 20_000:
            if len(self._contents) > 16:
                self._contents.clear()
            got = self._contents[env] = {}
        return got

    def _index(self, env: MacroEnv, settings: Settings, card_env: MacroEnv | None = None) -> BoundIndex:
        """The key index for the global case/whole-word settings, bound to the names in ``env``
        (keys with macros prepared for them; built on the first evaluation with those names), or
        to ``card_env``, the names with the card's values, when a key names a card macro or a name
        holds a macro (keys substitute alike with both otherwise, and the names alone are shared
        by every character and persona). With no macro key at all, one bound index serves every
        pair of names (most books: their memos are then shared by every chat)."""
        ck = MatchMode.of(bool(settings.world_info_case_sensitive), bool(settings.world_info_match_whole_words),
                          self.mode.word_boundaries)
        index = self._indexes.get(ck) or self._key_index(settings)
        with_card = card_env is not None and ("{{" in env.user or "{{" in env.char or index.card_macros)
        if with_card:
            env = card_env      # type: ignore[assignment]
        if not index.macro:
            names = None        # one bound index serves every pair of names
        elif with_card:
            names = env
        else:
            names = self._names_of(ck, index, env)
        bound = self._bound.get((ck, names))
        if bound is None:
            with gc_paused(len(index.macro) >= BULK):     # the macro keys prepared for the names
                bound = index.bind(names if names is not None else env)
            if len(self._bound) >= self._bound_kept:     # the least recently used make way (a copy:
                kept = list(self._bound.items())   # another thread may be adding its own)
                self._bound.pop(min(kept, key=lambda item: item[1].used)[0], None)
            self._bound[(ck, names)] = bound
        bound.used = next(self._uses)
        bound.refresh()
        return bound

    def _bound_bytes(self) -> int:
        """About the bytes held by the key indexes bound to pairs of names beyond the first (each
        pair a book's macro keys read binds one, up to :func:`bound_kept`), for a cache that bounds
        the memory of the books it keeps."""
        return max(0, len(self._bound) - 1) * BOUND_BYTES_PER_ENTRY * len(self._all)

    def _names_of(self, ck: MatchMode, index: KeyIndex, env: MacroEnv) -> MacroEnv:
        """The names a bound index for ``env`` is kept under: without the user's name when every
        macro key substitutes to the same text without it (keys that name only the character: each
        user of a character then shares one), else ``env``. Asked once per names (a few ms for a
        thousand macro keys); equal texts prepare equal keys, so sharing is exact."""
        if not env.user:
            return env
        got = self._user_free.get((ck, env))
        if got is None:
            anon = replace(env, user="")
            same = all(substitute(text, env) == substitute(text, anon) for text in index.macro_texts)
            got = anon if same else env
            if len(self._user_free) >= 4096:
                self._user_free.clear()
            self._user_free[(ck, env)] = got
        return got

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
            request = ActivationRequest.build(known_chat(chat), **fields)
        return _Evaluation(self, request).run()


class _Evaluation:
    """One ``checkWorldInfo`` call: the stage state built from a request, then the passes.

    Each pass is four named steps: the candidates (``select.pass_order``), the gates
    (``select.pass_candidates``, then inclusion groups), :meth:`_spend` (probability and the
    budget) and :meth:`_next_state` (whether another pass follows, and what it scans).
    """

    def __init__(self, lore: Lore, request: ActivationRequest) -> None:
        r = request
        s = r.settings
        mode = lore.mode
        ch = r.character
        self.lore = lore
        self.dry_run = r.dry_run
        self.buckets = r.buckets
        base_env = names_env(r.user_name, r.char_name, mode.version, mode.macro_engine)
        # keys, contents, the first message and the injections: substituteParams, card fields and all
        self.env = evaluation_env(base_env, ch, r.persona_description, mode.version)
        fields = match_fields(self.env, ch is not None) if mode.match_sources else {}
        self.substituted = lore._substituted(self.env)
        messages = ScanMessages(r.chat, r.generation_type, s.world_info_include_names, self.env, lore._named,
                                self.substituted)
        plan = lore._plan(int(s.world_info_character_strategy), ch is not None, r.persona_book,
                          tuple(ch.extra_books) if ch is not None and ch.extra_books is not None else None)
        index = lore._index(base_env, s, self.env)
        injections = [text for _, text in scanned_injections(r.authors_note, r.authors_note_scan, r.quiet_prompt, ch,
                                                               self.env, base_env)]
        buffer = ScanBuffer(messages, injections, fields, index, s.world_info_depth, mode.skip_empty_recursion)
        forced, forced_as = forced_entries(r.force_activate, plan.by_key, mode)
        self.st = EvalState(
            mode=mode, settings=s,
            trigger=r.generation_type if r.generation_type in GENERATION_TYPES else "normal",
            char_file=ch.file_name(r.char_name) if ch is not None else None,
            char_tags=list(ch.tags or []) if ch is not None else None,
            plan=plan, index=index, buffer=buffer,
            timed=TimedEffects(r.timed, plan, len(messages)),
            forced=forced, forced_as=forced_as,
            rng=r.rng if r.rng is not None else _SHARED_RANDOM,
            trace=Trace(r.trace_focus) if r.trace else None,
            tally=r.tally,
        )
        # the state the passes carry: 1.18 keeps activations in a Map keyed "<book>.<uid>" (a second
        # entry with the same key is skipped, or replaces the first in place); 1.12.6 in a Set of
        # entry objects
        self.activated: dict[int | str, CompiledEntry] = {}
        self.failed: set[int] = set()     # entries whose probability roll failed
        self.done: set[int] = set()       # the activated entries
        #: the substituted contents of entries the budget cut after their roll (see _cut), or None
        self.cut_contents: dict[int, str] | None = None
        #: card books' own token budgets (card_book_settings), or None
        self.book_budgets = BookBudgets.of(lore.books, lore.counter) if mode.card_book_settings else None

    def run(self) -> ActivationResult:
        st = self.st
        if not self.dry_run:
            st.timed.check(read_sticky_cooldown=True, apply_delay=True)
        elif st.mode.dry_run_delay:
            st.timed.check(read_sticky_cooldown=False, apply_delay=True)
        meter = BudgetMeter(self.lore.counter, st.settings.budget_tokens())
        activated: list[CompiledEntry] = []
        if st.plan.entries:
            activated = self._loop(meter)
        if not self.dry_run:
            st.timed.record(activated)
        if st.tally is not None and self.failed:
            all_entries = self.lore._all
            st.tally.probability.update(all_entries[g].key for g in self.failed - self.done)
        return emit(st, activated, meter, self.lore._activations, self.buckets)

    def _loop(self, meter: BudgetMeter) -> list[CompiledEntry]:
        st = self.st
        s, plan, buf, tr = st.settings, st.plan, st.buffer, st.trace
        levels = list(plan.levels)
        st.recursion_level = levels.pop(0) if levels else 0.0
        state = INITIAL
        count = 0
        static: Candidates | None = None
        while state:
            if s.world_info_max_recursion_steps and s.world_info_max_recursion_steps <= count:
                if tr is not None:
                    tr.stop(f"max recursion steps ({s.world_info_max_recursion_steps}) reached")
                break
            count += 1
            buf.ensure_scanned(max(buf.current_depth(), plan.max_scan_depth))
            if static is None or state == MIN_ACTIVATIONS:
                static = buf.candidates(st.index.always)
            order = pass_order(st, static, self.done, self.failed)
            if tr is not None:
                tr.begin_pass(count, STATE_NAMES[state], buf.current_depth(), st.recursion_level)
            now = pass_candidates(st, order, state, self.activated, self.failed)
            scan_tokens = meter.activated_tokens()
            removed = filter_groups(st, now, state, st.draw)
            if tr is not None:
                for key, why in removed:
                    tr.group_removed(key, why)
            if st.tally is not None:
                st.tally.group.update(key for key, _ in removed)
            self._spend(now, meter, scan_tokens, count)
            state = self._next_state(state, now, meter, levels)
        return list(self.activated.values())

    def _spend(self, now: list[CompiledEntry], meter: BudgetMeter, scan_tokens: int, count: int) -> None:
        """Probability, then the budget, for the pass's candidates in order; records activations."""
        st = self.st
        c, tr = st.mode, st.trace
        by_key = c.activation_by_key
        contents, pass_of, failed, done, activated = st.content, st.pass_of, self.failed, self.done, self.activated
        new_text = meter.new_pass()
        add, skip = new_text.add, c.budget_skip
        cut = st.tally.budget if st.tally is not None else None
        # the common entries in C, when built: the loop below takes the others (same steps)
        common = _index.native is not None and type(new_text) is _LinesPass and tr is None \
            and self.book_budgets is None
        i, n = 0, len(now)
        while i < n:
            if common:
                i = self._spend_common(now, i, cast(_LinesPass, new_text), meter, scan_tokens, skip, count, cut)
                if i >= n:
                    break
            ce = now[i]
            i += 1
            g = ce.gid
            if meter.overflowed and skip and not ce.ignore_budget:
                if tr is not None:
                    tr.budget(ce, "skipped: the budget overflowed earlier", meter)
                if cut is not None:
                    cut.add(ce.key)
                continue
            if ce.rolls and not self._roll(ce):
                failed.add(g)
                continue
            content = self._content_of(ce) if ce.macros else ce.content
            if ce.macros or g in contents:      # else readers take the entry's own (see EvalState)
                contents[g] = content
            if self.book_budgets is not None and not self._book_fits(ce, content, meter):
                continue
            if not add(content, skip and ce.ignore_budget, scan_tokens):
                meter.overflowed = True
                meter.overflow_entry = meter.overflow_entry or ce.key
                if ce.macros:
                    self._cut(ce, content)
                if tr is not None:
                    tr.budget(ce, "overflow", meter, new_text)
                if cut is not None:
                    cut.add(ce.key)
                    if not skip:     # the rest of the pass is cut too
                        cut.update(later.key for later in now[now.index(ce) + 1:])
                if skip:
                    continue
                break
            if tr is not None:
                tr.budget(ce, "fits", meter, new_text)
            activated[ce.key if by_key else g] = ce
            done.add(g)
            if count != 1:      # readers take 1 (see EvalState)
                pass_of[g] = count
            if ce.group_names:
                st.activated_group_names.update(ce.group_names)
            if isinstance(ce.group, str):
                st.activated_group_fields.add(ce.group)
            if tr is not None:
                tr.activated(ce, count)

    def _spend_common(self, now: list[CompiledEntry], i: int, new_text: _LinesPass, meter: BudgetMeter, base: int,
                      skip: bool, count: int, cut: set[str] | None) -> int:
        """``_spend``'s loop from ``now[i]`` in C while the entries are the common case (see
        ``spend_lines`` in ``_csrc/budget.c``); the index of the first entry it leaves to the loop.
        ``cut``: a tally's budget set, which gets the keys of the entries skipped after an overflow."""
        st, tally = self.st, new_text.tally
        state: list[Any] = [meter.overflowed, tally.safe, tally.tail_tokens, meter.used, None, new_text.tokens]
        # the rolls made in C as _roll makes them (a probability of another type: _roll), counted in draws
        draws = [0]
        rolls = (self._roll, st.timed.sticky, st.rng.random, draws)
        j = _index.native.spend_lines(now, i, tally.memo, state, meter.budget, base, skip,
                                      st.mode.activation_by_key, count, st.content, self.activated, self.done,
                                      st.pass_of, st.activated_group_names, st.activated_group_fields, rolls,
                                      self._content_of, self.failed, cut)
        st.rolls += draws[0]
        if j != i:
            tally.safe, tally.tail_tokens, meter.used, new_text.tokens = state[1], state[2], state[3], state[5]
            if state[4] is not None:
                tally.tail = [state[4]]
        return j

    def _book_fits(self, ce: CompiledEntry, content: str, meter: BudgetMeter) -> bool:
        """Whether the entry fits its card book's own token budget (card_book_settings)."""
        if self.book_budgets.fits(ce, content, bool(ce.ignore_budget)):  # type: ignore[union-attr]
            return True
        if self.st.trace is not None:
            self.st.trace.budget(ce, "skipped: its card book's token budget is spent", meter)
        return False

    def _next_state(self, state: int, now: list[CompiledEntry], meter: BudgetMeter, levels: list[float]) -> int:
        """The kind of the next pass (0: none), after adding what it scans for recursion."""
        st = self.st
        s, c, buf = st.settings, st.mode, st.buffer
        # the entries whose content recursion scans (worked out only when needed)
        for_rec: list[CompiledEntry] | None = None
        lines: list[str] = []
        nxt = 0
        if s.world_info_recursive and not meter.overflowed:
            for_rec, lines = self._recursion_lines(now)
            if for_rec:
                nxt = RECURSION
        if s.world_info_recursive and not meter.overflowed and state == MIN_ACTIVATIONS \
                and buf.has_recursion():
            nxt = RECURSION
        if not nxt and not meter.overflowed and s.world_info_min_activations > 0 \
                and len(self.activated) < s.world_info_min_activations:
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
            st.recursion_level = levels.pop(0)
        if nxt:
            if for_rec is None:
                for_rec, lines = self._recursion_lines(now)
            text = "\n".join(lines)
            if text or not c.skip_empty_recursion:
                buf.add_recursion(text, lines)
                meter.add_activated_text(text, lines)
                if st.trace is not None:
                    st.trace.recursion_text(text, [ce.key for ce in for_rec])
        return nxt

    def _recursion_lines(self, now: list[CompiledEntry]) -> tuple[list[CompiledEntry], list[str]]:
        """The pass's entries whose content recursion scans, and those contents: every candidate
        that did not fail a roll (even one the budget skipped), unless it prevents recursion."""
        failed, contents = self.failed, self.st.content
        if _index.native is not None:   # the same two lists in C
            return _index.native.recursion_lines(now, failed, contents)
        for_rec = [ce for ce in now if ce.gid not in failed and not ce.prevent_recursion]
        return for_rec, [contents.get(ce.gid, ce.content) for ce in for_rec]

    def _content_of(self, ce: CompiledEntry) -> str:
        """An entry's content with the evaluation's macros substituted (for an entry with macros)."""
        cut = self.cut_contents
        if cut is not None and ce.gid in cut:
            return substitute(cut[ce.gid], self.env)
        return self.substituted.get(ce.content) or self._substitute(ce.content)

    def _cut(self, ce: CompiledEntry, content: str) -> None:
        """The budget cut an entry after its roll. SillyTavern had written the substituted
        ``content`` into the entry, so a later pass that takes it again (1.12.6's delay levels)
        substitutes that text once more, and 1.12.6, which finds an external activation by the
        whole entry's JSON, no longer sees it as forced if the content changed."""
        if not self.st.mode.forced_object and content != ce.content:
            self.st.forced.discard(ce.gid)
        if self.cut_contents is None:
            self.cut_contents = {}
        self.cut_contents[ce.gid] = content

    def _substitute(self, content: str) -> str:
        """An entry content with the evaluation's macros substituted (remembered per names)."""
        got = self.substituted[content] = substitute(content, self.env)
        return got

    def _roll(self, ce: CompiledEntry) -> bool:
        """``verifyProbability``: no roll at 100 % or for sticky entries; ``roll <= probability``."""
        st = self.st
        if not ce.rolls or ce.gid in st.timed.sticky:
            return True
        p = ce.probability
        roll = st.draw() * 100
        ok = roll <= (_js.to_number(p) if p is not None else 0.0)
        if st.trace is not None:
            st.trace.probability(ce, roll, p, ok)
        return ok


def stage_state(lore: Lore, request: ActivationRequest) -> EvalState:
    """The stage state an evaluation of ``request`` starts from, built as :meth:`Lore.activate`
    builds it: before timed effects are read and before the first pass. For running one stage
    (``select``, ``timed``, ``emit``) on its own, as the stage fixture tests do."""
    return _Evaluation(lore, request).st


def scanned_injections(authors_note: str, authors_note_scan: bool, quiet_prompt: str, ch: Character | None,
                       env: MacroEnv, base_env: MacroEnv) -> list[tuple[str, str]]:
    """Prompt texts scanned besides the chat, each with what it is: the author's note (when
    scanned), the quiet prompt and the character's depth prompt (with the author's note: both
    follow its ``allowWIScan``). Each is read back for the scan through ``substituteParams``; the
    quiet prompt was substituted once before (``Generate``), the depth prompt with the names only
    (``baseChatReplace``). One that substitutes to nothing is skipped (``if (prompt)``)."""
    texts = [
        ("the author's note", substitute(authors_note, env) if authors_note_scan else ""),
        ("the quiet prompt", substitute(substitute(quiet_prompt, env), env)),
        ("the character's depth prompt", substitute(depth_prompt(ch, env, base_env), env)
         if authors_note_scan and ch is not None else ""),
    ]
    return [(what, text) for what, text in texts if text]


_COMPILED: OrderedDict[tuple, Lore] = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def compile(books: Sequence[Lorebook], *, compat: str | Mode = "1.18",
            tokenizer: str | TokenCounter = "cl100k", quirks: bool = True,
            settings: Settings | None = None, cache: bool = False, word_boundaries: str | None = None,
            card_book_settings: bool | None = None, macro_engine: str | None = None) -> Lore:
    """Compile lorebooks once for repeated evaluation.

    ``compat`` picks the SillyTavern version to reproduce (``"1.18"`` default, or ``"1.12"``);
    ``tokenizer`` counts budget tokens (``cl100k``, ``cl100k-chat``, ``chars4``, ``words`` or an
    object with ``count(text)``); ``quirks=False`` corrects SillyTavern's known bugs. The key
    index and scan order for ``settings`` (default: :class:`Settings` defaults) are built now;
    other settings build theirs on first use, and keys with macros (``{{char}}``, ``<USER>``) are
    prepared on the first evaluation with a given pair of names.

    ``word_boundaries="unicode"`` matches whole words in every script (and ``card_book_settings=True``
    applies a character card book's own settings): both go beyond SillyTavern (README: "Beyond
    SillyTavern"). ``macro_engine`` is SillyTavern's: ``"new"`` (1.18's default) or ``"legacy"``.

    ``cache=True`` reuses the compiled books when every book was loaded (:func:`lorescan.load`) from
    the same file content as before — for callers that reload the same files. Books edited after
    loading must not be compiled with ``cache=True``.
    """
    books = lorebooks(books)
    prepare = checked_field("settings", settings) or make(Settings)
    key = None
    if cache and isinstance(tokenizer, str) and books and all(b.content_hash for b in books):
        key = (tuple((b.content_hash, b.name, b.scope, len(b.entries)) for b in books),
               compat, tokenizer, quirks, word_boundaries, card_book_settings, macro_engine)
        with _COMPILED_LOCK:    # compile(cache=True) may be called from several threads
            lore = _COMPILED.get(key)
            if lore is not None:
                _COMPILED.move_to_end(key)
        if lore is not None:
            lore._key_index(prepare)
            return lore
    lore = Lore(books, compat=compat, tokenizer=tokenizer, quirks=quirks, prepare=prepare,
                word_boundaries=word_boundaries, card_book_settings=card_book_settings, macro_engine=macro_engine)
    if key is not None:
        with _COMPILED_LOCK:
            _COMPILED[key] = lore
            while len(_COMPILED) > 8:
                _COMPILED.popitem(last=False)
    return lore
