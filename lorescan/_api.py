"""The package's convenience functions: one place, named for what a user does.

Each is a thin, typed front to a pipeline stage's private module, so that no public function
shares its name with a submodule (``lorescan.load`` is always this function, however often it is
called and whatever was imported before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._engine import Lore
from ._engine import compile as _compile
from ._mode import Mode
from ._model import ActivationResult, Character, ChatMessage, Lorebook, Settings, TimedState
from ._replay import Generation
from ._replay import replay as _replay
from ._request import ActivationRequest, RandomSource
from ._tokens import TokenCounter

if TYPE_CHECKING:  # the loaders stay off the import path until a file is read
    from ._load import Loaded


def load(path: str | Path, *, name: str | None = None, v3_decorators: bool = False) -> Loaded:
    """Read any supported lorebook, card or chat file; its format is detected from its content.

    ``name`` overrides the book name; ``v3_decorators`` maps V3 card decorators to entry settings.
    Raises :class:`LorescanError` (one line naming the file) for anything it cannot read.
    """
    from ._load import load as _load

    return _load(path, name=name, v3_decorators=v3_decorators)


def compile(books: Sequence[Lorebook], *, compat: str | Mode = "1.18",
            tokenizer: str | TokenCounter = "cl100k", quirks: bool = True,
            settings: Settings | None = None, cache: bool = False, word_boundaries: str | None = None,
            card_book_settings: bool | None = None, macro_engine: str | None = None) -> Lore:
    """Compile lorebooks once, for any number of evaluations (see :meth:`Lore.activate`).

    ``compat`` is the SillyTavern version to reproduce, ``tokenizer`` counts budget tokens and
    ``quirks=False`` corrects SillyTavern's known bugs. Two options go beyond SillyTavern:
    ``word_boundaries="unicode"`` (whole words in every script) and ``card_book_settings=True``
    (a character card book's own scan depth, token budget and recursion switch). Left at ``None``
    they are off (``"sillytavern"``, ``False``), or as a :class:`Mode` given as ``compat`` has them.
    ``macro_engine`` is SillyTavern's own switch: ``"new"``, the engine 1.17 and later run by
    default (the 1.18 default here), or ``"legacy"``, the one they run with "Experimental Macro
    Engine" off and the only one 1.12.6 has.
    """
    return _compile(books, compat=compat, tokenizer=tokenizer, quirks=quirks, settings=settings,
                    cache=cache, word_boundaries=word_boundaries, card_book_settings=card_book_settings,
                    macro_engine=macro_engine)


def activate(lore: Lore, request: ActivationRequest | None = None, **fields: Any) -> ActivationResult:
    """Run one evaluation on compiled books: ``lore.activate(request)``, or ``lore.activate(**fields)``."""
    return lore.activate(request, **fields) if request is not None else lore.activate(**fields)


def replay(lore: Lore, messages: Sequence[ChatMessage], *, settings: Settings | None = None,
           user_name: str = "User", char_name: str = "Character", character: Character | None = None,
           timed: TimedState | None = None, rng: RandomSource | None = None, trace: bool = False,
           points: Sequence[int] | None = None,
           progress: Callable[[int, int], None] | None = None) -> Iterator[Generation]:
    """Replay a chat as written: one :class:`Generation` per character message after the greeting."""
    return _replay(lore, messages, settings=settings, user_name=user_name, char_name=char_name,
                   character=character, timed=timed, rng=rng, trace=trace, points=points,
                   progress=progress)
