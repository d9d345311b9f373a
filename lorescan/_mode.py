"""Every behaviour switch in one place: which SillyTavern version is reproduced, its known bugs,
and how keys match.

A :class:`Mode` is frozen and hashable, like black's ``Mode``: it describes one engine's behaviour
completely, each field named for what it changes, and it is the cache key of what depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from ._errors import LorescanError


@dataclass(frozen=True)
class Mode:
    """The behaviour of one compiled :class:`~lorescan.Lore`: a SillyTavern version and its bugs.

    Build one with :func:`mode_for`; the fields are public so a caller can mix them.
    """

    version: str = "1.18"
    """The behaviour family: ``"1.18"`` (1.18.0 and 1.19.0) or ``"1.12"`` (1.12.6)."""
    # -- what 1.18 added ----------------------------------------------------------------------
    generation_triggers: bool = True    # an entry's ``triggers`` limit the generation types it fires on
    match_sources: bool = True          # ``match*`` flags add persona and card fields to the scan text
    outlets: bool = True                # position 7 fills named outlets
    persona_book: bool = True           # the persona lorebook is read
    forced_before_constant: bool = True  # external activation is checked before ``constant``
    forced_first: bool = True           # forced entries sort first and re-roll in later passes
    forced_object: bool = True          # a forced activation activates the caller's object (its
                                        # fields replace the entry's); 1.12.6 needs an identical one
    dry_run_delay: bool = True          # dry runs apply ``delay``
    budget_skip: bool = True            # an overflow skips on to ``ignoreBudget`` entries
    skip_empty_recursion: bool = True   # an empty recursion text adds nothing to the buffer
    activation_by_key: bool = True      # activations keyed "<book>.<uid>" (1.12.6: by entry object)
    # -- SillyTavern's own settings -------------------------------------------------------------
    macro_engine: str = "new"           # the macro engine: "new" (1.17 and later by default, the
                                        # "experimental macro engine") or "legacy" (1.12.6's only one)
    # -- SillyTavern's known bugs (README: "Quirks"), reproduced unless turned off ------------
    splice_bug: bool = True             # removing an absent group member removes the last candidate
    group_field_equality: bool = True   # "group already activated" compares whole ``group`` fields
    sticky_cooldown_wipe: bool = True   # a sticky group member on cooldown is removed all the same
    min_depth_overshoot: bool = True    # min-activations widening goes one past its maximum
    # -- beyond SillyTavern (README: "Beyond SillyTavern"), off unless asked for ----------------
    word_boundaries: str = "sillytavern"  # the whole-word rule: "sillytavern" (ASCII) or "unicode"
    card_book_settings: bool = False    # a card book's scan_depth, token_budget and
                                        # recursive_scanning apply to its entries, and it reads first

    @property
    def shown(self) -> str:
        """The version as a title shows it, with the macro engine when it is not the version's
        default (``1.18, legacy macro engine``)."""
        return self.version + (", legacy macro engine" if self.version != "1.12" and self.macro_engine == "legacy"
                               else "")

    @property
    def quirks(self) -> bool:
        """Whether every known bug is reproduced."""
        return all(getattr(self, name) for name in QUIRKS)

    def with_quirks(self, on: bool) -> Mode:
        """This mode with every known bug reproduced (``on``) or corrected."""
        switches: dict[str, Any] = {name: on for name in QUIRKS}
        return replace(self, **switches)


#: The fields of :class:`Mode` that reproduce SillyTavern's known bugs.
QUIRKS = ("splice_bug", "group_field_equality", "sticky_cooldown_wipe", "min_depth_overshoot")

#: The fields of :class:`Mode` that go beyond SillyTavern (any version), off by default.
OPTIONS = ("word_boundaries", "card_book_settings")

#: The macro engines, by the names :attr:`Mode.macro_engine` accepts. SillyTavern 1.17 and later run
#: the new one unless its user setting "Experimental Macro Engine" is off (an install upgraded from
#: 1.16 or earlier keeps it off); 1.12.6 has only the legacy one.
MACRO_ENGINES = ("new", "legacy")
_ENGINE_NAMES = {"new": "new", "experimental": "new", "legacy": "legacy"}

#: What 1.18 added: off for 1.12.6.
_SINCE_1_18 = tuple(f.name for f in fields(Mode)
                    if f.name not in ("version", "macro_engine") and f.name not in QUIRKS and f.name not in OPTIONS)

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
        raise LorescanError(f"unsupported SillyTavern version {str(version)!r} (accepted: {version_names()})",
                            field="compat")
    return mode


def version_names() -> str:
    """The accepted version names, for help texts and errors."""
    return ", ".join(VERSIONS)


def with_options(mode: Mode, word_boundaries: str | None = None, card_book_settings: bool | None = None,
                 macro_engine: str | None = None) -> Mode:
    """``mode`` with the options beyond SillyTavern and its macro engine set (``None``: as it is);
    a clear error for an unknown word rule or engine, or the new engine under 1.12.6."""
    from ._match import WORD_RULES

    changes: dict[str, Any] = {}
    if macro_engine is not None:
        changes["macro_engine"] = macro_engine_for(mode.version, macro_engine)
    if word_boundaries is not None:
        rule = str(word_boundaries).strip().lower()
        if rule not in WORD_RULES:
            raise LorescanError(f"unknown word boundaries {str(word_boundaries)!r} (accepted: {', '.join(WORD_RULES)})",
                                field="word_boundaries")
        changes["word_boundaries"] = rule
    if card_book_settings is not None:
        changes["card_book_settings"] = bool(card_book_settings)
    return replace(mode, **changes) if changes else mode


def macro_engine_for(version: str, name: str) -> str:
    """The macro engine ``name`` selects under ``version`` (``"1.12"`` or ``"1.18"``); a clear error
    for an unknown name, or for the new engine under 1.12.6, which has only the legacy one."""
    engine = _ENGINE_NAMES.get(str(name).strip().lower())
    if engine is None:
        raise LorescanError(f"unknown macro engine {str(name)!r} (accepted: {', '.join(MACRO_ENGINES)})",
                            field="macro_engine")
    if engine == "new" and version == "1.12":
        raise LorescanError("SillyTavern 1.12.6 has only the legacy macro engine", field="macro_engine")
    return engine


def mode_for(version: str | Mode = "1.18", quirks: bool = True) -> Mode:
    """The mode for a SillyTavern version: ``"1.12"`` / ``"1.12.6"``, or ``"1.18"`` / ``"1.18.0"`` /
    ``"1.19"`` / ``"1.19.0"`` (1.19.0 activates exactly as 1.18.0 does). A :class:`Mode` is
    returned as it is.

    ``quirks=False`` corrects SillyTavern's known bugs (see the README's quirks table).
    """
    if isinstance(version, Mode):
        return version
    if version_mode(version) == "1.12":
        off: dict[str, Any] = {name: False for name in _SINCE_1_18}
        mode = Mode(version="1.12", macro_engine="legacy", **off)
    else:
        mode = Mode()
    return mode if quirks else mode.with_quirks(False)
