"""Model instances from values that already have their fields' types, without pydantic's validators.

Building a model's validator costs a few milliseconds per class, and the first one imports
``importlib.metadata`` (pydantic looks for its plugins there): together about a third of what a
short command such as ``lorescan replay`` adds to importing its dependencies. When every value has
exactly a type its field declares (a ``str`` for ``str``, a list of ``str`` for ``list[str]``, an
``Entry`` for ``Entry``), validation would return it unchanged, so lorescan makes the
instance directly (:func:`build`): the same field values, extra values, set fields and private defaults as
``model_validate``. Anything else (a value that would be coerced or rejected, an alias, an after
or wrap validator) goes through ``model_validate``, errors included, so the result is always the
one pydantic gives; ``tests/test_construct.py`` checks the two against each other.
"""

from __future__ import annotations

import gc
import os
import threading
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from copy import deepcopy
from operator import itemgetter
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

try:    # the optional C extension (setup.py); LORESCAN_NATIVE=0 turns it off
    from . import _native as native
except ImportError:     # not built: the same steps run in Python
    native = None  # type: ignore[assignment]
if os.environ.get("LORESCAN_NATIVE", "1") == "0":
    native = None  # type: ignore[assignment]

M = TypeVar("M", bound=BaseModel)

#: a field's check: True when validation would keep the value as it is
Check = Callable[[Any], bool]

_NONE = type(None)
_EXACT = (str, int, bool, bytes, _NONE)
_CONTAINERS = (list, dict)
_PLAIN = (str, int, float, bool, _NONE)
_PLANS: dict[type, _Plan | None] = {}
_MADE: dict[type, int] = {}
_SWITCHING = threading.Lock()
#: instances of one class made directly before its validator is built: pydantic's compiled
#: validator is faster for a small model (a chat message: a third fewer instructions), so a process
#: that reads many builds it (a few milliseconds); a short command never does
SWITCH_AFTER = 1000
#: classes with more fields than this are always made directly, never switched: pydantic's cost
#: grows with the fields it validates, the direct path's hardly (an entry of 41 fields takes a tenth
#: fewer instructions directly; and a 100k-entry file builds no validator)
DIRECT_FIELDS = 16
#: entries (or bytes of a file) from which reading, building or linting a book pauses the cyclic
#: collector (:func:`gc_paused`); smaller work leaves its young garbage to the young passes
BULK = 1000
BULK_BYTES = 1 << 20
_DIRECT: dict[type, bool] = {}
_VALIDATORS: dict[type, Callable[[Any], Any]] = {}
_PLAIN_PLANS: dict[type, PlainPlan | None] = {}
_setattr = object.__setattr__
#: what the extension's ``plain_models`` needs of a class: its fields' names, kinds (``s`` str,
#: ``b`` bool) and defaults
PlainPlan = tuple[tuple[str, ...], bytes, tuple[Any, ...]]
_KINDS = {str: b"s", bool: b"b"}


def validator(cls: type[M]) -> Callable[[Any], M]:
    """``cls.model_validate``, as the class's compiled validator's own method (built now if its
    build was deferred): the same checks, result and errors, without the classmethod's Python
    frame, which is a third of a chat message's validation."""
    got = _VALIDATORS.get(cls)
    if got is None:
        if not cls.__pydantic_complete__:
            cls.model_rebuild()
        got = _VALIDATORS[cls] = cls.__pydantic_validator__.validate_python
    return cast("Callable[[Any], M]", got)


class _Plan:
    """What :func:`build` needs of one model class, read once from its fields."""

    __slots__ = ("exact", "checks", "before", "allow_extra", "required", "base", "fill", "privates", "private",
                 "shapes")

    def __init__(self, cls: type[BaseModel], exact: dict[str, frozenset[type]], checks: dict[str, Field],
                 before: Any) -> None:
        #: fields whose values pass as they are when of one of these exact types
        self.exact = exact
        #: the other fields: (check, whether validation copies its list or dict, a nested model)
        self.checks = checks
        self.before = before
        self.allow_extra = cls.model_config.get("extra") == "allow"
        fields = cls.model_fields
        self.required = frozenset(n for n, f in fields.items() if f.is_required())
        #: every field in order with its default (given values replace them in place) ...
        self.base = {n: f.default for n, f in fields.items()}
        #: ... and the fields whose default is made per instance: a factory's value, or a copy
        self.fill = [(n, f.default, f.default_factory) for n, f in fields.items()
                     if f.default_factory is not None or not _immutable(f.default)]
        self.privates = [(n, a.default, a.default_factory) for n, a in cls.__private_attributes__.items()]
        #: the private values when every default is shared as it is (copied per instance), else None
        self.private = {n: d for n, d, f in self.privates} \
            if all(f is None and _immutable(d) for _, d, f in self.privates) else None
        #: (keys in order, their values' types) -> how a dict of that shape is made (None: by pydantic)
        self.shapes: dict[tuple[tuple[Any, ...], tuple[type, ...]], _Shape | None] = {}


