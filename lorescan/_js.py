"""JavaScript value and string semantics that SillyTavern's results depend on.

SillyTavern reads lorebook fields raw, with JavaScript truthiness, loose equality, ``??`` and
``Math.round``; it trims with JavaScript's whitespace set and orders object keys the way
``Object.keys`` does. Python differs on every one of these, so the engine goes through here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from operator import eq
from typing import Any, TypeVar

from ._jssort import v8_sort

T = TypeVar("T")

#: JavaScript ``String.prototype.trim`` strips WhiteSpace and LineTerminator code points.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS_SPLIT = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


def trim(text: str) -> str:
    """``text.trim()`` with JavaScript's whitespace set (not Python's)."""
    return text.strip(JS_WHITESPACE)


def split_ws(text: str) -> list[str]:
    """``text.split(/\\s+/)`` as JavaScript does it (empty pieces at the ends are kept)."""
    return _WS_SPLIT.split(text)


#: Capital letters of Unicode 15 to 17 (Python 3.11's ``str.lower`` knows Unicode 14) and their
#: lowercase letters, as a current JavaScript engine maps them (Node 20.20: ICU 78, Unicode 17):
#: runs of (first, last, offset to the lowercase letter)
_NEWER_CAPITALS = ((0x1C89, 0x1C89, 1), (0xA7CB, 0xA7CB, -42343), (0xA7CC, 0xA7CC, 1), (0xA7CE, 0xA7CE, 1),
                   (0xA7D2, 0xA7D2, 1), (0xA7D4, 0xA7D4, 1), (0xA7DA, 0xA7DA, 1), (0xA7DC, 0xA7DC, -42561),
                   (0x10D50, 0x10D65, 32), (0x16EA0, 0x16EB8, 27))
_NEWER_LOWER = {cp: cp + off for first, last, off in _NEWER_CAPITALS for cp in range(first, last + 1)}
_NEWER = re.compile("[" + "".join(f"{chr(first)}-{chr(last)}" for first, last, _ in _NEWER_CAPITALS) + "]")


def lower(text: str) -> str:
    """``toLowerCase()``: full Unicode lowercasing, Final_Sigma too, as Python's ``str.lower``
    does, and the capital letters Unicode added since the version Python knows."""
    low = text.lower()
    if not low.isascii() and _NEWER.search(low):
        return low.translate(_NEWER_LOWER)
    return low


def truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value: ``0``, ``""``, ``null`` and ``NaN`` are false; ``[]``, ``{}`` true."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def to_number(value: Any) -> float:
    """``Number(value)`` for JSON values: ``NaN`` where JavaScript gives ``NaN``, and an integer
    too large for a double gives ``Infinity``, as JavaScript reads it (never ``OverflowError``)."""
    if type(value) is float:
        return value
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:   # beyond the largest double, as JavaScript reads the literal
            return math.inf if value > 0 else -math.inf
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        return int_to_number(int(value))
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return string_to_number(value)
    if isinstance(value, (list, tuple)):   # ToPrimitive: the array joined with ","
        return string_to_number(js_string(list(value)))
    return math.nan                        # an object: "[object Object]"


def int_to_number(n: int) -> float:
    """The double nearest ``n`` (ties to even), as JavaScript reads an integer literal; ``±Infinity``
    beyond the largest double."""
    try:
        return float(n)
    except OverflowError:
        return math.inf if n > 0 else -math.inf


#: JavaScript's StringNumericLiteral after trimming: a decimal literal (ASCII digits, no ``_``),
#: ``Infinity`` with an optional sign, or an unsigned ``0x``/``0o``/``0b`` integer
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def string_to_number(text: str) -> float:
    """``Number(text)``: JavaScript's whitespace trimmed, ``""`` is 0, and anything outside its
    numeric grammar is ``NaN`` (Python's ``float`` would also take ``inf``, ``1_0``, ``１``)."""
    s = trim(text)
    if not s:
        return 0.0
    if _DECIMAL.fullmatch(s):
        if s[-1] == "y":     # [+-]Infinity
            return -math.inf if s[0] == "-" else math.inf
        return float(s)      # correctly rounded; out of range gives ±inf, never an error
    if _RADIX.fullmatch(s):
        return int_to_number(int(s[2:], {"x": 16, "o": 8, "b": 2}[s[1].lower()]))
    return math.nan


def loose_eq_true(value: Any) -> bool:
    """``value == true``: true for ``true``, ``1``, ``"1"`` (and ``[1]``), false for ``"true"``."""
    if value is True:
        return True
    if value is None or value is False:
        return False
    return to_number(value) == 1.0


def nullish(value: Any, default: Any) -> Any:
    """``value ?? default``: only ``null``/``undefined`` fall through (not ``false`` or ``0``)."""
    return default if value is None else value


def js_round(x: float) -> int:
    """``Math.round``: halves round towards +infinity (``2.5 → 3``, ``-2.5 → -2``)."""
    return math.floor(x + 0.5)


def is_index_key(key: str) -> bool:
    """Whether ``key`` is a canonical array index, which ``Object.keys`` lists first, numerically."""
    return (key.isascii() and key.isdigit() and (key == "0" or key[0] != "0")
            and (len(key) < 10 or int(key) <= 4294967294))


def object_key_order(keys: Iterable[str]) -> list[int]:
    """Positions of ``keys`` in ``Object.keys`` order: index-like keys ascending, then the rest as given."""
    keyed = list(keys)
    if not any(map(str.isdigit, keyed)) or keyed == list(map(str, range(len(keyed)))):
        return list(range(len(keyed)))     # no index-like key, or "0", "1", … in order (the usual file)
    index = [i for i, k in enumerate(keyed) if is_index_key(k)]
    index.sort(key=lambda i: int(keyed[i]))
    rest = [i for i, k in enumerate(keyed) if not is_index_key(k)]
    return index + rest


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``.length``."""
    if text.isascii():
        return len(text)
    # two bytes a code unit; a lone surrogate (kept as read) is one code unit, as in JavaScript
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def sort_key_number(value: Any) -> float:
    """The number ``b.order - a.order`` reads: ``Number(order)`` (``null`` is 0; ``NaN`` for an
    order that is not a number, which :func:`sort_descending` sorts as V8 does)."""
    return to_number(value)


def sort_descending(items: list[T], number: Callable[[T], float]) -> list[T]:
    """``items.sort((a, b) => b.order - a.order)`` with ``number(item)`` each one's order: descending
    and stable. A ``NaN`` order makes the comparator answer 0 (equal) against every other, which is
    not an order: the result is then whatever V8's sort makes of it (:mod:`._jssort`)."""
    keys = list(map(number, items))
    if all(map(eq, keys, keys)):    # no NaN
        return sorted(items, key=number, reverse=True)
    by_item = dict(zip(map(id, items), keys))

    def compare(a: T, b: T) -> float:
        d = by_item[id(b)] - by_item[id(a)]
        return 0.0 if d != d else d     # SortCompare: a NaN answer is +0
    return v8_sort(items, compare)


def json_text(value: Any) -> str:
    """A value as a JSON file writes it (``"a"``, ``true``, ``{"a": 1}``): how lorescan shows a
    book's own values in messages, never in Python's spelling."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:      # a structure that holds itself
        return repr(value)


def js_string(value: Any) -> str:
    """``String(value)`` for JSON values, used where SillyTavern builds ``"<world>.<uid>"`` keys
    (``None`` stands for a missing value: ``"undefined"``). A number is written as JavaScript holds
    it: an integer beyond 2**53 as the nearest double (``Infinity`` beyond the largest)."""
    if value is None:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value) if -_EXACT <= value <= _EXACT else number_string(int_to_number(value))
    if isinstance(value, (int, float)):
        return number_string(to_number(value))
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):   # Array.prototype.join: null elements are empty
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


_EXACT = 2**53   # integers up to this size are exact as JavaScript numbers


def add(a: Any, b: Any) -> Any:
    """``a + b`` on JSON values: strings join when either side is one (after ``ToPrimitive``: an
    array becomes its joined string, an object ``"[object Object]"``), else numbers add."""
    if isinstance(a, (list, tuple, dict)):
        a = js_string(a)
    if isinstance(b, (list, tuple, dict)):
        b = js_string(b)
    if isinstance(a, str) or isinstance(b, str):
        return (a if isinstance(a, str) else js_string(a)) + (b if isinstance(b, str) else js_string(b))
    return to_number(a) + to_number(b)


def less_than(a: Any, b: Any) -> bool:
    """``a < b`` on JSON values: two strings compare by UTF-16 code units, anything else as
    numbers (a ``NaN`` side makes it false)."""
    if isinstance(a, str) and isinstance(b, str):
        if a.isascii() and b.isascii():
            return a < b
        return a.encode("utf-16-be", "surrogatepass") < b.encode("utf-16-be", "surrogatepass")
    return to_number(a) < to_number(b)


def less_equal(a: Any, b: Any) -> bool:
    """``a <= b`` on JSON values: ``!(b < a)``, but false when a side is ``NaN``."""
    if isinstance(a, str) and isinstance(b, str):
        return not less_than(b, a)
    x, y = to_number(a), to_number(b)
    return x <= y


def ascending_set(values: Iterable[Any]) -> list[Any]:
    """``[...new Set(values)].sort((a, b) => a - b)``: distinct values (a number and a string stay
    apart) in first-seen order, then sorted by their difference as numbers, ``NaN`` counting as
    equal, with the same merge sort as V8's (a port of Python's)."""
    distinct = list(dict.fromkeys(values))
    return sorted(distinct, key=cmp_to_key(_subtract_sign))


def _subtract_sign(a: Any, b: Any) -> int:
    d = to_number(a) - to_number(b)
    return -1 if d < 0 else 1 if d > 0 else 0   # NaN: 0, as the sort's comparator result


def json_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON values: keys in ``Object.keys`` order, numbers as
    JavaScript writes them (``null`` for ``Infinity`` and ``NaN``), and a lone surrogate escaped
    as ``\\udXXX`` (well-formed ``JSON.stringify``, every current browser)."""
    out: list[str] = []
    _stringify(value, out)
    return "".join(out)


