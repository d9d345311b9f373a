"""The proxy's added latency: a chat completion through ``lorescan serve --upstream`` against the
same completion sent straight to the upstream, on loopback.

Two processes are started here: the fake upstream (``tests/fake_upstream.py``, which answers at
once) and ``lorescan serve --upstream`` on a fresh data directory, with a generated book
(``generate.py``: 20,000 entries by default) stored and compiled for the settings every benchmark
uses (recursion on, whole words, a 40-message window, cl100k tokens). ``--sessions`` chats (20)
each grow by one message per generation, and every generation is sent four ways, one after
another (closed loop, interleaved so that both sides see the same machine): straight to the
upstream and through the proxy (its header names the book, the settings and the chat's session),
each non-streaming (time to the whole answer) and streaming (time to the first chunk). The proxy
side also runs the activation, the session's read and write, the placement and the plugins (the
built-in metrics). A request without a header (passed through untouched) is timed too.

    python benchmarks/proxy_latency.py                 # 20,000 entries, 1,000 generations
    python benchmarks/proxy_latency.py --quick         # a few seconds: 1,000 entries, 40 generations
    python benchmarks/proxy_latency.py --recursion off --json out.json

Run it from a source checkout with the ``serve`` and ``test`` extras installed (it sends its requests
with httpx).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import generate  # noqa: E402
import httpx  # noqa: E402
from processes import ServedProcess  # noqa: E402

BOOK = "synth"
MODEL = "bench"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")   # nearest rank


def timed_post(client: httpx.Client, url: str, body: bytes) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    reply = client.post(url, content=body, headers={"Content-Type": "application/json"})
    return time.perf_counter() - started, reply


def first_chunk(client: httpx.Client, url: str, body: bytes) -> float:
    """Seconds to the first chunk of a streamed answer (the rest is read, untimed)."""
    started = time.perf_counter()
    with client.stream("POST", url, content=body, headers={"Content-Type": "application/json"}) as reply:
        chunks = reply.iter_raw()
        first = next(chunks)
        elapsed = time.perf_counter() - started
        if reply.status_code != 200 or not first.startswith(b"data:"):
            raise RuntimeError(f"HTTP {reply.status_code}: {first[:200]!r}")
        for _ in chunks:
            pass
    return elapsed


class Generations:
    """Each session's chat as OpenAI messages, and the bodies of its next generation."""

    def __init__(self, entries: list[dict[str, Any]], sessions: int, length: int, recursive: bool) -> None:
        self.header = {"books": [BOOK], "settings": generate.bench_settings(recursive=recursive).model_dump(),
                       "tokenizer": "cl100k", "user": generate.USER_NAME, "char": generate.CHAR_NAME}
        self.chats = [[{"role": "user" if m["is_user"] else "assistant", "content": m["mes"]}
                       for m in generate.make_chat(entries, length, seed=100 + s)] for s in range(sessions)]

    def activation(self, session: int, generation: int) -> bytes:
        """The same generation as a ``POST /v1/activate`` body (on a session of its own)."""
        h = self.header
        return json.dumps({"stored_books": h["books"], "settings": h["settings"], "tokenizer": h["tokenizer"],
                           "user_name": h["user"], "char_name": h["char"], "session": f"activate-{session}",
                           "chat": self.chats[session][:generation]}).encode()

    def bodies(self, session: int, generation: int, stream: bool) -> tuple[bytes, bytes, bytes]:
        """(straight to the upstream, through the proxy with a header, through it without one)."""
        chat = self.chats[session][:generation]
        system = {"role": "system", "content": f"You are {generate.CHAR_NAME}."}
        header = {"role": "system", "content": "LORESCAN_SYSTEM " + json.dumps(
            {**self.header, "session": f"bench-{session}"})}
        plain = {"model": MODEL, "stream": stream, "messages": [system, *chat]}
        lore = {**plain, "messages": [header, system, *chat]}
        return json.dumps(plain).encode(), json.dumps(lore).encode(), json.dumps(plain).encode()


def summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {"p50_ms": round(statistics.median(ms), 3), "p99_ms": round(percentile(ms, 99), 3),
            "mean_ms": round(statistics.fmean(ms), 3)}


def measure(upstream: str, proxy: str, gens: Generations, count: int, start: int, warm: int) -> dict[str, Any]:
    names = ("direct", "proxy", "passthrough", "direct_ttfc", "proxy_ttfc", "activate")
    times: dict[str, list[float]] = {k: [] for k in names}
    activated = 0
    sessions = len(gens.chats)
    with httpx.Client(timeout=60) as client:
        for k in range(warm + count):
            session, generation = k % sessions, start + k // sessions
            direct, lore, plain = gens.bodies(session, generation, stream=False)
            d, got = timed_post(client, upstream + "/chat/completions", direct)
            p, via = timed_post(client, proxy + "/chat/completions", lore)
            t, passed = timed_post(client, proxy + "/chat/completions", plain)
            a, act = timed_post(client, proxy + "/activate", gens.activation(session, generation))
            for reply in (got, via, passed, act):
                if reply.status_code != 200:
                    raise RuntimeError(f"HTTP {reply.status_code}: {reply.text[:300]}")
            s_direct, s_lore, _ = gens.bodies(session, generation, stream=True)
            dt = first_chunk(client, upstream + "/chat/completions", s_direct)
            pt = first_chunk(client, proxy + "/chat/completions", s_lore)
            if k >= warm:
                for name, value in (("direct", d), ("proxy", p), ("passthrough", t), ("direct_ttfc", dt),
                                    ("proxy_ttfc", pt), ("activate", a)):
                    times[name].append(value)
                activated += len([x for x in via.headers["x-lorescan-activated"].split(",") if x])
    out: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    for side, base in (("proxy", "direct"), ("passthrough", "direct"), ("proxy_ttfc", "direct_ttfc")):
        out[f"added_{side}"] = {k: round(out[side][k] - out[base][k], 3) for k in ("p50_ms", "p99_ms")}
    out["mean_activated"] = round(activated / max(1, count), 1)
    return out


