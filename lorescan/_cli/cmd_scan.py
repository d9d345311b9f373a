"""``lorescan scan``: which entries a piece of text would trigger, with the matched spans marked."""

from __future__ import annotations

import argparse
import json
import sys

from .._construct import make
from .common import add_book_args, open_inputs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="which entries a piece of text triggers, with matched spans",
                       description="Treats TEXT as the only chat message (no name prefix) and shows "
                                   "the entries it activates and where their keys matched, for tuning keys.")
    add_book_args(p, chat=False)
    p.add_argument("--text", required=True, help="the text to scan ('-' reads standard input)")
    p.add_argument("--json", action="store_true",
                   help="print JSON: the activated entries and, for each, its keys' matches")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._explain import explain
    from .._js import JS_WHITESPACE
    from .._model import ChatMessage

    inputs = open_inputs(args, need_chat=False)
    text = sys.stdin.read() if args.text == "-" else args.text
    inputs.settings = inputs.settings.model_copy(update={"world_info_include_names": False})
    chat = [make(ChatMessage, name="", mes=text)]
    result = inputs.activate(chat, trace=True)
    rows = []
    spans: list[tuple[int, int]] = []
    trimmed_at = len(text) - len(text.lstrip(JS_WHITESPACE))   # offsets are into the trimmed text
    for act in result.activated:
        exp = explain(inputs.lore, result, act.key, chat, settings=inputs.settings,
                      user_name=inputs.user_name, char_name=inputs.char_name, character=inputs.character,
                      text_label="the text")
        hits = []
        for m in exp.matches:
            if m.piece == "message" and m.counts and m.offset is not None and m.word is not None \
                    and m.kind != "blank":
                start = trimmed_at + m.offset
                length = len(m.word) if m.kind == "regex" else m.length if m.length is not None \
                    else len(m.key.strip())
                hits.append({"key": m.key, "role": m.role, "offset": start, "match": m.word,
                             "inside_word": m.inside_word})
                spans.append((start, start + length))
        rows.append({"entry": act.key, "why": exp.verdict, "keys": hits, "position": act.position})
    if args.json:
        print(json.dumps({"activated": result.activated_keys(), "entries": rows}, ensure_ascii=False))
        return 0
    if not rows:
        print("No entry activates on this text.")
        return 0
    print(_highlight(text, spans))
    print()
    for r in rows:
        print(f"{r['entry']}: {r['why']}")
    return 0


def _highlight(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with each matched span in [brackets] (merged where spans overlap)."""
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, pos = [], 0
    for a, b in merged:
        out.append(text[pos:a])
        out.append("[" + text[a:b] + "]")
        pos = b
    out.append(text[pos:])
    return "".join(out)
