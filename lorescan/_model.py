"""The data that crosses lorescan's boundary: entries, lorebooks, settings, chats and results.

Entries keep every field exactly as it was read (SillyTavern interprets raw JSON values with
JavaScript rules, so nothing is coerced here) and every unknown field, in its original key order,
so a lorebook read and written back is the same JSON.
"""

from __future__ import annotations

import math
import re
from enum import IntEnum
from operator import attrgetter, is_
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ._construct import BULK, build, dump, gc_paused
from ._errors import LorescanError
from ._js import js_round, js_string, json_text, object_key_order, truthy

Scalar = bool | int | float | str | None


#: a file name's extension, as ``getCharaFilename`` finds it (JavaScript's ``$``: the very end)
_EXTENSION = re.compile(r"\.[^/.]+\Z")

class Position(IntEnum):
    """Where an entry's content goes (``position``)."""

    BEFORE = 0
    AFTER = 1
    AN_TOP = 2
    AN_BOTTOM = 3
    AT_DEPTH = 4
    EM_TOP = 5
    EM_BOTTOM = 6
    OUTLET = 7


class SelectiveLogic(IntEnum):
    """How secondary keys combine with a primary match (``selectiveLogic``)."""

    AND_ANY = 0
    NOT_ALL = 1
    NOT_ANY = 2
    AND_ALL = 3


class Role(IntEnum):
    """Message role of an at-depth entry."""

    SYSTEM = 0
    USER = 1
    ASSISTANT = 2


GENERATION_TYPES = ("normal", "continue", "impersonate", "swipe", "regenerate", "quiet")

#: SillyTavern's new-entry template (1.18 fields included; 1.12 ignores them).
ENTRY_DEFAULTS: dict[str, Any] = {
    "key": [], "keysecondary": [], "comment": "", "content": "", "constant": False,
    "vectorized": False, "selective": True, "selectiveLogic": 0, "addMemo": False, "order": 100,
    "position": 0, "disable": False, "excludeRecursion": False, "preventRecursion": False,
    "delayUntilRecursion": 0, "probability": 100, "useProbability": True, "depth": 4,
    "group": "", "groupOverride": False, "groupWeight": 100, "scanDepth": None,
    "caseSensitive": None, "matchWholeWords": None, "useGroupScoring": None, "automationId": "",
    "role": 0, "sticky": None, "cooldown": None, "delay": None, "ignoreBudget": False,
    "triggers": [], "outletName": "", "matchPersonaDescription": False,
    "matchCharacterDescription": False, "matchCharacterPersonality": False,
    "matchCharacterDepthPrompt": False, "matchScenario": False, "matchCreatorNotes": False,
}


