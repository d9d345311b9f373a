"""What a batch replay counts, as plain data that merges: per entry, per book, per chat, and the
difference two versions of a book make.

Pure (no I/O): a worker fills an :class:`Aggregate` from the results of its chats' generations,
the caller merges the workers' aggregates in any order and renders them once. Every count is an
integer, so the merged totals are the same whatever the order or the number of workers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import add, itemgetter
from typing import Any

from .._model import ActivationResult
from .._tally import Tally

#: per-entry counters, in the order of :attr:`Aggregate.entries`' lists
FIRED, CHATS, FIRST_SUM, FIRST_MIN, CUT, COOLDOWN, DELAY, GROUP, PROBABILITY, TOKENS = range(10)
_WIDTH = 10
_NO_FIRST = 1 << 62
#: blocked-by reasons, as :class:`~lorescan._tally.Tally` names them, and their counter
BLOCKS = (("cooldown", COOLDOWN), ("delay", DELAY), ("group", GROUP), ("probability", PROBABILITY))
#: budget-use histogram: 20 bins of 5 % and one for a full (or overflowed) budget
BINS = 21
#: per-entry counters of a diff: generations where the edit gained it, lost it, changed its text
GAINED, LOST, CHANGED = range(3)


def _entry() -> list[int]:
    row = [0] * _WIDTH
    row[FIRST_MIN] = _NO_FIRST
    return row


@dataclass
class ChatRow:
    """One replayed chat: its identity (path, or ``path:line`` in a many-chat file) and counts."""

    path: str
    generations: int
    overflows: int
    activations: int


@dataclass
class Failure:
    """A chat that could not be replayed, with its one-line error."""

    path: str
    error: str


@dataclass
class DiffCounts:
    """What replacing a book by its edited version changes, generation by generation."""

    generations: int = 0
    changed: int = 0          # generations whose activated entries or bucket texts differ
    text_changed: int = 0     # generations whose bucket texts differ
    entries: dict[str, list[int]] = field(default_factory=dict)

    def merge(self, other: DiffCounts) -> None:
        self.generations += other.generations
        self.changed += other.changed
        self.text_changed += other.text_changed
        for key, row in other.entries.items():
            mine = self.entries.get(key)
            if mine is None:
                self.entries[key] = list(row)
            else:
                for i, v in enumerate(row):
                    mine[i] += v

    def add(self, a: ActivationResult, b: ActivationResult) -> None:
        """One generation replayed against both versions (``a`` the original, ``b`` the edit)."""
        self.generations += 1
        acts_a = {x.key: x for x in a.activated}
        acts_b = {x.key: x for x in b.activated}
        text = bucket_texts(a) != bucket_texts(b)
        self.text_changed += text
        touched = False
        for key in acts_b.keys() - acts_a.keys():
            self._bump(key, GAINED)
            touched = True
        for key in acts_a.keys() - acts_b.keys():
            self._bump(key, LOST)
            touched = True
        for key in acts_a.keys() & acts_b.keys():
            x, y = acts_a[key], acts_b[key]
            if x.content != y.content or x.position != y.position:
                self._bump(key, CHANGED)
        self.changed += touched or text

    def _bump(self, key: str, i: int) -> None:
        row = self.entries.get(key)
        if row is None:
            row = self.entries[key] = [0, 0, 0]
        row[i] += 1


def bucket_texts(r: ActivationResult) -> tuple[Any, ...]:
    """Everything a result puts into the prompt, for comparing two results."""
    return (r.before, r.after, r.an_top, r.an_bottom, r.em, r.depth, r.outlets)


@dataclass
class Aggregate:
    """Counts over any number of chats; :meth:`merge` adds another worker's."""

    chats: int = 0
    generations: int = 0
    overflows: int = 0
    budget_used: int = 0
    budget_total: int = 0
    histogram: list[int] = field(default_factory=lambda: [0] * BINS)
    #: per book: budget-use bins of the generations in which it put something into the prompt
    book_histograms: dict[str, list[int]] = field(default_factory=dict)
    entries: dict[str, list[int]] = field(default_factory=dict)
    chat_rows: list[ChatRow] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    diff: DiffCounts | None = None

    def merge(self, other: Aggregate) -> None:
        """Add ``other``'s counts to these (commutative, associative)."""
        self.chats += other.chats
        self.generations += other.generations
        self.overflows += other.overflows
        self.budget_used += other.budget_used
        self.budget_total += other.budget_total
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram)]
        for book, hist in other.book_histograms.items():
            mine = self.book_histograms.get(book)
            self.book_histograms[book] = list(hist) if mine is None else [a + b for a, b in zip(mine, hist)]
        for key, row in other.entries.items():
            mine = self.entries.get(key)
            if mine is None:
                self.entries[key] = list(row)
                continue
            first = min(mine[FIRST_MIN], row[FIRST_MIN])
            mine[:] = map(add, mine, row)
            mine[FIRST_MIN] = first
        self.chat_rows.extend(other.chat_rows)
        self.failures.extend(other.failures)
        if other.diff is not None:
            if self.diff is None:
                self.diff = DiffCounts()
            self.diff.merge(other.diff)

    def fail(self, path: str, error: str) -> None:
        self.failures.append(Failure(path, error))

    def chat(self, path: str, tokens: Callable[[str], int]) -> ChatCounter:
        """A counter for one chat's generations (``tokens`` counts the tokens of an activated
        entry's content); :meth:`ChatCounter.close` adds its counts here, so a chat that fails
        half-way adds nothing."""
        return ChatCounter(self, path, tokens)

    def row(self, key: str) -> list[int]:
        """The counters of the entry ``key``, made on first use."""
        row = self.entries.get(key)
        if row is None:
            row = self.entries[key] = _entry()
        return row