class _Shape:
    """How :func:`build_directly` makes an instance from a dict of one shape: its keys in order and
    their values' types. The exact-typed fields need no check then (their types are the shape's);
    what is left per dict is a C-level read of the values, the checks of the container fields, and
    the instance. The dicts a reader gives share a few shapes (a book's entries, a chat's messages)."""

    __slots__ = ("names", "get", "checks", "extra", "given", "fill", "shared", "layout")

    def __init__(self, plan: _Plan, keys: tuple[Any, ...], names: list[Any],
                 checks: list[tuple[int, str, Check, bool, Any]], extra: list[Any]) -> None:
        self.names = tuple(names)   # the fields given, in order
        #: their values, as a tuple
        self.get: Callable[[dict[str, Any]], tuple[Any, ...]] = itemgetter(*names) if len(names) > 1 \
            else _one(names[0]) if names else _none
        self.checks = tuple(checks)  # (index in names, name, check, copies, nested model) of the others
        self.extra = tuple(extra)   # the extra keys, in order
        self.given = frozenset(names).union(extra)
        self.fill = [f for f in plan.fill if f[0] not in self.given]
        #: a caller's fields set found equal to ``given`` (see :func:`build_directly`), or None
        self.shared: set[str] | None = None
        #: per key of such a dict, in order: its field's name as the plan's defaults hold it, or
        #: None for an extra key (the C extension's ``shaped_fields`` reads the dict so)
        fields = set(names)
        own = {name: name for name in plan.base}
        self.layout = tuple(own.get(key, key) if key in fields else None for key in keys)


def _one(name: Any) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """``itemgetter(name)`` giving a tuple of one value (itemgetter of one name gives the value)."""
    return lambda data: (data[name],)


def _none(data: dict[str, Any]) -> tuple[Any, ...]:
    return ()


_SHAPES_PER_CLASS = 256     # beyond that many shapes of one class, each dict's is worked out anew


#: a field's (check, whether validation copies its list or dict, the model a dict may be read as)
Field = tuple[Check, bool, "type[BaseModel] | None"]


def plain_plan(cls: type[BaseModel]) -> PlainPlan | None:
    """The fields of a class whose validation keeps a dict's values as they are when each has its
    field's exact type, and keeps the dict's other values as extras: every field a ``str`` or a
    ``bool`` with a plain default, no alias, constraint, validator, private attribute or
    post-init, and no configuration but ``extra="allow"`` (and ``defer_build``). ``None`` for any
    other class. The extension's ``plain_models`` makes such instances directly."""
    if cls in _PLAIN_PLANS:
        return _PLAIN_PLANS[cls]
    plan: PlainPlan | None = None
    decorators = cls.__pydantic_decorators__
    if cls.model_config.get("extra") == "allow" and set(cls.model_config) <= {"extra", "defer_build"} \
            and not (decorators.validators or decorators.field_validators or decorators.root_validators
                     or decorators.model_validators) \
            and not cls.__private_attributes__ and cls.__pydantic_post_init__ is None:
        fields = cls.model_fields
        if all(f.annotation in _KINDS and type(f.default) is f.annotation and f.default_factory is None
               and f.alias is None and f.validation_alias is None and not f.metadata for f in fields.values()):
            plan = (tuple(fields), b"".join(_KINDS[f.annotation] for f in fields.values()),  # type: ignore[index]
                    tuple(f.default for f in fields.values()))
    _PLAIN_PLANS[cls] = plan
    return plan


def build(cls: type[M], data: dict[str, Any], fields_set: set[str] | None = None) -> M:
    """``cls.model_validate(data)`` for a dict, made directly when no value needs pydantic, until
    the class's validator is built: by a caller, or here once :data:`SWITCH_AFTER` instances were
    made directly (a long-running process, or a big file, then uses pydantic's compiled one); a
    class of more than :data:`DIRECT_FIELDS` fields is always made directly (``fields_set``: see
    :func:`build_directly`)."""
    direct = _DIRECT.get(cls)
    if direct is None:
        direct = _DIRECT[cls] = len(cls.model_fields) > DIRECT_FIELDS
    if direct:
        return build_directly(cls, data, fields_set)
    if cls.__pydantic_complete__:
        return validator(cls)(data)
    made = _MADE[cls] = _MADE.get(cls, 0) + 1
    if made > SWITCH_AFTER:
        with _SWITCHING:    # one thread builds it; the others then find the class complete
            try:
                if not cls.__pydantic_complete__:
                    cls.model_rebuild()
            except Exception:   # noqa: BLE001 (a class pydantic cannot build yet: the direct path stays)
                _MADE[cls] = -(1 << 62)
            else:
                return validator(cls)(data)
    return build_directly(cls, data)


