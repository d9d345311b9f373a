"""Chat logs to replay: SillyTavern ``.jsonl`` (header line + messages), the pre-2023 TavernAI
chat (a JSON array of ``"Name: text"`` strings), OpenAI message lists (array, ``{"messages"}``,
JSONL), GLM histories (ChatGLM pairs, ChatGLM3/GLM-4 role lists; JSON or YAML) and plain
``Name: message`` transcripts.

Every reader gives a :class:`Chat` whose messages are SillyTavern messages (``name``, ``is_user``,
``is_system``, ``mes``); system, tool and observation turns become ``is_system`` messages, which
SillyTavern does not scan. Writers reuse the original raw message wherever it is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._construct import build, make
from .._errors import FormatError
from .._model import ChatMessage, TimedEffect, TimedState
from .common import dump_json, json_writer, parse_json, type_name, utf8
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
    from .._load import Loaded

ST_CHAT, TAVERNAI, OPENAI, GLM, TRANSCRIPT = "st-chat", "tavernai-chat", "openai", "glm", "transcript"
GROUP_PLACEHOLDER = "unused"
USER_NAMES = ("user", "you", "{{user}}", "<user>")
_OPENAI_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SPEAKER = re.compile(r"([^\s:#][^:\n]{0,39}?):(?: (.*)|)$")


class Chat(BaseModel):
    """A chat: who speaks, the messages in order, and SillyTavern's ``chat_metadata``.

    ``metadata`` is kept verbatim; ``timed`` is its ``timedWorldInfo`` read as a
    :class:`TimedState` and ``world_info`` its chat-bound book name."""

    model_config = ConfigDict(defer_build=True)
    format: str
    user_name: str | None = None
    character_name: str | None = None
    messages: list[ChatMessage] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    timed: TimedState | None = None
    world_info: str | None = None
    header: dict[str, Any] | None = Field(default=None, description="SillyTavern's header line")
    roles_note: str | None = Field(default=None, exclude=True,
                                   description="the warning saying how the roles were guessed, if they were")


def _message(raw: dict[str, Any], where: str, file: str | None) -> ChatMessage:
    try:
        return build(ChatMessage, raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ()))
        raise FormatError(f"{where}: field {field!r}: {err.get('msg', 'invalid value')}", file=file) from None


def same_message(a: ChatMessage, b: ChatMessage) -> bool:
    return a.model_dump() == b.model_dump()


def _names_from(messages: list[ChatMessage]) -> tuple[str | None, str | None]:
    user = next((m.name for m in messages if m.is_user and m.name), None)
    char = next((m.name for m in messages if not m.is_user and not m.is_system and m.name), None)
    return user, char


# ---------------------------------------------------------------- SillyTavern .jsonl

def is_st_header(obj: Any) -> bool:
    return isinstance(obj, dict) and "mes" not in obj and (
        "user_name" in obj or "character_name" in obj or "chat_metadata" in obj)


def is_st_message(obj: Any) -> bool:
    return isinstance(obj, dict) and "mes" in obj and ("is_user" in obj or "name" in obj)


def st_message(raw: Any, line: int, file: str | None) -> tuple[ChatMessage, bool]:
    """One message line; Chub's ``{"mes": {"message": …}}`` variant is flattened (returns True)."""
    if not isinstance(raw, dict):
        raise FormatError(f"line {line}: a message must be an object, got {type_name(raw)}", file=file)
    chub = isinstance(raw.get("mes"), dict)
    if chub:
        raw = dict(raw)
        raw["mes"] = raw["mes"].get("message", "")
        if isinstance(raw.get("swipes"), list):
            raw["swipes"] = [s.get("message", "") if isinstance(s, dict) else s for s in raw["swipes"]]
    return _message(raw, f"line {line}", file), chub


