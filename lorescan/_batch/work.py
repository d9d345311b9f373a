"""What a worker does: compile the books it was sent (once per process), replay its chats and
count them into an :class:`~lorescan._batch.aggregate.Aggregate`.

The books travel as bytes inside a :class:`BatchSpec`; a worker compiles them on first use and
keeps them in a per-process cache keyed by the spec's digest, so every later task (and chat) reuses
the compiled books. A task's result is its aggregate and nothing else, so running a task again
(after a worker died) gives the same counts, and the caller keeps exactly one result per task.
"""

from __future__ import annotations

import hashlib
import pickle
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._construct import make
from .._engine import Lore
from .._formats.chats import Chat, settle_roles
from .._model import ActivationResult, Character, Lorebook, Settings
from .._replay import Session, generation_points
from .._tally import Tally
from .aggregate import Aggregate, DiffCounts
from .sources import ChatTask, error_line, read_task


@dataclass(frozen=True)
class BatchSpec:
    """Everything a worker needs besides its chats: the books as bytes, settings and names.

    ``edited``, for a diff, is the edited version of the first book file (path, bytes): its books
    take the first file's book name, so entry keys compare across the versions.
    """

    books: tuple[tuple[str, bytes], ...]
    settings: Settings = field(default_factory=Settings)
    edited: tuple[str, bytes] | None = None
    st_version: str = "1.18"
    tokenizer: str = "cl100k"
    quirks: bool = True
    user_name: str | None = None
    char_name: str | None = None
    seed: int = 0
    word_boundaries: str | None = None
    card_book_settings: bool | None = None
    macro_engine: str | None = None

    def digest(self) -> str:
        """A content hash: equal specs share one compiled cache entry in a worker."""
        h = hashlib.sha256()
        for path, data in self.books:
            h.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        if self.edited is not None:
            h.update(b"edited\0" + self.edited[0].encode() + hashlib.sha256(self.edited[1]).digest())
        h.update(pickle.dumps((self.settings.model_dump(), self.st_version, self.tokenizer, self.quirks,
                               self.user_name, self.char_name, self.seed, self.word_boundaries,
                               self.card_book_settings, self.macro_engine)))
        return h.hexdigest()


class TokenCounts(dict[str, int]):
    """Tokens of activated entries' contents, counted on first lookup (``counts[content]``, which a
    batch counter maps over a generation's contents at C speed) and kept, up to 200,000."""

    def __init__(self, count: Callable[[str], int]) -> None:
        super().__init__()
        self.count = count

    def __missing__(self, content: str) -> int:
        if len(self) > 200_000:
            self.clear()
        n = self[content] = self.count(content)
        return n


@dataclass
class Compiled:
    """A spec's compiled books (and the edited version's), cached per worker process."""

    lore: Lore
    edited: Lore | None
    character: Character | None
    tokens: TokenCounts = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = TokenCounts(self.lore.counter.count)


_CACHE: dict[str, Compiled] = {}
#: how many times this process compiled a spec (tests read it: once per worker, not per chat)
COMPILES: list[str] = []


def read_books(spec: BatchSpec) -> tuple[list[Lorebook], list[Lorebook] | None, Character | None]:
    """The spec's books, the edited set (first file replaced) and the first card's character."""
    from .._inputs import character_from_card
    from .._load import load_bytes

    per_file: list[list[Lorebook]] = []
    character = None
    for path, data in spec.books:
        loaded = load_bytes(data, path)
        per_file.append(list(loaded.books))
        if character is None and loaded.character is not None:
            character = character_from_card(loaded.character, path, spec.st_version)
    books = [b for bs in per_file for b in bs]
    if spec.edited is None:
        return books, None, character
    first = per_file[0]
    name = first[0].name if len(first) == 1 else None
    edited = list(load_bytes(spec.edited[1], spec.edited[0], name=name).books)
    return books, [*edited, *(b for bs in per_file[1:] for b in bs)], character


def compiled(spec: BatchSpec, digest: str | None = None) -> Compiled:
    """The spec's compiled books, built the first time this process meets the spec."""
    key = digest or spec.digest()
    got = _CACHE.get(key)
    if got is None:
        books, edited, character = read_books(spec)

        def build(bs: list[Lorebook]) -> Lore:
            return Lore(bs, compat=spec.st_version, tokenizer=spec.tokenizer, quirks=spec.quirks,
                        prepare=spec.settings, word_boundaries=spec.word_boundaries,
                        card_book_settings=spec.card_book_settings, macro_engine=spec.macro_engine)

        got = Compiled(build(books), build(edited) if edited is not None else None, character)
        _CACHE.clear()          # one batch at a time: the previous spec's books are freed
        _CACHE[key] = got
        COMPILES.append(key)
    return got


