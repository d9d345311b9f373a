"""Source trees' engine steps timed where they run: medians per generation of named steps, in situ.

Two engines side by side (``engine_ab.py``) disagree by up to a fifth on this machine, in both
directions: the machine's speed drifts and the two processes share its caches. A step's own time,
measured inside the generation loop, moves only a few per cent between runs, and most steps
that pay are a few per cent of a generation. So this runs ``engine_ab.py``'s work (20,000 entries,
recursion on, 200 chats in rotation, each generation meeting a new message) in one process per
tree, one tree after the other and then in the other order, and times every call of each named
step with ``perf_counter``: a function of the C extension (``activation_records``, ``spend_lines``)
or a Python function or method given as ``module:qualname`` (``lorescan._emit:emit``). A
generation's figure for a step is the sum of its calls in that generation; the figures are medians
over the timed generations. The wrappers add about a microsecond per call.

    python benchmarks/steps_ab.py OLD_TREE NEW_TREE --steps activation_records,spend_lines
    python benchmarks/steps_ab.py TREE --steps lorescan._emit:emit --generations 2000

Every tree must activate the same entries (a digest of the activated keys is compared); the
script exits with status 1 when they differ.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine_ab import workload, workload_args  # this checkout's: the measured tree's modules are passed to it


def _timed(f: Callable[..., Any], into: dict[str, float], name: str) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            into[name] += time.perf_counter() - started
    return timed


def _wrap(steps: list[str], into: dict[str, float]) -> None:
    """Replace each step by a timed one: C functions through a stand-in for the extension module
    (set before compiling, so every part of the engine that keeps the module gets it), Python ones
    where they are defined."""
    from lorescan import _construct, _index

    native = _index.native
    c_steps = [s for s in steps if ":" not in s]
    if c_steps:
        if native is None:
            raise SystemExit("the C extension is not built in this tree: name Python steps (module:qualname)")
        stand_in = types.SimpleNamespace(**{k: getattr(native, k) for k in dir(native) if not k.startswith("__")})
        for name in c_steps:
            if not callable(getattr(native, name, None)):
                raise SystemExit(f"the C extension has no function {name!r}")
            setattr(stand_in, name, _timed(getattr(native, name), into, name))
        _index.native = _construct.native = stand_in  # type: ignore[assignment]
    for name in steps:
        if ":" in name:
            _wrap_python(name, into)


def _wrap_python(name: str, into: dict[str, float]) -> None:
    """A Python function (everywhere the package's modules hold it) or method, timed."""
    module_name, _, qualname = name.partition(":")
    owner: Any = importlib.import_module(module_name)
    *path, attr = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    raw = vars(owner).get(attr)
    if isinstance(raw, (staticmethod, classmethod)):
        setattr(owner, attr, type(raw)(_timed(raw.__func__, into, name)))
    elif isinstance(raw, types.FunctionType):
        timed = _timed(raw, into, name)
        setattr(owner, attr, timed)
        if not path:        # a module's function: also where other modules imported it
            for module in list(sys.modules.values()):
                if getattr(module, "__name__", "").startswith("lorescan") and getattr(module, attr, None) is raw:
                    setattr(module, attr, timed)
    else:
        raise SystemExit(f"{name!r} is not a Python function or method defined there")


def worker(tree: str, steps: list[str], entries: int, chats: int, warmup: int, generations: int) -> dict[str, Any]:
    """One tree's figures (runs in its own process, with ``tree`` first on ``sys.path``)."""
    sys.path[:0] = [tree, str(Path(tree) / "benchmarks")]
    import gc
    import random

    import generate

    import lorescan
    from lorescan import _engine

    into = dict.fromkeys(steps, 0.0)
    _wrap(steps, into)
    lore, settings, rotation = workload(generate, lorescan, entries, chats, warmup, generations)
    digest = hashlib.sha256()
    per_step: dict[str, list[float]] = {s: [] for s in steps}
    times = []
    gc.set_threshold(*getattr(_engine, "OWNED_GC_THRESHOLDS", gc.get_threshold()))
    for g in range(warmup + generations):
        if g == warmup:
            gc.freeze()
        chat = rotation[g % chats][:10 + g // chats]
        for s in steps:
            into[s] = 0.0
        started = time.perf_counter()
        result = lore.activate(chat, settings=settings, user_name=generate.USER_NAME, char_name=generate.CHAR_NAME,
                               rng=random.Random(g))
        keys = result.activated_keys()
        took = time.perf_counter() - started
        if g >= warmup:
            times.append(took)
            for s in steps:
                per_step[s].append(into[s])
            digest.update(",".join(keys).encode() + b"\n")
    return {"tree": tree, "generation_us": statistics.median(times) * 1e6,
            "steps_us": {s: statistics.median(v) * 1e6 for s, v in per_step.items()},
            "digest": digest.hexdigest()[:16]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", required=True,
                   help="comma-separated: C extension functions, or Python ones as module:qualname")
    workload_args(p, generations=5_000)
    args = p.parse_args(argv)
    steps = [s for s in args.steps.split(",") if s]
    if args.worker:
        print(json.dumps(worker(str(Path(args.trees[0]).resolve()), steps, args.entries, args.chats, args.warmup,
                                args.generations)))
        return {}
    trees = [str(Path(t).resolve()) for t in args.trees]
    cmd = [sys.executable, __file__, "--worker", "--steps", ",".join(steps), "--entries", str(args.entries),
           "--chats", str(args.chats), "--warmup", str(args.warmup), "--generations", str(args.generations)]
    runs: list[list[dict[str, Any]]] = []
    for i in range(args.runs):
        got = {}
        for tree in (trees if i % 2 == 0 else trees[::-1]):     # one at a time: no shared caches
            done = subprocess.run([*cmd, tree], stdout=subprocess.PIPE, text=True, cwd=tree)
            if done.returncode != 0:
                raise SystemExit(f"the engine of {tree} failed (exit status {done.returncode})")
            got[tree] = json.loads(done.stdout.strip().splitlines()[-1])
            r = got[tree]
            print(f"run {i + 1}, {Path(tree).name}: generation {r['generation_us']:.0f} us; "
                  + "; ".join(f"{s} {v:.1f} us" for s, v in r["steps_us"].items()), flush=True)
        runs.append([got[t] for t in trees])
    same = len({r["digest"] for rs in runs for r in rs}) == 1
    figures = {"runs": runs, "same_activations": same}
    print(f"medians per generation over {args.generations:,} generations a run, {args.entries:,} entries; "
          f"the same activations in every tree and run: {'yes' if same else 'NO'}")
    for t in trees:
        mine = [r for rs in runs for r in rs if r["tree"] == t]
        print(f"  {t}: " + "; ".join(f"{s} " + ", ".join(f"{r['steps_us'][s]:.1f}" for r in mine) + " us"
                                     for s in steps))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if not same:
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
