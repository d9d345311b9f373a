"""Bucket the activated entries by position, in SillyTavern's prompt order.

All activated entries are sorted by descending ``order`` (stable over activation order) and each
content is put at the front of its bucket, so buckets read in ascending ``order`` with ties in
reverse activation order. Outlets (1.18) are the exception: they append, so they read descending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .budget import BudgetMeter
from .compile import CompiledEntry
from .model import Activation, ActivationResult, DepthGroup, ExampleEntry

if TYPE_CHECKING:
    from .engine import _Evaluation


def _strict_equal(a: Any, b: Any) -> bool:
    """JavaScript ``===`` between two JSON scalars."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and a == b


_ACTIVATION_FIELDS = frozenset(Activation.model_fields)
_set = object.__setattr__


def _activation(book: str, uid: Any, key: str, position: Any, order: Any, content: str,
                pass_index: int) -> Activation:
    """``Activation.model_construct(...)`` with every field given, without its per-field loop
    (what ``model_construct`` stores for such a call; a test pins the two as equal)."""
    a = Activation.__new__(Activation)
    _set(a, "__dict__", {"book": book, "uid": uid, "key": key, "position": position, "order": order,
                         "content": content, "pass_index": pass_index})
    _set(a, "__pydantic_fields_set__", set(_ACTIVATION_FIELDS))
    _set(a, "__pydantic_extra__", None)
    _set(a, "__pydantic_private__", None)
    return a


def emit(ev: "_Evaluation", activated: list[CompiledEntry], meter: BudgetMeter) -> ActivationResult:
    """The result of one evaluation from its activated entries (in activation order)."""
    content = ev.content if hasattr(ev, "content") else {}
    before: list[str] = []
    after: list[str] = []
    an_top: list[str] = []
    an_bottom: list[str] = []
    em: list[ExampleEntry] = []
    depth: list[dict[str, Any]] = []
    outlets: dict[str, list[str]] = {}
    with_outlets = ev.compat.v118_features
    for ce in sorted(activated, key=lambda x: -x.order_num):
        text = content.get(ce.gid, ce.content)
        if not text:
            continue
        pos = ce.bucket
        if pos == 0:
            before.insert(0, text)
        elif pos == 1:
            after.insert(0, text)
        elif pos == 2:
            an_top.insert(0, text)
        elif pos == 3:
            an_bottom.insert(0, text)
        elif pos == 5:
            em.insert(0, ExampleEntry.model_construct(position="before", content=text))
        elif pos == 6:
            em.insert(0, ExampleEntry.model_construct(position="after", content=text))
        elif pos == 4:
            want_depth = ce.depth if ce.depth is not None else 4
            want_role = ce.role if ce.role is not None else 0
            for group in depth:
                if _strict_equal(group["depth"], want_depth) and _strict_equal(group["role"], want_role):
                    group["entries"].insert(0, text)
                    break
            else:
                depth.append({"depth": ce.depth, "role": want_role, "entries": [text]})
        elif pos == 7 and with_outlets:
            if ce.outlet_name:
                outlets.setdefault(ce.outlet_name, []).append(text)
    pass_of = getattr(ev, "pass_of", {})
    # Built without re-validation: every value below comes from the engine with the right type.
    return ActivationResult.model_construct(
        activated=[_activation(ce.world, ce.uid, ce.key, ce.position, ce.order, content.get(ce.gid, ce.content),
                               pass_of.get(ce.gid, 0))
                   for ce in activated],
        before="\n".join(before),
        after="\n".join(after),
        an_top=an_top,
        an_bottom=an_bottom,
        em=em,
        depth=[DepthGroup.model_construct(**g) for g in depth],
        outlets=outlets,
        timed=ev.timed.state,
        rolls=ev.rolls,
        budget=meter.budget,
        budget_used=meter.used,
        overflowed=meter.overflowed,
        trace=ev.trace.events if ev.trace is not None else None,
    )
