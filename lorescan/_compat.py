"""SillyTavern versions and known bugs: the switches that tell the engine which behaviour to reproduce."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Compat:
    """Behaviour switches that tell SillyTavern versions (and its known bugs) apart.

    Build one with :func:`compat_for`; the fields are public so a caller can mix them.
    """

    version: str = "1.18"
    v118_features: bool = True          # triggers, match* scan sources, outlets, persona book
    forced_before_constant: bool = True
    forced_first: bool = True           # forced entries sort first and re-roll in later passes
    forced_object: bool = True          # a forced activation activates the caller's object (its
                                        # fields replace the entry's); 1.12.6 needs an identical one
    dry_run_delay: bool = True
    budget_skip: bool = True            # overflow skips and continues for ignoreBudget entries
    skip_empty_recursion: bool = True
    activation_by_key: bool = True      # activations keyed "<book>.<uid>" (1.12.6: by entry object)
    quirks: bool = True                 # reproduce SillyTavern's known bugs (README: "Quirks")


#: Every version name lorescan accepts, with the behaviour it selects. SillyTavern 1.19.0's
#: activation is 1.18.0's (its only change in ``checkWorldInfo`` is a faster candidate sort that
#: gives the same order), so it is the same mode.
VERSIONS: dict[str, str] = {
    "1.12": "1.12", "1.12.6": "1.12",
    "1.18": "1.18", "1.18.0": "1.18",
    "1.19": "1.18", "1.19.0": "1.18",
    "latest": "1.18", "default": "1.18",
}

#: The SillyTavern releases each mode is checked against.
RELEASES: dict[str, tuple[str, ...]] = {"1.12": ("1.12.6",), "1.18": ("1.18.0", "1.19.0")}


def version_mode(version: str) -> str:
    """The behaviour (``"1.12"`` or ``"1.18"``) a version name selects; a clear error for any other name."""
    mode = VERSIONS.get(str(version).strip().lower())
    if mode is None:
        from ._errors import LorescanError

        raise LorescanError(f"unsupported SillyTavern version {str(version)!r} (accepted: {version_names()})",
                            field="compat")
    return mode


def version_names() -> str:
    """The accepted version names, for help texts and errors."""
    return ", ".join(VERSIONS)


def compat_for(version: str = "1.18", quirks: bool = True) -> Compat:
    """The switches for a SillyTavern version: ``"1.12"`` / ``"1.12.6"``, or ``"1.18"`` / ``"1.18.0"`` /
    ``"1.19"`` / ``"1.19.0"`` (1.19.0 activates exactly as 1.18.0 does).

    ``quirks=False`` corrects SillyTavern's known bugs (see the README's quirks table).
    """
    if version_mode(version) == "1.12":
        c = Compat(version="1.12", v118_features=False, forced_before_constant=False,
                   forced_first=False, forced_object=False, dry_run_delay=False, budget_skip=False,
                   skip_empty_recursion=False, activation_by_key=False)
    else:
        c = Compat()
    return replace(c, quirks=quirks)


class _Quirks:
    """The switches ``select.py`` reads, named for what they change."""

    def __init__(self, compat: Compat) -> None:
        self.triggers = compat.v118_features
        self.forced_before_constant = compat.forced_before_constant
        self.splice_bug = compat.quirks          # removing an absent group member removes the last one
        self.group_field_equality = compat.quirks  # "group already activated" compares whole fields
        self.sticky_cooldown_wipe = compat.quirks  # a sticky member on cooldown is removed from its group
        self.min_depth_overshoot = compat.quirks   # min-activations widening goes one past its maximum