def read_timed(metadata: dict[str, Any]) -> tuple[TimedState | None, list[str]]:
    """``chat_metadata.timedWorldInfo`` as a :class:`TimedState` (bad records skipped, noted)."""
    raw = metadata.get("timedWorldInfo")
    if not isinstance(raw, dict):
        return None, []
    state, notes = make(TimedState), []
    for kind in ("sticky", "cooldown"):
        records = raw.get(kind)
        if not isinstance(records, dict):
            continue
        for key, value in records.items():
            try:
                getattr(state, kind)[key] = build(TimedEffect, value)
            except ValidationError:
                notes.append(f"timedWorldInfo.{kind}[{key!r}] is not a timed effect; ignored")
    return state, notes


def read_st_chat(lines: list[Any], file: str | None) -> tuple[Chat, list[str]]:
    """A SillyTavern chat from its parsed lines (header first, when there is one)."""
    header = lines[0] if lines and is_st_header(lines[0]) else None
    offset = 2 if header is not None else 1
    messages, notes, chub = [], [], 0
    for index, raw in enumerate(lines[1:] if header is not None else lines):
        message, flattened = st_message(raw, index + offset, file)
        messages.append(message)
        chub += flattened
    if chub:
        notes.append(f"{chub} Chub-style messages (mes objects) were flattened")
    metadata = header.get("chat_metadata") if header else None
    if metadata is not None and not isinstance(metadata, dict):
        raise FormatError(f"must be an object, got {type_name(metadata)}", file=file, field="chat_metadata")
    metadata = metadata or {}
    timed, timed_notes = read_timed(metadata)
    notes.extend(timed_notes)
    user, char = (header.get("user_name"), header.get("character_name")) if header else (None, None)
    guess_user, guess_char = _names_from(messages)
    user = user if isinstance(user, str) and user != GROUP_PLACEHOLDER else guess_user
    char = char if isinstance(char, str) and char != GROUP_PLACEHOLDER else guess_char
    world = metadata.get("world_info")
    chat = make(Chat, format=ST_CHAT, user_name=user, character_name=char, messages=messages,
                metadata=metadata, timed=timed, world_info=world if isinstance(world, str) and world else None,
                header=header)
    return chat, notes


def write_st_chat(chat: Chat, original: list[Any] | None = None) -> bytes:
    """SillyTavern ``.jsonl``: header line (kept from the original, names and metadata updated),
    then one message per line, unchanged messages written exactly as they were read."""
    header = dict(chat.header) if chat.header is not None else None
    if header is None and original is None:
        header = {"user_name": chat.user_name or "User", "character_name": chat.character_name or "Character"}
    if header is not None:
        if "user_name" in header and header["user_name"] != GROUP_PLACEHOLDER and chat.user_name:
            header["user_name"] = chat.user_name
        if "character_name" in header and header["character_name"] != GROUP_PLACEHOLDER and chat.character_name:
            header["character_name"] = chat.character_name
        if chat.metadata or "chat_metadata" in header:
            header["chat_metadata"] = chat.metadata
    raw_messages = (original[1:] if original and is_st_header(original[0]) else original) or []
    lines = [header] if header is not None else []
    for index, message in enumerate(chat.messages):
        raw = raw_messages[index] if index < len(raw_messages) else None
        if isinstance(raw, dict):
            try:
                if same_message(st_message(raw, index, None)[0], message):
                    lines.append(raw)
                    continue
            except FormatError:
                pass
        lines.append(message.model_dump(exclude_unset=True))
    return "\n".join(dump_json(line, indent=None) for line in lines).encode("utf-8")


# ---------------------------------------------------------------- TavernAI legacy

def is_tavernai(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(x, str) for x in data)


def read_tavernai(items: list[str], file: str | None) -> tuple[Chat, list[str]]:
    """A TavernAI chat: each string is ``"Name: text"``; the first speaker (the greeting) is the
    character, any other speaker the user."""
    messages = []
    char = None
    for index, item in enumerate(items):
        name, sep, text = item.partition(": ")
        if not sep:
            raise FormatError(f"item {index} is not 'Name: text'", file=file)
        char = char or name
        messages.append(make(ChatMessage, name=name, is_user=name != char, mes=text))
    user, _ = _names_from(messages)
    note = "TavernAI legacy chat: the first speaker is taken as the character"
    return make(Chat, format=TAVERNAI, user_name=user, character_name=char, messages=messages, roles_note=note), [note]


