"""SillyTavern 1.18's default macro engine, for the macros lorescan supports.

Since 1.17, ``substituteParams`` runs a parser-based engine by default instead of the legacy
regex passes of :mod:`lorescan._macros`. It rewrites the legacy markers (``<USER>`` …) into
macros, splits the text into tokens with a modal lexer, parses them with a grammar that recovers
from errors the way its parser generator does, evaluates each complete ``{{macro}}`` once
(arguments first, values inserted as they are, never evaluated again), pairs scoped macros
(``{{if x}}…{{/if}}``), then post-processes the whole result: ``\\{``/``\\}`` are unescaped and
``{{trim}}`` removes itself and the line breaks around it. Macros that depend on live state
(variables, time, random, chat, model …) are left as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import _js
from ._errors import LorescanError
from ._js import json_text
from ._macro_parser import WS, Node, parse

if TYPE_CHECKING:
    from ._macros import MacroEnv

_ELSE_MARKER = "\x00\x1fELSE\x1f\x00"
_MARKERS = (("<user>", "{{user}}"), ("<bot>", "{{char}}"), ("<char>", "{{char}}"), ("<group>", "{{group}}"),
            ("<charifnotgroup>", "{{charIfNotGroup}}"))
_MARKER_RES = [(re.compile(re.escape(m), re.IGNORECASE | re.ASCII), by) for m, by in _MARKERS]
_TIME_UTC = re.compile(r"\{\{time_(UTC[+-][0-9]+)\}\}", re.IGNORECASE | re.ASCII)
_UNESCAPE = re.compile(r"\\([{}])")
_TRIM = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.IGNORECASE | re.ASCII)
_SIMPLE = re.compile(r"\{\{([A-Za-z][\w-]*)\}\}", re.ASCII)
_MAX_JS_STRING = 2**29 - 24   # V8's longest string: a longer repeat throws, and the macro stays as written


def _registry() -> dict[str, tuple[int, int, bool]]:
    """Every macro SillyTavern 1.18 registers (lowercased name or alias): (min args, max args, takes a list)."""
    table: dict[str, tuple[int, int, bool]] = {}
    spec = {
        (0, 0): "allChatRange charCreatorNotes charDepthPrompt charDescription charIfNotGroup charInstruction "
                "charPersonality charPrompt charScenario charVersion char_version char chatSeparator chatStart "
                "creatorNotes currentSwipeId date defaultSystemPrompt description else exampleSeparator "
                "firstDisplayedMessageId firstIncludedMessageId groupNotMuted group idleDuration idle_duration input "
                "isMobile isodate isotime lastCharMessage lastGenerationType lastMessageId lastMessage lastSwipeId "
                "lastUserMessage maxContextTokens maxContext maxPromptTokens maxPrompt maxResponseTokens "
                "maxResponse mesExamplesRaw mesExamples model noop notChar original personality persona scenario "
                "systemPrompt user version weekday instructAssistantPrefix instructAssistantSuffix "
                "instructFirstAssistantPrefix instructFirstInput instructFirstOutputPrefix instructFirstUserPrefix "
                "instructInput instructLastAssistantPrefix instructLastInput instructLastOutputPrefix "
                "instructLastUserPrefix instructOutput instructSeparator instructStop instructStoryStringPrefix "
                "instructStoryStringSuffix instructSystemInstructionPrefix instructSystemPrefix "
                "instructSystemPrompt instructSystemSuffix instructSystem instructUserFiller instructUserPrefix "
                "instructUserSuffix",
        (0, 1): "charFirstMessage greeting newline space time trim",
        (1, 1): "// banned comment datetimeformat decglobalvar decvar deleteglobalvar deletevar flushglobalvar "
                "flushvar getglobalvar getvar globalvarexists hasExtension hasglobalvar hasvar incglobalvar incvar "
                "outlet reverse roll varexists",
        (2, 2): "addglobalvar addvar getglobalvarindex getglobalvarkey getvarindex getvarkey if setglobalvar "
                "setvar timeDiff",
        (3, 3): "setglobalvarindex setglobalvarkey setvarindex setvarkey",
    }
    for (lo, hi), names in spec.items():
        for name in names.split():
            table[name.lower()] = (lo, hi, False)
    table["pick"] = table["random"] = (0, 0, True)
    return table


_REGISTRY = _registry()
#: macros whose first argument must be an integer
_INTEGER_ARG = frozenset({"newline", "space", "charfirstmessage", "greeting"})
_INTEGER = re.compile(r"-?[0-9]+")
#: card macros (lowercased name or alias) and the name :class:`MacroEnv` gives them
_CARD = {"charprompt": "charPrompt", "charinstruction": "charInstruction", "chardescription": "description",
         "description": "description", "charpersonality": "personality", "personality": "personality",
         "charscenario": "scenario", "scenario": "scenario", "persona": "persona",
         "mesexamplesraw": "mesExamplesRaw", "mesexamples": "mesExamples", "chardepthprompt": "charDepthPrompt",
         "charcreatornotes": "creatorNotes", "creatornotes": "creatorNotes", "charversion": "charVersion",
         "version": "charVersion", "char_version": "charVersion"}
_VAR_SHORTHAND = re.compile(r"[.$][a-zA-Z](?:[\w-]*\w)?", re.ASCII)


def _can_scope(name: str, argc: int) -> bool:
    """Whether a macro with ``argc`` arguments may take scoped content as one more."""
    spec = _REGISTRY.get(name.lower())
    if spec is None:
        return True
    return not spec[2] and spec[0] <= argc + 1 <= spec[1]


def _arg_range(arg: Node) -> tuple[int, int] | None:
    """An argument's text offsets ``[lo, hi)``: from its first to its last token or macro."""
    spans = [(t.start, t.end) for t in arg.toks if not t.inserted]
    spans += [(m.lo, m.hi) for m in arg.macros if m.lo >= 0]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def _flatten(node: Node, out: list[Node]) -> None:
    """The complete macros inside an unfinished one (its own tokens stay as written)."""
    for m in [*node.macros, *(mm for a in node.args for mm in a.macros)]:
        if m.complete():
            out.append(m)
        else:
            _flatten(m, out)