def build_directly(cls: type[M], data: dict[str, Any], fields_set: set[str] | None = None) -> M:
    """:func:`build` without ever building the validator (the path the tests compare).
    ``fields_set``: a set the caller shares between instances and copies before one changes it
    (``_model._Ordered`` does), made the instance's fields set when it equals the one ``data``
    gives; else the instance gets a set of its own."""
    plan = _PLANS[cls] if cls in _PLANS else _PLANS.setdefault(cls, _plan(cls))
    if plan is None or type(data) is not dict:
        return cls.model_validate(data)
    given = plan.before(data) if plan.before is not None else data
    if type(given) is not dict:
        return cls.model_validate(data)
    key = native.shape_key(given) if native is not None else (tuple(given), tuple(map(type, given.values())))
    found = plan.shapes.get(key, _UNSEEN)
    if found is _UNSEEN:
        found = _shape(plan, *key)
        if len(plan.shapes) < _SHAPES_PER_CLASS:
            plan.shapes[key] = found
    shape = cast("_Shape | None", found)
    if shape is None:
        return cls.model_validate(data)
    if native is not None:      # the same two dicts in C
        fields, extra = native.shaped_fields(plan.base, shape.layout, given)
    else:
        fields = plan.base.copy()   # every field in order with its default; given values replace them
        fields.update(zip(shape.names, shape.get(given)))
        extra = dict(zip(shape.extra, map(given.__getitem__, shape.extra)))
    for _, name, check, copies, nested in shape.checks:
        value = fields[name]
        if check(value):
            if copies and type(value) in _CONTAINERS:   # validation builds a new list or dict
                fields[name] = type(value)(value)
        elif nested is not None and type(value) is dict:
            try:
                fields[name] = build_directly(nested, value)
            except ValidationError:
                return cls.model_validate(data)     # the error as pydantic words it here
        else:
            return cls.model_validate(data)
    for name, default, factory in shape.fill:
        fields[name] = _default(default, factory)
    if fields_set is None or (fields_set is not shape.shared and not _adopt(shape, fields_set)):
        fields_set = set(shape.given)
    private = None
    if plan.privates:
        private = plan.private.copy() if plan.private is not None \
            else {name: _default(default, factory) for name, default, factory in plan.privates}
    if native is not None:
        return native.shaped_model(cls, fields, fields_set, extra if plan.allow_extra else None, private)
    m = cls.__new__(cls)
    _setattr(m, "__dict__", fields)
    _setattr(m, "__pydantic_fields_set__", fields_set)
    _setattr(m, "__pydantic_extra__", extra if plan.allow_extra else None)
    _setattr(m, "__pydantic_private__", private)
    return m


_UNSEEN = object()


def _adopt(shape: _Shape, fields_set: set[str]) -> bool:
    """Whether a caller's shared ``fields_set`` is the shape's fields set (then kept for the next)."""
    if fields_set != shape.given:
        return False
    shape.shared = fields_set
    return True


def _shape(plan: _Plan, keys: tuple[Any, ...], kinds: tuple[type, ...]) -> _Shape | None:
    """How dicts with these keys (in order) and value types are made, or None when pydantic must
    see them: a value of a type its field does not keep as it is, an unknown key the model does
    not allow, or a required field missing."""
    if not plan.required.issubset(keys):
        return None
    names: list[Any] = []
    checks: list[tuple[int, str, Check, bool, Any]] = []
    extra: list[Any] = []
    for name, kind in zip(keys, kinds):
        allowed = plan.exact.get(name)
        if allowed is not None:
            if kind not in allowed:
                return None
            names.append(name)
            continue
        field = plan.checks.get(name)
        if field is None:
            if not plan.allow_extra:    # "forbid" raises, "ignore" drops: pydantic says which
                return None
            extra.append(name)
            continue
        checks.append((len(names), name, *field))
        names.append(name)
    return _Shape(plan, keys, names, checks, extra)


def _default(default: Any, factory: Any) -> Any:
    """A default as pydantic gives it: the factory's value, or a copy of a mutable default."""
    if factory is not None:
        return factory()
    return default if _immutable(default) else deepcopy(default)


