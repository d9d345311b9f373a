"""Instruction counts of lorescan's hot paths, for before/after comparisons on a noisy machine.

Wall-clock medians move ±10 % with the machine's other work; instruction counts under callgrind
do not. Each figure is a run of the work minus a run of its set-up alone::

    python benchmarks/instructions.py                      # this checkout
    python benchmarks/instructions.py --root ../old-tree   # another checkout (a git worktree)
    python benchmarks/instructions.py --word-boundaries unicode   # the unicode word rule

The book and chat come from this checkout's ``generate.py`` whatever ``--root`` is, so two trees
are measured on the same data. Needs valgrind (Debian's ``valgrind`` package).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PARTS = {"load10k": 1, "compile10k": 1, "activate10k": 20, "replay10k": 100, "early10k": 20,   # work -> units it times
         "cold10k": 5, "small": 20}
#: on request (``--parts``): activations of the book without regex keys, in Latin or Cyrillic
#: letters (``benchdata.script_lore``), under the rule ``--word-boundaries`` names, each on a chat one
#: message longer (so each scans a message it has not seen); this checkout's benchmarks only
SCRIPT_PARTS = {"activate10k-latin": 20, "activate10k-cyrillic": 20}


def work(root: str, part: str, stage: int, word_boundaries: str = "sillytavern") -> None:
    """Set up (stage 0), or set up and do the work (stage 1), importing lorescan from ``root``;
    ``word_boundaries`` other than SillyTavern's is passed to ``compile`` (a checkout that knows it)."""
    sys.path[:0] = [root, str(HERE)]
    import generate as gen

    import lorescan
    import lorescan._jsregex
    from lorescan import Settings

    # Under callgrind a regex search runs ~50x slower and could pass the regex timeout, which gives
    # the regex up and changes the work that follows: no timeout here (the generated keys are tame).
    lorescan._jsregex.REGEX_TIMEOUT_SECONDS = 3600.0

    if part == "load10k":   # reading a world-info JSON file of 10,000 entries (a fresh process's)
        path = Path(tempfile.gettempdir()) / f"lorescan-instructions-{os.getpid()}.json"
        gen.write_book(path, 10_000)
        try:
            if stage:
                lorescan.load(path)
        finally:
            path.unlink()
        return
    if part == "small":
        small(lorescan, Settings, stage)
        return
    entries = gen.make_entries(10_000, 0)
    book = lorescan.Lorebook.from_entries(gen.BOOK_NAME, entries)
    s_on = Settings(world_info_recursive=True, world_info_depth=40, max_context=32768, world_info_budget=25,
                    world_info_match_whole_words=True)
    chat = gen.chat_messages(gen.make_chat(entries, 300, 0))
    if part in SCRIPT_PARTS:
        import benchdata as bd

        script = part.split("-")[1]
        bd.run_script(10_000, script, word_boundaries, True)    # compile and warm
        for point in range(bd.ACTIVATE_AT + 1, bd.ACTIVATE_AT + 1 + (SCRIPT_PARTS[part] if stage else 0)):
            bd.run_script(10_000, script, word_boundaries, True, point)
        return
    names = dict(user_name=gen.USER_NAME, char_name=gen.CHAR_NAME)
    options = {} if word_boundaries == "sillytavern" else {"word_boundaries": word_boundaries}
    if part == "compile10k":
        if stage:
            lorescan.compile([book], settings=s_on, **options)
        return
    lore = lorescan.compile([book], settings=s_on, **options)
    if part == "early10k":      # a chat's first generations: its first message (macros) in the window
        timed, rng = None, random.Random(1)
        for n in range(1, 11 + (PARTS[part] if stage else 0)):
            timed = lore.activate(chat[:n], settings=s_on, rng=rng, timed=timed, **names).timed
        return
    lore.activate(chat[:100], settings=s_on, rng=random.Random(1), **names)   # warm
    if stage and part == "activate10k":
        for _ in range(PARTS[part]):
            lore.activate(chat[:100], settings=s_on, rng=random.Random(1), **names)
    if stage and part == "cold10k":     # the key hits of every scanned piece forgotten before each
        for _ in range(PARTS[part]):
            for bound in list(lore._bound.values()):
                bound.hits_memo.clear()
                getattr(bound.main, "main_hits", {}).clear()    # the hits every pair of names shares
                bound.main.piece_memo.clear()
            lore.activate(chat[:100], settings=s_on, rng=random.Random(1), **names)
    if stage and part == "replay10k":
        timed, rng = None, random.Random(1)
        for n in range(101, 101 + PARTS[part]):
            timed = lore.activate(chat[:n], settings=s_on, rng=rng, timed=timed, **names).timed


def small(lorescan: Any, settings_class: Any, stage: int) -> None:
    """The bundled sample book (12 entries) and a 65-message chat of its sample's messages as dicts,
    as a frontend passes them: 20 activations of growing prefixes (fixed costs, and validating
    the messages, are most of such a small book's evaluation)."""
    corpora = HERE.parent / "corpora"
    book = lorescan.load(corpora / "saltmere.json").books[0]
    lines = (corpora / "saltmere-chat.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    chat = [json.loads(line) for line in lines] * 5
    given = json.loads((corpora / "saltmere-settings.json").read_text(encoding="utf-8"))
    settings = settings_class.model_validate({k: v for k, v in given.items() if k != "tokenizer"})
    lore = lorescan.compile([book], tokenizer=given["tokenizer"], settings=settings)
    names = dict(settings=settings, user_name="Rowan", char_name="Ines")
    lore.activate(chat[:45], rng=random.Random(45), **names)    # warm
    for n in range(46, 46 + (PARTS["small"] if stage else 0)):
        lore.activate(chat[:n], rng=random.Random(n), **names)


def count(root: str, part: str, stage: int, word_boundaries: str = "sillytavern") -> int:
    # a fixed string hash: set and dict layouts (and so the work) are the same in every run
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, "--work", part, str(stage), "--root", root,
                          "--word-boundaries", word_boundaries],
                         capture_output=True, text=True, check=True, env=env).stderr
    m = re.search(r"Collected : (\d+)", out)
    if m is None:
        raise SystemExit(f"callgrind printed no count for {part}: {out[-300:]}")
    return int(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=str(HERE.parent), help="the checkout whose lorescan is measured")
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=[*PARTS, *SCRIPT_PARTS])
    p.add_argument("--word-boundaries", default="sillytavern", choices=("sillytavern", "unicode"),
                   help="the word rule the book is compiled with (default: SillyTavern's)")
    p.add_argument("--work", nargs=2, metavar=("PART", "STAGE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.work:
        work(args.root, args.work[0], int(args.work[1]), args.word_boundaries)
        return
    figures = {}
    for part in args.parts:
        n = count(args.root, part, 1, args.word_boundaries) - count(args.root, part, 0, args.word_boundaries)
        units = {**PARTS, **SCRIPT_PARTS}[part]
        figures[part] = {"instructions": n, "per_unit": n / units}
        print(f"{part:12} {n / units / 1e6:10.2f} M instructions per unit", file=sys.stderr)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