def _closing(m: Node, text: str) -> bool:
    """Whether a macro closes a scope: a ``/`` flag, or ``{{///}}`` (a comment whose text starts with ``/``)."""
    if "/" in m.flags:
        return True
    if m.name == "//" and m.args and m.args[0].toks:
        first = min(m.args[0].toks, key=lambda t: t.start)
        return text.startswith("/", first.start)
    return False


@dataclass
class _Item:
    """A macro to evaluate in a text, with the scoped content it takes (offsets) or kept as written."""

    node: Node
    start: int
    end: int
    raw: bool = False
    scope: tuple[int, int, int] | None = None   # content start, content end, end of the closing macro


def _items(text: str) -> list[_Item]:
    """The macros of ``text`` to evaluate in order, scoped pairs merged into their opener."""
    doc = parse(text)
    nodes: list[Node] = []
    for m in doc.macros:
        if m.complete():
            nodes.append(m)
        else:
            _flatten(m, nodes)
    items = sorted((_Item(m, m.toks[0].start, m.end.end) for m in nodes if m.end is not None),
                   key=lambda it: (it.start, it.end))
    _pair_scopes(items, text)
    return items


def _pair_scopes(items: list[_Item], text: str) -> None:
    """Pair each outermost opener with its closing macro (same name, any case, nesting counted);
    a pair whose opener cannot take content stays as written, and so does a lone closing macro.

    Each opener looks only among macros of its own name, and gives up once more scopes are open
    than closing macros follow; what a pair encloses is a run of ``items`` (they are in text
    order and do not overlap): so a text of many macros costs about linear time."""
    infos = [(it, it.node.name.lower(), _closing(it.node, text)) for it in items if it.node.name and not it.node.var]
    groups: dict[str, list[int]] = {}
    for i, info in enumerate(infos):
        groups.setdefault(info[1], []).append(i)
    closers_after: dict[int, int] = {}       # per info: closing macros of its name after it
    at: dict[int, int] = {}                  # per info: its place in its name's group
    for group in groups.values():
        left = sum(1 for i in group if infos[i][2])
        for n, i in enumerate(group):
            left -= infos[i][2]
            closers_after[i], at[i] = left, n
    where = {id(it): n for n, it in enumerate(items)}
    matched: set[int] = set()
    inside: set[int] = set()
    for i, (it, name, closing) in enumerate(infos):
        if closing or i in matched or id(it) in inside or not closers_after[i]:
            continue
        j = _closing_of(groups[name], at[i] + 1, infos, matched, closers_after)
        if j < 0:
            continue
        matched.update((i, j))
        close = infos[j][0]
        if not _can_scope(it.node.name, len(it.node.args)):
            it.raw = close.raw = True
            continue
        it.scope = (it.end, close.start, close.end)
        inside.update(id(other) for other in items[where[id(it)] + 1:where[id(close)] + 1])
    for i, (it, _name, closing) in enumerate(infos):
        if closing and i not in matched:
            it.raw = True
    items[:] = [it for it in items if id(it) not in inside]