def write_tavernai(chat: Chat) -> bytes:
    return dump_json([f"{m.name}: {m.mes}" for m in chat.messages]).encode("utf-8")


# ---------------------------------------------------------------- OpenAI / GLM role lists

def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def role_message(raw: Any, where: str, file: str | None, user: str, char: str) -> ChatMessage:
    """An OpenAI/GLM ``{role, content}`` item as a SillyTavern message."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: a message must be an object, got {type_name(raw)}", file=file)
    role = raw.get("role")
    if not isinstance(role, str):
        raise FormatError(f"{where}: 'role' must be a string, got {type_name(role)}", file=file)
    text = _content_text(raw.get("content"))
    if role == "tool" and "observation" in raw:
        text = _content_text(raw.get("observation"))
    name = raw.get("name") if isinstance(raw.get("name"), str) and raw.get("name") else None
    if role == "user":
        return make(ChatMessage, name=name or user, is_user=True, mes=text)
    if role == "assistant":
        return make(ChatMessage, name=name or char, mes=text)
    return make(ChatMessage, name=name or role, is_system=True, mes=text)


def is_role_list(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(x, dict) and "role" in x for x in data)


def is_glm_roles(items: list[Any]) -> bool:
    return any(isinstance(x, dict) and (x.get("role") == "observation" or "metadata" in x) for x in items)


def read_roles(items: list[Any], fmt: str, file: str | None, where: str = "message") -> Chat:
    """A role list → :class:`Chat` (``User``; the assistant's ``name`` or ``Assistant``)."""
    char = next((x["name"] for x in items if isinstance(x, dict) and x.get("role") == "assistant"
                 and isinstance(x.get("name"), str) and x["name"]), "Assistant")
    messages = [role_message(raw, f"{where} {i}", file, "User", char) for i, raw in enumerate(items)]
    return make(Chat, format=fmt, user_name="User", character_name=char, messages=messages)


def message_role(message: ChatMessage) -> str:
    return "system" if message.is_system else "user" if message.is_user else "assistant"


def to_role_item(message: ChatMessage, chat: Chat, glm: bool = False) -> dict[str, Any]:
    """A SillyTavern message as ``{role, content[, name]}`` (``name`` only where OpenAI allows it
    and it is not the chat's default speaker name)."""
    role = message_role(message)
    item: dict[str, Any] = {"role": role, "content": message.mes}
    default = chat.user_name if message.is_user else chat.character_name
    if not glm and message.name and message.name != default and role != "system" \
            and _OPENAI_NAME.fullmatch(message.name):
        item["name"] = message.name
    return item


def merge_role_items(chat: Chat, raw_items: list[Any] | None, fmt: str) -> list[Any]:
    """Role items for the chat, reusing each original item whose message is unchanged."""
    out = []
    for index, message in enumerate(chat.messages):
        raw = raw_items[index] if raw_items and index < len(raw_items) else None
        if raw is not None:
            try:
                before = role_message(raw, "", None, "User", chat.character_name or "Assistant")
                if same_message(before, message):
                    out.append(raw)
                    continue
            except FormatError:
                pass
        out.append(to_role_item(message, chat, glm=fmt == GLM))
    return out


# ---------------------------------------------------------------- GLM

def glm_items(data: Any) -> tuple[list[Any], str] | None:
    """The history items and their container key (``""`` for a bare list) of a GLM file."""
    if isinstance(data, list):
        return data, ""
    if isinstance(data, dict):
        for key in ("history", "conversations", "messages"):
            if isinstance(data.get(key), list):
                return data[key], key
    return None


def is_pairs(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                               for p in items)


def read_glm(data: Any, file: str | None) -> tuple[Chat, list[str]]:
    """Any of the three GLM history shapes → :class:`Chat`."""
    found = glm_items(data)
    if found is None:
        raise FormatError("not a GLM history (no history, conversations or messages list)", file=file)
    items, _ = found
    if is_pairs(items) or (not items and isinstance(data, dict) and "prompt" in data):
        messages = []
        for query, response in items:
            messages += [make(ChatMessage, name="User", is_user=True, mes=query),
                         make(ChatMessage, name="Assistant", mes=response)]
        if isinstance(data, dict) and isinstance(data.get("prompt"), str):
            messages.append(make(ChatMessage, name="User", is_user=True, mes=data["prompt"]))
            if isinstance(data.get("response"), str):
                messages.append(make(ChatMessage, name="Assistant", mes=data["response"]))
        return make(Chat, format=GLM, user_name="User", character_name="Assistant", messages=messages), []
    return read_roles(items, GLM, file, where="history item"), []


def glm_json(chat: Chat, original: Any = None) -> Any:
    """A GLM history: the original's shape when there is one (pairs stay pairs when every turn
    still alternates), else ChatGLM3's ``{"history": [{role, content}]}``."""
    found = glm_items(original)
    if found is None:
        return {"history": merge_role_items(chat, None, GLM)}
    items, key = found
    if is_pairs(items) or (isinstance(original, dict) and "prompt" in original and not items):
        if isinstance(original, dict) and isinstance(original.get("prompt"), str):
            return original if read_glm(original, None)[0].messages == chat.messages else \
                {"history": merge_role_items(chat, None, GLM)}
        turns = chat.messages
        if len(turns) % 2 == 0 and all(t.is_user for t in turns[::2]) and all(
                not t.is_user and not t.is_system for t in turns[1::2]):
            pairs = [[turns[i].mes, turns[i + 1].mes] for i in range(0, len(turns), 2)]
            new: list[Any] = pairs
        else:
            new = merge_role_items(chat, None, GLM)
    else:
        new = merge_role_items(chat, items, GLM)
    if key == "":
        return new
    out = dict(original)
    out[key] = new
    return out


# ---------------------------------------------------------------- OpenAI

def openai_json(chat: Chat, original: Any = None) -> Any:
    """OpenAI messages in the original's shape (array or ``{"messages"}``), else an array."""
    if isinstance(original, dict) and isinstance(original.get("messages"), list):
        out = dict(original)
        out["messages"] = merge_role_items(chat, original["messages"], OPENAI)
        return out
    return merge_role_items(chat, original if isinstance(original, list) else None, OPENAI)


def write_openai_jsonl(chat: Chat, original: list[Any]) -> bytes:
    """JSONL: one message per line, or (fine-tuning files) the first conversation's line
    replaced and the other conversations kept as they were."""
    if original and all(isinstance(x, dict) and isinstance(x.get("messages"), list) for x in original):
        lines = [openai_json(chat, original[0])] + original[1:]
    else:
        lines = merge_role_items(chat, original, OPENAI)
    return "\n".join(dump_json(line, indent=None) for line in lines).encode("utf-8")


# ---------------------------------------------------------------- plain transcript

def read_transcript(text: str, file: str | None) -> tuple[Chat, list[str]]:
    """``Name: message`` lines; other lines continue the message above. Leading ``# user: Name``
    and ``# character: Name`` lines say who is who; otherwise a speaker called User/You is the
    user, else the first speaker."""
    user = char = None
    speakers: list[str] = []
    turns: list[list[str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not turns and line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if key.strip().lower() == "user":
                user = value.strip()
            elif key.strip().lower() == "character":
                char = value.strip()
            continue
        match = _SPEAKER.match(line)
        if match:
            name = match.group(1).strip()
            turns.append([name, match.group(2) or ""])
            if name not in speakers:
                speakers.append(name)
        elif turns:
            turns[-1][1] += "\n" + line
        elif line.strip():
            raise FormatError(f"line {number} is not 'Name: message'", file=file)
    if not turns:
        raise FormatError("no 'Name: message' lines", file=file)
    note = None
    if user is None:
        user = next((s for s in speakers if s.lower() in USER_NAMES), None)
        if user is None:
            user = speakers[0]
            note = f"took {user!r} (the first speaker) as the user; add '# user: Name' to choose"
    if char is None:
        char = next((s for s in speakers if s != user), None)
    messages = [make(ChatMessage, name=name, is_user=name == user, mes=body.rstrip("\n")) for name, body in turns]
    chat = make(Chat, format=TRANSCRIPT, user_name=user, character_name=char, messages=messages, roles_note=note)
    return chat, [note] if note else []


def settle_roles(chat: Chat, user: str | None, char: str | None, notes: list[str]) -> tuple[Chat, list[str]]:
    """Let the user's ``--user``/``--char`` decide who speaks in a chat whose roles come from names.

    Transcripts and TavernAI chats say only who speaks, so the reader guesses which speaker is the
    user. A given name that speaks in the chat decides instead: ``user`` is the user, or else
    everyone but ``char`` is (the first of them when there are several: a ``User``/``You`` first).
    Returns the chat and its notes: the guess's note is dropped once the names decide, and says
    that ``--user``/``--char`` decide otherwise.
    """
    hint = " (or pass --user NAME or --char NAME)"
    if chat.format not in (TRANSCRIPT, TAVERNAI) or not (user or char):
        return chat, [n + hint if n == chat.roles_note else n for n in notes]
    speakers = list(dict.fromkeys(m.name for m in chat.messages if not m.is_system))
    given_user, given_char = _speaker(user, speakers), _speaker(char, speakers)
    out = list(notes)
    for flag, name, found in (("--user", user, given_user), ("--char", char, given_char)):
        if name and found is None:
            out.append(f"{flag} {name!r} does not speak in this chat (speakers: {', '.join(speakers)})")
    if given_user is None and given_char is None:
        return chat, [n + hint if n == chat.roles_note else n for n in out]
    if given_user is not None and given_user == given_char:
        raise FormatError(f"--user and --char both name the speaker {given_user!r}")
    if given_user is None:
        others = [s for s in speakers if s != given_char]
        given_user = next((s for s in others if s.lower() in USER_NAMES), others[0] if others else None)
    if given_char is None:
        given_char = next((s for s in speakers if s != given_user), None)
    messages = [m if m.is_system or m.is_user == (m.name == given_user) else
                m.model_copy(update={"is_user": m.name == given_user}) for m in chat.messages]
    settled = chat.model_copy(update={"messages": messages, "user_name": given_user,
                                      "character_name": given_char, "roles_note": None})
    return settled, [n for n in out if n != chat.roles_note]


def _speaker(name: str | None, speakers: list[str]) -> str | None:
    """The speaker ``name`` names: the same name, else the only one equal to it ignoring case."""
    if not name:
        return None
    if name in speakers:
        return name
    same = [s for s in speakers if s.casefold() == name.casefold()]
    return same[0] if len(same) == 1 else None


def write_transcript(chat: Chat) -> bytes:
    lines = []
    if chat.user_name:
        lines.append(f"# user: {chat.user_name}")
    if chat.character_name:
        lines.append(f"# character: {chat.character_name}")
    lines += [f"{m.name}: {m.mes}" for m in chat.messages]
    return utf8("\n".join(lines) + "\n")


def looks_like_transcript(text: str) -> bool:
    """Most non-empty lines that are not directives are ``Name: message``."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        return False
    hits = sum(1 for ln in lines if _SPEAKER.match(ln))
    return _SPEAKER.match(lines[0]) is not None and hits * 2 >= len(lines)


# ---------------------------------------------------------------- registration

OPENAI_JSONL = "openai-jsonl"


def _chat(loaded: Loaded) -> Chat:
    assert loaded.chat is not None            # the loader checks a chat format gets a chat
    return loaded.chat


def _is_st(value: Any) -> bool:
    return is_st_header(value) or is_st_message(value)


def _conversations(values: list[Any]) -> bool:
    return all(isinstance(v, dict) and isinstance(v.get("messages"), list) for v in values)


def _read_st(data: Any, ctx: ReadContext) -> Reading:
    lines = data if ctx.shape == "lines" else [data]
    chat, notes = read_st_chat(lines, ctx.file)
    return Reading(chat=chat, warnings=notes, raw=lines)


def _write_st(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    body = write_st_chat(_chat(loaded), loaded.raw if same else None)
    lines = [parse_json(line, None) for line in body.decode("utf-8").split("\n") if line]
    return lines, lambda doc: "\n".join(dump_json(x, indent=None) for x in doc).encode("utf-8")


def _read_tavernai(data: list[str], ctx: ReadContext) -> Reading:
    chat, notes = read_tavernai(data, ctx.file)
    return Reading(chat=chat, warnings=notes, raw=data)


def _read_openai(data: Any, ctx: ReadContext) -> Reading:
    chat = read_roles(data["messages"] if isinstance(data, dict) else data, OPENAI, ctx.file)
    return Reading(chat=chat, raw=data)


def _read_openai_jsonl(data: Any, ctx: ReadContext) -> Reading:
    if ctx.shape == "object":                 # a file of one message
        return Reading(chat=read_roles([data], OPENAI_JSONL, ctx.file), raw=[data])
    if _conversations(data):
        chat = read_roles(data[0]["messages"], OPENAI_JSONL, ctx.file)
        notes = [f"{len(data)} conversations; the first is used"] if len(data) > 1 else []
        return Reading(chat=chat, warnings=notes, raw=data)
    return Reading(chat=read_roles(data, OPENAI_JSONL, ctx.file), raw=data)


def _write_openai_jsonl(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    body = write_openai_jsonl(_chat(loaded), (loaded.raw if same else None) or [])
    lines = [parse_json(line, None) for line in body.decode("utf-8").split("\n") if line]
    return lines, lambda _doc: body


def _read_glm(data: Any, ctx: ReadContext) -> Reading:
    chat, notes = read_glm(data, ctx.file)
    return Reading(chat=chat, warnings=notes, raw=data)


def yaml_writer(doc: Any) -> bytes:
    import yaml

    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8")


def _write_glm(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    doc = glm_json(_chat(loaded), loaded.raw if same else None)
    return doc, yaml_writer if same and loaded.yaml else json_writer()


def _read_transcript(text: str, ctx: ReadContext) -> Reading:
    chat, notes = read_transcript(text, ctx.file)
    return Reading(chat=chat, warnings=notes, raw=[m.model_dump() for m in chat.messages])


def _write_transcript(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    chat = _chat(loaded)
    return [m.model_dump() for m in chat.messages], lambda _doc: write_transcript(chat)


FORMATS = (
    Format(ST_CHAT, "SillyTavern chat .jsonl", "chat",
           (Detector("object", 800, _is_st), Detector("lines", 100, lambda values: _is_st(values[0]))),
           _read_st, _write_st, aliases=("jsonl",), kind_aliases=("st",)),
    Format(TAVERNAI, "TavernAI legacy chat (JSON array of 'Name: text')", "chat",
           (Detector("array", 100, is_tavernai),), _read_tavernai,
           lambda loaded, same: ([f"{m.name}: {m.mes}" for m in _chat(loaded).messages], json_writer()),
           aliases=("tavernai",)),
    Format(OPENAI, "OpenAI messages JSON (array or {messages})", "chat",
           (Detector("object", 900, lambda data: isinstance(data.get("messages"), list)
                     and not is_glm_roles(data["messages"])),
            Detector("array", 200, lambda data: is_role_list(data) and not is_glm_roles(data))),
           _read_openai,
           lambda loaded, same: (openai_json(_chat(loaded), loaded.raw if same else None), json_writer())),
    Format(OPENAI_JSONL, "OpenAI messages JSONL", "chat",
           (Detector("object", 1300, lambda data: isinstance(data.get("role"), str) and "content" in data),
            Detector("lines", 200, lambda values: _conversations(values) or is_role_list(values))),
           _read_openai_jsonl, _write_openai_jsonl),
    Format(GLM, "ChatGLM / GLM-4 history (JSON or YAML)", "chat",
           (Detector("object", 1000, lambda data: glm_items(data) is not None),
            Detector("array", 210, lambda data: is_role_list(data) and is_glm_roles(data) or is_pairs(data))),
           _read_glm, _write_glm, aliases=("chatglm",)),
    Format(TRANSCRIPT, "plain-text 'Name: message' transcript", "chat", (Detector("text", 100, looks_like_transcript),),
           _read_transcript, _write_transcript, aliases=("txt",)),
)