#: an activation record's (key, content, book), read from its ``__dict__`` (a pydantic model's
#: attribute reads go through the class's ``__getattr__`` hook: one read per record, not three)
_FIRED = itemgetter("key", "content", "book")
_CONTENT = itemgetter(1)
_BOOK = itemgetter(2)


class ChatCounter:
    """Counts one chat's generations (first fire, chats fired in), kept apart until :meth:`close`
    adds them to the :class:`Aggregate`. A generation's entries are counted in bulk: the triples of
    entry key, content and book it activated, and the keys its tally held back, go into counters; the
    rows are read once per chat."""

    def __init__(self, agg: Aggregate, path: str, tokens: Callable[[str], int]) -> None:
        self.agg = agg
        self.path = path
        self.tokens = tokens
        self.totals = Aggregate(chats=1)     # the chat's own totals and histograms
        self.activations = 0
        self.activated: Counter[tuple[str, str, str]] = Counter()   # (key, content, book) -> generations
        self.first: dict[str, int] = {}                         # key -> generation it first fired in
        self.held: dict[int, Counter[str]] = {i: Counter() for i in (CUT, *(i for _, i in BLOCKS))}

    def add(self, r: ActivationResult, tally: Tally | None) -> None:
        """One generation's result; ``tally`` the entries it held back."""
        t = self.totals
        t.generations += 1
        gen = t.generations
        t.budget_used += r.budget_used
        t.budget_total += r.budget
        if r.overflowed:
            t.overflows += 1
        t.histogram[budget_bin(r.budget_used, r.budget, r.overflowed)] += 1
        acts = r.activated
        self.activations += len(acts)
        fired = list(map(_FIRED, map(vars, acts)))      # (key, content, book)
        activated = self.activated
        known = len(activated)
        activated.update(fired)
        if len(activated) != known:          # a new triple: maybe an entry's first fire in this chat
            first = self.first
            for key, _, _ in fired:
                if key not in first:
                    first[key] = gen
        books = set(map(_BOOK, fired))
        if len(books) == 1:
            self._book_use(books.pop(), sum(map(self.tokens, map(_CONTENT, fired))), r.budget)
        elif books:
            per_book: dict[str, int] = {}
            for _, content, book in fired:
                per_book[book] = per_book.get(book, 0) + self.tokens(content)
            for book, used in per_book.items():
                self._book_use(book, used, r.budget)
        if tally is not None:
            self.held[CUT].update(tally.budget)
            for name, i in BLOCKS:
                self.held[i].update(getattr(tally, name))

    def _book_use(self, book: str, used: int, budget: int) -> None:
        hists = self.totals.book_histograms
        hist = hists.get(book)
        if hist is None:
            hist = hists[book] = [0] * BINS
        hist[budget_bin(used, budget, False)] += 1

    def close(self) -> None:
        """Add the chat's counts to the aggregate."""
        agg, row, tokens, t = self.agg, self.agg.row, self.tokens, self.totals
        t.chat_rows.append(ChatRow(self.path, t.generations, t.overflows, self.activations))
        agg.merge(t)
        for (key, content, _), n in self.activated.items():
            r = row(key)
            r[FIRED] += n
            r[TOKENS] += n * tokens(content)
        for key, gen in self.first.items():
            r = row(key)
            r[CHATS] += 1
            r[FIRST_SUM] += gen
            if gen < r[FIRST_MIN]:
                r[FIRST_MIN] = gen
        for i, held in self.held.items():
            for key, n in held.items():
                row(key)[i] += n