def _immutable(value: Any) -> bool:
    """Whether a default is shared as it is (pydantic copies only what may change)."""
    return type(value) in _PLAIN or (type(value) in (tuple, frozenset) and all(map(_immutable, value)))


def make(cls: type[M], **values: Any) -> M:
    """``cls(**values)``, made directly when no value needs pydantic."""
    return build(cls, values)


def construct(cls: type[M], values: dict[str, Any], fields_set: set[str] | None = None) -> M:
    """``cls.model_construct(**values)`` for trusted ``values`` holding every field of ``cls`` in
    order, on a model with no extra fields or private attributes: what it stores, without its
    per-field loop (the engine builds a result per evaluation; a test pins the two equal).
    ``fields_set`` may be one set shared by many immutable instances. This and the shared field
    sets of :class:`~lorescan._model.Entry` are the only places lorescan sets pydantic's documented
    instance attributes itself."""
    m = cls.__new__(cls)
    _setattr(m, "__dict__", values)
    _setattr(m, "__pydantic_fields_set__", set(values) if fields_set is None else fields_set)
    _setattr(m, "__pydantic_extra__", None)
    _setattr(m, "__pydantic_private__", None)
    return m


_setattr = object.__setattr__


def _plan(cls: type[BaseModel]) -> _Plan | None:
    """How to build ``cls``, or None when a feature of it needs pydantic for every value."""
    decorators = cls.__pydantic_decorators__
    if decorators.field_validators or cls.__pydantic_root_model__:
        return None
    validators = list(decorators.model_validators.values())
    if any(v.info.mode != "before" for v in validators) or len(validators) > 1:
        return None
    post_init = cls.model_post_init      # pydantic's own (private attributes) runs alike in both;
    if not getattr(post_init, "__module__", "").startswith("pydantic."):   # a model's own may not
        return None
    config = cls.model_config
    if config.get("strict") or config.get("validate_default") or config.get("alias_generator"):
        return None
    exact: dict[str, frozenset[type]] = {}
    checks: dict[str, Field] = {}
    for name, field in cls.model_fields.items():
        if field.alias or field.validation_alias or field.metadata or _takes_data(field):
            return None
        kinds = exact_types(field.annotation)
        if kinds is not None:
            exact[name] = kinds
            continue
        check = check_for(field.annotation)
        if check is None:
            return None
        checks[name] = (check, _contains_container(field.annotation), _nested_model(field.annotation))
    if any(_takes_data(a) for a in cls.__private_attributes__.values()):
        return None
    return _Plan(cls, exact, checks, validators[0].func if validators else None)


def exact_types(annotation: Any) -> frozenset[type] | None:
    """The types whose values a field of type ``annotation`` keeps as they are, when it is a plain
    type or a union of them (``str``, ``int``, ``bool``, ``float``, ``bytes``, ``None``), else None."""
    parts = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    kinds = [_NONE if p is None else p for p in parts]
    if all(k in _EXACT or k is float for k in kinds):
        return frozenset(kinds)
    return None


def _takes_data(field: Any) -> bool:
    """Whether a default factory reads the validated data (pydantic finds out from its signature,
    which for a built-in such as ``list`` means parsing its text signature: not asked of those)."""
    factory = field.default_factory
    if factory is None or factory in (list, dict, set, tuple):
        return False
    return bool(field.default_factory_takes_validated_data)


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field of type ``M`` or ``M | None`` reads from a dict, else None."""
    parts = [a for a in typing.get_args(annotation) if a is not _NONE] \
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) else [annotation]
    if len(parts) == 1 and isinstance(parts[0], type) and issubclass(parts[0], BaseModel):
        return parts[0]
    return None


def _contains_container(annotation: Any) -> bool:
    """Whether a field of this type holds a list or dict that validation copies (not ``Any``)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_contains_container(a) for a in typing.get_args(annotation))
    return origin in _CONTAINERS


