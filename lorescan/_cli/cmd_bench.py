"""``lorescan bench``: time lorescan against the straightforward algorithm on generated books.

The generator and the baseline live in the source checkout's ``benchmarks/`` folder (they are not
part of the library, nor of the wheel); this command loads them from there and says so when they
are missing. Every figure is a median over ``--rounds`` runs with its interquartile range.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from .common import add_match_args, whole_number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmark lorescan against the straightforward algorithm",
                       description="Generates SillyTavern books of N entries and a chat, then times "
                                   "compiling, one activation (recursion off and on), replay per "
                                   "generation and the straightforward per-entry baseline on the same "
                                   "activation; prints medians, IQRs, the baseline/lorescan ratio and "
                                   "the memory of the compiled book. Needs a source checkout.")
    p.add_argument("--entries", type=whole_number(1), nargs="+", default=[10_000], metavar="N",
                   help="book sizes to measure (default: 10000)")
    p.add_argument("--messages", type=whole_number(1), default=200, metavar="M",
                   help="chat length; activations scan the last --depth messages (default: 200)")
    p.add_argument("--rounds", type=whole_number(1), default=5, metavar="R", help="timed runs per figure (default: 5)")
    p.add_argument("--depth", type=whole_number(0), default=40, help="world_info_depth, the scan window (default: 40)")
    p.add_argument("--replay-generations", type=whole_number(1), default=20, metavar="G",
                   help="generations timed per replay round: the chat's last G, after a freshly "
                        "compiled book has replayed the ones before, untimed (default: 20)")
    p.add_argument("--baseline-rounds", type=whole_number(0), default=None, metavar="B",
                   help="runs of the (slow) baseline (default: min(R, 3)); 0 skips it")
    p.add_argument("--tokenizer", default="cl100k", help="budget token counter (default: cl100k)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    add_match_args(p, card_books=False)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=run)


def _benchmarks_dir() -> Path:
    import lorescan

    return Path(lorescan.__file__).resolve().parents[1] / "benchmarks"


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _stats(samples: list[float]) -> dict[str, float]:
    med = statistics.median(samples)
    if len(samples) >= 2:
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    else:
        q1 = q3 = med
    return {"median": med, "iqr": q3 - q1, "min": min(samples), "rounds": len(samples)}


def _time(fn: Callable[[], Any], rounds: int) -> tuple[dict[str, float], Any]:
    samples, out = [], None
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - t0)
    return _stats(samples), out


def _memory(compile_once: Callable[[], Any]) -> dict[str, float]:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        lore = compile_once()
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del lore
    return {"peak_mb": peak / 2**20, "retained_mb": retained / 2**20}


def measure(n: int, args: argparse.Namespace, gen: ModuleType, base_mod: ModuleType | None,
            progress: Callable[[str], None]) -> dict[str, Any]:
    import lorescan
    from lorescan._replay import generation_points, replay

    entries = gen.make_entries(n, args.seed)
    book = lorescan.Lorebook.from_entries(gen.BOOK_NAME, entries)
    s_on = gen.bench_settings(recursive=True, depth=args.depth)
    s_off = gen.bench_settings(recursive=False, depth=args.depth)
    names = {"user_name": gen.USER_NAME, "char_name": gen.CHAR_NAME}
    from .. import _index

    # whether the optional C extension gates the passes (not built, or LORESCAN_NATIVE=0: Python)
    out: dict[str, Any] = {"entries": n, "messages": args.messages, "depth": args.depth,
                           "c_extension": _index.native is not None}

    progress(f"{n} entries: compile")
    out["compile"], lore = _time(lambda: lorescan.compile([book], settings=s_on, tokenizer=args.tokenizer,
                                                            word_boundaries=args.word_boundaries,
                                                            macro_engine=args.macro_engine),
                                 args.rounds)
    out["memory"] = _memory(lambda: lorescan.compile([book], settings=s_on, tokenizer=args.tokenizer,
                                                            word_boundaries=args.word_boundaries,
                                                            macro_engine=args.macro_engine))
    chat = gen.chat_messages(gen.make_chat(entries, args.messages, args.seed))
    results = {}
    for label, s in (("activate_flat", s_off), ("activate_recursive", s_on)):
        progress(f"{n} entries: {label}")
        lore.activate(chat, settings=s, rng=random.Random(1), **names)          # warm the caches
        out[label], res = _time(partial(_activate_once, lore, chat, s, names), args.rounds)
        out[label]["activated"] = len(res.activated)
        results[label] = res.activated_keys()
    all_points = generation_points(chat)
    points = all_points[-args.replay_generations:] if args.replay_generations > 0 else []
    if points:
        progress(f"{n} entries: replay")
        head = all_points[:len(all_points) - len(points)]
        samples, gens = [], []
        for _ in range(max(1, args.rounds)):
            # a replay in progress: a fresh book replays the generations before, untimed, then
            # the last ones are timed (each meets new messages and its own recursion texts)
            fresh = lorescan.compile([book], settings=s_on, tokenizer=args.tokenizer,
                                                            word_boundaries=args.word_boundaries,
                                                            macro_engine=args.macro_engine)
            rng, timed = random.Random(2), None
            for g in replay(fresh, chat, settings=s_on, rng=rng, points=head, **names):
                timed = g.result.timed
            t0 = time.perf_counter()
            gens = list(replay(fresh, chat, settings=s_on, rng=rng, timed=timed, points=points, **names))
            samples.append(time.perf_counter() - t0)
        out["replay_generation"] = {k: (v / len(points) if k in ("median", "iqr", "min") else v)
                                    for k, v in _stats(samples).items()}
        out["replay_generation"]["generations"] = len(gens)
    b_rounds = min(args.rounds, 3) if args.baseline_rounds is None else args.baseline_rounds
    if base_mod is not None and b_rounds > 0:
        progress(f"{n} entries: baseline")
        base = base_mod.Baseline([(gen.BOOK_NAME, entries)], tokenizer=args.tokenizer)
        out["baseline_recursive"], keys = _time(
            lambda: base.activate(chat, s_on, gen.USER_NAME, gen.CHAR_NAME, random.Random(1)), b_rounds)
        out["agrees"] = keys == results["activate_recursive"]
        out["ratio"] = out["baseline_recursive"]["median"] / out["activate_recursive"]["median"]
    return out


_ROWS = (("compile", "compile"), ("activate_flat", "activate, recursion off"),
         ("activate_recursive", "activate, recursion on"), ("replay_generation", "replay, per generation"),
         ("baseline_recursive", "baseline, recursion on"))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def render(figures: list[dict[str, Any]]) -> str:
    rows = [("entries", "measure", "median", "IQR", "rounds", "note")]
    for f in figures:
        for key, label in _ROWS:
            st = f.get(key)
            if st is None:
                continue
            note = ""
            if "activated" in st:
                note = f"{st['activated']} activated"
            if key == "replay_generation":
                note = f"{st['generations']} generations"
            if key == "baseline_recursive":
                note = "same result" if f.get("agrees") else "DIFFERENT RESULT (engine or baseline bug)"
            rows.append((f"{f['entries']:,}", label, _ms(st["median"]), _ms(st["iqr"]), str(st["rounds"]), note))
        if "ratio" in f:
            rows.append((f"{f['entries']:,}", "ratio baseline / lorescan", f"{f['ratio']:,.1f}x", "", "",
                         "recursion on"))
        m = f["memory"]
        rows.append((f"{f['entries']:,}", "memory, compiled book", f"{m['retained_mb']:,.1f} MB", "", "1",
                     f"peak {m['peak_mb']:,.1f} MB while compiling (tracemalloc)"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {2, 3, 4}
    lines = []
    for j, r in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    if figures:
        lines.append("engine: " + ("Python and its C extension" if figures[0].get("c_extension") else
                                   "Python only (the C extension is not built, or LORESCAN_NATIVE=0)"))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    folder = _benchmarks_dir()
    if not (folder / "generate.py").is_file() or not (folder / "baseline.py").is_file():
        print(f"lorescan: error: 'lorescan bench' needs a source checkout (benchmarks/generate.py and "
              f"baseline.py next to the lorescan package; not found in {folder})", file=sys.stderr)
        return 2
    gen = _import(folder / "generate.py", "_lorescan_bench_generate")
    base_mod = _import(folder / "baseline.py", "_lorescan_bench_baseline")

    def progress(msg: str) -> None:
        if not args.json:
            print(f"... {msg}", file=sys.stderr, flush=True)

    figures = [measure(n, args, gen, base_mod, progress) for n in args.entries]
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(render(figures))
    return 0 if all(f.get("agrees", True) for f in figures) else 1


def _activate_once(lore: Any, chat: list[Any], settings: Any, names: dict[str, str]) -> Any:
    """One timed activation, with the same seeded random source every round."""
    return lore.activate(chat, settings=settings, rng=random.Random(1), **names)
