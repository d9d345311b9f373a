"""``lorescan lint``: find entries and keys SillyTavern will not treat the way they read."""

from __future__ import annotations

import argparse
import json

from .common import add_match_args, add_version_arg, shown_version
from .render import Table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint", help="check lorebooks for keys and entries that misbehave in SillyTavern",
        description="Checks lorebooks for invalid regex keys, regex keys prone to catastrophic "
                    "backtracking, empty or blank keys, short keys that match inside common words, "
                    "duplicate keys, entries that can never fire, unknown positions and triggers, values "
                    "of the wrong type (with what SillyTavern does with them), content over the budget "
                    "and single-member groups. Exit code 1 when any finding is an error.")
    p.add_argument("books", nargs="+", metavar="BOOK", help="lorebook or character card files")
    p.add_argument("--settings", metavar="SETTINGS",
                   help="JSON with SillyTavern's world_info_* settings and max_context "
                        "(recursion, whole-word default and budget change what is reported)")
    add_version_arg(p, "1.18", "SillyTavern version to check against")
    p.add_argument("--tokenizer", default=None,
                   help="token counter for the budget check: cl100k (default), cl100k-chat, chars4, words")
    add_match_args(p, card_books=False)
    p.add_argument("--json", action="store_true",
                   help="print the findings as a JSON list of {code, severity, book, uid, field, message, fix}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._errors import LorescanError
    from .._lint import lint
    from .._load import load
    from .common import read_settings

    books = []
    for path in args.books:
        try:
            loaded = load(path)
        except LorescanError as exc:
            raise exc.with_file(path) from None
        if not loaded.books:
            raise LorescanError(f"holds no lorebook (it is a {loaded.format} file)", file=path)
        books.extend(loaded.books)
    settings, tokenizer = read_settings(args.settings)
    findings = lint(books, settings if args.settings else None, compat=args.st_version,
                    tokenizer=args.tokenizer or tokenizer or "cl100k", word_boundaries=args.word_boundaries,
                    macro_engine=args.macro_engine)
    errors = sum(1 for f in findings if f.severity == "error")
    if args.json:
        print(json.dumps([f.to_json() for f in findings], ensure_ascii=False, indent=2))
        return 1 if errors else 0
    if not findings:
        print(f"{len(books)} book(s), {sum(len(b.entries) for b in books)} entries: no findings.")
        return 0
    table = Table(["severity", "entry", "field", "code", "message", "fix"],
                  title=f"lorescan lint (SillyTavern {shown_version(args.st_version, args.macro_engine)})")
    for f in findings:
        table.add([f.severity, f.book if f.uid is None else f"{f.book}.{f.uid}", f.field or "", f.code,
                   f.message, f.fix])
    table.print()
    warnings = sum(1 for f in findings if f.severity == "warning")
    print(f"{errors} error(s), {warnings} warning(s), {len(findings) - errors - warnings} info.")
    return 1 if errors else 0