def _closing_of(group: list[int], start: int, infos: list[tuple[_Item, str, bool]], matched: set[int],
                closers_after: dict[int, int]) -> int:
    """The closing macro of an opener (an index into ``infos``), or -1: the first of the macros of
    its name (``group``) from ``start`` on that brings the count of open scopes to zero (openers
    that can take content open one more; macros already paired do not count)."""
    depth = 1
    for pos in range(start, len(group)):
        k = group[pos]
        if k in matched:
            continue
        other, _name, closing = infos[k]
        if closing:
            depth -= 1
            if depth == 0:
                return k
        elif _can_scope(other.node.name, len(other.node.args)):
            depth += 1
            if depth > closers_after[k]:    # more scopes open than closing macros follow
                return -1
    return -1


def _walk(text: str, env: MacroEnv) -> str:
    """Evaluate the macros of ``text`` (a whole text, an argument or scoped content), no pre- or
    post-processing."""
    if not text:
        return ""
    if "{{" not in text:
        return text
    items = _items(text)
    if not items:
        return text
    out: list[str] = []
    cursor = 0
    for it in items:
        if it.start > cursor:
            out.append(text[cursor:it.start])
        if it.raw:
            out.append(text[it.start:it.end])
            cursor = it.end
            continue
        out.append(_eval_macro(it, text, env))
        cursor = it.scope[2] if it.scope and it.scope[2] > it.end else it.end
    out.append(text[cursor:])
    return "".join(out)


def _eval_macro(it: _Item, text: str, env: MacroEnv) -> str:
    """One macro's value: its arguments evaluated first (raw for ``if``), then its handler; the
    macro as written (nested macros evaluated) when unknown, misused or out of lorescan's scope."""
    node = it.node
    if node.var:   # variable shorthand ({{.x}}, {{$x}}): live state, left as written
        return text[it.start:it.end]
    lname = node.name.lower()
    delay = lname == "if"
    inner_lo, inner_hi = node.toks[0].end, node.end.start if node.end else it.end
    args: list[str] = []
    pieces: list[tuple[int, int, str]] = []
    for arg in node.args:
        span = _arg_range(arg)
        raw = text[span[0]:span[1]] if span else ""
        value = raw if delay else _walk(raw, env)
        args.append(value)
        if span:
            pieces.append((span[0], span[1], value))
    if it.scope:
        lo, hi = it.scope[0], it.scope[1]
        if lo >= hi:
            args.append("")
        else:
            value = text[lo:hi]
            if not delay:
                value = _walk(value, env)
                if "#" not in node.flags:
                    value = trim_scoped(value)
            args.append(value)
            pieces.append((lo, hi, value))
    pieces.sort()
    inner, cursor = [], inner_lo
    for lo, hi, value in pieces:
        if lo > cursor:
            inner.append(text[cursor:lo])
        inner.append(value)
        cursor = hi
    if cursor < inner_hi:
        inner.append(text[cursor:inner_hi])
    try:
        got = _handler(lname, args, node.flags, it.scope is not None, env)
    except _Live:   # live state: the macro (and its scoped content) as written
        return text[it.start:it.scope[2] if it.scope else it.end]
    return "{{" + "".join(inner) + "}}" if got is None else got


