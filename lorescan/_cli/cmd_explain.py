"""``lorescan explain``: why one entry did or did not activate at one generation of a chat."""

from __future__ import annotations

import argparse
import json

from .common import Inputs, add_book_args, open_inputs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="explain in plain words why an entry did or did not activate",
                       description="Replays the chat up to one generation (timed effects included) and "
                                   "explains one entry there: each gate, where each key matched, rolls "
                                   "and budget.")
    add_book_args(p)
    p.add_argument("--entry", required=True, metavar="UID",
                   help="the entry: <book>.<uid>, or just the uid when it is unambiguous")
    p.add_argument("--at", type=int, default=None, metavar="N",
                   help="generation number as `lorescan replay` numbers them, from 1 (default: the last)")
    p.add_argument("--json", action="store_true",
                   help="print the explanation as JSON (\"message\": the number of the message the "
                        "generation wrote, #1 being the first message of the chat)")
    p.set_defaults(func=run)


def resolve_entry(inputs: Inputs, wanted: str) -> str:
    from .._errors import LorescanError

    keys = [ce.key for ce in inputs.lore._all]
    if wanted in keys:
        return wanted
    matches = [k for k in keys if k.rsplit(".", 1)[-1] == wanted]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise LorescanError(f"no entry {wanted!r}; entries look like {keys[0] if keys else 'book.0'}",
                            field="--entry")
    raise LorescanError(f"uid {wanted!r} is in several books: {', '.join(matches)}", field="--entry")


def run(args: argparse.Namespace) -> int:
    from .._errors import LorescanError
    from .._explain import NUMBERING, explain
    from .._replay import generation_points

    inputs = open_inputs(args)
    key = resolve_entry(inputs, args.entry)
    points = generation_points(inputs.messages)
    if not points:
        points = [len(inputs.messages)]
    at = args.at if args.at is not None else len(points)
    if not 1 <= at <= len(points):
        raise LorescanError(f"generation {at} does not exist (the chat has {len(points)})", field="--at")
    timed = inputs.timed
    rng = inputs.rng()            # one random stream for the whole chat, as `lorescan replay` draws
    for index in points[: at - 1]:
        timed = inputs.activate(inputs.messages[:index], timed=timed, rng=rng).timed
    chat = inputs.messages[: points[at - 1]]
    result = inputs.activate(chat, timed=timed, trace=True, rng=rng)
    exp = explain(inputs.lore, result, key, chat, settings=inputs.settings, user_name=inputs.user_name,
                  char_name=inputs.char_name, character=inputs.character)
    written = points[at - 1] + 1          # the chat number of the message this generation wrote
    if args.json:
        print(json.dumps({"generation": at, "message": written, **exp.to_json()}, ensure_ascii=False))
        return 0
    print(f"{key} at generation {at}, before message #{written} ({NUMBERING})")
    print(exp.verdict)
    for line in exp.lines:
        print(f"  - {line}")
    for step in exp.steps:
        print(f"  · {step}")
    return 0
