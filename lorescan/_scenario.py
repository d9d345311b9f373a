"""Run conformance scenarios: inputs to one or more evaluations plus SillyTavern's exact result.

A scenario (see the conformance README) names its books, chat, settings, random draws and turns;
:func:`run_scenario` runs it through the engine and returns the result in exactly the shape of
the scenario's ``expected`` field, so anyone can compare lorescan with SillyTavern on their cases.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ._engine import Lore
from ._errors import LorescanError, ScenarioError
from ._mode import mode_for
from ._model import Character, ChatMessage, Lorebook, Settings, TimedState, validation_error
from ._request import ActivationRequest
from ._results import result_json, turns_json

#: The input fields of a scenario (the conformance README's "Inputs", 1.18 ones included): a JSON
#: object with none of them is some other file, not a scenario.
INPUT_FIELDS = (
    "settings", "user_name", "char_name", "character", "no_character", "chat", "entries",
    "character_entries", "chat_entries", "books", "tokenizer", "random", "type", "dry_run",
    "authors_note", "authors_note_scan", "force_activate", "turns", "persona_description",
    "quiet_prompt", "persona_lorebook", "an_should_add",
)


class ListRandom:
    """Random draws from a fixed list; 0 once the list is used up (the scenarios' convention)."""

    def __init__(self, values: list[float] | None) -> None:
        self.values = list(values or [])
        self.i = 0

    def random(self) -> float:
        if self.i < len(self.values):
            v = self.values[self.i]
            self.i += 1
            return float(v)
        self.i += 1
        return 0.0


def scenario_books(sc: dict[str, Any]) -> list[Lorebook]:
    """The scenario's books in SillyTavern's reading order per scope."""
    books: list[Lorebook] = []
    if "entries" in sc:
        books.append(Lorebook.from_entries("global", sc["entries"], "global"))
    extra = sc.get("books") or []
    for b in extra:
        if b.get("scope", "global") == "global":
            books.append(Lorebook.from_entries(b["name"], b.get("entries", []), "global"))
    if "character_entries" in sc:
        books.append(Lorebook.from_entries("character", sc["character_entries"], "character"))
    for b in extra:
        if b.get("scope") == "character":
            books.append(Lorebook.from_entries(b["name"], b.get("entries", []), "character"))
    if "chat_entries" in sc:
        books.append(Lorebook.from_entries("chat", sc["chat_entries"], "chat"))
    for b in extra:
        if b.get("scope") == "chat":
            books.append(Lorebook.from_entries(b["name"], b.get("entries", []), "chat"))
    for b in extra:
        if b.get("scope") == "persona":
            books.append(Lorebook.from_entries(b["name"], b.get("entries", []), "persona"))
    return books


def _character(sc: dict[str, Any]) -> Character | None:
    if sc.get("no_character"):
        return None
    data = dict(sc.get("character") or {})
    char_name = sc.get("char_name", "Character")
    data.setdefault("name", char_name)
    if data.get("avatar") is None:
        data["avatar"] = f"{char_name}.png"
    return Character.model_validate(data)


def run_scenario(sc: dict[str, Any], version: str | None = None, quirks: bool = True,
                 lore_cache: dict[Any, Lore] | None = None) -> dict[str, Any]:
    """Run one scenario; ``version`` overrides its ``st_version``. Returns the ``expected``-shaped result."""
    try:
        return _run(sc, version, quirks, lore_cache if lore_cache is not None else {})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        raise ScenarioError(f"{err.get('msg')} at {loc or 'top level'}") from None
    except LorescanError as exc:
        raise ScenarioError(exc.message, uid=exc.uid, field=exc.field) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ScenarioError(f"malformed scenario: {exc!r}") from None


def _run(sc: dict[str, Any], version: str | None, quirks: bool, cache: dict[Any, Lore]) -> dict[str, Any]:
    if not isinstance(sc, dict):
        raise ScenarioError("a scenario must be a JSON object")
    if not any(k in sc for k in INPUT_FIELDS):
        raise ScenarioError("not a scenario: it has none of the input fields ("
                            + ", ".join(INPUT_FIELDS[:8]) + ", …)")
    try:
        compat = mode_for(version or str(sc.get("st_version") or "1.18"), quirks)
    except LorescanError as exc:
        raise ScenarioError(exc.message, field=None if version else "st_version") from None
    tokenizer = sc.get("tokenizer") or "chars4"
    key = (id(sc), compat, tokenizer)
    lore = cache.get(key)
    if lore is None:
        lore = Lore(scenario_books(sc), compat=compat, tokenizer=tokenizer)
        cache[key] = lore
    base_settings = dict(sc.get("settings") or {})
    chat = [ChatMessage.model_validate(m) for m in sc.get("chat") or []]
    turns = sc.get("turns")
    with_outlets = compat.outlets
    if not turns:
        return result_json(_evaluate(lore, sc, {}, base_settings, chat, None), outlets=with_outlets)
    timed = TimedState()
    results = []
    for turn in turns:
        if "chat" in turn:
            chat = [ChatMessage.model_validate(m) for m in turn["chat"]]
        if "append" in turn:
            chat = chat + [ChatMessage.model_validate(m) for m in turn["append"]]
        result = _evaluate(lore, sc, turn, base_settings, chat, timed)
        timed = result.timed
        results.append(result)
    return turns_json(results, outlets=with_outlets)


def _evaluate(lore: Lore, sc: dict[str, Any], turn: dict[str, Any], base_settings: dict[str, Any],
              chat: list[ChatMessage], timed: TimedState | None) -> Any:
    def field(name: str, default: Any = None) -> Any:
        if name in turn:
            return turn[name]
        if name in ("type", "dry_run", "random"):
            return sc.get(name, default)
        return sc.get(name, default)

    try:
        settings = Settings.model_validate({**base_settings, **(turn.get("settings") or {})})
    except ValidationError as exc:
        err = validation_error(exc, prefix="settings.")
        raise ScenarioError(err.message, field=err.field) from None
    request = ActivationRequest.model_validate({
        "chat": chat,
        "settings": settings,
        "user_name": sc.get("user_name", "User"),
        "char_name": sc.get("char_name", "Character"),
        "character": _character(sc),
        "timed": timed,
        "generation_type": field("type") or "normal",
        "dry_run": bool(field("dry_run", False)),
        "authors_note": field("authors_note") or "",
        "authors_note_scan": bool(field("authors_note_scan", False)),
        "quiet_prompt": field("quiet_prompt") or "",
        "persona_description": field("persona_description") or "",
        "persona_book": field("persona_lorebook"),
        "force_activate": field("force_activate") or [],
    })
    request.rng = ListRandom(field("random"))
    return lore.activate(request)
