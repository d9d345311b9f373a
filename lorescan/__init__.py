"""lorescan: SillyTavern-exact lorebook (world info) activation, fast and easy to inspect.

Compile lorebooks once, then evaluate chat states::

    import lorescan
    lore = lorescan.compile([lorescan.load("my_book.json").books[0]])
    result = lorescan.activate(lore, chat=[{"name": "User", "is_user": True, "mes": "the dragon"}])
    print(result.before, result.activated_keys())

The pipeline is load → compile → scan → select → budget → emit; each stage is its own module.
"""

from __future__ import annotations

from typing import Any

from .compat import Compat, compat_for
from .engine import Lore, RandomSource, compile
from .errors import FormatError, LorescanError, ScenarioError
from .model import (Activation, ActivationResult, Character, CharacterFilter, ChatMessage, DepthGroup,
                    DepthPrompt, Entry, ExampleEntry, ForcedActivation, Lorebook, Position, Role,
                    SelectiveLogic, Settings, TimedEffect, TimedState)
from .scenario import run_scenario
from .tokens import TokenCounter, get_counter

__version__ = "0.1.0"


def activate(lore: Lore, **kwargs: Any) -> ActivationResult:
    """Run one evaluation on compiled books: ``lore.activate(**kwargs)``."""
    return lore.activate(**kwargs)


def load(path: str) -> Any:
    """Read any supported lorebook, card or chat file (format detected from its content)."""
    from .load import load as _load

    return _load(path)


__all__ = [
    "Activation", "ActivationResult", "Character", "CharacterFilter", "ChatMessage", "Compat",
    "DepthGroup", "DepthPrompt", "Entry", "ExampleEntry", "ForcedActivation", "FormatError", "Lore",
    "Lorebook", "LorescanError", "Position", "RandomSource", "Role", "ScenarioError",
    "SelectiveLogic", "Settings", "TimedEffect", "TimedState", "TokenCounter", "__version__",
    "activate", "compat_for", "compile", "get_counter", "load", "run_scenario",
]
