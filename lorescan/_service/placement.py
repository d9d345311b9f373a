"""Where the proxy puts an activation's text into a chat completion's messages (pure: no I/O).

A client steers the proxy with system messages (role ``system`` or ``developer``):

- the **header**, a message whose content starts with ``LORESCAN_SYSTEM`` followed by a JSON
  object (books, settings, names, session, ...); it is removed before forwarding;
- **markers**, messages whose whole content (trimmed) is ``LORESCAN_BEFORE``, ``LORESCAN_AFTER``,
  ``LORESCAN_AN_TOP``, ``LORESCAN_AN_BOTTOM``, ``LORESCAN_EM_TOP``, ``LORESCAN_EM_BOTTOM`` or
  ``LORESCAN_OUTLET <name>``: each is replaced by a system message holding that bucket's text, or
  dropped when the bucket is empty.

Buckets without a marker: the before text is prepended, and the after, author's-note (top, then
bottom) and example-message (top, then bottom) texts are appended, in that order, to the first
system message that is neither header nor marker, each joined with a newline; without one, a
system message holding them is created at the start. An outlet without a marker is placed nowhere,
as in SillyTavern (its text is only reachable by ``{{outlet::name}}``).

Bucket text is SillyTavern's: before and after as ``checkWorldInfo`` joins them, the author's-note
and outlet entries joined with ``\\n``, example-message entries at the top in descending order (the
prompt builder unshifts them one by one) and at the bottom in ascending order.

At-depth entries are inserted as SillyTavern's chat-completion prompt builder does
(``populationInjectionPrompts``), into the chat: the user and assistant messages, each carrying
along the other messages that follow it up to the next one; the messages before the first and
after the last stay where they are (the system prompt, instructions after the chat). The chat is
walked from its end; for each depth from 0 to 1000, the groups of that depth become one message per
role, spliced in so that ``depth`` chat messages (and the messages inserted for smaller depths)
follow them: depth 0 goes right after the last chat message. Within one depth the messages end up
in the order assistant, user, system (the system one last, nearest the end). A group's text is its
entries joined with ``\n``; groups of one depth and role are joined by key name, each trimmed.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from .._js import js_string, to_number, trim

HEADER = "LORESCAN_SYSTEM"
SYSTEM_ROLES = frozenset({"system", "developer"})
SCANNED_ROLES = ("user", "assistant")
MARKERS = {
    "LORESCAN_BEFORE": "before",
    "LORESCAN_AFTER": "after",
    "LORESCAN_AN_TOP": "an_top",
    "LORESCAN_AN_BOTTOM": "an_bottom",
    "LORESCAN_EM_TOP": "em_top",
    "LORESCAN_EM_BOTTOM": "em_bottom",
}
_OUTLET = re.compile(r"^LORESCAN_OUTLET(?:\s+(.*))?$", re.S)
_WORD = re.compile(r"LORESCAN_[A-Z_]+")
#: unmarked buckets appended to the first system message, in this order (before is prepended)
APPENDED = ("after", "an_top", "an_bottom", "em_top", "em_bottom")
#: SillyTavern's MAX_INJECTION_DEPTH
MAX_DEPTH = 1000
#: extension-prompt roles, in the order the prompt builder walks them
DEPTH_ROLES = ((0, "system"), (1, "user"), (2, "assistant"))
#: integers a double holds exactly: ``String(n)`` and ``Number(n)`` of such an int need no calls
_EXACT = 2**53


class PlacementError(Exception):
    """A header or marker the proxy cannot read: the message, and the field it is in."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Header:
    """The header found in a request: where it was and its JSON object."""

    index: int
    fields: dict[str, Any]


