"""``lorescan scan``: which entries a piece of text would trigger, with the matched spans marked."""

from __future__ import annotations

import argparse
import json
import sys

from .common import add_book_args, open_inputs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="which entries a piece of text triggers, with matched spans",
                       description="Treats TEXT as the newest chat message (no name prefix) and shows "
                                   "the entries it activates and where their keys matched, for tuning keys.")
    add_book_args(p, chat=False)
    p.add_argument("--text", required=True, help="the text to scan ('-' reads standard input)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._js import nullish, truthy
    from .._explain import find_key
    from .._macros import MacroEnv
    from .._model import ChatMessage

    inputs = open_inputs(args, need_chat=False)
    text = sys.stdin.read() if args.text == "-" else args.text
    inputs.settings = inputs.settings.model_copy(update={"world_info_include_names": False})
    result = inputs.activate([ChatMessage(name="", mes=text)], trace=True)
    env = MacroEnv(user=inputs.user_name, char=inputs.char_name)
    s = inputs.settings
    rows = []
    spans: list[tuple[int, int]] = []
    for act in result.activated:
        ce = next(c for c in inputs.lore._all if c.key == act.key)
        cs = truthy(nullish(ce.case_sensitive, s.world_info_case_sensitive))
        ww = truthy(nullish(ce.match_whole_words, s.world_info_match_whole_words))
        hits = []
        for k in ce.keys if isinstance(ce.keys, list) else []:
            for m in find_key(k, [text], 1, env, cs, ww):
                if m.offset is not None and m.word is not None and m.kind != "empty":
                    hits.append({"key": k, "offset": m.offset, "match": m.word, "inside_word": m.inside_word})
                    key_len = len(m.word) if m.kind == "regex" else len(k.strip())
                    spans.append((m.offset, m.offset + key_len))
        why = next((e["why"] for e in result.trace or [] if e.get("entry") == act.key
                    and e["event"] == "candidate"), "")
        rows.append({"entry": act.key, "why": why, "keys": hits, "position": act.position})
    if args.json:
        print(json.dumps({"activated": result.activated_keys(), "entries": rows}, ensure_ascii=False))
        return 0
    if not rows:
        print("No entry activates on this text.")
        return 0
    print(_highlight(text, spans))
    print()
    for r in rows:
        where = ", ".join(f"{h['key']!r}→{h['match']!r}@{h['offset']}" + (" (inside a word)" if h["inside_word"] else "")
                          for h in r["keys"])
        print(f"{r['entry']}: {r['why']}" + (f" [{where}]" if where else ""))
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
