"""One ``POST /v1/activate``: the body read as a scenario, its books found in the compiled-book
cache (or compiled), its evaluations run, and the result in the ``expected`` shape.

The body is turned into the scenario dict the scenario reader takes (``lorescan._scenario``): the
same functions build the books, the character, the chat and one request per turn, so a scenario
posted here gives what ``lorescan scenario`` gives. What the service adds: stored books (read after
the request's own books of each scope), OpenAI-style messages (turned into SillyTavern messages
first), ``seed``, ``session`` and ``trace``.

Functions here named ``*_job`` run off the event loop, in a worker thread, but for
``activate_job``, which runs on the loop itself when the evaluation is known to be short (see
``service.Service.runs_inline``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .. import _index
from .._errors import LorescanError
from .._evidence import budget_use, closest_miss, message_spans
from .._explain import entries_by_key, explain_many
from .._formats.chats import role_message
from .._index import make_room
from .._mode import Mode
from .._model import ActivationResult, ChatMessage, Lorebook, Settings, TimedState, validation_error
from .._request import ActivationRequest
from .._results import result_json
from .._scenario import evaluate_scenario, scenario_books, scenario_errors, valid_settings
from .books import load_stored
from .cache import Compiled
from .errors import ServiceError, not_found
from .metrics import Metrics
from .models import SERVICE_FIELDS, ActivateBody, StoredBook
from .store import Store

if TYPE_CHECKING:
    from .service import Service

#: skip reasons that only say an entry's keys did not match (not explained one by one in a trace)
_UNMATCHED = ("no primary key matched", "no keys")
INLINE_FIELDS = ("entries", "character_entries", "chat_entries", "books")
#: how many times a session's generation is computed again when other processes keep writing it
SESSION_TRIES = 8


@dataclass(frozen=True)
class BookRef:
    """A stored book as one request reads it."""

    name: str
    scope: str
    hash: str


async def run_activate(svc: Service, body: ActivateBody,
                       is_disconnected: Callable[[], Awaitable[bool]]) -> dict[str, Any] | None:
    """One activation body through the whole path (used by ``POST /v1/activate`` and the proxy):
    its stored books found, its books compiled or taken from the cache, its session's and books'
    locks held in arrival order, and its evaluations run in a worker thread. ``None`` when the
    client left while the request waited for a lock."""
    sc = scenario_of(body)
    refs = stored_refs(body, svc.store)
    mode = svc.mode(body.st_version, body.word_boundaries, body.card_book_settings, body.macro_engine)
    tokenizer = body.tokenizer
    if needs_thread_for_key(sc):
        key = await asyncio.to_thread(books_key, sc, refs, mode, tokenizer)
    else:
        key = books_key(sc, refs, mode, tokenizer)
    compiled = await svc.cache.get(key, lambda: build_books_job(sc, refs, svc.store), mode, tokenizer)
    waits = compiled.lock.locked() or svc.session_locks.busy(body.session)
    async with svc.session_locks.hold(body.session), compiled.lock:
        if waits and await is_disconnected():    # the client left while it waited: skip it
            return None
        job = partial(activate_job, compiled, sc, mode, store=svc.store, session=body.session, seed=body.seed,
                      trace=body.trace, metrics=svc.metrics, trace_focus=body.trace_focus)
        if svc.runs_inline(compiled, body.trace, len(body.turns or ())):
            return job()
        result: dict[str, Any] = await svc.run_activation(job)
    return result


def scenario_of(body: ActivateBody) -> dict[str, Any]:
    """The body as a scenario dict: the fields it gave, books and turns as plain JSON, and
    OpenAI-style messages as SillyTavern messages."""
    sc: dict[str, Any] = {name: getattr(body, name) for name in body.model_fields_set if name not in SERVICE_FIELDS}
    check_settings(body.settings, "settings")
    names = (body.user_name, body.char_name)
    sc["chat"] = _messages(body.chat, "chat", *names)
    if body.books is not None:
        sc["books"] = [{"name": b.name, "scope": b.scope, "entries": b.entries} for b in body.books]
    if body.turns is not None:
        turns = []
        for i, turn in enumerate(body.turns):
            t = {name: getattr(turn, name) for name in turn.model_fields_set}
            check_settings(turn.settings, f"turns[{i}].settings")
            for part in ("chat", "append"):
                if t.get(part) is not None:
                    t[part] = _messages(t[part], f"turns[{i}].{part}", *names)
            turns.append(t)
        sc["turns"] = turns
    return sc


def check_settings(data: Any, where: str) -> None:
    """Settings with an unknown name or a value of the wrong type: 422 naming the setting."""
    if not isinstance(data, dict):
        return                  # absent, or not an object: the scenario reader says so
    try:
        valid_settings(data)
    except ValidationError as exc:
        loc = ".".join(str(x) for x in exc.errors()[0].get("loc", ()))
        err = validation_error(exc, prefix=f"{where}.")
        raise ServiceError(422, "invalid_request", err.message, err.field or f"{where}.{loc}") from None


#: OpenAI-style user and assistant messages already read, by (role, content, name, user, char): a
#: chat is sent again with every generation, so each message is read once (the messages are never
#: changed once made); past ``_ROLE_MESSAGES_KEPT`` (about 10 MB) the older half is forgotten, so the
#: chats in use keep most of theirs (clearing it all made every chat read all of its messages again)
_ROLE_MESSAGES: dict[tuple[str, str, str | None, str, str], ChatMessage] = {}
_ROLE_MESSAGES_KEPT = 8_192


def _messages(items: list[Any], where: str, user_name: str, char_name: str) -> list[Any]:
    """The chat with OpenAI-style messages read as SillyTavern messages (others as they are: the
    scenario reader reads them, each time; a memo of them would keep tens of thousands under
    load, the chats of a few hundred users, or miss)."""
    out: list[Any] = []
    memo = _ROLE_MESSAGES
    native = _index.native if type(items) is list else None
    i, n = 0, len(items)
    while i < n:
        if native is not None:      # the messages read before, in C (the loop below takes the others)
            i = native.role_messages(items, i, memo, user_name, char_name, out)
            if i >= n:
                break
        at, item = i, items[i]
        i += 1
        if isinstance(item, dict) and "role" in item and "mes" not in item:
            role, content, name = item["role"], item.get("content"), item.get("name")
            key = None
            if (role == "user" or role == "assistant") and type(content) is str \
                    and (name is None or type(name) is str):
                key = (role, content, name, user_name, char_name)
                got = memo.get(key)
                if got is not None:
                    out.append(got)
                    continue
            try:
                item = role_message(item, f"{where}[{at}]", None, user_name, char_name)
            except LorescanError as exc:
                raise ServiceError(422, "invalid_request", exc.message, f"{where}[{at}]") from None
            if key is not None:
                make_room(memo, _ROLE_MESSAGES_KEPT)
                memo[key] = item
        out.append(item)
    return out


def stored_refs(body: ActivateBody, store: Store) -> list[BookRef]:
    """The stored books the body names, each with its scope for this request (404 for an unknown one)."""
    refs: list[BookRef] = []
    if not body.stored_books:
        return refs
    books = store.books         # read once: one query to the store, whatever the count
    for i, item in enumerate(body.stored_books):
        name, scope = (item.name, item.scope) if isinstance(item, StoredBook) else (item, None)
        record = books.get(name)
        if record is None:
            raise not_found("stored book", name, f"stored_books[{i}]")
        refs.append(BookRef(name, scope or record.scope, record.hash))
    return refs


def books_key(sc: dict[str, Any], refs: list[BookRef], mode: Mode, tokenizer: str) -> str:
    """The compiled-book cache key: a hash of everything a compile reads (see ``cache``)."""
    inline = {k: sc[k] for k in INLINE_FIELDS if k in sc}     # an empty book given is a book
    stored = [(r.hash, r.name, r.scope) for r in refs]
    if not inline:              # stored books only, as most requests send: the key is remembered
        known = (tuple(stored), mode, tokenizer)
        got = _STORED_KEYS.get(known)
        if got is None:
            if len(_STORED_KEYS) >= 1024:
                _STORED_KEYS.clear()
            got = _STORED_KEYS[known] = _books_key("", stored, mode, tokenizer)
        return got
    inline_hash = hashlib.sha256(json.dumps(inline, separators=(",", ":")).encode()).hexdigest()
    return _books_key(inline_hash, stored, mode, tokenizer)


#: the keys of requests naming only stored books, by (stored books, mode, tokenizer)
_STORED_KEYS: dict[tuple[tuple[tuple[str, str, str], ...], Mode, str], str] = {}


def _books_key(inline_hash: str, stored: list[tuple[str, str, str]], mode: Mode, tokenizer: str) -> str:
    return hashlib.sha256(repr((inline_hash, stored, repr(mode), tokenizer)).encode("utf-8")).hexdigest()


def needs_thread_for_key(sc: dict[str, Any]) -> bool:
    """Whether hashing the request's own books is worth a trip off the event loop."""
    count = sum(len(sc.get(k) or ()) for k in ("entries", "character_entries", "chat_entries"))
    count += sum(len(b.get("entries") or ()) for b in sc.get("books") or ())
    return count > 200


