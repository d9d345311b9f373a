"""Data and lookups for :mod:`lorescan._jsregex`: case classes, UTF-16 views, ``\\p{…}`` names.

``JS_CASE_PAIRS`` and ``JS_CASE_GROUPS`` give every class of two or more UTF-16 code units that a
non-``u`` JavaScript ``/x/i`` treats as equal (``Canonicalize``: ``toUpperCase`` of a single unit, never
from outside ASCII into it). They were dumped from Node 20.20 (V8, ICU 78.2, Unicode 17.0) by
searching all 65,536 code units with ``new RegExp("\\uXXXX", "gi")`` for every unit; the result is the
same as the specification's ``Canonicalize`` computed with that engine's ``toUpperCase``.
:func:`regex_cases` measures the installed ``regex`` module's case-insensitive matching the same way.
"""

from __future__ import annotations

import bisect
import functools
import re

import regex

#: (first, delta, count, stride): the pairs (first + k*stride, first + k*stride + delta), k < count.
JS_CASE_PAIRS: tuple[tuple[int, int, int, int], ...] = (
    (0x41, 0x20, 26, 1), (0xC0, 0x20, 23, 1), (0xD8, 0x20, 7, 1), (0xFF, 0x79, 1, 1), (0x100, 1, 24, 2),
    (0x132, 1, 3, 2), (0x139, 1, 8, 2), (0x14A, 1, 23, 2), (0x179, 1, 3, 2), (0x180, 0xC3, 1, 1),
    (0x181, 0xD2, 1, 1), (0x182, 1, 2, 2), (0x186, 0xCE, 1, 1), (0x187, 1, 1, 1), (0x189, 0xCD, 2, 1),
    (0x18B, 1, 1, 1), (0x18E, 0x4F, 1, 1), (0x18F, 0xCA, 1, 1), (0x190, 0xCB, 1, 1), (0x191, 1, 1, 1),
    (0x193, 0xCD, 1, 1), (0x194, 0xCF, 1, 1), (0x195, 0x61, 1, 1), (0x196, 0xD3, 1, 1), (0x197, 0xD1, 1, 1),
    (0x198, 1, 1, 1), (0x19A, 0xA3, 1, 1), (0x19B, 0xA641, 1, 1), (0x19C, 0xD3, 1, 1), (0x19D, 0xD5, 1, 1),
    (0x19E, 0x82, 1, 1), (0x19F, 0xD6, 1, 1), (0x1A0, 1, 3, 2), (0x1A6, 0xDA, 1, 1), (0x1A7, 1, 1, 1),
    (0x1A9, 0xDA, 1, 1), (0x1AC, 1, 1, 1), (0x1AE, 0xDA, 1, 1), (0x1AF, 1, 1, 1), (0x1B1, 0xD9, 2, 1),
    (0x1B3, 1, 2, 2), (0x1B7, 0xDB, 1, 1), (0x1B8, 1, 2, 4), (0x1BF, 0x38, 1, 1), (0x1CD, 1, 8, 2),
    (0x1DE, 1, 9, 2), (0x1F4, 1, 2, 4), (0x1FA, 1, 19, 2), (0x222, 1, 9, 2), (0x23A, 0x2A2B, 1, 1),
    (0x23B, 1, 1, 1), (0x23E, 0x2A28, 1, 1), (0x23F, 0x2A3F, 2, 1), (0x241, 1, 1, 1), (0x244, 0x45, 1, 1),
    (0x245, 0x47, 1, 1), (0x246, 1, 5, 2), (0x250, 0x2A1F, 1, 1), (0x251, 0x2A1C, 1, 1),
    (0x252, 0x2A1E, 1, 1), (0x25C, 0xA54F, 1, 1), (0x261, 0xA54B, 1, 1), (0x264, 0xA567, 1, 1),
    (0x265, 0xA528, 1, 1), (0x266, 0xA544, 2, 4), (0x26B, 0x29F7, 1, 1), (0x26C, 0xA541, 1, 1),
    (0x271, 0x29FD, 1, 1), (0x27D, 0x29E7, 1, 1), (0x282, 0xA543, 1, 1), (0x287, 0xA52A, 1, 1),
    (0x29D, 0xA515, 1, 1), (0x29E, 0xA512, 1, 1), (0x370, 1, 2, 2), (0x376, 1, 1, 1), (0x37B, 0x82, 3, 1),
    (0x37F, 0x74, 1, 1), (0x386, 0x26, 1, 1), (0x388, 0x25, 3, 1), (0x38C, 0x40, 1, 1), (0x38E, 0x3F, 2, 1),
    (0x391, 0x20, 2, 2), (0x394, 0x20, 2, 2), (0x397, 0x20, 2, 4), (0x39D, 0x20, 3, 1), (0x3A4, 0x20, 2, 1),
    (0x3A7, 0x20, 5, 1), (0x3CF, 8, 1, 1), (0x3D8, 1, 12, 2), (0x3F2, 7, 1, 1), (0x3F7, 1, 2, 3),
    (0x400, 0x50, 16, 1), (0x410, 0x20, 2, 1), (0x413, 0x20, 2, 2), (0x416, 0x20, 8, 1), (0x41F, 0x20, 2, 1),
    (0x423, 0x20, 7, 1), (0x42B, 0x20, 5, 1), (0x460, 1, 2, 4), (0x466, 1, 14, 2), (0x48A, 1, 27, 2),
    (0x4C0, 0xF, 1, 1), (0x4C1, 1, 7, 2), (0x4D0, 1, 48, 2), (0x531, 0x30, 38, 1), (0x10A0, 0x1C60, 38, 1),
    (0x10C7, 0x1C60, 2, 6), (0x10D0, 0xBC0, 43, 1), (0x10FD, 0xBC0, 3, 1), (0x13A0, 0x97D0, 80, 1),
    (0x13F0, 8, 6, 1), (0x1C89, 1, 1, 1), (0x1D79, 0x8A04, 1, 1), (0x1D7D, 0xEE6, 1, 1),
    (0x1D8E, 0x8A38, 1, 1), (0x1E00, 1, 48, 2), (0x1E62, 1, 26, 2), (0x1EA0, 1, 48, 2), (0x1F00, 8, 8, 1),
    (0x1F10, 8, 6, 1), (0x1F20, 8, 8, 1), (0x1F30, 8, 8, 1), (0x1F40, 8, 6, 1), (0x1F51, 8, 4, 2),
    (0x1F60, 8, 8, 1), (0x1F70, 0x4A, 2, 1), (0x1F72, 0x56, 4, 1), (0x1F76, 0x64, 2, 1), (0x1F78, 0x80, 2, 1),
    (0x1F7A, 0x70, 2, 1), (0x1F7C, 0x7E, 2, 1), (0x1FB0, 8, 2, 1), (0x1FD0, 8, 2, 1), (0x1FE0, 8, 2, 1),
    (0x1FE5, 7, 1, 1), (0x2132, 0x1C, 1, 1), (0x2160, 0x10, 16, 1), (0x2183, 1, 1, 1), (0x24B6, 0x1A, 26, 1),
    (0x2C00, 0x30, 48, 1), (0x2C60, 1, 2, 7), (0x2C69, 1, 2, 2), (0x2C72, 1, 2, 3), (0x2C80, 1, 50, 2),
    (0x2CEB, 1, 2, 2), (0x2CF2, 1, 2, 31054), (0xA642, 1, 4, 2), (0xA64C, 1, 17, 2), (0xA680, 1, 14, 2),
    (0xA722, 1, 7, 2), (0xA732, 1, 31, 2), (0xA779, 1, 2, 2), (0xA77E, 1, 5, 2), (0xA78B, 1, 2, 5),
    (0xA792, 1, 1, 1), (0xA794, 0x30, 1, 1), (0xA796, 1, 10, 2), (0xA7B3, 0x3A0, 1, 1), (0xA7B4, 1, 8, 2),
    (0xA7C7, 1, 2, 2), (0xA7CC, 1, 8, 2), (0xA7F5, 1, 1, 1), (0xFF21, 0x20, 26, 1),
)

