"""Run conformance scenarios: inputs to one or more evaluations plus SillyTavern's exact result.

A scenario (see the conformance README) names its books, chat, settings, random draws and turns;
:func:`run_scenario` runs it through the engine and returns the result in exactly the shape of
the scenario's ``expected`` field, so anyone can compare lorescan with SillyTavern on their cases.

The input assembly (books, character, chat and one request per turn, from a scenario's JSON
names) is shared: the HTTP service reads its ``/v1/activate`` bodies with the same functions, so
a scenario posted there gives what :func:`run_scenario` gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from ._construct import build, make
from ._engine import Lore
from ._errors import LorescanError, ScenarioError
from ._macros import evaluation_env, may_change, names_env, substitute
from ._mode import Mode, mode_for, with_options
from ._model import ActivationResult, Character, ChatMessage, Lorebook, Settings, TimedState, validation_error
from ._request import ActivationRequest, RandomSource, chat_messages
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


def scenario_character(sc: dict[str, Any]) -> Character | None:
    """The selected character (``None`` with ``no_character``): avatar ``<char_name>.png`` unless given."""
    if sc.get("no_character"):
        return None
    data = _object(sc.get("character"), "character")
    char_name = sc.get("char_name", "Character")
    data.setdefault("name", char_name)
    if data.get("avatar") is None:
        data["avatar"] = f"{char_name}.png"
    try:
        return build(Character, data)
    except ValidationError as exc:
        raise validation_error(exc, prefix="character.") from None


def _object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object field as a new dict (``{}`` when absent)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LorescanError("must be a JSON object", field=field)
    return dict(value)


def scenario_chat(messages: Any, where: str = "chat") -> list[ChatMessage]:
    """A list of message objects as :class:`ChatMessage`; a bad one raises naming ``where[i].field``."""
    if messages is None:
        return []
    if not isinstance(messages, list):
        raise LorescanError("must be a list of messages", field=where)
    try:
        return chat_messages(messages)
    except ValidationError:
        pass    # the loop below names the message
    out = []
    for i, m in enumerate(messages):
        if type(m) is ChatMessage:      # read already (the service's OpenAI-style messages)
            out.append(m)
            continue
        try:
            out.append(build(ChatMessage, m))
        except ValidationError as exc:
            raise validation_error(exc, prefix=f"{where}[{i}].") from None
    return out


def scenario_mode(sc: dict[str, Any], version: str | None = None, quirks: bool = True,
                  macro_engine: str | None = None) -> Mode:
    """The mode for ``version``, else the scenario's ``st_version`` (default 1.18), with the macro
    engine ``macro_engine``, else the scenario's ``macro_engine`` (default: the version's)."""
    try:
        mode = mode_for(version or str(sc.get("st_version") or "1.18"), quirks)
    except LorescanError as exc:
        raise ScenarioError(exc.message, field=None if version else "st_version") from None
    engine = macro_engine or sc.get("macro_engine")
    if engine is None:
        return mode
    try:
        return with_options(mode, macro_engine=str(engine))
    except LorescanError as exc:
        raise ScenarioError(exc.message, field=None if macro_engine else "macro_engine") from None


def run_scenario(sc: dict[str, Any], version: str | None = None, quirks: bool = True,
                 lore_cache: dict[Any, Lore] | None = None, macro_engine: str | None = None) -> dict[str, Any]:
    """Run one scenario; ``version`` overrides its ``st_version`` and ``macro_engine`` its
    ``macro_engine``. Returns the ``expected``-shaped result."""
    with scenario_errors():
        return _run(sc, version, quirks, lore_cache if lore_cache is not None else {}, macro_engine)


@contextmanager
def scenario_errors() -> Iterator[None]:
    """Turn every way a scenario's inputs can be wrong into one :class:`ScenarioError` naming the field."""
    try:
        yield
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err.get("loc", ())).lstrip(".")
        raise ScenarioError(str(err.get("msg")), field=loc or None) from None
    except ScenarioError:
        raise
    except LorescanError as exc:
        raise ScenarioError(exc.message, uid=exc.uid, field=exc.field) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ScenarioError(f"malformed scenario: {exc!r}") from None


def _run(sc: dict[str, Any], version: str | None, quirks: bool, cache: dict[Any, Lore],
         macro_engine: str | None = None) -> dict[str, Any]:
    if not isinstance(sc, dict):
        raise ScenarioError("a scenario must be a JSON object")
    if not any(k in sc for k in INPUT_FIELDS):
        raise ScenarioError("not a scenario: it has none of the input fields ("
                            + ", ".join(INPUT_FIELDS[:8]) + ", …)")
    compat = scenario_mode(sc, version, quirks, macro_engine)
    tokenizer = sc.get("tokenizer") or "chars4"
    key = (id(sc), compat, tokenizer)
    lore = cache.get(key)
    if lore is None:
        lore = Lore(scenario_books(sc), compat=compat, tokenizer=tokenizer)
        cache[key] = lore
    results = [result for _, result in evaluate_scenario(lore, sc)]
    if not sc.get("turns"):
        return result_json(results[0], outlets=compat.outlets)
    return turns_json(results, outlets=compat.outlets)