def content_text(content: Any) -> str | None:
    """A message's text: its content string, or its text parts joined; ``None`` for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str))
    return None


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in SYSTEM_ROLES


def find_header(messages: list[Any]) -> Header | None:
    """The ``LORESCAN_SYSTEM`` header of ``messages``, parsed, or ``None`` (a request to pass
    through untouched). A second header, JSON that does not parse or is not an object: an error."""
    found: Header | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in SYSTEM_ROLES:   # _is_system, inline
            continue
        text = content_text(message.get("content"))
        if text is None or not text.lstrip().startswith(HEADER):
            continue
        where = f"messages[{i}].content"
        if found is not None:
            raise PlacementError(f"a second {HEADER} header (the first is messages[{found.index}]): "
                                 "send one", where)
        raw = text.lstrip()[len(HEADER):]
        try:
            fields = json.loads(raw)
        except ValueError as exc:
            raise PlacementError(f"the {HEADER} header is not valid JSON: {exc}", where) from None
        if not isinstance(fields, dict):
            raise PlacementError(f"the {HEADER} header must be a JSON object after {HEADER}, got "
                                 f"{type(fields).__name__}", where)
        found = Header(i, fields)
    return found


def chat_of(messages: list[Any]) -> list[dict[str, Any]]:
    """What is scanned: the user and assistant messages, in order, as ``{role, content, name}``
    (a message without a name is named by the activation: the header's ``user`` or ``char``)."""
    out = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") in SCANNED_ROLES:
            name = message.get("name")
            out.append({"role": message["role"], "content": message.get("content"),
                        "name": name if isinstance(name, str) and name else None})
    return out


def marker_of(message: Any, index: int) -> tuple[str, str] | None:
    """``(bucket, outlet name)`` when ``message`` is a placement marker, else ``None``."""
    if not _is_system(message):
        return None
    text = content_text(message.get("content"))
    if text is None:
        return None
    text = text.strip()
    if not text.startswith("LORESCAN_"):
        return None
    if text in MARKERS:
        return MARKERS[text], ""
    outlet = _OUTLET.match(text)
    if outlet is None:
        if _WORD.fullmatch(text):      # a marker misspelt would reach the model as it is
            close = difflib.get_close_matches(text, [*MARKERS, "LORESCAN_OUTLET"], n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PlacementError(f"unknown placement marker {text}{hint}", f"messages[{index}].content")
        return None
    name = (outlet.group(1) or "").strip()
    if not name:
        raise PlacementError("LORESCAN_OUTLET needs an outlet name: 'LORESCAN_OUTLET <name>'",
                             f"messages[{index}].content")
    return "outlet", name


def bucket_texts(result: dict[str, Any]) -> dict[str, str]:
    """Each bucket's text, from a result in the ``expected`` shape (see the module docstring)."""
    em = result.get("em") or []
    return {
        "before": result.get("before") or "",
        "after": result.get("after") or "",
        "an_top": "\n".join(result.get("an_top") or ()),
        "an_bottom": "\n".join(result.get("an_bottom") or ()),
        "em_top": "\n".join(e["content"] for e in reversed(em) if e["position"] == "before"),
        "em_bottom": "\n".join(e["content"] for e in em if e["position"] == "after"),
    }


def place(messages: list[Any], header: Header, result: dict[str, Any]) -> list[Any]:
    """``messages`` as forwarded: the header removed, the markers replaced (or dropped), the
    unmarked buckets joined to the first system message, and the at-depth entries inserted."""
    texts = bucket_texts(result)
    outlets = result.get("outlets") or {}
    marked: set[str] = set()
    out: list[Any] = []
    first_system: int | None = None
    for i, message in enumerate(messages):
        if i == header.index:
            continue
        if not isinstance(message, dict) or message.get("role") not in SYSTEM_ROLES:   # _is_system, inline
            out.append(message)         # neither a marker nor a system message
            continue
        marker = marker_of(message, i)
        if marker is None:
            if first_system is None:
                first_system = len(out)
            out.append(message)
            continue
        bucket, name = marker
        text = "\n".join(outlets.get(name) or ()) if bucket == "outlet" else texts[bucket]
        marked.add(bucket)
        if text:
            out.append({"role": "system", "content": text})
    _join_unmarked(out, first_system, texts, marked)
    return insert_at_depth(out, result.get("depth") or [])


def _join_unmarked(out: list[Any], first_system: int | None, texts: dict[str, str], marked: set[str]) -> None:
    before = texts["before"] if "before" not in marked else ""
    after = [texts[b] for b in APPENDED if b not in marked and texts[b]]
    if not before and not after:
        return
    if first_system is None:
        out.insert(0, {"role": "system", "content": "\n".join([before, *after] if before else after)})
        return
    message = dict(out[first_system])
    content = message.get("content")
    if isinstance(content, list):       # text parts: the lore becomes parts of its own
        head = [{"type": "text", "text": before}] if before else []
        tail = [{"type": "text", "text": text} for text in after]
        message["content"] = [*head, *content, *tail]
    else:
        pieces = [before] if before else []
        if isinstance(content, str) and content:
            pieces.append(content)
        message["content"] = "\n".join(pieces + after)
    out[first_system] = message


def depth_prompts(groups: list[dict[str, Any]]) -> dict[int, list[dict[str, str]]]:
    """The messages to insert at each depth, from a result's depth groups, in chat order."""
    prompts: dict[str, tuple[float, float, str]] = {}
    for group in groups:        # one extension prompt per key: a later group of the same key replaces it
        depth, role = group.get("depth"), group.get("role")
        if depth is None:       # an entry without a depth: NaN, never inserted
            continue
        if type(depth) is int and type(role) is int and 0 <= depth <= MAX_DEPTH and -_EXACT <= role <= _EXACT:
            # the engine's groups: what js_string and to_number give such ints, without the calls
            prompts[f"customDepthWI_{depth}_{role}"] = (depth, role, "\n".join(group["entries"]))
        else:
            key = f"customDepthWI_{js_string(depth)}_{js_string(role)}"
            prompts[key] = (to_number(depth), to_number(role), "\n".join(group["entries"]))
    at_depth: dict[float, list[tuple[float, str]]] = {}
    for key in sorted(prompts):        # joined by key name within a depth and role
        d, r, v = prompts[key]
        if v and d == d and 0 <= d <= MAX_DEPTH and d == int(d):
            at_depth.setdefault(d, []).append((r, v))
    by_depth: dict[int, list[dict[str, str]]] = {}
    for depth in sorted(at_depth):
        by_role: dict[float, list[str]] = {}      # a dict finds a number as == does: 1.0 and -0.0 too
        for r, v in at_depth[depth]:
            by_role.setdefault(r, []).append(v)
        inserted = []
        for number, role in DEPTH_ROLES:
            values = by_role.get(number)
            if values:
                text = trim(values[0]) if len(values) == 1 else trim("\n".join([trim(v) for v in values]))
                if text:
                    inserted.append({"role": role, "content": text})
        if inserted:
            by_depth[int(depth)] = inserted[::-1]         # the last role's message nearest the chat's end
    return by_depth


def insert_at_depth(messages: list[Any], groups: list[dict[str, Any]]) -> list[Any]:
    """``messages`` with the at-depth entries inserted (see the module docstring). Depth 0 goes
    right after the last chat message; a depth ``d`` below the count of chat messages right before
    the ``d`` newest ones (each with the messages that follow it up to the next one); a deeper one
    at the chat's start, the deepest first. This is where the prompt builder's walk from the
    chat's end puts them, every splice point worked out at once (the messages are copied once)."""
    by_depth = depth_prompts(groups)
    if not by_depth:
        return messages
    chat_at = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") in SCANNED_ROLES]
    if not chat_at:
        return messages + [m for _, inserted in sorted(by_depth.items()) for m in inserted]
    units, end = len(chat_at), chat_at[-1] + 1     # depth 0: right after the last chat message
    # (where, order, messages): the deepest first among those placed at the chat's start
    splices = sorted((chat_at[units - depth] if 0 < depth < units else end if depth == 0 else chat_at[0],
                      -depth, inserted) for depth, inserted in by_depth.items())
    out: list[Any] = []
    at = 0
    for where, _, inserted in splices:
        out += messages[at:where]
        out += inserted
        at = where
    out += messages[at:]
    return out