def cpu_per_request(server: ServedProcess, upstream: str, proxy: str, gens: Generations, count: int,
                    start: int) -> dict[str, float]:
    """The server's CPU milliseconds per request, one kind of request at a time (``count`` each, on
    generations the timed run did not send): what the machine's load does not change much."""
    out: dict[str, float] = {}
    sessions = len(gens.chats)
    kinds = (("proxy", lambda s, g: (proxy + "/chat/completions", gens.bodies(s, g, stream=False)[1])),
             ("passthrough", lambda s, g: (proxy + "/chat/completions", gens.bodies(s, g, stream=False)[2])),
             ("activate", lambda s, g: (proxy + "/activate", gens.activation(s, g))))
    with httpx.Client(timeout=60) as client:
        for name, make in kinds:
            if not Path(f"/proc/{server.proc.pid}/stat").exists():
                return {}
            before = server.cpu_seconds()
            for k in range(count):
                url, body = make(k % sessions, start + k // sessions)
                if client.post(url, content=body, headers={"Content-Type": "application/json"}).status_code != 200:
                    raise RuntimeError(f"{name}: not 200")
            out[f"{name}_cpu_ms"] = round((server.cpu_seconds() - before) * 1000 / count, 3)
    return out


def activate_alone(proxy: str, gens: Generations) -> list[str]:
    """What ``POST /v1/activate`` activates for the first session's first generation (no session)."""
    chat = gens.chats[0][:2]
    h = gens.header
    body = {"stored_books": h["books"], "settings": h["settings"], "tokenizer": h["tokenizer"], "user_name": h["user"],
            "char_name": h["char"], "chat": chat}
    reply = httpx.post(proxy.removesuffix("/v1") + "/v1/activate", json=body, timeout=60)
    activated: list[str] = reply.json()["result"]["activated"]
    return activated


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1,000 entries, 40 generations (CI)")
    p.add_argument("--entries", type=int, default=20_000)
    p.add_argument("--generations", type=int, default=1000)
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--start", type=int, default=10, help="messages in each chat before the first generation")
    p.add_argument("--warmup", type=int, default=100, help="generations first, not timed")
    p.add_argument("--recursion", choices=("on", "off"), default="on")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)
    if args.quick:
        args.entries, args.generations, args.warmup, args.sessions = 1000, 40, 4, 4
    entries = generate.make_entries(args.entries, seed=1)
    data = json.dumps({"entries": {str(e["uid"]): e for e in entries}}, ensure_ascii=False).encode()
    cpu_count = max(20, args.generations // 5)
    timed_end = args.start + (args.generations + args.warmup) // args.sessions + 1
    length = timed_end + cpu_count // args.sessions + 2
    gens = Generations(entries, args.sessions, length, args.recursion == "on")
    with tempfile.TemporaryDirectory(prefix="lorescan-proxy-") as tmp:
        upstream = ServedProcess(["-m", "tests.fake_upstream", "{port}"], "/v1/models", Path(tmp) / "upstream.log")
        try:
            server = ServedProcess(["-m", "lorescan", "serve", "--port", "{port}", "--data", str(Path(tmp) / "data"),
                              "--log-level", "warning", "--upstream", upstream.base + "/v1"], "/healthz",
                             Path(tmp) / "serve.log")
            try:
                put = httpx.put(f"{server.base}/v1/books/{BOOK}?tokenizer=cl100k", content=data, timeout=600)
                put.raise_for_status()
                figures = measure(upstream.base + "/v1", server.base + "/v1", gens, args.generations, args.start,
                                  args.warmup)
                figures["first_activation"] = activate_alone(server.base + "/v1", gens)
                figures["server_cpu"] = cpu_per_request(server, upstream.base + "/v1", server.base + "/v1",
                                                        gens, cpu_count, timed_end)
            finally:
                server.stop()
        finally:
            upstream.stop()
    figures.update(entries=args.entries, generations=args.generations, recursion=args.recursion,
                   sessions=args.sessions)
    report(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return figures


def report(f: dict[str, Any]) -> None:
    print(f"{f['entries']:,} entries, recursion {f['recursion']}, {f['generations']} generations over "
          f"{f['sessions']} sessions, {f['mean_activated']} entries activated on average")
    print(f"{'':34} {'p50':>9} {'p99':>9}")
    rows = (("straight to the upstream", "direct"), ("through the proxy", "proxy"),
            ("  added", "added_proxy"), ("through it, no header", "passthrough"), ("  added", "added_passthrough"),
            ("POST /v1/activate, same generation", "activate"),
            ("first chunk, straight", "direct_ttfc"), ("first chunk, through the proxy", "proxy_ttfc"),
            ("  added", "added_proxy_ttfc"))
    for label, key in rows:
        print(f"{label:34} {f[key]['p50_ms']:8.2f}ms {f[key]['p99_ms']:8.2f}ms")
    cpu = f["server_cpu"]
    if cpu:
        print(f"server CPU per request: {cpu['proxy_cpu_ms']:.2f} ms through the proxy, {cpu['activate_cpu_ms']:.2f} "
              f"ms for POST /v1/activate, {cpu['passthrough_cpu_ms']:.2f} ms passed through")


if __name__ == "__main__":
    main()