def build_books_job(sc: dict[str, Any], refs: list[BookRef], store: Store) -> tuple[list[Lorebook], Settings | None]:
    """The request's own books (in the scenario reader's order), then the stored ones it names;
    and the request's settings, to compile the key index for (``None`` when they are not valid:
    the evaluation says so)."""
    with scenario_errors():
        books = scenario_books(sc)
    for ref in refs:
        books.append(read_stored(store, ref.name, ref.hash, ref.scope))
    try:
        prepare = Settings.model_validate(sc.get("settings") or {})
    except (ValidationError, TypeError):
        prepare = None
    return books, prepare


def read_stored(store: Store, name: str, digest: str, scope: str) -> Lorebook:
    """A stored book, read from its bytes, in ``scope`` (409 when it changed since it was named)."""
    data = store.book_data(name)
    if data is None or hashlib.sha256(data).hexdigest() != digest:
        raise ServiceError(409, "conflict", f"the stored book {name!r} changed while this request read it; "
                                            "send the request again", "stored_books")
    book = load_stored(name, data).books[0]
    book.scope = scope  # type: ignore[assignment]
    return book


def activate_job(compiled: Compiled, sc: dict[str, Any], mode: Mode, *, store: Store, session: str | None,
                 seed: int | None, trace: bool, metrics: Metrics,
                 trace_focus: list[str] | None = None) -> dict[str, Any]:
    """Run the body's evaluations on compiled books (the caller holds their lock); with a session,
    read its timed state first and store the state after the last evaluation that was not a dry
    run. When another process wrote the session meanwhile (``lorescan serve --processes``), the
    evaluations run again from its state, as if this request had come after it."""
    for _ in range(SESSION_TRIES):
        timed, rev = store.read_timed(session) if session is not None else (None, None)
        pairs = _evaluate(compiled, sc, timed, seed, trace, trace_focus)
        written = [result.timed for request, result in pairs if not request.dry_run] if session is not None else []
        if not written or store.save_session(session, written[-1], len(written), rev=rev):  # type: ignore[arg-type]
            break
    else:
        raise ServiceError(409, "conflict", f"the session {session!r} was written by other requests {SESSION_TRIES} "
                                            "times while this one ran; send it again", "session")
    with scenario_errors():
        shaped = [_shape(compiled, request, result, mode, trace) for request, result in pairs]
    metrics.activations.inc(len(pairs))
    metrics.entries_activated.inc(sum(len(result.activated) for _, result in pairs))
    metrics.overflows.inc(sum(1 for _, result in pairs if result.overflowed))
    return {"turns": shaped} if sc.get("turns") else shaped[0]