class CharacterFilter(BaseModel):
    """Restricts an entry to (or away from) characters by avatar file name or tag."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    isExclude: Scalar = False
    names: list[str] = Field(default_factory=list)
    tags: list[str | int] = Field(default_factory=list)


#: per key order read (entries of one book share one): that order, the set of given fields of the
#: first entry read with it, which later entries given the same fields share (1.2 kB each at 100k
#: entries otherwise), and one private dict holding the order (0.2 kB each); a shared set or dict is
#: copied before an assignment or deletion changes it (__setattr__, __delattr__)
_SHARES: dict[tuple[str, ...], tuple[tuple[str, ...], set[str], dict[str, Any]]] = {}
_SHARED: set[int] = set()      # id() of each shared set and dict (kept alive by _SHARES)


class _Ordered(BaseModel):
    """A model that remembers the key order it was read in and writes it back in that order."""

    model_config = ConfigDict(defer_build=True, extra="allow", populate_by_name=True)
    _order: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Any:
        """Read a JSON object; a value of the wrong type raises :class:`LorescanError` naming the field."""
        if not isinstance(data, dict):
            raise LorescanError(f"expected a JSON object, got {type(data).__name__}")
        order = tuple(data)
        shared = _SHARES.get(order)
        try:    # entries read alike share one fields set (copied by _own before one changes)
            obj = build(cls, data, shared[1] if shared is not None else None)
        except ValidationError as exc:
            loc, msg, got = _first_error(exc)   # the value as the file writes it, cut short
            raise LorescanError(f"{msg} (got {json_text(got)[:60]})", uid=data.get("uid"),
                                field=loc or None) from None
        given = obj.__pydantic_fields_set__
        if shared is None:
            if len(_SHARES) >= 4096:     # a file of ever new key orders: each entry its own
                object.__setattr__(obj, "__pydantic_private__", {"_order": order})
                return obj
            shared = _SHARES[order] = (order, given, {"_order": order})
            _SHARED.update((id(given), id(shared[2])))
        elif given is not shared[1] and shared[1] == given:
            object.__setattr__(obj, "__pydantic_fields_set__", shared[1])
        # set directly: an assignment would go through pydantic's __setattr__
        object.__setattr__(obj, "__pydantic_private__", shared[2])
        return obj

    def _own(self) -> None:
        """A set of given fields and a private dict of its own, before either changes."""
        fields, private = self.__pydantic_fields_set__, self.__pydantic_private__
        if id(fields) in _SHARED:
            object.__setattr__(self, "__pydantic_fields_set__", set(fields))
        if private is not None and id(private) in _SHARED:
            object.__setattr__(self, "__pydantic_private__", dict(private))

    def __setattr__(self, name: str, value: Any) -> None:
        self._own()
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self._own()
        super().__delattr__(name)

    def to_json(self, mode: Literal["json", "python"] = "json") -> dict[str, Any]:
        """The JSON object: original keys in original order, then any fields set since (``mode``
        ``"python"`` keeps every value as it is, a lone surrogate in a key included)."""
        dumped = dump(self) if mode == "python" else None
        if dumped is None:
            dumped = self.model_dump(mode=mode, exclude_unset=True, by_alias=True)
        out = {key: dumped[key] for key in self._order if key in dumped}
        if len(out) != len(dumped):     # fields set since, after the original keys
            for key, value in dumped.items():
                if key not in out:
                    out[key] = value
        return out


class Entry(_Ordered):
    """One lorebook entry, with SillyTavern's field names; missing fields take the template default.

    Values are kept as read (``disable: 1`` stays ``1``) because SillyTavern applies JavaScript
    truthiness to them; use :meth:`get` for the effective value.
    """

    uid: bool | int | float | str | None = None
    key: list[str] | None = Field(default_factory=list)
    keysecondary: list[str] | None = Field(default_factory=list)
    comment: Scalar = ""
    """A label for people: SillyTavern never reads it while activating, so any JSON scalar is kept."""
    content: str | None = ""
    constant: Scalar = False
    vectorized: Scalar = False
    selective: Scalar = True
    selectiveLogic: Scalar = 0
    addMemo: Scalar = False
    order: Scalar = 100
    position: Scalar = 0
    disable: Scalar = False
    excludeRecursion: Scalar = False
    preventRecursion: Scalar = False
    delayUntilRecursion: Scalar = 0
    probability: Scalar = 100
    useProbability: Scalar = True
    depth: Scalar = 4
    group: Scalar = ""
    groupOverride: Scalar = False
    groupWeight: Scalar = 100
    scanDepth: Scalar = None
    caseSensitive: Scalar = None
    matchWholeWords: Scalar = None
    useGroupScoring: Scalar = None
    automationId: Scalar = ""
    role: Scalar = 0
    sticky: Scalar = None
    cooldown: Scalar = None
    delay: Scalar = None
    characterFilter: CharacterFilter | None = None
    # SillyTavern 1.18
    ignoreBudget: Scalar = False
    triggers: Any = Field(default_factory=list)
    """Generation types the entry fires on: SillyTavern filters by it only when it is a non-empty
    list (``includes``: items equal as JavaScript's ``===`` compares), so any JSON value is kept."""
    outletName: Scalar = ""
    matchPersonaDescription: Scalar = False
    matchCharacterDescription: Scalar = False
    matchCharacterPersonality: Scalar = False
    matchCharacterDepthPrompt: Scalar = False
    matchScenario: Scalar = False
    matchCreatorNotes: Scalar = False

    def get(self, field: str, default: Any = None) -> Any:
        """A field's value, or ``default`` when the field is absent (unknown fields included)."""
        if field in self.model_fields_set or (self.model_extra and field in self.model_extra):
            return getattr(self, field)
        return default

    @property
    def comment_text(self) -> str:
        """The comment as people read it: ``String(comment)`` when truthy, else empty."""
        c = self.comment
        return c if type(c) is str else js_string(c) if truthy(c) else ""

    @property
    def extensions(self) -> dict[str, Any]:
        """The entry's ``extensions`` object (card-converted entries), ``{}`` when absent."""
        ext = (self.model_extra or {}).get("extensions")
        return ext if isinstance(ext, dict) else {}


#: the entry fields a forced activation may replace (not its identity, ``uid`` and ``world``)
OVERRIDABLE_FIELDS = frozenset(Entry.model_fields) - {"uid"} | {"displayIndex"}


BookScope = Literal["global", "character", "chat", "persona"]


class Lorebook(BaseModel):
    """A named set of entries with a scope, as SillyTavern selects it.

    ``entry_keys`` are the keys of the file's ``entries`` object (they, not the uids, decide the
    scan order); ``extra`` holds every other top-level field of the file, kept for writing back.
    """

    model_config = ConfigDict(defer_build=True)
    name: str
    scope: BookScope = "global"
    entries: list[Entry] = Field(default_factory=list)
    entry_keys: list[str] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    entries_was_list: bool = False
    _content_hash: str | None = PrivateAttr(default=None)

    @property
    def content_hash(self) -> str | None:
        """A hash of the file content this book was loaded from (BLAKE2b; ``None`` for books built in
        code): what ``compile(cache=True)`` knows a file it compiled before by."""
        return self._content_hash

    @classmethod
    def from_entries(cls, name: str, entries: list[dict[str, Any]] | list[Entry],
                     scope: BookScope = "global") -> Lorebook:
        """A book from a list of entry objects (as in the conformance scenarios)."""
        with gc_paused(len(entries) >= BULK):   # long-lived objects: no young pass walks them
            parsed = [e if isinstance(e, Entry) else Entry.from_json(e) for e in entries]
            return cls(name=name, scope=scope, entries=parsed)

    def scan_order(self) -> list[Entry]:
        """Entries in SillyTavern's reading order: ``Object.keys`` order of the entry keys."""
        keys = self.entry_keys
        if keys is None or len(keys) != len(self.entries):
            uids = list(map(_UID, self.entries))
            if _in_index_order(uids):   # the usual book: uids 0, 1, 2, … (no strings to make)
                return list(self.entries)
            keys = [js_string(uid) for uid in uids]
        order = object_key_order(keys)
        if order == list(range(len(order))):
            return list(self.entries)
        return [self.entries[i] for i in order]


def mark_imported(entry: Entry) -> None:
    """Note that one of SillyTavern's importers built ``entry`` (a card book's, NovelAI's, Agnai's
    or Risu's), not a world-info file: see :func:`is_imported`."""
    private = entry.__pydantic_private__ or {}
    object.__setattr__(entry, "__pydantic_private__", {**private, "_imported": True})


def is_imported(entry: Entry) -> bool:
    """Whether one of SillyTavern's importers built ``entry``. SillyTavern 1.12.6's importers did
    not yet write the fields 1.18 added, so such an entry's stored JSON (and its timed-effect
    hash) lacks them there."""
    private = entry.__pydantic_private__
    return bool(private and private.get("_imported"))


def _in_index_order(uids: list[Any]) -> bool:
    """Whether ``Object.keys`` would list entries with these uids (as keys) in the order given:
    integer uids that are array indexes, ascending."""
    return (_INT_ONLY.issuperset(map(type, uids)) and (not uids or (uids[0] >= 0 and uids[-1] <= 4294967294))
            and uids == sorted(uids))


_INT_ONLY = frozenset((int,))
_UID = attrgetter("uid")


class Settings(BaseModel):
    """Global world-info settings, with SillyTavern's names and module defaults, plus ``max_context``.

    An unknown name is an error that names it and suggests the closest known one (a misspelled
    setting would otherwise leave its default in place without a word).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")
    world_info_depth: int = 2
    world_info_min_activations: int = 0
    world_info_min_activations_depth_max: int = 0
    world_info_budget: float = 25
    world_info_budget_cap: int = 0
    world_info_include_names: bool = True
    world_info_recursive: bool = False
    world_info_max_recursion_steps: int = 0
    world_info_case_sensitive: bool = False
    world_info_match_whole_words: bool = False
    world_info_use_group_scoring: bool = False
    world_info_character_strategy: int = 1
    world_info_overflow_alert: bool = False
    max_context: int = 4096

    @model_validator(mode="before")
    @classmethod
    def _known_names(cls, data: Any) -> Any:
        return known_names(cls, data, "setting")

    @classmethod
    def from_json(cls, data: Any) -> Settings:
        """Settings from a settings file's JSON object: flat, or SillyTavern's own settings.json (see
        :func:`settings_from_json`). Raises :class:`LorescanError` naming the field."""
        try:
            return settings_from_json(data)[0]
        except ValidationError as exc:
            raise validation_error(exc) from None

    def budget_tokens(self) -> int:
        """The budget in tokens: ``Math.round(budget% * max_context / 100) || 1``, then the cap."""
        budget = js_round(self.world_info_budget * self.max_context / 100) or 1
        if self.world_info_budget_cap > 0 and budget > self.world_info_budget_cap:
            budget = self.world_info_budget_cap
        return budget


#: each model's field names, read once (``model_fields`` costs a descriptor call per read)
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def known_names(cls: type[BaseModel], data: Any, what: str) -> Any:
    """A ``mode="before"`` validator's body: ``data`` as it is, or an error naming each unknown
    name and the closest known one (``what``: "setting", "field")."""
    if isinstance(data, dict):
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = frozenset(cls.model_fields)
        if not names.issuperset(data):
            unknown = [k for k in data if k not in names]
            raise unknown_names_error(cls.__name__, data, unknown, list(cls.model_fields), what)
    return data


def unknown_names_error(title: str, data: dict[str, Any], unknown: list[str], known: list[str],
                        what: str) -> ValidationError:
    """A ValidationError with one line per unknown name: ``unknown setting 'x' (did you mean 'y'?)``."""
    import difflib  # only for a misspelled name (not imported with every command)

    errors: list[Any] = []
    for name in unknown:
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
        template = f"unknown {what} {{name}}" + (" (did you mean {close}?)" if close else "")
        ctx = {"name": repr(str(name)), **({"close": repr(close[0])} if close else {})}
        errors.append({"type": PydanticCustomError(f"unknown_{what}", template, ctx), "loc": (name,),
                       "input": data[name]})
    return ValidationError.from_exception_data(title, errors)


#: a union's branches, as pydantic names them at the end of an error's path
_BRANCHES = {"bool": "true or false", "int": "a number", "float": "a number", "str": "a string"}


def _first_error(exc: ValidationError) -> tuple[str, str, Any]:
    """The first error's field path, message and value. A value no branch of a union of scalars
    takes is said once for the field (``must be true or false, a number, a string or null``: each
    such union of an entry takes null), not as the first branch's complaint under ``order.bool``."""
    errors = exc.errors()
    err = errors[0]
    loc = tuple(err.get("loc", ()))
    msg = str(err.get("msg", "invalid value"))
    if len(loc) >= 2 and loc[-1] in _BRANCHES:
        loc = loc[:-1]
        wanted = dict.fromkeys(_BRANCHES[e["loc"][-1]] for e in errors
                               if tuple(e.get("loc", ()))[:-1] == loc and e["loc"][-1] in _BRANCHES)
        msg = "must be " + ", ".join(wanted) + " or null"
    return ".".join(str(x) for x in loc), msg, err.get("input")


def validation_error(exc: ValidationError, file: str | None = None, prefix: str = "") -> Any:
    """A pydantic error as one :class:`LorescanError` line: every problem, each naming its field
    (``prefix`` goes before the field path, e.g. ``"settings."``)."""
    errors = exc.errors()
    parts, field = [], None
    for err in errors:
        loc = prefix + ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "invalid value"))
        if str(err.get("type", "")).startswith("unknown_"):
            parts.append(msg if not prefix else f"{msg} in {prefix.rstrip('.')}")
        elif len(errors) == 1:
            parts.append(msg)
            field = loc or None
        else:
            parts.append(f"{loc}: {msg}" if loc else msg)
    return LorescanError("; ".join(parts), file=file, field=field)