#: The classes of three or four code units.
JS_CASE_GROUPS: tuple[tuple[int, ...], ...] = (
    (0xB5, 0x39C, 0x3BC), (0x1C4, 0x1C5, 0x1C6), (0x1C7, 0x1C8, 0x1C9), (0x1CA, 0x1CB, 0x1CC),
    (0x1F1, 0x1F2, 0x1F3), (0x345, 0x399, 0x3B9, 0x1FBE), (0x392, 0x3B2, 0x3D0), (0x395, 0x3B5, 0x3F5),
    (0x398, 0x3B8, 0x3D1), (0x39A, 0x3BA, 0x3F0), (0x3A0, 0x3C0, 0x3D6), (0x3A1, 0x3C1, 0x3F1),
    (0x3A3, 0x3C2, 0x3C3), (0x3A6, 0x3C6, 0x3D5), (0x412, 0x432, 0x1C80), (0x414, 0x434, 0x1C81),
    (0x41E, 0x43E, 0x1C82), (0x421, 0x441, 0x1C83), (0x422, 0x442, 0x1C84, 0x1C85), (0x42A, 0x44A, 0x1C86),
    (0x462, 0x463, 0x1C87), (0x1C88, 0xA64A, 0xA64B), (0x1E60, 0x1E61, 0x1E9B),
)


