"""Bucket the activated entries by position, in SillyTavern's prompt order.

All activated entries are sorted by descending ``order`` (stable over activation order) and each
content is put at the front of its bucket, so buckets read in ascending ``order`` with ties in
reverse activation order. Outlets (1.18) are the exception: they append, so they read descending.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from . import _index, _js
from ._budget import BudgetMeter
from ._compile import CompiledEntry, ForcedEntry
from ._construct import construct
from ._model import Activation, ActivationList, ActivationResult, DepthGroup, ExampleEntry
from ._state import EvalState


def _strict_key(value: Any) -> Any:
    """A key equal for two JSON scalars exactly when JavaScript's ``===`` holds between them
    (numbers by value, other types by type and value; NaN equals nothing, not even itself)."""
    if type(value) is int:    # JavaScript holds it as a double: beyond 2**53, the nearest one
        return _js_scalar(value)
    if type(value) is float:
        return value if value == value else object()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value == value else object()
    if value is None or isinstance(value, (str, bool)):
        return (type(value), value)
    return object()   # an object: === only to itself, and each entry has its own


def _js_scalar(value: Any) -> Any:
    """A JSON scalar as JavaScript holds it: an integer beyond 2**53 is the double nearest it (as
    ``JSON.parse`` reads it); anything else as it is."""
    if type(value) is int and not -_EXACT <= value <= _EXACT:
        return _js.int_to_number(value)
    return value


#: Every activation's ``model_fields_set`` (all of its fields): one set shared by all of them, as
#: a hundred activations are kept per evaluation (a set of its own would be more than half of an
#: activation's memory); an activation is immutable, and pydantic copies the set for ``model_copy``.
_ACTIVATION_FIELDS = set(Activation.model_fields)
_ORDER = attrgetter("order_num")
_KEY = attrgetter("key")
_EXACT = 2**53


def emit(st: EvalState, activated: list[CompiledEntry], meter: BudgetMeter, kept: KeptRecords,
         buckets_wanted: bool = True) -> ActivationResult:
    """The result of one evaluation from its activated entries (in activation order).

    ``kept`` holds the records earlier evaluations of the same compiled books made (see
    :class:`KeptRecords`): an entry's record is shared while its content and pass are unchanged
    (records are immutable). ``buckets_wanted=False`` leaves the buckets empty
    (a caller that counts activations reads only the records and the budget).
    """
    buckets = _Buckets(st.mode.outlets)
    if buckets_wanted:    # sorted stably: equal orders keep their order (in C when built, for numbers)
        ordered = _index.native.by_order(activated) if _index.native is not None and not st.plan.nan_orders \
            and type(activated) is list else None
        if ordered is None:
            ordered = _js.sort_descending(activated, _ORDER) if st.plan.nan_orders \
                else sorted(activated, key=_ORDER, reverse=True)
        buckets.fill(ordered, st.content)
    return construct(ActivationResult, {
        "activated": ActivationList.of(_records(st, activated, kept), list(map(_KEY, activated))),
        "before": "\n".join(buckets.before),
        "after": "\n".join(buckets.after),
        "an_top": buckets.an_top,
        "an_bottom": buckets.an_bottom,
        "em": buckets.em,
        "depth": _depth_groups(buckets.depth),
        "outlets": buckets.outlets,
        "timed": st.timed.state,
        "rolls": st.rolls,
        "budget": meter.budget,
        "budget_used": meter.used,
        "overflowed": meter.overflowed,
        "trace": st.trace.events if st.trace is not None else None,
    })


def _depth_groups(groups: list[dict[str, Any]]) -> list[DepthGroup]:
    """The at-depth groups as models (each group's dict becomes its model's own)."""
    if _index.native is not None:
        return _index.native.bare_models(DepthGroup, groups)
    return [construct(DepthGroup, g) for g in groups]


class _Buckets:
    """The prompt's buckets, filled in descending ``order``. Each content goes to the front of its
    bucket: appended here, and every bucket but the outlets reversed by :meth:`finish`."""

    def __init__(self, with_outlets: bool) -> None:
        self.before: list[str] = []
        self.after: list[str] = []
        self.an_top: list[str] = []
        self.an_bottom: list[str] = []
        self.em: list[ExampleEntry] = []
        self.depth: list[dict[str, Any]] = []
        self.outlets: dict[str, list[str]] = {}
        self.with_outlets = with_outlets
        self.plain = {0: self.before, 1: self.after, 2: self.an_top, 3: self.an_bottom}
        self.groups: dict[Any, dict[str, Any]] = {}    # depth entries by (depth, role), for JavaScript's ===

    def fill(self, entries: list[CompiledEntry], content: dict[int, str]) -> None:
        """Put each entry's text (``content``, else its own) in its bucket, in the order given."""
        if _index.native is not None:     # the same steps in C; what it leaves here, in the same order
            rest: list[tuple[CompiledEntry, str]] = []
            _index.native.fill_buckets(entries, content, (self.before, self.after, self.an_top, self.an_bottom),
                                       self.em, ExampleEntry, self.depth, self.groups, rest)
            for ce, text in rest:
                self._place(ce, text)
            self._finish()
            return
        plain = self.plain
        for ce in entries:
            text = content.get(ce.gid, ce.content)
            if not text:
                continue
            pos = ce.bucket
            bucket = plain.get(pos) if pos is not None else None
            if bucket is not None:
                bucket.append(text)
            else:
                self._place(ce, text)
        self._finish()

    def _place(self, ce: CompiledEntry, text: str) -> None:
        """An entry's text in a bucket other than the four plain ones (or nowhere)."""
        pos = ce.bucket
        if pos == 5:
            self.em.append(construct(ExampleEntry, {"position": "before", "content": text}))
        elif pos == 6:
            self.em.append(construct(ExampleEntry, {"position": "after", "content": text}))
        elif pos == 4:
            self._at_depth(ce, text)
        elif pos == 7 and self.with_outlets:
            if ce.outlet_name:
                self.outlets.setdefault(ce.outlet_name, []).append(text)   # outlets append: no reversal

    def _at_depth(self, ce: CompiledEntry, text: str) -> None:
        want_depth = ce.depth if ce.depth is not None else 4
        want_role = ce.role if ce.role is not None else 0
        if type(want_depth) is int and type(want_role) is int and -_EXACT <= want_depth <= _EXACT \
                and -_EXACT <= want_role <= _EXACT:
            found = (want_depth, want_role)     # what _strict_key gives such ints: themselves
        else:
            found = (_strict_key(want_depth), _strict_key(want_role))
        group = self.groups.get(found)
        if group is not None:
            group["entries"].append(text)
        else:   # SillyTavern keeps the entry's own depth, which may be unset (no later entry matches it)
            group = {"depth": _js_scalar(ce.depth), "role": _js_scalar(want_role), "entries": [text]}
            self.depth.append(group)
            self.groups.setdefault((_strict_key(ce.depth), _strict_key(want_role)), group)

    def _finish(self) -> None:
        for bucket in (self.before, self.after, self.an_top, self.an_bottom, self.em):
            bucket.reverse()
        for group in self.depth:
            group["entries"].reverse()


