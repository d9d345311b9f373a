"""Macro substitution in keys, contents, the first chat message and the author's note.

SillyTavern replaces the legacy tokens ``<USER>``, ``<BOT>``, ``<CHAR>``, ``<CHARIFNOTGROUP>`` and
``<GROUP>`` (any case, even without ``{{``), then the ``{{…}}`` macros. lorescan implements the
macros that do not depend on the live UI: names, the card's fields (``{{description}}``,
``{{persona}}``, ``{{charPrompt}}`` …, each version's own set), ``{{newline}}``, ``{{trim}}``,
``{{noop}}``, ``{{reverse:…}}``, ``{{// comments}}`` and 1.18's ``{{outlet::name}}`` (empty while
SillyTavern scans). Unknown macros (``{{model}}``, variables, random and time macros) are left as
written.

SillyTavern has two macro engines. This module is the legacy one (1.12.6's only engine, and 1.17
and later's with the "Experimental Macro Engine" setting off); :mod:`._macro_engine` is the new
one, which 1.17 and later run by default. :class:`MacroEnv` names the engine, and
:func:`substitute` runs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from . import _js

if TYPE_CHECKING:
    from ._model import Character

#: JavaScript's ``/…/gi`` on an ASCII pattern: case folds only ASCII letters (``ſ`` is not ``s``)
_JS_I = re.IGNORECASE | re.ASCII
_LEGACY = [
    (re.compile(r"<USER>", _JS_I), "user"),
    (re.compile(r"<BOT>", _JS_I), "char"),
    (re.compile(r"<CHAR>", _JS_I), "char"),
    (re.compile(r"<CHARIFNOTGROUP>", _JS_I), "group"),
    (re.compile(r"<GROUP>", _JS_I), "group"),
]
_LEGACY_TOKENS = ["<user>", "<bot>", "<char>", "<charifnotgroup>", "<group>"]    # each pattern's literal, lowercased
_NEWLINE = re.compile(r"\{\{newline\}\}", _JS_I)
_TRIM = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", _JS_I)
_NOOP = re.compile(r"\{\{noop\}\}", _JS_I)
#: the macros removed before the names' passes, in order: (pattern, its literal lowercased, replacement)
_CLEANUPS = [(_NEWLINE, "{{newline}}", "\n"), (_TRIM, "{{trim}}", ""), (_NOOP, "{{noop}}", "")]
#: ``{{reverse:(.+?)}}``: JavaScript's ``.`` stops at every line terminator, not only ``\n``
_REVERSE = re.compile(r"\{\{reverse:([^\n\r\u2028\u2029]+?)\}\}", _JS_I)
_COMMENT = re.compile(r"\{\{//[\s\S]*?\}\}")
#: ``{{outlet::name}}``: an outlet's text is set after the scan and cleared when a generation ends,
#: so while SillyTavern scans, every outlet is empty
_OUTLET = re.compile(r"\{\{outlet::[^\n\r\u2028\u2029]+?\}\}", _JS_I)
_DOLLAR = re.compile(r"\$([$&`'])")
#: every version's card macros (and 1.18's names after the names), by any part of their names the
#: new engine's aliases share (``{{charDescription}}``, ``{{version}}``): a text that holds none of
#: them substitutes alike with or without the card's values, whatever it holds around them (spaces,
#: flags, ``{{if description}}``)
_CARD_MACRO = re.compile(r"charPrompt|charJailbreak|charInstruction|description|personality|scenario|persona|"
                         r"mesExamples|version|charDepthPrompt|creatorNotes|groupNotMuted|notChar", _JS_I)


def names_card_macro(text: str) -> bool:
    """Whether ``text`` may name one of the card's macros (``{{description}}`` …), under either
    engine: a macro opening and a card macro's name anywhere after it."""
    at = text.find("{{")
    return at >= 0 and _CARD_MACRO.search(text, at) is not None


@dataclass(frozen=True)
class MacroEnv:
    """Values the macros expand to. ``group`` defaults to the character's name (no group chat).

    ``engine`` is the macro engine (:data:`~._mode.MACRO_ENGINES`). ``variables`` are the card's
    macros (``description``, ``persona`` …) in the order ``substituteParams`` replaces them, before
    the names; ``after_names`` are replaced after the names (1.18's ``groupNotMuted`` and
    ``notChar``). ``dollar_patterns``: the legacy tokens' values are JavaScript replacement strings
    (``$&``, ``$$`` …), as 1.12.6's ``replace`` reads them. ``outlets``: the version has the
    ``{{outlet::name}}`` macro (1.18), which is empty while the scan runs.
    """

    user: str = "User"
    char: str = "Character"
    group: str | None = None
    variables: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    after_names: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    dollar_patterns: bool = False
    engine: str = "legacy"
    outlets: bool = False

    def value(self, name: str) -> str:
        """The value of a name macro: ``user``, ``char`` or ``group``."""
        if name == "user":
            return self.user
        if name == "char":
            return self.char
        return self.group if self.group is not None else self.char

    def passes(self) -> tuple[tuple[str, str], ...]:
        """Each macro name with its value, in the order SillyTavern replaces them, one pass each."""
        group = self.value("group")
        return (*self.variables, ("user", self.user), ("char", self.char), ("group", group),
                ("charIfNotGroup", group), *self.after_names)


