"""Inputs assembled from files: books and cards, a chat, a settings file and names.

The command line and the service read the same files the same way: a card's book and character,
a chat's speakers (``settle_roles``), a flat or SillyTavern ``settings.json``. This module is the
edge that reads them; the engine never does I/O.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._construct import make
from ._engine import Lore
from ._errors import LorescanError
from ._model import (
    ActivationResult,
    Character,
    ChatMessage,
    Lorebook,
    Settings,
    TimedState,
    settings_from_json,
    validation_error,
)


@dataclass
class Inputs:
    """Everything needed to evaluate: compiled books, chat, settings and names."""

    lore: Lore
    books: list[Lorebook]
    settings: Settings
    messages: list[ChatMessage] = field(default_factory=list)
    user_name: str = "User"
    char_name: str = "Character"
    character: Character | None = None
    timed: TimedState | None = None
    seed: int = 0
    #: what reading the chat noticed (a guessed speaker, say), for the caller to show
    warnings: list[str] = field(default_factory=list)

    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def activate(self, messages: list[ChatMessage], timed: TimedState | None = None,
                 trace: bool = False, rng: random.Random | None = None) -> ActivationResult:
        """One evaluation; pass one ``rng`` through a sequence of calls to draw as a replay does."""
        return self.lore.activate(messages, settings=self.settings, user_name=self.user_name,
                                  char_name=self.char_name, character=self.character, timed=timed,
                                  rng=rng if rng is not None else self.rng(), trace=trace)


def read_settings(path: str | None) -> tuple[Settings, str | None]:
    """Settings from a JSON file: flat ``world_info_*`` keys, or SillyTavern's settings.json
    (:func:`lorescan._model.settings_from_json` tells them apart and rejects unknown names).
    Returns the settings and the tokenizer the file names, if any."""
    if path is None:
        return make(Settings), None
    from ._formats.common import decode_text, parse_json, read_file

    data = parse_json(decode_text(read_file(path), path), path)
    if not isinstance(data, dict):
        raise LorescanError("settings must be a JSON object", file=path)
    try:
        return settings_from_json(data)
    except ValidationError as exc:
        raise validation_error(exc, file=path) from None


def load_inputs(book_paths: list[str], chat_path: str | None = None, settings_path: str | None = None, *,
                user_name: str | None = None, char_name: str | None = None, st_version: str = "1.18",
                tokenizer: str | None = None, quirks: bool = True, seed: int = 0,
                need_chat: bool = True, word_boundaries: str | None = None,
                card_book_settings: bool | None = None, macro_engine: str | None = None) -> Inputs:
    """Load books (and the first card's character), a chat and settings, and compile the books.

    ``word_boundaries`` and ``card_book_settings`` are :func:`lorescan.compile`'s options beyond
    SillyTavern, ``macro_engine`` its macro engine. ``user_name`` / ``char_name``, when given, decide
    who speaks in a chat that does not say; the character defaults to the first card's, else one
    named after the chat's character.
    """
    from ._formats.chats import settle_roles
    from ._load import load

    books: list[Lorebook] = []
    character: Character | None = None
    for path in book_paths:
        loaded = load(path)
        if not loaded.books:
            raise LorescanError("holds no lorebook", file=path)
        books.extend(loaded.books)
        card = getattr(loaded, "character", None)
        if card is not None and character is None:
            character = character_from_card(card, path, st_version)
        del loaded, card    # its bytes and parsed JSON are not needed to compile (100 MB each for a huge book)
    messages: list[ChatMessage] = []
    warnings: list[str] = []
    user, char = "User", None
    if chat_path:
        loaded_chat = load(chat_path)
        chat = getattr(loaded_chat, "chat", None)
        if chat is None:
            raise LorescanError(f"is a {loaded_chat.format} file, not a chat", file=chat_path)
        chat, notes = settle_roles(chat, user_name, char_name, loaded_chat.warnings)
        warnings.extend(f"{chat_path}: {note}" for note in notes)
        messages = list(chat.messages)
        user = chat.user_name or user
        char = chat.character_name or None
    elif need_chat:
        raise LorescanError("a chat is required (--chat)")
    user = user_name or user
    char = char_name or char or (character.name if character and character.name else "Character")
    if character is None:
        character = make(Character, name=char, avatar=f"{char}.png")
    settings, named = read_settings(settings_path)
    lore = Lore(books, compat=st_version, tokenizer=tokenizer or named or "cl100k", quirks=quirks, prepare=settings,
                word_boundaries=word_boundaries, card_book_settings=card_book_settings, macro_engine=macro_engine)
    return Inputs(lore=lore, books=books, settings=settings, messages=messages, user_name=user,
                  char_name=char, character=character, seed=seed, warnings=warnings)


_ILLEGAL = re.compile(r'[/?<>\\:*|"]')
_CONTROL = re.compile(r"[\x00-\x1f\x80-\x9f]")
_DOTS = re.compile(r"^\.+$")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)
_TRAILING = re.compile(r"[. ]+$")


def sanitized_name(name: str) -> str:
    """A name as SillyTavern's importer cleans it (the ``sanitize-filename`` package): no
    ``/ ? < > \\ : * | "`` or control characters, no trailing dots or spaces, a reserved device
    name or dots alone empty, and at most 255 UTF-8 bytes (whole characters)."""
    out = name
    for pattern in (_ILLEGAL, _CONTROL, _DOTS, _RESERVED, _TRAILING):
        out = pattern.sub("", out)
    while len(out.encode("utf-8", "surrogatepass")) > 255:
        out = out[:-1]
    return out


def imported_name(name: str, fmt: str, mode: str) -> str:
    """The character's name once SillyTavern imported its card: 1.18 cleans every card's name
    (:func:`sanitized_name`), 1.12.6 only a V1 card's (it copies a V2 card's ``data.name`` back)."""
    return sanitized_name(name) if mode == "1.18" or fmt == "ccv1" else name


def character_from_card(card: Any, path: str, st_version: str = "1.18") -> Character:
    """The :class:`Character` a loaded card describes (name, avatar file, tags and the fields
    entries can match), named as SillyTavern ``st_version`` names it once imported."""
    from ._mode import version_mode

    get = (lambda k: getattr(card, k, None)) if not isinstance(card, dict) else card.get
    name = imported_name(get("name") or "", get("format") or "ccv2", version_mode(st_version)) or Path(path).stem
    return make(Character,
        name=name,
        avatar=Path(path).name if Path(path).suffix.lower() == ".png" else f"{name}.png",
        tags=get("tags") or None,
        description=get("description") or "",
        personality=get("personality") or "",
        scenario=get("scenario") or "",
        creator_notes=get("creator_notes") or "",
        depth_prompt=_depth_prompt(get("depth_prompt")),
        mes_example=get("mes_example") or "",
        system_prompt=get("system_prompt") or "",
        post_history_instructions=get("post_history_instructions") or "",
        character_version=get("character_version") or "",
    )


def _depth_prompt(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("prompt") or ""
    return getattr(value, "prompt", "") or ""
