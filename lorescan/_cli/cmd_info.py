"""``lorescan info``: what a file is — its format, books and entry counts, chat, character."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="what a lorebook, card or chat file is",
                       description="Detects FILE's format from its content and summarises it: books "
                                   "and entry counts, character card fields, chat messages, warnings.")
    p.add_argument("file", metavar="FILE", help="any supported lorebook, character card or chat file")
    p.add_argument("--json", action="store_true",
                   help='print JSON: {"format", "books": [{"name", "entries"}], "messages", ...}')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._load import describe, load

    summary = describe(load(args.file))
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return 0
    print(f"{args.file}: {summary['format']} ({summary['description']})")
    character = summary.get("character")
    if character:
        spec = f"{character['spec']} {character['spec_version']}" if character["spec"] else "V1 (no spec)"
        print(f"  character: {character['name']} [{spec}]")
        if character["tags"]:
            print(f"  tags: {', '.join(str(t) for t in character['tags'])}")
        if character["linked_book"]:
            print(f"  linked world: {character['linked_book']}")
    for book in summary["books"]:
        print(f"  book: {book['name']} ({book['scope']}): {book['entries']} entries")
    if "messages" in summary:
        hidden = f", {summary['hidden_messages']} hidden" if summary["hidden_messages"] else ""
        print(f"  chat: {summary['messages']} messages{hidden}; user {summary['user_name']!r}, "
              f"character {summary['character_name']!r}")
        if summary.get("chat_book"):
            print(f"  chat-bound book: {summary['chat_book']}")
        timed = summary.get("timed_effects")
        if timed:
            print(f"  timed effects: {timed['sticky']} sticky, {timed['cooldown']} cooldown")
    for warning in summary["warnings"]:
        print(f"  warning: {warning}")
    return 0
