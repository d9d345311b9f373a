"""One recursion pass: which entries are candidates, then inclusion groups and probability.

The gate order, the candidate order and the random draws follow SillyTavern's ``checkWorldInfo``
exactly, so a seeded replay makes the same draws as SillyTavern would.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import reduce
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, cast

from . import _index, _js
from ._compile import CompiledEntry, overridden
from ._index import CONSTANT, NEVER, UNBUILT, PlainEntry
from ._keys import Key, KeyItem, match_key_text
from ._mode import Mode
from ._model import ForcedActivation, SelectiveLogic
from ._scan import Candidates, DepthHits, ScanBuffer
from ._state import EvalState
from ._tally import Tally

if TYPE_CHECKING:
    from ._native import PlaceGates

INITIAL, RECURSION, MIN_ACTIVATIONS = 1, 2, 3
STATE_NAMES = {INITIAL: "initial", RECURSION: "recursion", MIN_ACTIVATIONS: "min_activations"}


#: ``gate``'s reason for an entry activated by an external request
FORCED = "forced (external activation)"

_ORDER = attrgetter("order_num")


def forced_entries(refs: Sequence[ForcedActivation], by_key: Callable[[], dict[str, CompiledEntry]],
                   mode: Mode) -> tuple[set[int], dict[int, CompiledEntry]]:
    """The entries external requests force this evaluation, and what each activates as.

    SillyTavern checks ``@@activate`` before external activation, so an entry carrying it is
    activated as the ordinary entry: it is left out here (it sorts at its usual place, and a failed
    roll sticks to it). 1.18 activates the object the caller passed, so supplied fields replace the
    entry's; 1.12.6 compares the whole object with the entry's JSON, so a changed field matches
    nothing there.
    """
    forced: set[int] = set()
    as_given: dict[int, CompiledEntry] = {}
    if not refs:
        return forced, as_given
    entries = by_key()
    for ref in refs:
        ce = entries.get(f"{ref.world}.{_js.js_string(ref.uid)}")
        if ce is None or "@@activate" in ce.decorators:
            continue
        fields = ref.overrides
        if fields:
            stored = ce.entry.model_dump()
            if any(stored.get(k) != v for k, v in fields.items()):
                if not mode.forced_object:
                    continue
                as_given[ce.gid] = overridden(ce, fields)
        forced.add(ce.gid)
    return forced, as_given


def pass_order(st: EvalState, static: Candidates, done: AbstractSet[int],
               failed: AbstractSet[int]) -> Iterable[int]:
    """Places in scan order of a pass's candidates: entries with a needle visible in the scan text
    (``static``, and those found in recursion text), constants, sticky and forced entries, less
    those the gates reject whatever their keys: activated (``done``), failed a roll (forced ones
    re-roll in 1.18), delayed, on cooldown and not sticky. A trace explains every entry, so then
    every entry is a candidate; a focused one keeps delayed and cooled-down entries and adds the
    focus entries, so the gates say why they are out. A tally counts the candidates that delay
    or cooldown keep out."""
    timed, forced, tr, tally = st.timed, st.forced, st.trace, st.tally
    if tr is not None and tr.focus is None and tally is None:
        return range(len(st.plan.entries))
    gates = st.index.place_tables(st.plan, len(st.plan.entries)).gates if tr is None else None
    if gates is not None:       # the same in C, as packed places (it lists the needles' entries)
        adds = (static.gids, st.plan.constants, timed.sticky, forced)
        hits = chain(*static.needles, st.buffer.recursion_hits)
        if tally is not None and (timed.delay or timed.cooldown):
            reached = memoryview(gates.scan_order(adds, hits, (done,))).cast("i")
            hits = chain(*static.needles, st.buffer.recursion_hits)
            _tally_timed(st, set(reached), tally)
        removes: list[AbstractSet[int]] = [done]
        if failed:
            removes.append(failed - forced if st.mode.forced_first else failed)
        if timed.delay:
            removes.append(timed.delay)
        if timed.cooldown:
            removes.append(timed.cooldown - timed.sticky)
        return memoryview(gates.scan_order(adds, hits, tuple(removes))).cast("i")
    gids = set(static.entries)
    gids.update(st.plan.constants)
    gids.update(timed.sticky)
    gids.update(forced)
    gids.update(*map(st.index.needle_entries, st.buffer.recursion_hits))
    if tally is not None and (timed.delay or timed.cooldown):
        _tally_timed(st, set(map(st.plan.pos.__getitem__, gids - done)), tally)
    if tr is not None:
        if tr.focus is None:
            return range(len(st.plan.entries))
        gids.update(timed.delay, timed.cooldown, tr.focus_gids(st.plan.by_key()))
    gids -= done
    if failed:
        gids -= failed - forced if st.mode.forced_first else failed
    if timed.delay and tr is None:
        gids -= timed.delay
    if timed.cooldown and tr is None:
        gids -= timed.cooldown - timed.sticky
    order = sorted(map(st.plan.pos.__getitem__, gids))
    if order and order[0] < 0:           # entries outside this book selection
        order = order[bisect_left(order, 0):]
    return order


def _tally_timed(st: EvalState, places: AbstractSet[int], tally: Tally) -> None:
    """Count the pass's candidates (``places``, in scan order) that delay, or cooldown (unless
    sticky), keeps out."""
    timed, pos, entries = st.timed, st.plan.pos, st.plan.entries
    for held, into in ((timed.delay, tally.delay), (timed.cooldown - timed.sticky, tally.cooldown)):
        into.update(entries[p].key for p in map(pos.__getitem__, held) if p >= 0 and p in places)


def pass_candidates(st: EvalState, order: Iterable[int], state: int, activated: Mapping[int | str, CompiledEntry],
                    failed: AbstractSet[int]) -> list[CompiledEntry]:
    """The entries of one pass that pass their gates: sticky ones first, then (1.18) forced ones, each
    in scan order. ``order`` gives places in the plan's scan order; ``activated`` and ``failed`` are
    the evaluation's activations so far and the entries whose probability roll failed; ``order``
    must leave out what :func:`pass_order` leaves out (without a trace, activated entries are not
    looked up again, nor delay and cooldown checked)."""
    c, timed, tr, buf = st.mode, st.timed, st.trace, st.buffer
    by_key = c.activation_by_key
    sticky, forced, forced_first = timed.sticky, st.forced, c.forced_first
    now: list[CompiledEntry] = []
    plain = st.index.plain if tr is None else None
    # ``order`` leaves out the activated entries (without a trace), so only another entry with the
    # same key can make one count as activated already
    keyed = bool(activated) and (tr is not None or (by_key and not st.plan.unique_keys()))
    records = st.index.plain_records
    with_rec = state != MIN_ACTIVATIONS
    # needles visible at the global depth (per depth: plain_gate adds the others)
    seen = buf.visible_set(buf.current_depth(), with_rec)
    visible: dict[float | None, AbstractSet[int] | DepthHits] = {None: seen}
    special = sticky | forced if forced else sticky     # these take the full gate
    excluding = state == RECURSION and bool(st.settings.world_info_recursive)
    entries = st.plan.entries
    # simple records by place, read without the entry or its record (most candidates are simple)
    tables = st.index.place_tables(st.plan, len(entries)) if plain is not None and not keyed else None
    by_place = tables is not None    # gate simple places from the tables here
    if tables is not None:
        primary_at, secondary_at = tables.primary, tables.secondary
        special_at = set(map(st.plan.pos.__getitem__, special)) if special else ()
        if tables.gates is not None:    # the C extension gates them; the others come here
            order = _left_over(tables.gates, order if isinstance(order, (list, memoryview)) else list(order),
                               tables.bitmap(seen), special_at or None, excluding, entries, now)
            by_place = False
    for i in order:
        if by_place and i not in special_at:
            needles = primary_at[i]
            if needles is not None:
                if not seen.isdisjoint(needles):
                    now.append(entries[i])
                continue
            both = secondary_at[i]
            if both is not None:
                if not seen.isdisjoint(both[0]) and _secondary_hit(seen, both[1], both[2]):
                    now.append(entries[i])
                continue
        ce = entries[i]
        g = ce.gid
        if keyed and (ce.key if by_key else g) in activated:
            continue
        if plain is not None and (not special or g not in special):
            rec = records[g]
            if rec is UNBUILT:
                rec = plain(ce)
            if rec is not None:
                if tables is not None:
                    tables.note(i, rec)
                # plain_gate's commonest cases, inline (delay and cooldown were left out by the caller)
                if rec.simple:
                    if not (excluding and rec.exclude_recursion) and not seen.isdisjoint(rec.primary) \
                            and (rec.secondary is None or _secondary_hit(seen, rec.secondary, rec.logic)):
                        now.append(ce)
                elif rec.kind == CONSTANT:
                    if not (excluding and rec.exclude_recursion):
                        now.append(ce)
                elif plain_gate(st, rec, ce, visible, with_rec, excluding):
                    now.append(ce)
                continue
        if g in failed and not (forced_first and g in forced):
            continue
        ok, why = gate(st, ce, state)
        if tr is not None:
            tr.gate(ce, ok, why)
        if ok:
            now.append(st.forced_as.get(g, ce) if why is FORCED else ce)
    if sticky or (forced_first and forced):   # else ``now`` is in scan order already
        pos = st.plan.pos
        now.sort(key=lambda ce: (ce.gid not in sticky, not (forced_first and ce.gid in forced), pos[ce.gid]))
    return now


def _left_over(gates: PlaceGates, order: list[int] | memoryview, bits: bytes, special: set[int] | None,
               excluding: bool, entries: list[CompiledEntry], now: list[CompiledEntry]) -> Iterator[int]:
    """The places of ``order`` (a list, or the packed places of ``scan_order``) that the C gates
    leave to the caller (not noted, or sticky or forced), in order; the others they gate into
    ``now`` in between, so ``now`` stays in order."""
    packed = cast("bytes", order.obj) if isinstance(order, memoryview) else order
    gate, j, n = gates.gate, 0, len(order)
    while (j := gate(packed, j, bits, special, excluding, entries, now)) < n:
        yield order[j]
        j += 1


def _secondary_hit(seen: set[int] | frozenset[int], sec: tuple[int, ...], logic: int) -> bool:
    """``secondary_ok`` for needle ids only (AND ANY, NOT ALL, NOT ANY, AND ALL)."""
    return (not seen.isdisjoint(sec) if logic == 0 else seen.isdisjoint(sec) if logic == 2
            else seen.issuperset(sec) if logic == 3 else not seen.issuperset(sec) if logic == 1 else False)


def gate(st: EvalState, ce: CompiledEntry, state: int) -> tuple[bool, str]:
    """Run one entry through the per-entry checks of a pass: (is a candidate, why)."""
    q = st.mode
    if ce.disable:
        return False, "disabled"
    if q.generation_triggers and ce.triggers and st.trigger not in ce.triggers:
        return False, f"generation type {st.trigger!r} is not in triggers {ce.triggers}"
    if ce.char_names:
        included = st.char_file is not None and st.char_file in ce.char_names
        if included if ce.char_exclude else not included:
            return False, "filtered out by character name"
    if ce.char_tags and st.char_tags is not None:
        hit = any(t in ce.char_tags for t in st.char_tags)
        if hit if ce.char_exclude else not hit:
            return False, "filtered out by character tag"
    gid = ce.gid
    timed = st.timed
    sticky = gid in timed.sticky
    if gid in timed.delay:
        return False, "suppressed by delay"
    if gid in timed.cooldown and not sticky:
        return False, "suppressed by cooldown"
    if not sticky and ce.delay_until_recursion:
        if state != RECURSION:
            return False, "delayed until recursion"
        if _js.less_than(st.recursion_level, ce.dur_level):
            return False, f"delayed until recursion level {_js.js_string(ce.dur_level)}"
    if state == RECURSION and st.settings.world_info_recursive and ce.exclude_recursion and not sticky:
        return False, "excluded from recursion"
    if "@@activate" in ce.decorators:
        return True, "@@activate decorator"
    if "@@dont_activate" in ce.decorators:
        return False, "@@dont_activate decorator"
    forced = gid in st.forced
    if forced and q.forced_before_constant:
        return True, FORCED
    if ce.constant:
        return True, "constant"
    if forced:
        return True, FORCED
    if sticky:
        return True, "sticky"
    if not isinstance(ce.keys, list) or not ce.keys:
        return False, "no keys"
    index = st.index
    primary = cast("Sequence[KeyItem]", index.primary.get(gid, ()))
    secondary = cast("Sequence[KeyItem]", index.secondary.get(gid, ()))
    return match_entry(st.buffer, primary, secondary, ce, state, st.trace is not None)


def plain_gate(st: EvalState, rec: PlainEntry, ce: CompiledEntry, visible: dict, with_rec: bool,
               excluding: bool) -> bool:
    """``gate`` for a :class:`PlainEntry` (neither sticky nor forced), its plain keys looked up
    in the set of needles visible at its depth (one set per depth and pass)."""
    kind = rec.kind
    if kind == NEVER:
        return False
    g = ce.gid
    timed = st.timed
    if g in timed.delay or g in timed.cooldown or (excluding and rec.exclude_recursion):
        return False
    if kind == CONSTANT:
        return True
    buf = st.buffer
    depth = rec.depth
    vis = visible.get(depth)
    if vis is None:
        vis = visible[depth] = buf.depth_hits(buf.current_depth() if depth is None else depth, with_rec)
    d = buf.current_depth() if depth is None else depth
    if vis.isdisjoint(rec.primary) and not any(buf.key_matches(k, ce, d, with_rec) for k in rec.primary_other):
        return False
    if rec.secondary is None:
        return True
    return secondary_ok(rec, vis, lambda k: buf.key_matches(k, ce, d, with_rec))


def secondary_ok(rec: PlainEntry, seen: AbstractSet[int] | DepthHits, matches: Callable[[Key], bool]) -> bool:
    """The selective logic of a :class:`PlainEntry`'s secondary keys: needle ids looked up in
    ``seen``, the other keys (regex and the like) tried with ``matches`` only when needed."""
    logic, sec = rec.logic, rec.secondary or ()
    if logic == 0 or logic == 2:   # AND ANY / NOT ANY
        hit = not seen.isdisjoint(sec) or any(map(matches, rec.secondary_other))
        return hit == (logic == 0)
    if logic == 1 or logic == 3:   # NOT ALL / AND ALL
        every = all(k in seen for k in sec) and all(map(matches, rec.secondary_other))
        return every == (logic == 3)
    return False


def _raw(ce_keys: object, i: int) -> str:
    return ce_keys[i] if isinstance(ce_keys, list) and i < len(ce_keys) else "?"


def match_entry(buffer: ScanBuffer, primary: Sequence[KeyItem], secondary: Sequence[KeyItem], ce: CompiledEntry,
                state: int, explain: bool = True) -> tuple[bool, str]:
    """Primary keys, then the secondary keys under the entry's selective logic.

    The reason is only spelled out when ``explain`` is set (tracing), to keep the hot path lean.
    """
    depth = buffer.entry_depth(ce)
    with_rec = state != MIN_ACTIVATIONS
    matches = buffer.key_matches
    hit = -1
    for i, key in enumerate(primary):
        if matches(key, ce, depth, with_rec):
            hit = i
            break
    if hit < 0:
        return False, "no primary key matched"
    p = repr(_raw(ce.keys, hit)) if explain else ""
    if not (secondary and ce.selective):
        return True, f"primary key {p} matched" if explain else ""
    logic = ce.selective_logic
    if logic is None:
        logic = 0
    any_match, all_match = False, True
    for i, key in enumerate(secondary):
        m = matches(key, ce, depth, with_rec)
        any_match = any_match or m
        all_match = all_match and m
        if m and _strict_eq(logic, SelectiveLogic.AND_ANY):
            return True, (f"primary key {p} and secondary key {_raw(ce.keys_secondary, i)!r} matched (AND ANY)"
                          if explain else "")
        if not m and _strict_eq(logic, SelectiveLogic.NOT_ALL):
            return True, (f"primary key {p} matched, secondary key {_raw(ce.keys_secondary, i)!r} did not "
                          f"(NOT ALL)" if explain else "")
    if _strict_eq(logic, SelectiveLogic.NOT_ANY) and not any_match:
        return True, f"primary key {p} matched, no secondary key did (NOT ANY)" if explain else ""
    if _strict_eq(logic, SelectiveLogic.AND_ALL) and all_match:
        return True, f"primary key {p} and every secondary key matched (AND ALL)" if explain else ""
    return False, f"primary key {p} matched but the secondary keys failed (logic {logic!r})" if explain else ""


def _strict_eq(value: object, number: int) -> bool:
    """``value === number`` for a JSON value (a string or a boolean never equals a number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == number


class _Candidates:
    """``newEntries``: a list with JavaScript ``splice(indexOf(e), 1)`` removal (bug included), and
    the removals made so far as (entry key, why)."""

    def __init__(self, items: list[CompiledEntry], splice_bug: bool) -> None:
        self.items = items
        self.splice_bug = splice_bug
        self.removed: list[tuple[str, str]] = []

    def _take(self, ce: CompiledEntry) -> CompiledEntry | None:
        try:
            i = self.items.index(ce)    # entries compare by identity
        except ValueError:
            pass
        else:
            del self.items[i]
            return ce
        if self.splice_bug and self.items:
            return self.items.pop()
        return None

    def remove(self, ce: CompiledEntry, why: str) -> None:
        """Remove ``ce`` (or, with the quirk, the last candidate) and note why."""
        x = self._take(ce)
        if x is not None:
            self.removed.append((x.key, why if x is ce else
                                 f"removed in place of {ce.key} ({why}; SillyTavern's splice quirk)"))


def filter_groups(st: EvalState, new: list[CompiledEntry], state: int,
                  draw: Callable[[], float]) -> list[tuple[str, str]]:
    """``filterByInclusionGroups``: at most one winner per group; returns (entry key, why) removals.

    Three rounds over the groups in JavaScript's key order, as SillyTavern makes them: timed
    effects, then group scoring, then one winner (override, or a weighted roll).
    """
    groups: dict[str, list[CompiledEntry]] = {}
    # the candidates in some group (in C, when built: a pass has a hundred candidates, few in groups)
    members = _index.native.with_groups(new) if _index.native is not None and type(new) is list \
        else [ce for ce in new if ce.group_names]
    for ce in members:
        for name in ce.group_names:
            groups.setdefault(name, []).append(ce)
    if not groups:
        return []
    names = list(groups)
    order = [names[i] for i in _js.object_key_order(names)]
    cands = _Candidates(new, st.mode.splice_bug)
    has_sticky = _timed_in_groups(st, groups, order, cands)
    _group_scoring(st, groups, [n for n in order if not has_sticky[n]], cands, state)
    _group_winners(st, groups, [n for n in order if not has_sticky[n]], cands, draw)
    return cands.removed


def _timed_in_groups(st: EvalState, groups: dict[str, list[CompiledEntry]], order: list[str],
                     cands: _Candidates) -> dict[str, bool]:
    """A sticky member wins its group; members on cooldown or delayed leave it. Returns whether
    each group has a sticky member (such a group takes no further rounds)."""
    timed = st.timed
    has_sticky: dict[str, bool] = {}
    flagged = timed.sticky | timed.cooldown | timed.delay
    for name in order:
        group = groups[name]
        if not flagged or all(x.gid not in flagged for x in group):   # none sticky, on cooldown or delayed
            has_sticky[name] = False
            continue
        stickies = [x for x in group if x.gid in timed.sticky]
        has_sticky[name] = bool(stickies)
        if stickies:
            for x in group:
                if not any(x is s for s in stickies):
                    cands.remove(x, f"lost group {name!r} to a sticky member")
        for x in [x for x in group if x.gid in timed.cooldown
                  and (st.mode.sticky_cooldown_wipe or x.gid not in timed.sticky)]:
            cands.remove(x, f"on cooldown in group {name!r}")
        for x in [x for x in group if x.gid in timed.delay]:
            cands.remove(x, f"delayed in group {name!r}")
    return has_sticky


def _group_scoring(st: EvalState, groups: dict[str, list[CompiledEntry]], order: list[str],
                   cands: _Candidates, state: int) -> None:
    """Group scoring: members that score below the group's best leave it (and the candidates)."""
    use_scoring = st.settings.world_info_use_group_scoring
    for name in order:
        group = groups[name]
        if not use_scoring and not any(_js.truthy(x.use_group_scoring) for x in group
                                       if x.use_group_scoring is not None):
            continue
        scores = [score(st, x, state) for x in group]
        best = max(scores) if scores else float("-inf")
        i = 0
        while i < len(group):
            if _js.truthy(_js.nullish(group[i].use_group_scoring, use_scoring)) and scores[i] < best:
                cands.remove(group[i], f"scored {scores[i]} < {best} in group {name!r}")
                del group[i]
                del scores[i]
                continue
            i += 1


def _group_winners(st: EvalState, groups: dict[str, list[CompiledEntry]], order: list[str],
                   cands: _Candidates, draw: Callable[[], float]) -> None:
    """One winner per group: none where the group already activated an entry, else the override
    member with the highest order, else a roll weighted by ``groupWeight``."""
    activated_groups = st.activated_group_fields if st.mode.group_field_equality else st.activated_group_names
    for name in order:
        group = groups[name]
        if name in activated_groups:
            for x in group:
                cands.remove(x, f"group {name!r} already has an activated entry")
            continue
        if len(group) <= 1:
            continue
        prios = [x for x in group if x.group_override]
        if prios:
            winner = _js.sort_descending(prios, _ORDER)[0]
            for x in group:
                if x is not winner:
                    cands.remove(x, f"lost group {name!r} to {winner.key} (override, higher order)")
            continue
        weights = [x.group_weight for x in group]   # JavaScript's + joins them if one is a string
        total = _js.to_number(reduce(_js.add, weights, 0))
        roll = draw() * total
        st.note_roll(f"group {name!r}", roll, total)
        acc: object = 0
        won = None
        for x, w in zip(group, weights):
            acc = _js.add(acc, w)
            if _js.less_equal(roll, acc):
                won = x
                break
        if won is None:
            continue
        for x in group:
            if x is not won:
                cands.remove(x, f"lost group {name!r} to {won.key} (roll {roll:.2f} of {total:g})")


def score(st: EvalState, ce: CompiledEntry, state: int) -> int:
    """``getScore``: how many raw (unsubstituted, untrimmed) keys match the entry's scan text."""
    buf = st.buffer
    hay = buf.text(buf.entry_depth(ce), state != MIN_ACTIVATIONS, ce.match_fields if st.mode.match_sources else ())
    cs = _js.truthy(_js.nullish(ce.case_sensitive, st.settings.world_info_case_sensitive))
    ww = _js.truthy(_js.nullish(ce.match_whole_words, st.settings.world_info_match_whole_words))
    keys = ce.keys if isinstance(ce.keys, list) else []
    sec = ce.keys_secondary if isinstance(ce.keys_secondary, list) else []
    rule = st.mode.word_boundaries
    primary = sum(1 for k in keys if isinstance(k, str) and match_key_text(hay, k, cs, ww, rule))
    secondary = sum(1 for k in sec if isinstance(k, str) and match_key_text(hay, k, cs, ww, rule))
    if not keys:
        return 0
    if sec:
        if _strict_eq(ce.selective_logic, SelectiveLogic.AND_ANY):
            return primary + secondary
        if _strict_eq(ce.selective_logic, SelectiveLogic.AND_ALL):
            return primary + secondary if secondary == len(sec) else primary
    return primary


__all__ = ["pass_order", "pass_candidates", "gate", "match_entry", "filter_groups", "score", "forced_entries",
           "INITIAL", "RECURSION", "MIN_ACTIVATIONS"]
