"""The JSON bodies of the service, as pydantic models: the OpenAPI schema is generated from them.

``POST /v1/activate`` takes a conformance scenario's inputs under the same names (the conformance
README's "Inputs", its 1.18 additions and each turn's fields), plus the service's own: stored
books, OpenAI-style messages, a seed, a session and a trace. Entries, messages, settings, the
character and forced activations are described with the library's own models (``Entry``,
``ChatMessage``, ``Settings``, ``Character``, ``ForcedActivation``), and are checked by the same
code that reads scenario files, so a bad value is reported the same way there and here; this
module checks the shape around them (names, lists, types of the plain fields). An unknown name is
an error that suggests the closest known one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SkipValidation,
    StringConstraints,
    Tag,
    model_validator,
)

from .._model import Character, ChatMessage, Entry, ForcedActivation, Settings, known_names
from .._tokens import TOKENIZERS

Scope = Literal["global", "character", "chat", "persona"]
Tokenizer = Literal[TOKENIZERS]  # type: ignore[valid-type]
#: a book or session name: 1–200 characters, no control characters, no slashes
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f/\\]+$")]


class RoleMessage(BaseModel):
    """An OpenAI-style chat message, read as a SillyTavern message: ``user`` is the user's (named
    ``name`` or ``user_name``), ``assistant`` the character's (``name`` or ``char_name``), any other
    role a system message, which SillyTavern does not scan."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None


#: checked later, by the scenario reader (see the module docstring)
Message = SkipValidation[ChatMessage | RoleMessage]
EntryList = list[SkipValidation[Entry]]
SettingsObject = SkipValidation[Settings]
Forced = list[SkipValidation[ForcedActivation]]


class _Strict(BaseModel):
    """Unknown names are errors that name the closest known one."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_names(cls, data: Any) -> Any:
        return known_names(cls, data, "field")


class InlineBook(_Strict):
    """A book sent with the request."""

    name: str
    scope: Scope = "global"
    entries: EntryList = Field(default_factory=list)


class StoredBook(_Strict):
    """A stored book, in the scope it is read in for this request."""

    name: Name
    scope: Scope | None = Field(default=None, description="default: the scope it was stored with (global "
                                                           "unless the PUT gave ?scope=)")


def _by_name_or_object(value: Any) -> str:
    return "by-name" if isinstance(value, str) else "by-object"


#: a stored book's name, or ``{name, scope}`` (an error names the field of the form given)
StoredBookItem = Annotated[Annotated[Name, Tag("by-name")] | Annotated[StoredBook, Tag("by-object")],
                           Discriminator(_by_name_or_object)]
#: the discriminator's tags, left out of an error's field path
UNION_TAGS = ("by-name", "by-object")


class Turn(_Strict):
    """One evaluation of a multi-turn request: its fields replace the request's for this turn only;
    ``chat`` replaces the conversation and ``append`` adds to it (both carry to later turns);
    ``settings`` are merged over the request's key by key."""

    chat: list[Message] | None = None
    append: list[Message] | None = None
    settings: SettingsObject | None = None
    type: str | None = None
    dry_run: bool | None = None
    random: list[float] | None = None
    authors_note: str | None = None
    authors_note_scan: bool | None = None
    quiet_prompt: str | None = None
    persona_description: str | None = None
    persona_lorebook: str | None = None
    force_activate: Forced | None = None
    an_should_add: bool | None = Field(default=None, description="accepted for scenario files; no effect")


class ActivateBody(_Strict):
    """The inputs of ``POST /v1/activate``: a conformance scenario's (see its README), plus
    ``stored_books``, ``seed``, ``session`` and ``trace``. Every field may be left out."""

    entries: EntryList | None = Field(default=None, description="entries of the global book named 'global'")
    character_entries: EntryList | None = Field(default=None, description="the character's book, 'character'")
    chat_entries: EntryList | None = Field(default=None, description="the chat book, named 'chat'")
    books: list[InlineBook] | None = Field(default=None, description="more books sent with the request")
    stored_books: list[StoredBookItem] = Field(
        default_factory=list, description="stored books by name (in the scope they were stored with), or "
                                          "{name, scope}; read after the request's own books of each scope")
    chat: list[Message] = Field(default_factory=list, description="messages, oldest first: SillyTavern's "
                                                                  "{name, is_user, mes} or OpenAI's {role, content}")
    settings: SettingsObject | None = None
    user_name: str = "User"
    char_name: str = "Character"
    character: SkipValidation[Character] | None = None
    no_character: bool = False
    persona_description: str = ""
    quiet_prompt: str = ""
    persona_lorebook: str | None = None
    tokenizer: Tokenizer = Field(default="chars4", description="budget token counter (the scenario files' "
                                                               "default is chars4; cl100k counts real tokens)")
    random: list[float] | None = Field(default=None, description="values of the successive random draws "
                                                                 "(0 once used up)")
    type: str = Field(default="normal", description="generation type: normal, continue, impersonate, swipe, "
                                                    "regenerate or quiet")
    dry_run: bool = False
    authors_note: str = ""
    authors_note_scan: bool = False
    force_activate: Forced = Field(default_factory=list)
    turns: list[Turn] | None = None
    st_version: str = Field(default="1.18", description="1.18 (1.18.0, 1.19, 1.19.0) or 1.12 (1.12.6)")
    an_should_add: bool | None = Field(default=None, description="accepted for scenario files; no effect")
    description: str | None = Field(default=None, description="accepted for scenario files; no effect")
    seed: int | None = Field(default=None, description="seeds the random draws when no random list is given "
                                                       "(without either every draw is 0)")
    session: Name | None = Field(default=None, description="a chat id: its timed-effect state is read before "
                                                           "and stored after each evaluation that is not a dry run")
    trace: bool = Field(default=False, description="add each result's trace events and, per entry, the "
                                                   "reasons explain gives, where its keys occur in the chat "
                                                   "(spans), the budget entry by entry and the closest miss")
    trace_focus: list[str] | None = Field(
        default=None, description="with trace: record only the entries the scan text reaches (their keys "
                                  "occur in it, or they are constant, sticky, forced, delayed or cooling down) "
                                  "and these <book>.<uid> keys, explained even when no key matched; keeps the "
                                  "trace of a large book small and fast (default: every entry)")
    macro_engine: str | None = Field(default=None, description="SillyTavern's macro engine: \"new\" (1.18's "
                                     "default) or \"legacy\" (its \"Experimental Macro Engine\" setting off; "
                                     "1.12.6's only one); default: the service's setting, else the version's")
    word_boundaries: str | None = Field(default=None, description="beyond SillyTavern: \"unicode\" matches whole "
                                        "words in every script (default: the service's setting, \"sillytavern\")")
    card_book_settings: bool | None = Field(default=None, description="beyond SillyTavern: a character card book's "
                                            "own scan_depth, token_budget and recursive_scanning apply "
                                            "(default: the service's setting, off)")


