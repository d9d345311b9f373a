"""Why candidate entries did not activate in one evaluation, kept only when asked for.

A trace explains every entry and turns the engine's fast paths off; a tally costs a few set
operations per pass, so a batch replay over thousands of chats can count, per entry, how often
it was held back by cooldown, delay, an inclusion group, a failed probability roll or the budget.
"""

from __future__ import annotations


class Tally:
    """Entry keys held back in one evaluation, by the reason that held them back.

    ``cooldown`` and ``delay``: candidates of a pass (a key found in the scan text, a key the
    index cannot rule out, a constant or a forced entry) that the timed effect kept out.
    ``group``: removed by an inclusion group. ``probability``: failed their roll and never
    activated. ``budget``: passed every gate but did not fit the token budget.
    """

    __slots__ = ("cooldown", "delay", "group", "probability", "budget")

    def __init__(self) -> None:
        self.cooldown: set[str] = set()
        self.delay: set[str] = set()
        self.group: set[str] = set()
        self.probability: set[str] = set()
        self.budget: set[str] = set()

    def as_dict(self) -> dict[str, set[str]]:
        """The five sets by reason."""
        return {name: getattr(self, name) for name in self.__slots__}