def names_env(user: str, char: str, version: str, engine: str) -> MacroEnv:
    """The names of an evaluation for the macro ``engine``, as ``version`` reads them in the legacy
    tokens (the card's macros are added by :func:`evaluation_env`)."""
    return MacroEnv(user=user, char=char, dollar_patterns=version == "1.12", engine=engine,
                    outlets=version != "1.12")


def may_change(text: str) -> bool:
    """Whether substitution may change ``text`` under either engine (``False``: it leaves it as it
    is, whatever the names). Cheap: most keys and contents are skipped by it."""
    return ("<" in text or "{{" in text or "\x00" in text      # what either engine reads (both may_change)
            or ("\\" in text and ("\\{" in text or "\\}" in text)))


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _macro_pattern(name: str) -> re.Pattern[str]:
    pat = _PATTERNS.get(name)
    if pat is None:
        pat = _PATTERNS[name] = re.compile(r"\{\{" + re.escape(name) + r"\}\}", _JS_I)
    return pat


def substitute(text: str | None, env: MacroEnv) -> str:
    """``substituteParams(text)`` for the macros lorescan knows; ``''`` for empty or missing text."""
    if not text:
        return ""
    if env.engine != "legacy":
        if not may_change(text):
            return text
        from . import _macro_engine  # imported for the first text it may change: none, no cost at start-up

        return _macro_engine.evaluate(text, env)
    if "<" not in text and "{{" not in text:   # most contents: nothing to substitute
        return text
    # Each pattern runs only where its literal is in the text as it stands (lowercased: the patterns
    # fold ASCII letters only, which lower() folds alike), as a step may make the next one's.
    low = text.lower()
    for (pat, name), token in zip(_LEGACY, _LEGACY_TOKENS):
        if token in low:
            value = env.value(name)
            if env.dollar_patterns and "$" in value:
                text = pat.sub(partial(_js_replacement, value), text)
            else:
                text = pat.sub(lambda _m, v=value: v, text)   # type: ignore[misc]
            low = text.lower()
    if "{{" not in text:
        return text
    for pat, token, by in _CLEANUPS:
        if token in low:
            text = pat.sub(by, text)
            low = text.lower()
    for name, value in env.passes():    # one pass per macro: a value may hold a later one
        if "{{" + name.lower() + "}}" in low:
            text = _macro_pattern(name).sub(lambda _m, v=value: v, text)   # type: ignore[misc]
            low = text.lower()
    if "{{reverse:" in low:
        text = _REVERSE.sub(lambda m: m.group(1)[::-1], text)
    if "{{//" in text:
        text = _COMMENT.sub("", text)
    if env.outlets and "{{" in text and "{{outlet::" in text.lower():
        text = _OUTLET.sub("", text)
    return text


def _js_replacement(value: str, match: re.Match[str]) -> str:
    """What ``String.prototype.replace`` inserts for ``value`` used as a replacement string with a
    pattern of no groups: ``$$`` → ``$``, ``$&`` → the match, ``$``` and ``$'`` → the text before
    and after it; any other ``$`` as written."""
    whole = match.string

    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        return "$" if c == "$" else match.group(0) if c == "&" else \
            whole[:match.start()] if c == "`" else whole[match.end():]
    return _DOLLAR.sub(one, value)


#: the card's macros, in the order each version's ``substituteParams`` replaces them, and the
#: :class:`Character` field each reads (``None``: the persona description)
_CARD_MACROS = {
    "1.12": (("charPrompt", "system_prompt"), ("charJailbreak", "post_history_instructions"),
             ("description", "description"), ("personality", "personality"), ("scenario", "scenario"),
             ("persona", None), ("mesExamples", "mes_example"), ("charVersion", "character_version"),
             ("char_version", "character_version")),
    "1.18": (("charPrompt", "system_prompt"), ("charInstruction", "post_history_instructions"),
             ("charJailbreak", "post_history_instructions"), ("description", "description"),
             ("personality", "personality"), ("scenario", "scenario"), ("persona", None),
             ("mesExamples", "mes_example"), ("mesExamplesRaw", "mes_example"),
             ("charVersion", "character_version"), ("char_version", "character_version"),
             ("charDepthPrompt", "depth_prompt"), ("creatorNotes", "creator_notes")),
}


_ENVS: dict[tuple[Any, ...], MacroEnv] = {}


def evaluation_env(base_env: MacroEnv, ch: Character | None, persona_description: str | None,
                   version: str) -> MacroEnv:
    """:func:`card_env`, remembered for the same names, card fields and persona (a chat's
    evaluations share them)."""
    key = (base_env, version, persona_description,
           None if ch is None else (*map(ch.__dict__.get, _CARD_FIELDS), ch.depth_prompt_text()))
    try:
        got = _ENVS.get(key)
    except TypeError:   # a field of an odd type: not remembered
        return card_env(base_env, ch, persona_description, version)
    if got is None:
        if len(_ENVS) > 256:
            _ENVS.clear()
        got = _ENVS[key] = card_env(base_env, ch, persona_description, version)
    return got