def budget_bin(used: int, budget: int, overflowed: bool) -> int:
    """The histogram bin of one generation's budget use (the last: full or overflowed)."""
    if overflowed or (budget > 0 and used >= budget):
        return BINS - 1
    if budget <= 0:
        return 0
    return min(BINS - 2, used * 20 // budget)


@dataclass(frozen=True)
class EntryInfo:
    """What the report shows of an entry besides its counts."""

    key: str
    book: str
    uid: Any
    comment: str


def _ratio(a: int, b: int) -> float:
    return round(a / b, 6) if b else 0.0


def entry_json(info: EntryInfo, row: list[int] | None, chats: int, generations: int) -> dict[str, Any]:
    """One entry's line of the report."""
    row = row or _entry()
    fired = row[FIRED]
    return {
        "key": info.key, "book": info.book, "uid": info.uid, "comment": info.comment,
        "fired_generations": fired, "fired_chats": row[CHATS],
        "fire_rate": _ratio(fired, generations), "chat_rate": _ratio(row[CHATS], chats),
        "first_fired": {"mean_generation": _ratio(row[FIRST_SUM], row[CHATS]), "min_generation": row[FIRST_MIN]}
        if row[CHATS] else None,
        "budget_cut": row[CUT],
        "blocked": {name: row[i] for name, i in BLOCKS},
        "tokens": row[TOKENS],
        "never_fired": fired == 0,
    }


def catalog_with(catalog: Sequence[EntryInfo], keys: Iterable[str]) -> list[EntryInfo]:
    """``catalog`` plus an entry for every key it lacks (an entry only an edited book has)."""
    known = {i.key for i in catalog}
    extra = [EntryInfo(k, k.rsplit(".", 1)[0], k.rsplit(".", 1)[-1], "") for k in sorted(set(keys) - known)]
    return [*catalog, *extra]


def to_json(agg: Aggregate, catalog: Sequence[EntryInfo], *, seed: int, top: int = 10,
            edited: Sequence[EntryInfo] = ()) -> dict[str, Any]:
    """The whole report as JSON: counts, budget, books, entries (catalog order), chats, failures,
    and the diff (``edited``: the edited version's entries, for their comments)."""
    entries = [entry_json(info, agg.entries.get(info.key), agg.chats, agg.generations)
               for info in catalog_with(catalog, agg.entries)]
    hist = [{"from_percent": i * 5, "to_percent": min(100, i * 5 + 5), "generations": n}
            for i, n in enumerate(agg.histogram)]
    hist[-1]["from_percent"] = 100
    out: dict[str, Any] = {
        "chats": agg.chats,
        "generations": agg.generations,
        "seed": seed,
        "failures": [{"path": f.path, "error": f.error} for f in sorted(agg.failures, key=lambda f: f.path)],
        "overflows": agg.overflows,
        "overflow_rate": _ratio(agg.overflows, agg.generations),
        "budget": {"mean_use": _ratio(agg.budget_used, agg.budget_total), "histogram": hist},
        "books": books_json(entries, agg, top),
        "entries": entries,
        "never_fired": [e["key"] for e in entries if e["never_fired"]],
        "per_chat": [{"path": c.path, "generations": c.generations, "overflows": c.overflows,
                      "activations": c.activations} for c in sorted(agg.chat_rows, key=lambda c: c.path)],
    }
    if agg.diff is not None:
        out["diff"] = diff_json(agg.diff, [*edited, *catalog])
    return out


def books_json(entries: list[dict[str, Any]], agg: Aggregate, top: int) -> list[dict[str, Any]]:
    """Per book: entries, how many fired, tokens put in the prompt and the top budget consumers."""
    total = sum(e["tokens"] for e in entries)
    out = []
    for name in dict.fromkeys(e["book"] for e in entries):
        mine = [e for e in entries if e["book"] == name]
        tokens = sum(e["tokens"] for e in mine)
        heavy = sorted((e for e in mine if e["tokens"]), key=lambda e: (-e["tokens"], e["key"]))[:top]
        hist = list(agg.book_histograms.get(name, [0] * BINS))
        hist[0] += agg.generations - sum(hist)       # generations it put nothing in
        out.append({
            "name": name, "entries": len(mine), "fired": sum(not e["never_fired"] for e in mine),
            "never_fired": sum(e["never_fired"] for e in mine), "tokens": tokens,
            "token_share": _ratio(tokens, total),
            "tokens_per_generation": _ratio(tokens, agg.generations),
            "budget_share": _ratio(tokens, agg.budget_total),
            "budget_histogram": hist,
            "top_consumers": [{"key": e["key"], "comment": e["comment"], "tokens": e["tokens"],
                               "share": _ratio(e["tokens"], total)} for e in heavy],
        })
    return out


def diff_json(d: DiffCounts, catalog: Sequence[EntryInfo]) -> dict[str, Any]:
    """The edit's effect: generations changed, and per entry how often it was gained, lost or changed."""
    comments = {i.key: i.comment for i in reversed(catalog)}   # the first one named wins
    ranked = sorted(d.entries.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    rows = [{"key": k, "comment": comments.get(k, ""), "gained": r[GAINED], "lost": r[LOST],
             "text_changed": r[CHANGED]} for k, r in ranked]
    return {"generations": d.generations, "changed_generations": d.changed,
            "changed_rate": _ratio(d.changed, d.generations), "text_changed_generations": d.text_changed,
            "entries": rows}


CSV_FIELDS = ("key", "book", "uid", "comment", "fired_generations", "fired_chats", "fire_rate", "chat_rate",
              "first_fired_mean", "first_fired_min", "budget_cut", "blocked_cooldown", "blocked_delay",
              "blocked_group", "blocked_probability", "tokens", "never_fired", "diff_gained", "diff_lost",
              "diff_text_changed")


def csv_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The per-entry table of a :func:`to_json` report, one row per entry (header first)."""
    diff = {r["key"]: r for r in report.get("diff", {}).get("entries", [])}
    rows: list[list[Any]] = [list(CSV_FIELDS)]
    for e in report["entries"]:
        first = e["first_fired"] or {}
        d = diff.get(e["key"], {})
        rows.append([e["key"], e["book"], e["uid"], e["comment"], e["fired_generations"], e["fired_chats"],
                     e["fire_rate"], e["chat_rate"], first.get("mean_generation", ""), first.get("min_generation", ""),
                     e["budget_cut"], *(e["blocked"][n] for n, _ in BLOCKS), e["tokens"],
                     int(e["never_fired"]), d.get("gained", 0), d.get("lost", 0), d.get("text_changed", 0)])
    return rows
