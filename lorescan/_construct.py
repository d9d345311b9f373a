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

import types
import typing
from collections.abc import Callable
from copy import deepcopy
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

#: a field's check: True when validation would keep the value as it is
Check = Callable[[Any], bool]

_NONE = type(None)
_EXACT = (str, int, bool, bytes, _NONE)
_CONTAINERS = (list, dict)
_PLAIN = (str, int, float, bool, _NONE)
_PLANS: dict[type, _Plan | None] = {}
_setattr = object.__setattr__


class _Plan:
    """What :func:`build` needs of one model class, read once from its fields."""

    __slots__ = ("checks", "before", "allow_extra", "forbid_extra", "required", "defaults", "privates")

    def __init__(self, cls: type[BaseModel], checks: dict[str, Field], before: Any) -> None:
        self.checks = checks
        self.before = before
        extra = cls.model_config.get("extra") or "ignore"
        self.allow_extra = extra == "allow"
        self.forbid_extra = extra == "forbid"
        self.required = frozenset(n for n, f in cls.model_fields.items() if f.is_required())
        #: (name, default, factory, copy) in field order, for the fields not given
        self.defaults = [(n, f.default, f.default_factory, type(f.default) not in _PLAIN)
                         for n, f in cls.model_fields.items()]
        self.privates = [(n, a.default, a.default_factory, type(a.default) not in _PLAIN)
                         for n, a in cls.__private_attributes__.items()]


#: a field's (check, whether validation copies its list or dict, the model a dict may be read as)
Field = tuple[Check, bool, "type[BaseModel] | None"]


def build(cls: type[M], data: dict[str, Any]) -> M:
    """``cls.model_validate(data)`` for a dict, made directly when no value needs pydantic."""
    plan = _PLANS[cls] if cls in _PLANS else _PLANS.setdefault(cls, _plan(cls))
    if plan is None or type(data) is not dict:
        return cls.model_validate(data)
    given = plan.before(data) if plan.before is not None else data
    if type(given) is not dict or not plan.required <= given.keys():
        return cls.model_validate(data)
    checks = plan.checks
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in given.items():
        field = checks.get(name)
        if field is None:
            if not plan.allow_extra:    # "forbid" raises, "ignore" drops: pydantic says which
                return cls.model_validate(data)
            extra[name] = value
            continue
        check, copies, nested = field
        if check(value):
            if copies and type(value) in _CONTAINERS:   # validation builds a new list or dict
                value = type(value)(value)
        elif nested is not None and type(value) is dict:
            try:
                value = build(nested, value)
            except ValidationError:
                return cls.model_validate(data)     # the error as pydantic words it here
        else:
            return cls.model_validate(data)
        values[name] = value
    return _instance(cls, plan, values, extra)


def _instance(cls: type[M], plan: _Plan, values: dict[str, Any], extra: dict[str, Any]) -> M:
    """The instance ``model_construct`` would make, without its per-field lookups."""
    fields: dict[str, Any] = {}
    for name, default, factory, copy in plan.defaults:
        if name in values:
            fields[name] = values[name]
        else:
            fields[name] = _default(default, factory, copy)
    m = cls.__new__(cls)
    _setattr(m, "__dict__", fields)
    _setattr(m, "__pydantic_fields_set__", set(values).union(extra))
    _setattr(m, "__pydantic_extra__", extra if plan.allow_extra else None)
    private = None
    if plan.privates:
        private = {name: _default(default, factory, copy) for name, default, factory, copy in plan.privates}
    _setattr(m, "__pydantic_private__", private)
    return m


def _default(default: Any, factory: Any, copy: bool) -> Any:
    """A field's default as pydantic gives it: the factory's value, or a copy of a mutable default."""
    if factory is not None:
        return factory()
    return deepcopy(default) if copy else default


def make(cls: type[M], **values: Any) -> M:
    """``cls(**values)``, made directly when no value needs pydantic."""
    return build(cls, values)


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
    checks: dict[str, Field] = {}
    for name, field in cls.model_fields.items():
        if field.alias or field.validation_alias or field.metadata or _takes_data(field):
            return None
        check = check_for(field.annotation)
        if check is None:
            return None
        checks[name] = (check, _contains_container(field.annotation), _nested_model(field.annotation))
    if any(_takes_data(a) for a in cls.__private_attributes__.values()):
        return None
    return _Plan(cls, checks, validators[0].func if validators else None)


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
    if annotation is None or annotation is _NONE:
        return _is_none
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
        return _any_of(checks)
    if origin is list and len(checks) == 1:
        return _list_of(checks[0])
    if origin is dict and len(args) == 2 and args[0] is str:
        return _dict_of(checks[1])
    return None


def _exactly(kind: type) -> Check:
    def check(value: Any) -> bool:
        return type(value) is kind
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
    def check(value: Any) -> bool:
        return any(c(value) for c in checks)
    return check


def _list_of(item: Check) -> Check:
    def check(value: Any) -> bool:
        return type(value) is list and all(map(item, value))
    return check


def _dict_of(item: Check) -> Check:
    def check(value: Any) -> bool:
        return type(value) is dict and all(type(k) is str for k in value) and all(map(item, value.values()))
    return check


def _anything(value: Any) -> bool:
    return True


def _is_none(value: Any) -> bool:
    return value is None


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