def evaluate_scenario(lore: Lore, sc: dict[str, Any], *, timed: TimedState | None = None,
                      rng: RandomSource | None = None,
                      trace: bool = False,
                      trace_focus: list[str] | None = None) -> list[tuple[ActivationRequest, ActivationResult]]:
    """Every evaluation of a scenario on compiled books: one, or one per turn (each turn's fields
    over the scenario's, the chat carried from turn to turn, the timed state from evaluation to
    evaluation, starting from ``timed``). An evaluation with no ``random`` list draws from ``rng``,
    else zeros (the scenarios' convention); ``trace`` records each evaluation's trace (narrowed by
    ``trace_focus``, see ``ActivationRequest``)."""
    base_settings = _object(sc.get("settings"), "settings")
    chat = scenario_chat(sc.get("chat"))
    turns = sc.get("turns")
    if not turns:
        request = scenario_request(sc, {}, base_settings, chat, timed, rng, trace, trace_focus)
        return [(request, lore.activate(request))]
    if not isinstance(turns, list):
        raise LorescanError("must be a list of turns", field="turns")
    state = timed or make(TimedState)
    out = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise LorescanError("a turn must be an object", field=f"turns[{i}]")
        if "chat" in turn:
            chat = scenario_chat(turn["chat"], f"turns[{i}].chat")
        if "append" in turn:
            chat = chat + scenario_chat(turn["append"], f"turns[{i}].append")
        request = scenario_request(sc, turn, base_settings, chat, state, rng, trace, trace_focus)
        result = lore.activate(request)
        state = result.timed
        out.append((request, result))
        chat = _first_message_substituted(lore, request, chat)
    return out


def _first_message_substituted(lore: Lore, request: ActivationRequest, chat: list[ChatMessage]) -> list[ChatMessage]:
    """The chat the next turn carries: ``Generate`` writes the first message back with its macros
    substituted (``chat[0].mes = substituteParams(chat[0].mes)``), so a later generation substitutes
    that text again (which changes it when one pass does not settle it)."""
    if not chat or not isinstance(chat[0].mes, str) or not may_change(chat[0].mes):
        return chat
    version = lore.mode.version
    base = names_env(request.user_name, request.char_name, version, lore.mode.macro_engine)
    mes = substitute(chat[0].mes, evaluation_env(base, request.character, request.persona_description, version))
    return chat if mes == chat[0].mes else [chat[0].model_copy(update={"mes": mes}), *chat[1:]]


#: settings already validated, by each name's type and value (a service is sent the same settings
#: with every generation); a Settings object is never changed once made, so one serves them all
_SETTINGS: dict[tuple[tuple[str, type, Any], ...], Settings] = {}
_SETTINGS_KEPT = 256


def valid_settings(data: dict[str, Any]) -> Settings:
    """``Settings.model_validate(data)``, made once for the same names, types and values (a float
    by its exact bits: -0.0 is not 0.0 here)."""
    try:
        key = tuple((name, type(value), value.hex() if type(value) is float else value)
                    for name, value in data.items())
        got = _SETTINGS.get(key)
    except TypeError:           # a value that is a list or an object: validation says what is wrong
        return Settings.model_validate(data)
    if got is None:
        got = Settings.model_validate(data)
        if len(_SETTINGS) >= _SETTINGS_KEPT:
            _SETTINGS.clear()
        _SETTINGS[key] = got
    return got


def scenario_request(sc: dict[str, Any], turn: dict[str, Any], base_settings: dict[str, Any],
                     chat: list[ChatMessage], timed: TimedState | None, rng: RandomSource | None = None,
                     trace: bool = False, trace_focus: list[str] | None = None) -> ActivationRequest:
    """The request of one evaluation: the turn's fields over the scenario's (see the conformance README)."""
    def field(name: str, default: Any = None) -> Any:
        return turn[name] if name in turn else sc.get(name, default)

    try:
        settings = valid_settings({**base_settings, **_object(turn.get("settings"), "settings")})
    except ValidationError as exc:
        err = validation_error(exc, prefix="settings.")
        raise ScenarioError(err.message, field=err.field) from None
    request = ActivationRequest.model_validate({
        "chat": chat,
        "settings": settings,
        "user_name": sc.get("user_name", "User"),
        "char_name": sc.get("char_name", "Character"),
        "character": scenario_character(sc),
        "timed": timed,
        "generation_type": field("type") or "normal",
        "dry_run": bool(field("dry_run", False)),
        "authors_note": field("authors_note") or "",
        "authors_note_scan": bool(field("authors_note_scan", False)),
        "quiet_prompt": field("quiet_prompt") or "",
        "persona_description": field("persona_description") or "",
        "persona_book": field("persona_lorebook"),
        "force_activate": field("force_activate") or [],
        "trace": trace,
        "trace_focus": trace_focus,
    })
    draws = field("random")
    request.rng = ListRandom(draws) if draws is not None or rng is None else rng
    return request
