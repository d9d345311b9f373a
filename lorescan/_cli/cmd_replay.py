"""``lorescan replay``: replay a chat and show, per generation, what the lorebooks put where."""

from __future__ import annotations

import argparse
import json
import sys

from .._replay import NUMBERING
from .common import add_book_args, open_inputs
from .render import NBSP, Table, position_label, print_wrapped, progress_bar
from .replay_batch import add_batch_args, run_batch

POSITIONS = ("before", "after", "an_top", "an_bottom", "em", "depth", "outlets")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a chat: what activated before each character message, and where it landed",
        description="Replays a chat as it was written: before each character message, runs the engine "
                    "on every message before it, carrying sticky/cooldown state from one generation "
                    "to the next. With --chats, replays many chats (on every core, or a Dask cluster) "
                    "and reports per entry, book and chat what fired, what the budget cut and what "
                    "held entries back.",
    )
    add_book_args(p, chat_required=False)
    p.add_argument("--json", action="store_true",
                   help="one JSON object per generation, oldest first (conformance shape plus budget); "
                        "with --chats, one JSON report")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    add_batch_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._errors import LorescanError
    from .._replay import generation_points, replay

    if args.chats:
        if args.chat:
            raise LorescanError("give --chat (one chat) or --chats (many), not both")
        return run_batch(args)
    if not args.chat:
        raise LorescanError("a chat is required (--chat, or --chats for many)")
    for flag in ("jobs", "dask", "diff", "csv", "html"):
        if getattr(args, flag) not in (None, False):
            raise LorescanError(f"--{flag} is for --chats (a batch of chats)")
    if args.strict:
        raise LorescanError("--strict is for --chats (a batch of chats)")

    inputs = open_inputs(args)
    points = generation_points(inputs.messages)
    show_progress = args.progress and len(points) >= 50 and sys.stderr.isatty()
    bar = progress_bar(len(points)) if show_progress else None
    gens = replay(inputs.lore, inputs.messages, settings=inputs.settings, user_name=inputs.user_name,
                  char_name=inputs.char_name, character=inputs.character, timed=inputs.timed,
                  rng=inputs.rng(), progress=bar.update if bar else None)
    if args.json:
        for n, gen in enumerate(gens, 1):
            print(json.dumps({"generation": n, "message": gen.index + 1, **_without_index(gen.to_json())},
                             ensure_ascii=False))
        if bar:
            bar.close()
        return 0
    table = Table(["gen", "msg", "activated (position)", "new", "gone", "budget"],
                  title=f"Replay of {args.chat}: {_count(len(points), 'generation')}, "
                        f"{len(inputs.books)} book(s), SillyTavern {inputs.lore.mode.shown}")
    total = 0
    for n, gen in enumerate(gens, 1):
        r = gen.result
        total += len(r.activated)
        acts = ", ".join(f"{a.key} ({position_label(a.position)})".replace(" ", NBSP) for a in r.activated) or "-"
        budget = f"{r.budget_used}/{r.budget}" + (" OVERFLOW" if r.overflowed else "")
        table.add([str(n), str(gen.index + 1), acts, ", ".join(gen.new) or "-", ", ".join(gen.gone) or "-", budget])
    if bar:
        bar.close()
    table.print()
    print(f"{_count(len(points), 'generation')}, {_count(total, 'activation')} in all.")
    print_wrapped(f"msg: the message each generation wrote ({NUMBERING}).")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _without_index(obj: dict) -> dict:
    """``Generation.to_json`` without its 0-based ``generation`` index (replaced by 1-based numbers)."""
    obj.pop("generation", None)
    return obj
