"""One evaluation's inputs as one object: what :meth:`Lore.activate` reads, and nothing else.

The scenario runner, replay, the command line and the HTTP service all describe an evaluation
with an :class:`ActivationRequest`, so an input is named and checked in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from . import _index
from ._construct import construct, plain_plan, validator
from ._model import Character, ChatMessage, ForcedActivation, Settings, TimedState
from ._scan import KnownChat


class RandomSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1), like :class:`random.Random`."""

    def random(self) -> float: ...


class ActivationRequest(BaseModel):
    """The inputs of one world-info evaluation (SillyTavern's ``checkWorldInfo`` call).

    ``chat`` is oldest first. ``character=None`` means no character is selected (no character
    books; name filters never match). ``timed`` is the state the previous evaluation returned.
    ``rng`` draws the probability and group rolls in SillyTavern's order (a fresh
    :class:`random.Random` when ``None``); ``trace=True`` records every gate, match, roll and budget
    step in the result (``trace_focus`` narrows it to the entries the scan text reaches and those named).
    ``tally``, a :class:`~lorescan._tally.Tally`, is filled with the entries held back by
    cooldown, delay, an inclusion group, a roll or the budget (cheaper than a trace).
    ``buckets=False`` leaves the result's prompt buckets empty, for a caller that counts only the
    activation records and the budget (batch replay).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", arbitrary_types_allowed=True)

    chat: Sequence[ChatMessage] = Field(default_factory=list)
    settings: Settings = Field(default_factory=Settings)
    user_name: str = "User"
    char_name: str = "Character"
    character: Character | None = None
    timed: TimedState | None = None
    generation_type: str = "normal"
    dry_run: bool = False
    authors_note: str = ""
    authors_note_scan: bool = False
    quiet_prompt: str = ""
    persona_description: str = ""
    persona_book: str | None = None
    force_activate: list[ForcedActivation] = Field(default_factory=list)
    rng: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    trace: bool = False
    #: with ``trace``: ``None`` records every entry; a list records the entries the scan text
    #: reaches and these (``"<book>.<uid>"``), which keeps a large book's trace small
    trace_focus: list[str] | None = None
    tally: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    buckets: SkipJsonSchema[bool] = Field(default=True, exclude=True)

    @classmethod
    def build(cls, chat: Sequence[ChatMessage | dict[str, Any]] = (), **fields: Any) -> ActivationRequest:
        """A request from :meth:`Lore.activate`'s keyword arguments: checked by name, values as given.

        Unknown names raise :class:`TypeError` as a mistyped keyword argument would; messages,
        forced activations, settings, a character and a timed state given as dicts are validated,
        typed objects are taken as they are (this is the hot path of a replay: no copy of the chat
        is made), and a name or text that is not a string is a :class:`TypeError` naming the field.
        """
        unknown = set(fields) - _FIELDS
        if unknown:
            raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
        for name in _CHECKED.intersection(fields):
            fields[name] = checked_field(name, fields[name])
        messages: Sequence[ChatMessage]
        if type(chat) is KnownChat or isinstance(chat, list) and set(map(type, chat)) <= {ChatMessage}:
            messages = cast("Sequence[ChatMessage]", chat)
        else:
            messages = chat_messages(chat)
        forced = fields.get("force_activate")
        if forced:
            fields["force_activate"] = [f if isinstance(f, ForcedActivation) else ForcedActivation.model_validate(f)
                                        for f in forced]
        if fields.get("settings") is None:
            fields.pop("settings", None)
        # what model_construct stores, with the defaults read once (pydantic inspects each default
        # factory's signature on every call: a tenth of a replay's time)
        values: dict[str, Any] = {}
        for name, default, factory in _DEFAULTS:
            values[name] = messages if name == "chat" else fields[name] if name in fields \
                else factory() if factory is not None else default  # type: ignore[call-arg]
        return construct(cls, values, {"chat", *fields})


#: fields whose values :meth:`ActivationRequest.build` checks (it takes the others as given):
#: a model given as a dict is validated (the JSON a frontend keeps: settings, a character, the
#: timed state a result gave), a name or text that is not a string is refused
_MODELS: dict[str, type[BaseModel]] = {"settings": Settings, "character": Character, "timed": TimedState}
_TEXTS = {"user_name": False, "char_name": False, "generation_type": False, "authors_note": False,
          "quiet_prompt": False, "persona_description": False, "persona_book": True}   # name -> None allowed
_CHECKED = frozenset(_MODELS) | frozenset(_TEXTS)


def checked_field(name: str, value: Any) -> Any:
    """``value`` for field ``name``, a dict made the field's model; a TypeError naming the field for
    a value of another type (a mistake the engine would otherwise meet deep inside)."""
    model = _MODELS.get(name)
    if model is not None:
        if value is None or isinstance(value, model):
            return value
        if isinstance(value, Mapping):
            return model.model_validate(value)
        raise TypeError(f"{name} must be a {model.__name__} or a dict, not {type(value).__name__}")
    if isinstance(value, str) or value is None and _TEXTS[name]:
        return value
    raise TypeError(f"{name} must be a str, not {type(value).__name__}")


def chat_messages(chat: Iterable[ChatMessage | dict[str, Any]]) -> list[ChatMessage]:
    """The chat as :class:`ChatMessage` objects, as ``ChatMessage.model_validate`` gives them
    (objects as they are; the same errors). With the C extension, a dict whose values already
    have their fields' types is made directly: validating every message of every request was a
    third of a small book's evaluation."""
    items = chat if type(chat) is list else list(chat)
    native, plan = _index.native, plain_plan(ChatMessage)
    if native is None or plan is None:
        return [m if isinstance(m, ChatMessage) else _message(m) for m in items]
    return cast("list[ChatMessage]", native.plain_models(items, ChatMessage, *plan, _message))


def _message(m: Any) -> ChatMessage:
    """A chat message given as a dict, validated (the validator found on first use)."""
    return validator(ChatMessage)(m)


_FIELDS = frozenset(ActivationRequest.model_fields) - {"chat"}
#: (name, default, default factory) of every field, in order
_DEFAULTS = tuple((name, f.default, f.default_factory) for name, f in ActivationRequest.model_fields.items())