def card_source(source: str | None, ch: Character | None, persona_description: str | None) -> object:
    """What a card macro reads (:data:`_CARD_MACROS`): the persona description (``None``), nothing
    without a character, the depth prompt's text, else the card's field as it is stored."""
    if source is None:
        return persona_description
    if ch is None:
        return ""
    if source == "depth_prompt":
        return ch.depth_prompt_text()
    return getattr(ch, source, "")


#: the :class:`Character` fields the card's macros read (and its depth prompt's text)
_CARD_FIELDS = ("system_prompt", "post_history_instructions", "description", "personality", "scenario",
                "mes_example", "character_version", "creator_notes")


def card_env(base_env: MacroEnv, ch: Character | None, persona_description: str | None,
             version: str) -> MacroEnv:
    """The macros of one evaluation: the names of ``base_env`` and the card's fields, each
    trimmed and with the names' macros substituted (``getCharacterCardFields``); none but the
    persona without a character. 1.18's ``{{mesExamples}}`` is the examples formatted for the
    prompt, which lorescan does not rebuild: it is ``''`` for a card without examples and left as
    written otherwise; its ``groupNotMuted`` and ``notChar`` are the character's and the user's name.
    Under the new engine the fields are read as :func:`_new_card_env` says."""
    if base_env.engine != "legacy":
        return _new_card_env(base_env, ch, persona_description)
    variables = []
    for name, source in _CARD_MACROS[version]:
        raw = card_source(source, ch, persona_description)
        if source == "character_version":    # read as it is (no trim, no macros)
            value = raw if isinstance(raw, str) else ""
        else:
            value = substitute(card_text(raw), base_env)
        if version == "1.18" and name == "mesExamples" and value:
            continue
        variables.append((name, value))
    after = (("groupNotMuted", base_env.char), ("notChar", base_env.user)) if version == "1.18" else ()
    return MacroEnv(user=base_env.user, char=base_env.char, variables=tuple(variables), after_names=after,
                    dollar_patterns=base_env.dollar_patterns, engine=base_env.engine, outlets=base_env.outlets)


def _new_card_env(base_env: MacroEnv, ch: Character | None, persona_description: str | None) -> MacroEnv:
    """The card's macros under the new engine: each field trimmed, its macros evaluated by that
    engine with the card's own macros empty (``{{description}}`` inside a field is ``''``, the
    names are the names), carriage returns dropped afterwards; the version as it is.
    ``{{mesExamples}}`` is ``''`` without examples and left as written otherwise."""
    empty = tuple((name, "") for name, _src in _CARD_MACROS["1.18"])
    after = (("groupNotMuted", base_env.char), ("notChar", base_env.user))
    inner = replace(base_env, variables=empty, after_names=after)
    variables: list[tuple[str, str]] = []
    for name, source in _CARD_MACROS["1.18"]:
        raw = card_source(source, ch, persona_description)
        if source == "character_version":
            value = raw if isinstance(raw, str) else ""
        else:
            value = substitute(_js.trim(raw), inner).replace("\r", "") if isinstance(raw, str) else ""
        if name == "mesExamples" and value and value != "<START>":
            continue
        variables.append((name, "" if name == "mesExamples" else value))
    return replace(base_env, variables=tuple(variables), after_names=after)


#: the scan-text sources of 1.18's ``match*`` flags: each one's name in a result, and its card macro
MATCH_SOURCES = (("persona_description", "persona"), ("character_description", "description"),
                 ("character_personality", "personality"), ("character_depth_prompt", "charDepthPrompt"),
                 ("scenario", "scenario"), ("creator_notes", "creatorNotes"))


def card_value(env: MacroEnv, name: str) -> str:
    """The value of the card's macro ``name`` in ``env`` (``''`` when it has none): a card field
    as ``getCharacterCardFields`` gives it."""
    for key, value in env.variables:
        if key == name:
            return value
    return ""


def match_fields(env: MacroEnv, has_character: bool) -> dict[str, str]:
    """The texts 1.18's ``match*`` flags add to an entry's scan text: the card's fields as
    ``getCharacterCardFields`` gives them (the persona description only, without a character),
    read from the evaluation's macros ``env`` (:func:`evaluation_env`)."""
    sources = MATCH_SOURCES if has_character else MATCH_SOURCES[:1]
    return {name: card_value(env, macro) for name, macro in sources}


def depth_prompt(ch: Character, env: MacroEnv, base_env: MacroEnv) -> str:
    """The character's depth prompt as ``getCharacterCardFields`` gives it, from ``env`` where
    it has one (1.18), else read from the card with the names of ``base_env`` (1.12.6)."""
    for key, value in env.variables:
        if key == "charDepthPrompt":
            return value
    return substitute(card_text(ch.depth_prompt_text()), base_env)


def card_text(raw: object) -> str:
    """A card field as ``baseChatReplace`` reads it: trimmed, carriage returns dropped (the
    caller substitutes the macros)."""
    return _js.trim(raw).replace("\r", "") if isinstance(raw, str) else ""
