"""JavaScript value and string semantics that SillyTavern's results depend on.

SillyTavern reads lorebook fields raw, with JavaScript truthiness, loose equality, ``??`` and
``Math.round``; it trims with JavaScript's whitespace set and orders object keys the way
``Object.keys`` does. Python differs on every one of these, so the engine goes through here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

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


def lower(text: str) -> str:
    """``toLowerCase()``: full Unicode lowercasing; Python's ``str.lower`` agrees, Final_Sigma too."""
    return text.lower()


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
    """``Number(value)`` for JSON values (``NaN`` where JavaScript gives ``NaN``)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        s = trim(value)
        if s == "":
            return 0.0
        try:
            if s.lower().startswith(("0x", "0o", "0b")):
                return float(int(s, 0))
            if s in ("Infinity", "+Infinity"):
                return math.inf
            if s == "-Infinity":
                return -math.inf
            if s.lower() in ("inf", "+inf", "-inf", "nan", "infinity", "-infinity", "+infinity"):
                return math.nan
            return float(s)
        except ValueError:
            return math.nan
    if isinstance(value, list):
        if not value:
            return 0.0
        if len(value) == 1:
            return to_number(value[0])
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
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def sort_key_number(value: Any) -> float:
    """The number ``b.order - a.order`` sees; ``NaN`` (missing order) is treated as 0."""
    n = to_number(value) if value is not None else math.nan
    return 0.0 if n != n else n


def js_string(value: Any) -> str:
    """``String(value)`` for JSON values, used where SillyTavern builds ``"<world>.<uid>"`` keys."""
    if value is None:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return number_string(value)
    return str(value)


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
