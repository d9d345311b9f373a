"""A reproducible corpus for batch replay: the 20,000-entry benchmark book, its settings, and
chats of 50 messages written as SillyTavern ``.jsonl`` files (100 per folder).

    python benchmarks/batch_corpus.py DIR [--chats 10000] [--messages 50] [--entries 20000]

The same arguments write the same bytes on every machine (``generate.py``'s seeded generators):
chat ``i`` is ``make_chat(entries, messages, seed=i)``. An existing corpus with the same
arguments (``corpus.json``) is kept as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import generate as gen  # noqa: E402

PER_FOLDER = 100


def write_corpus(root: str | Path, chats: int = 10_000, messages: int = 50, entries: int = 20_000,
                 seed: int = 0) -> dict[str, Any]:
    """Write (or keep) the corpus under ``root``; returns its description (``corpus.json``)."""
    root = Path(root)
    meta = {"chats": chats, "messages": messages, "entries": entries, "seed": seed,
            "book": "book.json", "settings": "settings.json", "chat_dir": "chats"}
    done = root / "corpus.json"
    if done.exists() and json.loads(done.read_text()) == meta:
        return meta
    root.mkdir(parents=True, exist_ok=True)
    book = gen.make_entries(entries, seed)
    gen.write_book(root / "book.json", entries=book)
    s = gen.bench_settings(True)
    (root / "settings.json").write_text(json.dumps(s.model_dump(mode="json")), encoding="utf-8")
    mentions = gen.mentions_of(book)
    header = json.dumps({"user_name": gen.USER_NAME, "character_name": gen.CHAR_NAME, "chat_metadata": {}})
    for i in range(chats):
        folder = root / "chats" / f"{i // PER_FOLDER:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [header, *(json.dumps(m, ensure_ascii=False)
                           for m in gen.make_chat(book, messages, seed=i, mentions=mentions))]
        (folder / f"chat-{i:06d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done.write_text(json.dumps(meta), encoding="utf-8")
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root")
    p.add_argument("--chats", type=int, default=10_000)
    p.add_argument("--messages", type=int, default=50)
    p.add_argument("--entries", type=int, default=20_000)
    args = p.parse_args(argv)
    meta = write_corpus(args.root, args.chats, args.messages, args.entries)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