#: the fields the scenario reader does not know
SERVICE_FIELDS = ("stored_books", "seed", "session", "trace", "trace_focus", "description", "word_boundaries",
                  "card_book_settings")


class BookReply(BaseModel):
    """What ``PUT /v1/books/{name}`` stored."""

    name: str
    entries: int
    hash: str = Field(description="SHA-256 of the bytes sent")
    warnings: list[dict[str, Any]] = Field(description="what lorescan lint finds, and what loading noted")
    format: str
    scope: Scope


class ErrorDetail(BaseModel):
    type: str
    message: str
    field: str | None = None


class ErrorReply(BaseModel):
    """Every 4xx and 5xx reply."""

    error: ErrorDetail


class ActivateReply(BaseModel):
    """``result`` has exactly the shape of a scenario's ``expected`` (``{"turns": [...]}`` with turns);
    with ``trace``, each result adds ``trace``, ``explain``, ``spans`` and ``budget_use``."""

    result: TracedResult | TracedTurns


class KeyMatchReply(BaseModel):
    """Where one key occurs in one piece of the text an entry scanned (the best occurrence there)."""

    key: str
    kind: str = Field(description="plain, regex or blank")
    role: str = Field(description="primary or secondary")
    where: str = Field(description="the piece in words: 'message #3 (Rowan)', 'the content of book.2, ...'")
    piece: str = Field(description="message, recursion, field or injection")
    scan_pass: int | None
    message: int | None = Field(description="chat number, #1 = the first message")
    source: str | None = Field(description="the recursed entry, for recursion text")
    offset: int | None
    word: str | None
    inside_word: bool
    counts: bool = Field(description="whether SillyTavern counts it as a match")
    within_depth: bool


class ClosestMiss(BaseModel):
    """The nearest an entry that did not activate came to activating."""

    kind: str = Field(description="secondary, whole_words, scan_depth, case, group, probability, budget, "
                                  "cooldown, delay, recursion, trigger, character_filter, decorator, disabled, "
                                  "no_keys or no_match")
    text: str


class ExplainItem(BaseModel):
    """``lorescan explain`` for one entry of a traced result."""

    entry: str
    activated: bool
    verdict: str
    lines: list[str] = Field(description="one line per key: where it matched, or why it did not")
    steps: list[str] = Field(description="every gate the entry met, pass by pass, in words")
    matches: list[KeyMatchReply]
    closest_miss: ClosestMiss | None = Field(description="null for an activated entry")


class SpanReply(BaseModel):
    """One occurrence of an explained entry's key in a chat message, for highlighting it."""

    entry: str
    key: str
    role: str = Field(description="primary or secondary")
    message: int = Field(description="0-based index into the chat as sent")
    start: int = Field(description="UTF-16 offset into the message's text (as JavaScript counts)")
    end: int
    counts: bool = Field(description="false: inside a word while whole-word matching is on (not a match)")


class BudgetRowReply(BaseModel):
    """One entry the budget saw, in the order it saw them."""

    entry: str
    outcome: Literal["fits", "overflow", "skipped"] = Field(
        description="skipped: the budget had overflowed before its turn")
    tokens: int | None = Field(description="this entry's tokens (its content and a line break)")
    used: int | None = Field(description="tokens in use with it (null when it was skipped)")
    scan_pass: int


class BudgetUse(BaseModel):
    """How the budget was spent."""

    budget: int | None = Field(description="the budget in tokens (null when no entry reached it)")
    used: int
    overflowed: bool
    overflow_entry: str | None = Field(description="the entry that overflowed it")
    rows: list[BudgetRowReply]


class TracedResult(BaseModel):
    """One evaluation's result: a scenario's ``expected`` shape (activated, before, after, an_top,
    an_bottom, em, depth, timed, rolls, and outlets in 1.18), plus the fields ``trace`` adds."""

    model_config = ConfigDict(extra="allow")

    activated: list[str]
    trace: list[dict[str, Any]] | None = Field(default=None, description="the engine's events, in order")
    explain: list[ExplainItem] | None = Field(default=None, description="every entry the trace names, but "
                                              "those whose keys just did not match, and the trace_focus ones")
    spans: list[SpanReply] | None = None
    budget_use: BudgetUse | None = None


class TracedTurns(BaseModel):
    """A request with ``turns``: one result per turn."""

    turns: list[TracedResult]

ActivateReply.model_rebuild()