@functools.cache
def js_case_table() -> tuple[list[int], dict[int, tuple[int, ...]]]:
    """The code units that have JS case partners (sorted), and each one's whole class (sorted)."""
    out: dict[int, tuple[int, ...]] = {}
    for first, delta, count, stride in JS_CASE_PAIRS:
        for a in range(first, first + count * stride, stride):
            out[a] = out[a + delta] = (a, a + delta)
    for group in JS_CASE_GROUPS:
        out.update(dict.fromkeys(group, group))
    return sorted(out), out


def js_partners(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code units that share a JS non-``u`` case class with a member of ``iv``."""
    keys, eq = js_case_table()
    return [(m, m) for lo, hi in iv for cp in keys[bisect.bisect_left(keys, lo):bisect.bisect_right(keys, hi)]
            for m in eq[cp]]


def js_cases(cp: int) -> frozenset[int]:
    """The code units a non-``u`` ``/x/i`` matches to code unit ``cp``."""
    return frozenset(js_case_table()[1].get(cp, (cp,)))


@functools.cache
def regex_cases(cp: int) -> frozenset[int]:
    """The code units ``regex`` (VERSION0, IGNORECASE) matches to literal ``cp``, found by searching
    all 65,536, so a different ``regex`` version cannot make the translation wrong."""
    lit = f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
    return frozenset(map(ord, regex.findall(lit, _bmp(), regex.IGNORECASE | regex.VERSION0)))


@functools.cache
def _bmp() -> str:
    """Every BMP code unit once, in order (lone surrogates included), decoded from UTF-32 built a
    block of 256 at a time: a fifth of the time of joining 65,536 ``chr`` calls."""
    block = bytearray(1024)
    block[0::4] = bytes(range(256))
    units = bytearray()
    for high in range(256):
        block[1::4] = bytes((high,)) * 256
        units += block
    return units.decode("utf-32-le", "surrogatepass")


_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _pair(m: re.Match[str]) -> str:
    v = ord(m.group()) - 0x10000
    return chr(0xD800 + (v >> 10)) + chr(0xDC00 + (v & 0x3FF))


def utf16(text: str) -> str:
    """The string as JavaScript sees it: astral characters become surrogate pairs (last one cached)."""
    if text.isascii():
        return text
    last = _LAST[0]
    if last[0] is text:
        return last[1]
    out = _ASTRAL.sub(_pair, text) if len(text.encode("utf-16-le", "surrogatepass")) > 2 * len(text) else text
    _LAST[0] = (text, out)
    return out


_LAST = [("", "")]


def from_utf16(text: str, k: int) -> int:
    """The Python index of UTF-16 index ``k`` in ``text`` (an index inside a pair rounds up)."""
    units = 0
    for idx, ch in enumerate(text):
        if units >= k:
            return idx
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


# --------------------------------------------------------------------------- \\p{…} names

def _aliases(table: str) -> dict[str, str]:
    """``"A a1,B b1 b2"`` → every alias mapped to the first name of its comma-separated group."""
    return {alias: grp.split()[0] for grp in table.split(",") for alias in grp.split()}


GENERAL_CATEGORIES = _aliases(
    "LC Cased_Letter,Pe Close_Punctuation,Pc Connector_Punctuation,Cc Control cntrl,Sc Currency_Symbol,"
    "Pd Dash_Punctuation,Nd Decimal_Number digit,Me Enclosing_Mark,Pf Final_Punctuation,Cf Format,"
    "Pi Initial_Punctuation,L Letter,Nl Letter_Number,Zl Line_Separator,Ll Lowercase_Letter,"
    "M Mark Combining_Mark,Sm Math_Symbol,Lm Modifier_Letter,Sk Modifier_Symbol,Mn Nonspacing_Mark,"
    "N Number,Ps Open_Punctuation,C Other,Lo Other_Letter,No Other_Number,Po Other_Punctuation,"
    "So Other_Symbol,Zp Paragraph_Separator,Co Private_Use,P Punctuation punct,Z Separator,"
    "Zs Space_Separator,Mc Spacing_Mark,Cs Surrogate,S Symbol,Lt Titlecase_Letter,Cn Unassigned,"
    "Lu Uppercase_Letter")
BINARY_PROPERTIES = _aliases(
    "ASCII,ASCII_Hex_Digit AHex,Alphabetic Alpha,Any,Assigned,Bidi_Control Bidi_C,Bidi_Mirrored Bidi_M,"
    "Case_Ignorable CI,Cased,Changes_When_Casefolded CWCF,Changes_When_Casemapped CWCM,"
    "Changes_When_Lowercased CWL,Changes_When_NFKC_Casefolded CWKCF,Changes_When_Titlecased CWT,"
    "Changes_When_Uppercased CWU,Dash,Default_Ignorable_Code_Point DI,Deprecated Dep,Diacritic Dia,"
    "Emoji,Emoji_Component EComp,Emoji_Modifier EMod,Emoji_Modifier_Base EBase,Emoji_Presentation EPres,"
    "Extended_Pictographic ExtPict,Extender Ext,Grapheme_Base Gr_Base,Grapheme_Extend Gr_Ext,"
    "Hex_Digit Hex,IDS_Binary_Operator IDSB,IDS_Trinary_Operator IDST,ID_Continue IDC,ID_Start IDS,"
    "Ideographic Ideo,Join_Control Join_C,Logical_Order_Exception LOE,Lowercase Lower,Math,"
    "Noncharacter_Code_Point NChar,Pattern_Syntax Pat_Syn,Pattern_White_Space Pat_WS,"
    "Quotation_Mark QMark,Radical,Regional_Indicator RI,Sentence_Terminal STerm,Soft_Dotted SD,"
    "Terminal_Punctuation Term,Unified_Ideograph UIdeo,Uppercase Upper,Variation_Selector VS,"
    "White_Space space,XID_Continue XIDC,XID_Start XIDS")
_SCRIPT_KEYS = {"Script": "sc", "sc": "sc", "Script_Extensions": "scx", "scx": "scx"}


def property_name(body: str) -> str | None:
    """A JS ``\\p{body}`` as a ``regex`` property name, or None (JS names are exact and case-sensitive)."""
    key, eq, value = body.partition("=")
    if not eq and (body in GENERAL_CATEGORIES or body in BINARY_PROPERTIES):
        return "gc=" + GENERAL_CATEGORIES[body] if body in GENERAL_CATEGORIES else BINARY_PROPERTIES[body]
    if key in ("General_Category", "gc") and value in GENERAL_CATEGORIES:
        return "gc=" + GENERAL_CATEGORIES[value]
    if key in _SCRIPT_KEYS and re.fullmatch(r"[A-Za-z][A-Za-z_]*", value):
        return f"{_SCRIPT_KEYS[key]}={value}"
    return None