#: Top-level keys of SillyTavern's own settings.json (any one marks a file as that shape).
_ST_SETTINGS_MARKS = ("world_info_settings", "power_user", "main_api", "amount_gen", "oai_settings",
                      "textgenerationwebui_settings")
#: Keys a flat settings file may hold besides the settings: the token counter's name.
SETTINGS_FILE_KEYS = ("tokenizer",)


def settings_from_json(data: Any) -> tuple[Settings, str | None]:
    """Settings and token-counter name from a settings file's JSON object, in either shape:

    * flat: the :class:`Settings` names plus ``tokenizer``; any other key is an error naming it;
    * SillyTavern's own ``settings.json``: its ``world_info_settings`` object (the selected books
      under ``world_info`` aside) and the top-level ``max_context``; every other key belongs to
      the rest of the app and is left alone. An old file without ``world_info_settings`` keeps the
      settings at the top level, where SillyTavern reads them too.

    Raises pydantic's ``ValidationError`` naming the field (unknown names with the closest known one).
    """
    if not isinstance(data, dict):
        return build(Settings, data), None        # raises: a settings file is an object
    if any(k in data for k in _ST_SETTINGS_MARKS):
        nested = data.get("world_info_settings")
        if isinstance(nested, dict):                       # settings.world_info_settings ?? settings
            flat = {k: v for k, v in nested.items() if k != "world_info"}
        else:
            flat = {k: v for k, v in data.items() if k.startswith("world_info_") and k != "world_info_settings"}
        if "max_context" in data:
            flat["max_context"] = data["max_context"]
        return build(Settings, flat), None
    tokenizer = data.get("tokenizer")
    if tokenizer is not None and not isinstance(tokenizer, str):
        raise ValidationError.from_exception_data("Settings", [{
            "type": PydanticCustomError("tokenizer", "the tokenizer must be a name such as \"cl100k\""),
            "loc": ("tokenizer",), "input": tokenizer}])
    flat = {k: v for k, v in data.items() if k not in SETTINGS_FILE_KEYS}
    unknown = [k for k in flat if k not in Settings.model_fields]
    if unknown:
        raise unknown_names_error("Settings", flat, unknown, [*Settings.model_fields, *SETTINGS_FILE_KEYS],
                                  "setting")
    return build(Settings, flat), tokenizer