def check_for(annotation: Any) -> Check | None:
    """The check for a field of type ``annotation``, or None when it is not one of the shapes
    checked here (plain types, unions, literals, lists, string-keyed dicts and models)."""
    if annotation is Any:
        return _anything
    if annotation is None:
        annotation = _NONE
    if annotation in _EXACT or annotation is float:
        return _exactly(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _instance_of(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return _one_of(args)
    parts = [check_for(a) for a in args]
    if not parts or any(p is None for p in parts):
        return None
    checks = tuple(p for p in parts if p is not None)
    if origin is typing.Union or origin is types.UnionType:
        kinds = exact_types(annotation)
        if kinds is not None:
            return _exactly_one_of(kinds)
        return _any_of(checks)
    if origin is list and len(checks) == 1:
        return _list_of(checks[0])
    if origin is dict and len(args) == 2 and args[0] is str:
        return _dict_of(checks[1])
    return None


def _exactly(kind: type) -> Check:
    def check(value: Any) -> bool:
        return type(value) is kind
    check.kinds = frozenset((kind,))  # type: ignore[attr-defined]
    return check


def _exactly_one_of(kinds: frozenset[type]) -> Check:
    def check(value: Any) -> bool:
        return type(value) in kinds
    check.kinds = kinds  # type: ignore[attr-defined]
    return check


def _instance_of(kind: type) -> Check:
    def check(value: Any) -> bool:
        return isinstance(value, kind)
    return check


def _one_of(literals: tuple[Any, ...]) -> Check:
    def check(value: Any) -> bool:
        return any(type(value) is type(v) and value == v for v in literals)
    return check


def _any_of(checks: tuple[Check, ...]) -> Check:
    if len(checks) == 2:    # the usual ``X | None``
        first, second = checks

        def either(value: Any) -> bool:
            return first(value) or second(value)
        return either

    def check(value: Any) -> bool:
        return any(c(value) for c in checks)
    return check


def _list_of(item: Check) -> Check:
    kinds = getattr(item, "kinds", None)
    if kinds is not None:   # items of exact types: one set of their types, made in C
        def exact(value: Any) -> bool:
            return type(value) is list and {*map(type, value)} <= kinds
        return exact

    def check(value: Any) -> bool:
        return type(value) is list and all(map(item, value))
    return check


def _dict_of(item: Check) -> Check:
    def check(value: Any) -> bool:
        return type(value) is dict and all(type(k) is str for k in value) and all(map(item, value.values()))
    return check


def _anything(value: Any) -> bool:
    return True


class _Unplain(Exception):
    """A value :func:`dump` leaves to pydantic's serializer."""


_DUMPABLE: dict[type, bool] = {}


def dump(model: BaseModel) -> dict[str, Any] | None:
    """``model.model_dump(mode="python", exclude_unset=True)`` without building the serializer,
    or None when a value or a feature of the model needs it (the caller then asks pydantic)."""
    try:
        return _dump(model)
    except _Unplain:
        return None


def _dump(model: BaseModel) -> dict[str, Any]:
    cls = type(model)
    ok = _DUMPABLE.get(cls)
    if ok is None:
        d = cls.__pydantic_decorators__
        ok = _DUMPABLE[cls] = not (d.field_serializers or d.model_serializers or d.computed_fields
                                   or any(f.exclude or f.serialization_alias or f.alias
                                          for f in cls.model_fields.values()))
    if not ok:
        raise _Unplain
    given = model.__pydantic_fields_set__
    values = model.__dict__
    out = {name: _plain(values[name]) for name in cls.model_fields if name in given}
    for name, value in (model.__pydantic_extra__ or {}).items():
        if name in given:
            out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        return [_plain(v) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return _dump(value)
    raise _Unplain


#: set once lorescan froze objects itself (:func:`freeze_long_lived`): then :func:`gc_paused` knows
#: some are frozen without counting them
_frozen_here = False


def freeze_long_lived() -> None:
    """``gc.freeze()`` in a process lorescan owns (the service, a command), remembered: Python
    counts frozen objects by walking them all (``gc.get_freeze_count`` took 20 ms with a
    20,000-entry book frozen), so :func:`gc_paused` asks only when lorescan has not frozen any."""
    global _frozen_here
    gc.freeze()
    _frozen_here = True


@contextmanager
def gc_paused(when: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived objects, then move them
    (with any other young objects) straight to its oldest generation. A compiled book lives as long
    as its ``Lore``, a book read from a file as long as its caller keeps it: the young passes would
    walk their hundreds of thousands of new objects again and again (~100 ms a pass at 100k
    entries) and find nothing; full collections still walk them, as before. Objects frozen with
    ``gc.freeze()`` already are left alone (unfreezing would release them), and so is a collector
    that was disabled. ``when=False``: nothing is paused (small work, whose young garbage the young
    passes should still find). Asking whether any object is frozen walks the frozen ones: callers
    pause for big work only, and after :func:`freeze_long_lived` the answer is known."""
    if not when:
        yield
        return
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not _frozen_here and gc.get_freeze_count() == 0:
                gc.freeze()      # both are list splices: no object is visited
                gc.unfreeze()
            gc.enable()
