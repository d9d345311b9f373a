"""Bucket the activated entries by position, in SillyTavern's prompt order.

All activated entries are sorted by descending ``order`` (stable over activation order) and each
content is put at the front of its bucket, so buckets read in ascending ``order`` with ties in
reverse activation order. Outlets (1.18) are the exception: they append, so they read descending.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

from . import _js
from ._budget import BudgetMeter
from ._compile import CompiledEntry, ForcedEntry
from ._model import Activation, ActivationResult, DepthGroup, ExampleEntry

if TYPE_CHECKING:
    from ._engine import _Evaluation


def _strict_key(value: Any) -> Any:
    """A key equal for two JSON scalars exactly when JavaScript's ``===`` holds between them
    (numbers by value, other types by type and value; NaN equals nothing, not even itself)."""
    if type(value) is int:    # JavaScript holds it as a double: beyond 2**53, the nearest one
        return value if -_EXACT <= value <= _EXACT else _js.int_to_number(value)
    if type(value) is float:
        return value if value == value else object()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value == value else object()
    if value is None or isinstance(value, (str, bool)):
        return (type(value), value)
    return object()   # an object: === only to itself, and each entry has its own


#: Every activation's ``model_fields_set`` (all of its fields): one set shared by all of them, as
#: a hundred activations are kept per evaluation (a set of its own would be more than half of an
#: activation's memory); an activation is immutable, and pydantic copies the set for ``model_copy``.
_ACTIVATION_FIELDS = set(Activation.model_fields)
_ORDER = attrgetter("order_num")
_EXACT = 2**53
_set = object.__setattr__


def _construct(cls: type[Any], values: dict[str, Any]) -> Any:
    """``cls.model_construct(**values)`` for ``values`` holding every field of ``cls`` in order, on a
    model with no extra fields (what it stores, without its per-field loop; a test pins the two)."""
    m = cls.__new__(cls)
    _set(m, "__dict__", values)
    _set(m, "__pydantic_fields_set__", set(values))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


def emit(ev: _Evaluation, activated: list[CompiledEntry], meter: BudgetMeter) -> ActivationResult:
    """The result of one evaluation from its activated entries (in activation order)."""
    content = ev.content if hasattr(ev, "content") else {}
    before: list[str] = []
    after: list[str] = []
    an_top: list[str] = []
    an_bottom: list[str] = []
    em: list[ExampleEntry] = []
    depth: list[dict[str, Any]] = []
    outlets: dict[str, list[str]] = {}
    with_outlets = ev.mode.outlets
    groups: dict[Any, dict[str, Any]] = {}    # depth entries by (depth, role), for JavaScript's ===
    # Each content goes to the front of its bucket: appended here, and every bucket reversed after.
    plain = {0: before, 1: after, 2: an_top, 3: an_bottom}
    for ce in sorted(activated, key=_ORDER, reverse=True):   # stable: equal orders keep their order
        text = content.get(ce.gid, ce.content)
        if not text:
            continue
        pos = ce.bucket
        bucket = plain.get(pos)
        if bucket is not None:
            bucket.append(text)
        elif pos == 5:
            em.append(_construct(ExampleEntry, {"position": "before", "content": text}))
        elif pos == 6:
            em.append(_construct(ExampleEntry, {"position": "after", "content": text}))
        elif pos == 4:
            want_depth = ce.depth if ce.depth is not None else 4
            want_role = ce.role if ce.role is not None else 0
            group = groups.get((_strict_key(want_depth), _strict_key(want_role)))
            if group is not None:
                group["entries"].append(text)
            else:   # SillyTavern keeps the entry's own depth, which may be unset (no later entry matches it)
                group = {"depth": ce.depth, "role": want_role, "entries": [text]}
                depth.append(group)
                groups.setdefault((_strict_key(ce.depth), _strict_key(want_role)), group)
        elif pos == 7 and with_outlets:
            if ce.outlet_name:
                outlets.setdefault(ce.outlet_name, []).append(text)   # outlets append: no reversal
    for bucket in (before, after, an_top, an_bottom, em):
        bucket.reverse()
    for group in depth:
        group["entries"].reverse()
    pass_of = getattr(ev, "pass_of", {})
    # Built without re-validation: every value below comes from the engine with the right type.
    new = Activation.__new__
    acts = []
    built = ev.lore._activations     # gid -> its last activation (immutable: shared by results)
    if len(built) > 50_000:
        built.clear()
    for ce in activated:
        g = ce.gid
        text, pass_index = content.get(g, ce.content), pass_of.get(g, 0)
        own = type(ce) is not ForcedEntry        # a caller's object is never shared
        a = built.get(g) if own else None
        if a is None or a.__dict__["content"] is not text or a.__dict__["pass_index"] != pass_index:
            # what model_construct stores, without its per-field loop (a test pins it)
            a = new(Activation)
            _set(a, "__dict__", {"book": ce.world, "uid": ce.uid, "key": ce.key, "position": ce.position,
                                 "order": ce.order, "content": text, "pass_index": pass_index})
            _set(a, "__pydantic_fields_set__", _ACTIVATION_FIELDS)
            _set(a, "__pydantic_extra__", None)
            _set(a, "__pydantic_private__", None)
            if own:
                built[g] = a     # shared once whole: another thread may read it at once
        acts.append(a)
    return _construct(ActivationResult, {
        "activated": acts,
        "before": "\n".join(before),
        "after": "\n".join(after),
        "an_top": an_top,
        "an_bottom": an_bottom,
        "em": em,
        "depth": [_construct(DepthGroup, g) for g in depth],
        "outlets": outlets,
        "timed": ev.timed.state,
        "rolls": ev.rolls,
        "budget": meter.budget,
        "budget_used": meter.used,
        "overflowed": meter.overflowed,
        "trace": ev.trace.events if ev.trace is not None else None,
    })
