"""What the stages of one evaluation read: one typed object, fully built before the first pass.

The engine builds an :class:`EvalState` from an :class:`~lorescan.ActivationRequest` and a
compiled book selection; ``select``, ``timed``, ``budget`` and ``emit`` read it (or take plain
arguments) and never import the engine. Fields marked *running* change from pass to pass; the
others are fixed for the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._compile import CompiledEntry
from ._index import BoundIndex
from ._mode import Mode
from ._model import Settings
from ._plan import Plan
from ._request import RandomSource
from ._scan import ScanBuffer
from ._tally import Tally
from ._timed import TimedEffects
from ._trace import Trace


@dataclass(slots=True, eq=False)
class EvalState:
    """One evaluation's inputs as the stages see them, plus the state its passes build up."""

    mode: Mode
    settings: Settings
    #: the generation type as ``triggers`` read it (an unknown type reads as ``"normal"``)
    trigger: str
    #: the selected character's file name and tags (``None``: no character selected)
    char_file: str | None
    char_tags: list[str | int] | None
    plan: Plan
    index: BoundIndex
    buffer: ScanBuffer
    timed: TimedEffects
    #: entries forced by the caller, and the caller's object for those given with changed fields
    forced: set[int]
    forced_as: dict[int, CompiledEntry]
    rng: RandomSource
    trace: Trace | None = None
    #: filled with the entries held back, when the caller asked (see :mod:`lorescan._tally`)
    tally: Tally | None = None
    #: running: the delay-until-recursion level this pass reads
    recursion_level: float = 0.0
    #: running: the random numbers drawn so far
    rolls: int = 0
    #: running: inclusion groups that already have an activated entry (1.18 reads the group names,
    #: 1.12.6 the raw ``group`` field)
    activated_group_names: set[str] = field(default_factory=set)
    activated_group_fields: set[str] = field(default_factory=set)
    #: running: an entry's content with its macros substituted (an entry without macros, or one
    #: that has none yet, reads its own: ``content.get(gid, entry.content)``), and the pass an entry
    #: activated in when not the first (``pass_of.get(gid, 1)``). Most entries activate in the first
    #: pass with their own content, and a dict write per activation was a tenth of the budget step.
    content: dict[int, str] = field(default_factory=dict)
    pass_of: dict[int, int] = field(default_factory=dict)

    def draw(self) -> float:
        """The next random number, in SillyTavern's draw order."""
        self.rolls += 1
        return float(self.rng.random())

    def note_roll(self, what: str, roll: float, total: float) -> None:
        """Trace a group roll."""
        if self.trace is not None:
            self.trace.roll(what, roll, total)
