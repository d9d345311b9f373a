"""Arguments and input loading shared by the commands that evaluate books against a chat."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .._construct import freeze_long_lived
from .._errors import LorescanError
from .._inputs import Inputs, load_inputs, read_settings

__all__ = ["Inputs", "add_book_args", "add_macro_engine_arg", "add_match_args", "add_version_arg", "open_inputs",
           "read_settings", "shown_version", "st_version"]


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (else argparse's one-line usage
    error naming the option)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {value!r}")
        return number
    return parse


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


def shown_version(version: str, macro_engine: str | None) -> str:
    """A version name as a title shows it: with the legacy macro engine named when it was asked
    for under a version whose default is the new one."""
    from .._mode import version_mode

    legacy = macro_engine == "legacy" and version_mode(version) != "1.12"
    return f"{version}, legacy macro engine" if legacy else version


def add_macro_engine_arg(p: argparse.ArgumentParser) -> None:
    """``--macro-engine``: SillyTavern's macro engine (1.18's default unless given)."""
    from .._mode import MACRO_ENGINES

    p.add_argument("--macro-engine", dest="macro_engine", choices=MACRO_ENGINES, default=None,
                   help="SillyTavern's macro engine: new (the default of 1.17 and later) or legacy (their "
                        "\"Experimental Macro Engine\" setting off, as an install upgraded from 1.16 or earlier "
                        "keeps it; 1.12.6's only one, and the default with --st-version 1.12)")


def add_match_args(p: argparse.ArgumentParser, card_books: bool = True) -> None:
    """``--macro-engine``, and ``--word-boundaries`` and ``--card-book-settings``: matching beyond
    SillyTavern (off by default)."""
    from .._match import WORD_RULES

    add_macro_engine_arg(p)
    p.add_argument("--word-boundaries", dest="word_boundaries", choices=WORD_RULES, default="sillytavern",
                   help="the whole-word rule: sillytavern (default: ASCII word characters, as SillyTavern) or "
                        "unicode (letters, marks and digits of every script; beyond SillyTavern)")
    if card_books:
        p.add_argument("--card-book-settings", dest="card_book_settings", action="store_true",
                       help="apply a character card book's own scan_depth, token_budget and recursive_scanning, "
                            "and read it first (beyond SillyTavern, which ignores them)")


def add_book_args(p: argparse.ArgumentParser, chat: bool = True, chat_required: bool = True) -> None:
    """``--book``, ``--chat``, ``--settings`` and the engine switches (``chat_required=False``: the
    command checks ``--chat`` itself, as ``replay`` does, which takes ``--chats`` instead)."""
    p.add_argument("--book", dest="books", action="extend", nargs="+", required=True, metavar="BOOK",
                   help="lorebook or character card files (any supported format); repeatable")
    if chat:
        p.add_argument("--chat", required=chat_required, metavar="CHAT",
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
    add_match_args(p)


def open_inputs(args: argparse.Namespace, need_chat: bool = True) -> Inputs:
    """Load the books, chat and settings named on the command line and compile the books; print
    what reading the chat noticed as warnings."""
    inputs = load_inputs(args.books, getattr(args, "chat", None), getattr(args, "settings", None),
                         user_name=args.user_name, char_name=args.char_name, st_version=args.st_version,
                         tokenizer=getattr(args, "tokenizer", None), quirks=args.quirks, seed=args.seed,
                         need_chat=need_chat, word_boundaries=getattr(args, "word_boundaries", None),
                         card_book_settings=getattr(args, "card_book_settings", None),
                         macro_engine=getattr(args, "macro_engine", None))
    for note in inputs.warnings:
        print(f"lorescan: warning: {note}", file=sys.stderr)
    if getattr(args, "owns_process", False):
        # The command owns this process: move the loaded and compiled books out of the cyclic
        # collector's reach, so full collections during a long replay do not re-walk them.
        freeze_long_lived()
    return inputs