def _stringify(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_quote(value))
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, (int, float)):
        x = to_number(value)
        out.append(number_string(x) if x - x == 0 else "null")   # x - x: NaN when not finite
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _stringify(v, out)
        out.append("]")
    elif isinstance(value, dict):
        keys = [k if isinstance(k, str) else js_string(k) for k in value]
        items = list(value.values())
        out.append("{")
        for n, i in enumerate(object_key_order(keys)):
            if n:
                out.append(",")
            out.append(_quote(keys[i]))
            out.append(":")
            _stringify(items[i], out)
        out.append("}")
    else:
        out.append("{}")


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t"}
#: what JSON.stringify escapes: a surrogate pair (group 1) is kept, a lone surrogate is not
_NEEDS_ESCAPE = re.compile(r'([\ud800-\udbff][\udc00-\udfff])|["\\\x00-\x1f\ud800-\udfff]')


def _escape(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1)
    ch = m.group(0)
    return _JSON_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def number_string(x: float) -> str:
    """JavaScript's ``Number.prototype.toString()`` (the shortest digits that read back as ``x``,
    written out between 1e-6 and 1e21, else as ``1.5e-7`` / ``1e+21``)."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 2**53:   # exact integers: their digits (beyond, the shortest)
        return str(int(x))
    sign, text = ("-", repr(-x)) if x < 0 else ("", repr(x))
    mant, _, exp = text.partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    n = len(whole) + int(exp or 0) - (len(whole + frac) - len((whole + frac).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out