class _Live(Exception):
    """A registered macro whose value depends on live state, which lorescan leaves as written."""


def _handler(name: str, args: list[str], flags: list[str], scoped: bool, env: MacroEnv) -> str | None:
    """A registered macro's value; ``None`` when SillyTavern keeps it (unknown, wrong arguments);
    raises :class:`_Live` for one that depends on live state."""
    spec = _REGISTRY.get(name)
    if spec is None or spec[2] or not spec[0] <= len(args) <= spec[1]:
        return None
    if name in _INTEGER_ARG and args and not _INTEGER.fullmatch(_js.trim(args[0])):
        return None
    if name in ("newline", "space"):
        count = int(_js.trim(args[0])) if args else 1
        if count < 0 or count > _MAX_JS_STRING:
            return None
        return ("\n" if name == "newline" else " ") * count
    if name == "trim":
        return (args[0] if args else "") if scoped else "{{trim}}"
    if name == "reverse":
        return args[0][::-1]
    if name in ("//", "comment", "noop", "banned"):
        return ""
    if name == "else":
        return _ELSE_MARKER
    if name == "if":
        return _if(args[0], args[1], flags, env)
    if name == "outlet":    # filled after the scan, cleared when a generation ends: empty while it runs
        return ""
    value = name_value(name, env)
    if value is None:
        raise _Live()
    return value


def name_value(name: str, env: MacroEnv) -> str | None:
    """The value of a name or card macro (lowercased), ``None`` for the others and for a card
    macro ``env`` has no value for."""
    if name == "user":
        return env.user
    if name == "char":
        return env.char
    if name in ("group", "charifnotgroup"):
        return env.value("group")
    if name in ("groupnotmuted", "notchar"):
        key = "groupNotMuted" if name == "groupnotmuted" else "notChar"
        for k, v in env.after_names:
            if k == key:
                return v
        return env.char if name == "groupnotmuted" else env.user
    card = _CARD.get(name)
    if card is not None:
        for k, v in env.variables:
            if k == card:
                return v
    return None


def _if(raw_cond: str, raw_content: str, flags: list[str], env: MacroEnv) -> str | None:
    """``{{if condition}}then{{else}}other{{/if}}``: the condition (``!`` inverts it) is evaluated,
    or a bare macro name stands for that macro; falsy are ``''``, ``false``, ``off`` and ``0``."""
    cond = raw_cond
    inverted = re.match(WS + "*!", cond) is not None
    if inverted:
        cond = re.sub("^" + WS + "*!" + WS + "*", "", cond, count=1)
    cond = evaluate(cond, env)
    if _VAR_SHORTHAND.fullmatch(cond):   # a variable: live state
        raise _Live()
    lname = _js.lower(_js.trim(cond))
    spec = _REGISTRY.get(lname)
    if spec is not None and spec[0] == 0:
        if name_value(lname, env) is None and lname not in ("newline", "space", "noop", "trim", "else"):
            raise _Live()
        cond = evaluate("{{" + cond + "}}", env)
    falsy = cond == "" or _js.lower(_js.trim(cond)) in ("off", "false", "0")
    if inverted:
        falsy = not falsy
    then, other = _split_else(raw_content)
    chosen = other if falsy else then
    if chosen is None:
        return ""
    result = evaluate(chosen, env)
    return result if "#" in flags else trim_scoped(result)