class KeptRecords:
    """Activation records kept across the evaluations of one compiled book, shared while an entry's
    content and pass are unchanged (records are immutable): an entry often activates in every
    generation of a chat with the same content (the same object). First-pass records by gid in two
    lists (the record and the text it holds), so the check reads two list items and no record; a
    later pass's under ``gid << 3 | pass & 7`` as (record, content, pass) triples, the first eight
    passes apart (an entry may activate in the first pass of one chat and the second of another)."""

    __slots__ = ("records", "texts", "later")

    def __init__(self, size: int) -> None:
        self.records: list[Activation | None] = [None] * size
        self.texts: list[str | None] = [None] * size
        self.later: dict[int, tuple[Activation, str, int]] = {}


def _records(st: EvalState, activated: list[CompiledEntry], kept: KeptRecords) -> list[Activation]:
    """The activation records, in activation order, shared through ``kept`` (see :class:`KeptRecords`;
    built without re-validation: every value comes from the engine with the right type)."""
    content, pass_of, later = st.content, st.pass_of, kept.later
    if len(later) > 50_000:
        later.clear()
    if _index.native is not None:     # the same loop in C
        return _index.native.activation_records(activated, content, pass_of, kept.records, kept.texts, later,
                                                ForcedEntry, _record)
    records, texts, size = kept.records, kept.texts, len(kept.records)
    acts = []
    for ce in activated:
        g = ce.gid
        text, pass_index = content.get(g, ce.content), pass_of.get(g, 1)
        own = type(ce) is not ForcedEntry        # a caller's object is never shared
        if pass_index == 1:
            # the record itself is checked here (C reads the two lists without a switch of threads
            # between them, and spares the record's fields a read)
            a = records[g] if own and g < size else None
            if a is None or a.content is not text:
                a = _record(ce, text, pass_index)
                if own and g < size:
                    texts[g], records[g] = text, a
        else:
            slot = g << 3 | pass_index & 7
            got = later.get(slot) if own else None
            if got is not None and got[1] is text and got[2] == pass_index:
                a = got[0]
            else:
                a = _record(ce, text, pass_index)
                if own:
                    later[slot] = (a, text, pass_index)
        acts.append(a)
    return acts


def _record(ce: CompiledEntry, text: str, pass_index: int) -> Activation:
    """A new activation record (built without re-validation: every value comes from the engine)."""
    return construct(Activation, {"book": ce.world, "uid": ce.uid, "key": ce.key, "position": ce.position,
                                  "order": ce.order, "content": text, "pass_index": pass_index}, _ACTIVATION_FIELDS)
