"""Arguments and input loading shared by the commands that evaluate books against a chat."""

from __future__ import annotations

import argparse
import gc
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._engine import Lore
from .._errors import LorescanError
from .._model import Character, ChatMessage, Lorebook, Settings, TimedState, settings_from_json, validation_error


def st_version(value: str) -> str:
    """``--st-version``'s type: the name as given when lorescan knows it, else an argparse error."""
    from .._mode import version_mode

    try:
        version_mode(value)
    except LorescanError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return value


def add_version_arg(p: argparse.ArgumentParser, default: str | None, what: str) -> None:
    """``--st-version``, with every accepted version name and the release each mode covers."""
    first = f"{what}: 1.18 (default), 1.18.0, 1.19 or 1.19.0" if default else \
        f"{what}: 1.18, 1.18.0, 1.19 or 1.19.0"
    p.add_argument("--st-version", dest="st_version", default=default, type=st_version, metavar="VERSION",
                   help=f"{first} (SillyTavern 1.18.0 and 1.19.0 activate alike), or 1.12 / 1.12.6")


def add_book_args(p: argparse.ArgumentParser, chat: bool = True) -> None:
    """``--book``, ``--chat``, ``--settings`` and the engine switches."""
    p.add_argument("--book", dest="books", action="extend", nargs="+", required=True, metavar="BOOK",
                   help="lorebook or character card files (any supported format); repeatable")
    if chat:
        p.add_argument("--chat", required=True, metavar="CHAT",
                       help="chat file (SillyTavern .jsonl, OpenAI messages, GLM history, transcript)")
    p.add_argument("--settings", metavar="SETTINGS",
                   help="JSON with SillyTavern's world_info_* settings, max_context and tokenizer "
                        "(flat, or SillyTavern's own settings.json)")
    if chat:
        p.add_argument("--user", dest="user_name", help="the user's name (default: from the chat file)")
        p.add_argument("--char", dest="char_name", help="the character's name (default: from the chat file)")
    else:
        p.add_argument("--user", dest="user_name", help="the user's name, for {{user}} in keys (default: User)")
        p.add_argument("--char", dest="char_name",
                       help="the character's name, for {{char}} in keys (default: the card's name when a "
                            "--book is a character card, else Character)")
    add_version_arg(p, "1.18", "SillyTavern version to reproduce")
    p.add_argument("--tokenizer", default=None,
                   help="budget token counter: cl100k (default), cl100k-chat, chars4, words")
    p.add_argument("--no-quirks", dest="quirks", action="store_false",
                   help="correct SillyTavern's known bugs instead of reproducing them")
    p.add_argument("--seed", type=int, default=0, help="seed for probability and group rolls (default 0)")


@dataclass
class Inputs:
    """Everything a command needs to evaluate: compiled books, chat, settings and names."""

    lore: Lore
    books: list[Lorebook]
    settings: Settings
    messages: list[ChatMessage] = field(default_factory=list)
    user_name: str = "User"
    char_name: str = "Character"
    character: Character | None = None
    timed: TimedState | None = None
    seed: int = 0

    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def activate(self, messages: list[ChatMessage], timed: TimedState | None = None,
                 trace: bool = False, rng: random.Random | None = None) -> Any:
        """One evaluation; pass one ``rng`` through a sequence of calls to draw as a replay does."""
        return self.lore.activate(messages, settings=self.settings, user_name=self.user_name,
                                  char_name=self.char_name, character=self.character, timed=timed,
                                  rng=rng if rng is not None else self.rng(), trace=trace)


def read_settings(path: str | None) -> tuple[Settings, str | None]:
    """Settings from a JSON file: flat ``world_info_*`` keys, or SillyTavern's settings.json
    (:func:`lorescan._model.settings_from_json` tells them apart and rejects unknown names)."""
    if path is None:
        return Settings(), None
    from .._formats.common import decode_text, parse_json, read_file

    data = parse_json(decode_text(read_file(path), path), path)
    if not isinstance(data, dict):
        raise LorescanError("settings must be a JSON object", file=path)
    try:
        return settings_from_json(data)
    except ValidationError as exc:
        raise validation_error(exc, file=path) from None


def open_inputs(args: argparse.Namespace, need_chat: bool = True) -> Inputs:
    """Load the books, chat and settings named on the command line and compile the books."""
    from .._formats.chats import settle_roles
    from .._load import load

    books: list[Lorebook] = []
    character: Character | None = None
    for path in args.books:
        loaded = load(path)
        if not loaded.books:
            raise LorescanError("holds no lorebook", file=path)
        books.extend(loaded.books)
        card = getattr(loaded, "character", None)
        if card is not None and character is None:
            character = _character_from_card(card, path)
    messages: list[ChatMessage] = []
    user_name, char_name, timed = "User", None, None
    chat_path = getattr(args, "chat", None)
    if chat_path:
        loaded_chat = load(chat_path)
        chat = getattr(loaded_chat, "chat", None)
        if chat is None:
            raise LorescanError(f"is a {loaded_chat.format} file, not a chat", file=chat_path)
        chat, notes = settle_roles(chat, args.user_name, args.char_name, loaded_chat.warnings)
        for note in notes:
            print(f"lorescan: warning: {chat_path}: {note}", file=sys.stderr)
        messages = list(chat.messages)
        user_name = chat.user_name or user_name
        char_name = chat.character_name or None
    elif need_chat:
        raise LorescanError("a chat is required (--chat)")
    user_name = args.user_name or user_name
    char_name = args.char_name or char_name or (character.name if character and character.name else "Character")
    if character is None:
        character = Character(name=char_name, avatar=f"{char_name}.png")
    settings, tokenizer = read_settings(getattr(args, "settings", None))
    tokenizer = getattr(args, "tokenizer", None) or tokenizer or "cl100k"
    lore = Lore(books, compat=args.st_version, tokenizer=tokenizer, quirks=args.quirks, prepare=settings)
    if getattr(args, "owns_process", False):
        # The command owns this process: move the loaded and compiled books out of the cyclic
        # collector's reach, so full collections during a long replay do not re-walk them.
        gc.freeze()
    return Inputs(lore=lore, books=books, settings=settings, messages=messages, user_name=user_name,
                  char_name=char_name, character=character, timed=timed, seed=args.seed)


def _character_from_card(card: Any, path: str) -> Character:
    get = (lambda k: getattr(card, k, None)) if not isinstance(card, dict) else card.get
    name = get("name") or Path(path).stem
    return Character(
        name=name,
        avatar=Path(path).name if Path(path).suffix.lower() == ".png" else f"{name}.png",
        tags=get("tags") or None,
        description=get("description") or "",
        personality=get("personality") or "",
        scenario=get("scenario") or "",
        creator_notes=get("creator_notes") or "",
        depth_prompt=_depth_prompt(get("depth_prompt")),
    )


def _depth_prompt(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("prompt") or ""
    return getattr(value, "prompt", "") or ""
