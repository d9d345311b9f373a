"""lorescan: SillyTavern-exact lorebook (world info) activation, fast and easy to inspect.

Compile lorebooks once, then evaluate chat states::

    import lorescan
    lore = lorescan.compile([lorescan.load("my_book.json").books[0]])
    result = lorescan.activate(lore, chat=[{"name": "User", "is_user": True, "mes": "the dragon"}])
    print(result.before, result.activated_keys())

The pipeline is load → compile → scan → select → budget → emit; each stage is its own module.
"""


from ._api import activate, compile, load, replay
from ._engine import Lore
from ._errors import FormatError, LorescanError, ScenarioError
from ._formats.registry import Detector, Format, ReadContext, Reading
from ._mode import Mode, mode_for
from ._model import (
                     Activation,
                     ActivationResult,
                     Character,
                     CharacterFilter,
                     ChatMessage,
                     DepthGroup,
                     DepthPrompt,
                     Entry,
                     ExampleEntry,
                     ForcedActivation,
                     Lorebook,
                     Position,
                     Role,
                     SelectiveLogic,
                     Settings,
                     TimedEffect,
                     TimedState,
)
from ._replay import Generation, Session
from ._request import ActivationRequest, RandomSource
from ._scenario import run_scenario
from ._tokens import TokenCounter, get_counter

__version__ = "0.1.0"

__all__ = [
    "Activation", "ActivationRequest", "ActivationResult", "Character", "CharacterFilter", "ChatMessage",
    "DepthGroup", "DepthPrompt", "Detector", "Entry", "ExampleEntry", "ForcedActivation", "Format", "FormatError",
    "Generation", "Lore", "Lorebook", "LorescanError", "Mode", "Position", "RandomSource", "ReadContext",
    "Reading", "Role", "ScenarioError", "SelectiveLogic", "Session", "Settings", "TimedEffect", "TimedState",
    "TokenCounter", "__version__", "activate", "compile", "get_counter", "load",
    "mode_for", "replay", "run_scenario",
]