def chat_seed(seed: int, identity: str) -> int:
    """The seed of one chat's random source: from the batch seed and the chat's identity only, so
    any split of the chats over processes draws the same numbers for each chat."""
    return int.from_bytes(hashlib.sha256(f"{seed}\0{identity}".encode()).digest()[:8], "big")


#: the most tasks (chats) a worker replays into one aggregate (a run of them, see :func:`chunks`):
#: the runner merges one aggregate per run, whose entry rows the run's chats mostly share, instead
#: of one per chat (it merged a thousand rows per chat, beside the workers on a small machine)
CHUNK = 8


def chunks(tasks: Sequence[ChatTask], workers: int, window: int) -> list[tuple[ChatTask, ...]]:
    """The tasks in runs of at most :data:`CHUNK`, and at least ``window`` runs per worker while
    there are enough tasks (so every worker gets some, and none waits long at the end)."""
    size = max(1, min(CHUNK, len(tasks) // max(1, workers * window)))
    return [tuple(tasks[i:i + size]) for i in range(0, len(tasks), size)]


def run_task(spec: BatchSpec, task: ChatTask, digest: str | None = None) -> tuple[int, Aggregate]:
    """Replay every chat of ``task``: ``(task.id, its aggregate)``. Pure in effect: the same task
    gives the same aggregate wherever and however often it runs."""
    ids, agg = run_chunk(spec, (task,), digest)
    return ids[0], agg


def run_chunk(spec: BatchSpec, chunk: Sequence[ChatTask],
              digest: str | None = None) -> tuple[tuple[int, ...], Aggregate]:
    """Replay every chat of every task in ``chunk`` into one aggregate: ``(the task ids, it)``.
    Pure in effect, as :func:`run_task` is."""
    comp = compiled(spec, digest)
    agg = Aggregate(diff=DiffCounts() if comp.edited is not None else None)
    for task in chunk:
        for identity, chat, error in read_task(task):
            if chat is None:
                agg.fail(identity, error or "unreadable")
                continue
            try:
                replay_chat(spec, comp, identity, chat, agg)
            except Exception as exc:     # a chat the engine rejects (bad settings for it, say)
                agg.fail(identity, error_line(exc, identity))
    return tuple(task.id for task in chunk), agg


def replay_chat(spec: BatchSpec, comp: Compiled, identity: str, chat: Chat, agg: Aggregate) -> None:
    """One chat replayed (against both versions for a diff), counted into ``agg`` once the whole
    chat is replayed: a chat that raises half-way adds nothing."""
    chat, _ = settle_roles(chat, spec.user_name, spec.char_name, [])
    user = spec.user_name or chat.user_name or "User"
    char = spec.char_name or chat.character_name or (
        comp.character.name if comp.character is not None and comp.character.name else "Character")
    character = comp.character or make(Character, name=char, avatar=f"{char}.png")
    messages = list(chat.messages)
    points = generation_points(messages)
    seed = chat_seed(spec.seed, identity)
    counter = agg.chat(identity, comp.tokens.__getitem__)
    names: dict[str, Any] = {"settings": spec.settings, "user_name": user, "char_name": char, "character": character}
    edited, diffs = comp.edited, agg.diff
    # a diff compares the buckets' text; counting alone reads the records and the budget
    main = _generations(comp.lore, messages, points, seed, names, tally=True,
                        buckets=edited is not None and diffs is not None)
    if edited is None or diffs is None:
        for result, tally in main:
            counter.add(result, tally)
    else:
        diff = DiffCounts()
        other = _generations(edited, messages, points, seed, names, tally=False, buckets=True)
        for (result, tally), (changed, _) in zip(main, other):
            counter.add(result, tally)
            diff.add(result, changed)
        diffs.merge(diff)
    counter.close()


def _generations(lore: Lore, messages: list[Any], points: list[int], seed: int, names: dict[str, Any],
                 tally: bool, buckets: bool) -> Iterator[tuple[ActivationResult, Tally | None]]:
    session = Session(lore, rng=random.Random(seed), **names)
    session.append(*messages)
    for index in points:
        t = Tally() if tally else None
        yield session.activate(upto=index, tally=t, buckets=buckets), t
