"""Source trees' engines side by side, in process: milliseconds per generation, all trees at once.

The per-generation figure of #22's table (20,000 entries, recursion on, a 40-message window, each
generation meeting one new message): each tree runs in a process of its own, started together
with the others, so that every tree sees the same machine (this machine's speed drifts by a
fifth from one hour to the next, and its two cores are not always equally fast: run the trees in
both orders, ``--runs 2`` or more, and read the pairs). Each process imports its own tree's
code, C extension included (build it there first), compiles a ``generate.py`` book for
``bench_settings()``, and replays ``--chats`` chats in rotation, each a ``make_chat`` chat that
grows by one message per generation; after ``--warmup`` generations it freezes the collector (as
``lorescan serve`` and the CLI do) and times ``--generations`` more, one by one.

    python benchmarks/engine_ab.py OLD_TREE NEW_TREE                  # 20k entries, 2 runs
    python benchmarks/engine_ab.py TREE --entries 100000 --generations 2000

Every tree must activate the same entries (a digest of the activated keys is compared); the
script exits with status 1 when they differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def workload(generate: Any, lorescan: Any, entries: int, chats: int, warmup: int,
             generations: int) -> tuple[Any, Any, list[list[Any]]]:
    """The compiled ``generate.py`` book, its settings and the chats in rotation, each long enough
    for every generation to meet a new message: made with the measured tree's own modules."""
    book_entries = generate.make_entries(entries)
    settings = generate.bench_settings(recursive=True)
    lore = lorescan.compile([generate.make_book(entries)], tokenizer="cl100k", settings=settings)
    mentions = generate.mentions_of(book_entries)
    length = 10 + (warmup + generations) // chats + 1
    rotation = [generate.chat_messages(generate.make_chat(book_entries, length, seed=s, mentions=mentions))
                for s in range(chats)]
    return lore, settings, rotation


def workload_args(p: argparse.ArgumentParser, generations: int) -> None:
    """The trees and the work's options, shared with ``steps_ab.py``."""
    p.add_argument("trees", nargs="+", help="source checkouts (a tree with lorescan/ and benchmarks/)")
    p.add_argument("--entries", type=int, default=20_000)
    p.add_argument("--chats", type=int, default=200, help="chats in rotation")
    p.add_argument("--warmup", type=int, default=2_000, help="generations first, untimed")
    p.add_argument("--generations", type=int, default=generations, help="generations timed")
    p.add_argument("--runs", type=int, default=2, help="runs, the trees' order reversed each time")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)


def worker(tree: str, entries: int, chats: int, warmup: int, generations: int) -> dict[str, Any]:
    """One tree's figures (runs in its own process, with ``tree`` first on ``sys.path``)."""
    sys.path[:0] = [tree, str(Path(tree) / "benchmarks")]
    import gc
    import random

    import generate

    import lorescan
    from lorescan import _engine, _index

    lore, settings, rotation = workload(generate, lorescan, entries, chats, warmup, generations)
    digest = hashlib.sha256()
    activated = 0

    def generation(g: int) -> None:
        nonlocal activated
        chat = rotation[g % chats][:10 + g // chats]
        result = lore.activate(chat, settings=settings, user_name=generate.USER_NAME,
                               char_name=generate.CHAR_NAME, rng=random.Random(g))   # the same draws in every tree
        keys = result.activated_keys()
        activated += len(keys)
        digest.update(",".join(keys).encode() + b"\n")

    gc.set_threshold(*getattr(_engine, "OWNED_GC_THRESHOLDS", gc.get_threshold()))
    for g in range(warmup):
        generation(g)
    gc.freeze()
    activated = 0
    times = []
    for g in range(warmup, warmup + generations):
        started = time.perf_counter()
        generation(g)
        times.append(time.perf_counter() - started)
    return {"tree": tree, "native": _index.native is not None, "median_ms": statistics.median(times) * 1000,
            "mean_ms": statistics.fmean(times) * 1000, "activated": activated / generations,
            "digest": digest.hexdigest()[:16]}


def run(trees: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """One run: every tree's process started at once; their figures in the order given."""
    cmd = [sys.executable, __file__, "--worker", "--entries", str(args.entries), "--chats", str(args.chats),
           "--warmup", str(args.warmup), "--generations", str(args.generations)]
    procs = [subprocess.Popen([*cmd, tree], stdout=subprocess.PIPE, text=True, cwd=tree) for tree in trees]
    out = []
    for tree, proc in zip(trees, procs):
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"the engine of {tree} failed (exit status {proc.returncode})")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    workload_args(p, generations=4_000)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(str(Path(args.trees[0]).resolve()), args.entries, args.chats, args.warmup,
                                args.generations)))
        return {}
    trees = [str(Path(t).resolve()) for t in args.trees]
    runs = []
    for i in range(args.runs):
        order = trees if i % 2 == 0 else trees[::-1]
        got = {r["tree"]: r for r in run(order, args)}
        runs.append([got[t] for t in trees])
        print(f"run {i + 1}: " + "; ".join(f"{Path(r['tree']).name} {r['median_ms']:.3f} ms (mean "
                                          f"{r['mean_ms']:.3f})" for r in runs[-1]), flush=True)
    digests = {r["digest"] for rs in runs for r in rs}
    figures = {"runs": runs, "same_activations": len(digests) == 1,
               "activated": runs[0][0]["activated"]}
    print(f"{args.entries:,} entries, {args.chats} chats in rotation, {args.generations:,} generations timed "
          f"per run, {figures['activated']:.1f} entries activated on average; the same activations in every "
          f"tree and run: {'yes' if figures['same_activations'] else 'NO'}")
    for t in trees:
        medians = [r["median_ms"] for rs in runs for r in rs if r["tree"] == t]
        print(f"  {t}: median per generation {', '.join(f'{m:.3f}' for m in medians)} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if not figures["same_activations"]:
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