def _evaluate(compiled: Compiled, sc: dict[str, Any], timed: TimedState | None, seed: int | None, trace: bool,
              trace_focus: list[str] | None) -> list[tuple[ActivationRequest, ActivationResult]]:
    rng = random.Random(seed) if seed is not None else None
    with scenario_errors():
        started = time.perf_counter()
        pairs = evaluate_scenario(compiled.lore, sc, timed=timed, rng=rng, trace=trace, trace_focus=trace_focus)
        if not trace:
            compiled.note((time.perf_counter() - started) / len(pairs))
    return pairs


def _shape(compiled: Compiled, request: ActivationRequest, result: ActivationResult, mode: Mode,
           trace: bool) -> dict[str, Any]:
    out = result_json(result, outlets=mode.outlets, trace=trace)
    if trace:
        explained = explain_all(compiled, request, result)
        out["explain"] = explained
        r = request
        spans = message_spans(compiled.lore, [e["entry"] for e in explained], r.chat, settings=r.settings,
                              user_name=r.user_name, char_name=r.char_name)
        out["spans"] = [s.to_json() for s in spans]
        out["budget_use"] = budget_use(compiled.lore, result)
    return out


def explain_all(compiled: Compiled, request: ActivationRequest, result: ActivationResult) -> list[dict[str, Any]]:
    """``explain``'s verdict, lines, matches and closest miss for every entry the trace names, but
    those whose keys just did not match (the trace says so already), in the order the trace first
    names them; then the request's ``trace_focus`` entries not named yet."""
    named: dict[str, bool] = {}
    for event in result.trace or ():
        key = event.get("entry")
        if key is None:
            continue
        quiet = event["event"] == "skipped" and event.get("why") in _UNMATCHED
        named[key] = named.get(key, False) or not quiet
    keys = [key for key, wanted in named.items() if wanted]
    focus = [key for key in request.trace_focus or () if key not in keys]
    known = entries_by_key(compiled.lore)
    for i, key in enumerate(focus):
        if key not in known:
            raise ServiceError(422, "invalid_request", f"no entry {key!r} in the books (use <book>.<uid>)",
                               f"trace_focus[{i}]")
    keys.extend(dict.fromkeys(focus))
    r = request
    explained = explain_many(compiled.lore, result, keys, r.chat, settings=r.settings, user_name=r.user_name,
                             char_name=r.char_name, generation_type=r.generation_type, character=r.character,
                             persona_description=r.persona_description, authors_note=r.authors_note,
                             authors_note_scan=r.authors_note_scan, quiet_prompt=r.quiet_prompt)
    return [{"entry": exp.entry, "activated": exp.activated, "verdict": exp.verdict, "lines": exp.lines,
             "steps": exp.steps, "matches": [asdict(m) for m in exp.matches], "closest_miss": closest_miss(exp)}
            for exp in explained]
