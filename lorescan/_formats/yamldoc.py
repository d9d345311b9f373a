"""YAML documents, read into the JSON values the rest of lorescan works with.

libyaml's C loader (``yaml.CSafeLoader``) is used when PyYAML was built with it, the pure-Python
``SafeLoader`` otherwise; both give the same values (tested). On top of PyYAML's safe schema:

- a decimal integer too long for Python to convert (over 4,300 digits) is ``±Infinity``, as
  JavaScript's ``Number`` (and js-yaml) gives it, the value ``JSON.parse`` gives for the same text;
- timestamps stay the text they were written as, and ``!!binary`` its base64 text (JSON has
  neither dates nor bytes); ``!!set`` is a mapping to nulls and ``!!omap``/``!!pairs`` are lists,
  as js-yaml reads them; mapping keys are strings, as in a JavaScript object;
- a value that does not fit its tag (``!!int abc``), an alias that contains itself, or aliases
  that expand past :data:`MAX_EXPANDED_NODES` values ("billion laughs") are a :class:`FormatError`.
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Callable, Hashable, Iterator
from functools import cache
from typing import Any

from .._errors import FormatError
from .common import object_key

#: Most values a document may hold once every alias is followed.
MAX_EXPANDED_NODES = 10_000_000
_DECIMAL = re.compile(r"[-+]?[0-9_]+")
#: Where an anchor (``&name``) may stand; a document without one has no aliases.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:])&[^\s,\[\]{}]")
_LOADER_ERRORS = (ValueError, KeyError, AttributeError, TypeError, OverflowError, IndexError)


def has_c_loader() -> bool:
    """Whether PyYAML has libyaml's C loader here."""
    import yaml

    return hasattr(yaml, "CSafeLoader")


def parse_yaml(text: str, file: str | None, c_loader: bool = True) -> Any:
    """The YAML document in ``text`` as JSON values; ``c_loader=False`` forces the pure-Python
    loader. A YAML syntax error is a :class:`FormatError` naming the line."""
    import yaml

    try:
        reader = loader(c_loader and has_c_loader())(text)
        reader.anchored = _ANCHOR.search(text) is not None   # no anchor, no alias to expand
        try:
            return reader.get_single_data()
        finally:
            reader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        raise FormatError(f"invalid YAML{where}" + (f": {problem}" if problem else ""), file=file) from None


@cache
def loader(c_loader: bool) -> type:
    """The loader class: PyYAML's safe loader (C or pure Python) with the rules above."""
    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.nodes import MappingNode

    base = yaml.CSafeLoader if c_loader else yaml.SafeLoader

    class Loader(base):  # type: ignore[valid-type,misc]
        anchored = True   # whether the text may hold an anchor (parse_yaml looks)

        def get_single_data(self) -> Any:
            node = self.get_single_node()
            if node is None:
                return None
            if node.id != "scalar" and self.anchored:
                _check_expansion(node)
            return self.construct_document(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
            # SafeConstructor's, with each key a string before it is stored (1 and true differ)
            if not isinstance(node, MappingNode):
                raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
            self.flatten_mapping(node)
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    if not isinstance(key, Hashable):
                        raise ConstructorError("while constructing a mapping", node.start_mark,
                                               "found a key that is not a scalar", key_node.start_mark)
                    key = object_key(key)
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    tag = "tag:yaml.org,2002:"
    for name, construct in list(Loader.yaml_constructors.items()):
        Loader.add_constructor(name, _guarded(construct))
    Loader.add_constructor(tag + "int", _guarded(_construct_int))
    Loader.add_constructor(tag + "timestamp", _guarded(_as_text))
    Loader.add_constructor(tag + "binary", _guarded(_as_text))
    Loader.add_constructor(tag + "set", _guarded(SafeConstructor.construct_yaml_map))
    Loader.add_constructor(tag + "omap", _guarded(_pairs(lambda k, v: {object_key(k): v}, "omap")))
    Loader.add_constructor(tag + "pairs", _guarded(_pairs(lambda k, v: [k, v], "pairs")))
    return Loader


def _construct_int(loader: Any, node: Any) -> Any:
    from yaml.constructor import SafeConstructor

    try:
        return SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:
        text = loader.construct_scalar(node)
        if not _DECIMAL.fullmatch(text):
            raise
        return -math.inf if text.startswith("-") else math.inf


def _as_text(loader: Any, node: Any) -> str:
    return str(loader.construct_scalar(node))


def _pairs(make: Callable[[Any, Any], Any], kind: str) -> Callable[[Any, Any], Iterator[list[Any]]]:
    from yaml.constructor import SafeConstructor

    base = SafeConstructor.construct_yaml_omap if kind == "omap" else SafeConstructor.construct_yaml_pairs

    def construct(loader: Any, node: Any) -> Iterator[list[Any]]:
        out: list[Any] = []
        yield out
        steps = base(loader, node)
        pairs = next(steps)
        for _ in steps:
            pass
        out.extend(make(key, value) for key, value in pairs)

    return construct


def _guarded(construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``construct`` with a value that does not fit its tag raised as a YAML error."""

    def guarded(loader: Any, node: Any) -> Any:
        try:
            out = construct(loader, node)
        except _LOADER_ERRORS:
            raise _bad_value(node) from None
        return _guarded_steps(out, node) if isinstance(out, types.GeneratorType) else out

    return guarded


def _guarded_steps(steps: Iterator[Any], node: Any) -> Iterator[Any]:
    try:
        yield from steps
    except _LOADER_ERRORS:
        raise _bad_value(node) from None


def _bad_value(node: Any) -> Exception:
    from yaml.constructor import ConstructorError

    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    return ConstructorError(None, None, f"a value that is not a valid {tag}", node.start_mark)


def _check_expansion(root: Any) -> None:
    """Refuse a node graph that holds itself or expands past :data:`MAX_EXPANDED_NODES` values.
    Only collections are walked (a scalar counts one), each once."""
    from yaml.constructor import ConstructorError

    size: dict[int, int] = {}
    opened: set[int] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        key = id(node)
        children = node.value if node.id == "sequence" else [part for pair in node.value for part in pair]
        if key not in opened:
            opened.add(key)
            for child in children:
                if child.id != "scalar" and id(child) not in size:
                    if id(child) in opened:
                        raise ConstructorError(None, None, "an alias that contains itself", child.start_mark)
                    stack.append(child)
            continue
        stack.pop()
        if key in size:
            continue
        size[key] = total = 1 + sum(1 if c.id == "scalar" else size[id(c)] for c in children)
        if total > MAX_EXPANDED_NODES:
            raise ConstructorError(None, None, f"aliases expand to more than {MAX_EXPANDED_NODES} values",
                                   node.start_mark)