class ChatMessage(BaseModel):
    """One chat message; extra fields (swipes, send_date, extra …) are kept."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    name: str = ""
    is_user: bool = False
    is_system: bool = False
    mes: str = ""


class DepthPrompt(BaseModel):
    """A character's depth prompt (character's note)."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    prompt: str = ""
    depth: int = 4
    role: str | int = "system"


class Character(BaseModel):
    """The selected character: what filters, 1.18 ``match*`` flags and macros read."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    name: str | None = None
    avatar: str | None = None
    tags: list[str | int] | None = None
    description: str = ""
    personality: str = ""
    scenario: str = ""
    creator_notes: str = ""
    depth_prompt: str | DepthPrompt | None = None
    extra_books: list[str] | None = None
    #: what the ``{{mesExamples}}``, ``{{charPrompt}}``, ``{{charJailbreak}}`` and ``{{charVersion}}``
    #: macros read
    mes_example: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    character_version: str = ""

    def file_name(self, char_name: str) -> str:
        """Avatar file name without its extension, as ``getCharaFilename`` strips it
        (``/\\.[^/.]+$/``: ``Alice.`` and ``a.b/c`` keep theirs); ``characterFilter.names`` compares to it."""
        avatar = self.avatar if self.avatar is not None else f"{char_name}.png"
        return _EXTENSION.sub("", avatar, count=1)

    def depth_prompt_text(self) -> str:
        dp = self.depth_prompt
        if dp is None:
            return ""
        return dp if isinstance(dp, str) else dp.prompt


class TimedEffect(BaseModel):
    """One sticky or cooldown record: chat lengths ``start``/``end``; ``hash`` identifies the entry.

    ``end`` is ``Infinity`` for an entry with ``sticky: Infinity``; written to JSON, such a number
    becomes ``null`` (as SillyTavern saves it), which reads back as 0, as ``Number(null)`` does.
    """

    model_config = ConfigDict(defer_build=True)
    start: int | float | None
    end: int | float | None
    protected: bool = False
    hash: str | int | None = None


class TimedState(BaseModel):
    """Sticky and cooldown state, keyed ``"<book>.<uid>"``; pass it in, get the next one back."""

    model_config = ConfigDict(defer_build=True)
    sticky: dict[str, TimedEffect] = Field(default_factory=dict)
    cooldown: dict[str, TimedEffect] = Field(default_factory=dict)

    def to_json(self, with_hash: bool = False) -> dict[str, Any]:
        exclude = None if with_hash else {"hash"}
        return {
            kind: {k: _finite_or_null(v.model_dump(exclude=exclude)) for k, v in getattr(self, kind).items()}
            for kind in ("sticky", "cooldown")
        }


def _finite_or_null(record: dict[str, Any]) -> dict[str, Any]:
    """A record as ``JSON.stringify`` writes it: ``Infinity`` and ``NaN`` become ``null``."""
    for k, v in record.items():
        if type(v) is float and not math.isfinite(v):
            record[k] = None
    return record


class ForcedActivation(BaseModel):
    """An entry activated by an external request for one evaluation (SillyTavern's
    ``WORLDINFO_FORCE_ACTIVATE``), named by its book (``world``) and ``uid``.

    Any other entry field given here (``content``, ``position``, ``probability``, ...) replaces the
    entry's own once it is activated by this request, because SillyTavern activates the object the
    caller passed; the gates before activation still read the entry as stored. An unknown field is
    an error that names it.
    """

    model_config = ConfigDict(defer_build=True, extra="allow")

    world: str
    uid: int | str

    @model_validator(mode="before")
    @classmethod
    def _entry_fields_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = [k for k in data if k not in cls.model_fields and k not in OVERRIDABLE_FIELDS]
            if unknown:
                raise unknown_names_error(cls.__name__, data, unknown, sorted(OVERRIDABLE_FIELDS),
                                          "entry field")
        return data

    @model_validator(mode="after")
    def _entry_values(self) -> ForcedActivation:
        if self.model_extra:
            Entry.model_validate(self.model_extra)     # the values must be what an entry may hold
        return self

    @property
    def overrides(self) -> dict[str, Any]:
        """The entry fields this request replaces (empty for a plain ``{world, uid}``)."""
        return dict(self.model_extra or {})


class DepthGroup(BaseModel):
    """At-depth entries that share a depth and a role, in prompt order."""

    model_config = ConfigDict(defer_build=True)
    depth: Scalar
    role: Scalar
    entries: list[str]


class ExampleEntry(BaseModel):
    """An example-messages entry: ``position`` is ``"before"`` or ``"after"`` the card's examples."""

    model_config = ConfigDict(defer_build=True)
    position: Literal["before", "after"]
    content: str


