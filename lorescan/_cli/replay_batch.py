"""``lorescan replay --chats``: replay many chats against the books and report, per entry, per book
and per chat, what fired, what the budget cut and what held entries back; ``--diff`` compares two
versions of a book over the same chats. The work runs in :mod:`lorescan._batch`."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

from .._errors import LorescanError
from .common import shown_version, whole_number
from .render import Table, print_wrapped

NEVER_SHOWN = 30


def add_batch_args(p: argparse.ArgumentParser) -> None:
    """The batch flags of ``replay``."""
    g = p.add_argument_group("many chats (analytics over a batch)")
    g.add_argument("--chats", action="extend", nargs="+", metavar="PATH",
                   help="chat files, directories (searched for .jsonl/.json/.txt/.yaml) or globs; a .jsonl file "
                        "whose lines are {\"messages\": [...]} objects holds one chat per line")
    g.add_argument("--jobs", type=whole_number(1), metavar="N", help="worker processes (default: every core)")
    g.add_argument("--dask", metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS (tcp://host:8786), or 'local' for a LocalCluster "
                        "with one worker per core (needs lorescan[dask])")
    g.add_argument("--diff", metavar="OTHER_BOOK",
                   help="an edited version of the first --book: replay every chat against both and report "
                        "what the edit changes")
    g.add_argument("--csv", nargs="?", const="-", metavar="FILE",
                   help="the per-entry table as CSV, to FILE or stdout")
    g.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with plots")
    g.add_argument("--top", type=whole_number(1), default=20, metavar="N", help="entries in the terminal tables (20)")
    g.add_argument("--strict", action="store_true", help="exit with status 1 when any chat failed")


def build_spec(args: argparse.Namespace) -> Any:
    """The :class:`~lorescan._batch.BatchSpec` for the command line: books read as bytes."""
    from .._batch import BatchSpec
    from .._formats.common import read_file
    from .._mode import mode_for, with_options
    from .._tokens import get_counter
    from .common import read_settings

    settings, named = read_settings(args.settings)
    tokenizer = args.tokenizer or named or "cl100k"
    get_counter(tokenizer)                     # an unknown name fails here, once
    books = tuple((path, read_file(path)) for path in args.books)
    edited = (args.diff, read_file(args.diff)) if args.diff else None
    options = {"word_boundaries": args.word_boundaries, "card_book_settings": args.card_book_settings or None,
               "macro_engine": args.macro_engine}
    with_options(mode_for(args.st_version), **options)   # a wrong option fails here, once
    return BatchSpec(books=books, settings=settings, edited=edited, st_version=args.st_version,
                     tokenizer=tokenizer, quirks=args.quirks, user_name=args.user_name, char_name=args.char_name,
                     seed=args.seed, **options)


def run_batch(args: argparse.Namespace) -> int:
    from .. import _batch
    from .._batch.progress import Progress

    if args.json and args.csv == "-":
        raise LorescanError("--json and --csv both write to stdout; give --csv a FILE")
    if args.dask:
        from .._batch.dask_run import distributed_module

        distributed_module()                   # not installed: say so before reading anything
    spec = build_spec(args)
    catalog = _batch.catalog(spec)             # reads every book: a bad one fails before any work
    if not catalog:
        raise LorescanError("the books hold no entries")
    chat_tasks = _batch.tasks(args.chats)
    if not chat_tasks:
        raise LorescanError("no chat files found", file=" ".join(args.chats))
    progress = Progress(len(chat_tasks), enabled=args.progress)
    try:
        agg = _batch.run_batch(spec, chat_tasks, jobs=args.jobs, dask=args.dask, done=progress.done)
    finally:
        progress.close()
    report = _batch.report(agg, spec)
    if args.html:
        _write_html(args, report)
    if args.csv:
        _write_csv(args.csv, report)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    elif args.csv != "-":
        print_report(report, args)
    return 1 if args.strict and report["failures"] else 0


def _write_csv(target: str, report: dict[str, Any]) -> None:
    import csv

    from .._batch import csv_rows

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(csv_rows(report))
    if target == "-":
        sys.stdout.write(buf.getvalue())
        return
    _write(Path(target), buf.getvalue())


def _write_html(args: argparse.Namespace, report: dict[str, Any]) -> None:
    from .._batch.page import render_batch_page

    out = Path(args.html)
    for path in [*args.books, args.diff, args.settings]:
        if path and Path(path).exists() and out.exists() and out.resolve() == Path(path).resolve():
            raise LorescanError("is an input file; refusing to overwrite it (choose another --html)", file=str(out))
    title = f"lorescan batch replay: {', '.join(Path(b).name for b in args.books)}"
    _write(out, render_batch_page(report, title=title, edited=Path(args.diff).name if args.diff else None))
    print(f"lorescan: wrote {out}", file=sys.stderr)


def _write(path: Path, text: str) -> None:
    if path.is_dir():
        raise LorescanError("is a directory", file=str(path))
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LorescanError(f"cannot write: {exc.strerror}", file=str(path)) from None


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def print_report(r: dict[str, Any], args: argparse.Namespace) -> None:
    """The terminal tables: summary, busiest entries, never fired, budget, failures and the diff."""
    books = r["books"]
    print_wrapped(f"Replayed {_count(r['chats'], 'chat')} ({_count(r['generations'], 'generation')}) against "
                  f"{_count(sum(b['entries'] for b in books), 'entry', 'entries')} in "
                  f"{_count(len(books), 'book')}, SillyTavern {shown_version(args.st_version, args.macro_engine)}, "
                  f"seed {r['seed']}; "
                  f"{len(r['failures'])} failed. Budget: mean use {_pct(r['budget']['mean_use'])}, overflowed in "
                  f"{_count(r['overflows'], 'generation')} ({_pct(r['overflow_rate'])}).")
    fired = sorted((e for e in r["entries"] if not e["never_fired"]), key=lambda e: (-e["fired_generations"], e["key"]))
    table = Table(["entry", "fired", "rate", "chats", "first gen", "budget cut", "blocked c/d/g/p", "tokens"],
                  title=f"Entries that fired most (top {min(args.top, len(fired))} of {len(fired)})")
    for e in fired[:args.top]:
        b = e["blocked"]
        table.add([_label(e), str(e["fired_generations"]), _pct(e["fire_rate"]), str(e["fired_chats"]),
                   f"{e['first_fired']['mean_generation']:.1f}", str(e["budget_cut"]),
                   f"{b['cooldown']}/{b['delay']}/{b['group']}/{b['probability']}", str(e["tokens"])])
    if fired:
        table.print()
    never = r["never_fired"]
    if never:
        shown = ", ".join(never[:NEVER_SHOWN]) + (f", … and {len(never) - NEVER_SHOWN} more" if len(never) > NEVER_SHOWN
                                                  else "")
        print_wrapped(f"Never fired ({len(never)} of {len(r['entries'])}): {shown}")
    for book in books:
        if book["top_consumers"]:
            heavy = ", ".join(f"{t['key']} {_pct(t['share'])}" for t in book["top_consumers"][:5])
            print_wrapped(f"Book {book['name']}: {book['fired']} of {book['entries']} entries fired; "
                          f"{_pct(book['token_share'])} of the tokens, {_pct(book['budget_share'])} of the budget "
                          f"on average; largest shares: {heavy}")
    if "diff" in r:
        _print_diff(r["diff"], args)
    if r["failures"]:
        print_wrapped(f"Failed ({len(r['failures'])}):")
        for f in r["failures"][:args.top]:
            print(f"  {f['path']}: {f['error']}")
        if len(r["failures"]) > args.top:
            print(f"  … and {len(r['failures']) - args.top} more (--json lists all)")


def _print_diff(d: dict[str, Any], args: argparse.Namespace) -> None:
    print_wrapped(f"With {args.diff}: {d['changed_generations']} of {d['generations']} generations change "
                  f"({_pct(d['changed_rate'])}), {d['text_changed_generations']} of them in bucket text.")
    if not d["entries"]:
        return
    table = Table(["entry", "gained", "lost", "text changed"], title="What the edit changes, per entry")
    for e in d["entries"][:args.top]:
        table.add([_label(e), str(e["gained"]), str(e["lost"]), str(e["text_changed"])])
    table.print()


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _label(e: dict[str, Any]) -> str:
    return f"{e['key']} ({e['comment']})" if e.get("comment") else str(e["key"])