def _split_else(content: str) -> tuple[str, str | None]:
    """Split an ``if``'s content at its first ``{{else}}`` outside nested scoped ``{{if}}`` blocks."""
    if "{{" not in content:
        return content, None
    doc = parse(content)
    depth = 0
    for m in doc.macros:
        if m.end is None or not m.name:
            continue
        closing = _closing(m, content)
        if m.name == "if" and not closing and len(m.args) == 1:
            depth += 1
        elif m.name == "if" and closing:
            depth -= 1
        elif m.name == "else" and depth == 0:
            return content[:m.toks[0].start], content[m.end.end:] if not m.end.inserted else content
    return content, None


def trim_scoped(content: str) -> str:
    """Scoped content as the engine trims it: the first non-blank line's indentation removed
    from every line (less-indented lines lose theirs), then the whole trimmed."""
    if not content:
        return ""
    lines = content.split("\n")
    base = 0
    for line in lines:
        if _js.trim(line):
            base = len(line) - len(line.lstrip(" \t"))
            break
    if base == 0:
        return _js.trim(content)
    out = [line[base:] if len(line) - len(line.lstrip(" \t")) >= base else line.lstrip(_js.JS_WHITESPACE)
           for line in lines]
    return _js.trim("\n".join(out))


def _pre(text: str) -> str:
    """The engine's pre-processing: ``{{time_UTC+N}}`` rewritten, legacy markers made macros."""
    if "{{" in text and "{{time_" in text.lower():
        text = _TIME_UTC.sub(lambda m: "{{time::" + m.group(1) + "}}", text)
    if "<" in text:
        low = text.lower()
        for (marker, _by), (pat, by) in zip(_MARKERS, _MARKER_RES):
            if marker in low:
                text = pat.sub(by, text)
                low = text.lower()
    return text


def _post(text: str) -> str:
    """The engine's post-processing over the whole result: unescape braces, ``{{trim}}``, else markers."""
    if "\\" in text:
        text = _UNESCAPE.sub(r"\1", text)
    if "{{" in text:
        text = _TRIM.sub("", text)
    if "\x00" in text:
        text = text.replace(_ELSE_MARKER, "")
    return text


def may_change(text: str) -> bool:
    """False only if :func:`evaluate` returns ``text`` unchanged whatever the names and card."""
    if "{{" in text or "\\{" in text or "\\}" in text or "\x00" in text:
        return True
    if "<" not in text:
        return False
    low = text.lower()
    return any(m in low for m, _ in _MARKERS)


def evaluate(text: str | None, env: MacroEnv) -> str:
    """``substituteParams(text)`` under SillyTavern 1.18's default macro engine; ``''`` for none.
    A text whose macros nest deeper than Python's recursion allows (about 140 levels; SillyTavern
    goes to a few hundred, then fails too) is a :class:`~lorescan.LorescanError`."""
    if not text:
        return ""
    if not may_change(text):
        return text
    text = _pre(text)
    fast = _fast(text, env)
    if fast is not None:
        return fast
    try:
        return _post(_walk(text, env))
    except RecursionError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise LorescanError(f"the macros of {json_text(shown)} nest too deeply for lorescan to substitute "
                            "(about 140 levels at most)") from None


def _fast(text: str, env: MacroEnv) -> str | None:
    """The result for a text whose only macros are plain ``{{name}}`` ones with plain values, or
    ``None`` when the full engine is needed."""
    if "\\" in text or "\x00" in text:
        return None
    out: list[str] = []
    cursor = 0
    for m in _SIMPLE.finditer(text):
        name = m.group(1).lower()
        if name in ("trim", "else") or "{{" in text[cursor:m.start()]:
            return None
        if name == "newline" or name == "space":
            value: str | None = "\n" if name == "newline" else " "
        elif name == "noop":
            value = ""
        else:
            value = name_value(name, env)
            if value is not None and ("{" in value or "\\" in value or "\x00" in value):
                return None
        out.append(text[cursor:m.start()])
        out.append(m.group(0) if value is None else value)
        cursor = m.end()
    if "{{" in text[cursor:]:
        return None
    out.append(text[cursor:])
    return "".join(out)