class Activation(BaseModel):
    """One activated entry, in activation order. Immutable: evaluations of the same compiled books
    share the activation of an entry whose content and pass are the same (a replay keeps many)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    book: str
    uid: Scalar
    key: str = Field(description='"<book>.<uid>"')
    position: Scalar
    order: Scalar
    content: str
    pass_index: int


class ActivationList(list["Activation"]):
    """The activation records of a result the engine made (a list), with the keys of the entries
    they were made from: :meth:`ActivationResult.activated_keys` returns those while the list still
    holds the same records (each record's key is its entry's, and records are immutable), instead of
    reading every record again (the records are shared by evaluations and spread over memory). A
    list changed afterwards has its keys read from its records."""

    __slots__ = ("_made", "_keys")
    _made: tuple[Activation, ...]
    _keys: list[str]

    @classmethod
    def of(cls, records: list[Activation], keys: list[str]) -> ActivationList:
        made = cls(records)
        made._made = tuple(records)
        made._keys = keys
        return made

    def unchanged_keys(self) -> list[str] | None:
        """The keys, when the list holds the records it was made with; else ``None``."""
        made = getattr(self, "_made", None)     # unset in a list made otherwise than by `of`
        if made is not None and len(self) == len(made) and all(map(is_, self, made)):
            return list(self._keys)
        return None


class ActivationResult(BaseModel):
    """What one evaluation produced: activations, the text of every bucket, and the next timed state."""

    model_config = ConfigDict(defer_build=True)
    activated: list[Activation]
    before: str
    after: str
    an_top: list[str]
    an_bottom: list[str]
    em: list[ExampleEntry]
    depth: list[DepthGroup]
    outlets: dict[str, list[str]]
    timed: TimedState
    rolls: int
    budget: int
    budget_used: int
    overflowed: bool
    trace: Any = None

    def activated_keys(self) -> list[str]:
        """The activated entries' keys (``"<book>.<uid>"``), in activation order."""
        acts = self.activated
        if type(acts) is ActivationList:
            keys = acts.unchanged_keys()
            if keys is not None:
                return keys
        return list(map(_KEY, acts))


_KEY = attrgetter("key")
