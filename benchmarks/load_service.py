"""Open-loop load benchmark of ``lorescan serve``.

One server (started here, on a free loopback port, with a fresh data directory; ``--processes N``
runs it with that many service processes, and its CPU time and RSS are then summed over them) stores a
generated book (``generate.py``: 20,000 entries by default) and compiles it for the settings every
benchmark uses (recursion on, whole words, a 40-message window, cl100k tokens). Then, for each
rate: ``--sessions`` chats (200), each growing by one message per generation (from ``generate``'s
chats), send generations at a fixed total rate for ``--duration`` seconds. Requests leave on a
fixed schedule whatever the answers do (open loop), and each latency runs from the moment its
request was due, so a slow answer cannot hide the requests queued behind it.

Per rate it reports p50/p95/p99 latency, errors (any reply but 200 with a result, or no reply
within 10 s) and the server's peak RSS during the run (the kernel's high-water mark, reset before
each rate); and at the end the highest rate at which p99 stays under 50 ms with no errors. The
client is a small asyncio HTTP/1.1 client on keep-alive connections, light enough to leave the
server its core.

    python benchmarks/load_service.py                 # full: 20,000 entries, 200 sessions, 30 s per rate
    python benchmarks/load_service.py --quick         # a few seconds: 1,000 entries, 20 sessions, 2 s
    python benchmarks/load_service.py --rates 100 400 --json out.json

Run it from a source checkout with the ``serve`` extra installed. Linux only (it reads ``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import generate  # noqa: E402
from processes import ServedProcess  # noqa: E402

BOOK = "synth"
TIMEOUT = 10.0
TARGET_P99_MS = 50.0
MAX_CONNECTIONS = 256
WARMUP_RATE = 40.0


@dataclass
class RateResult:
    rate: float
    requests: int
    errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    achieved_rate: float
    peak_rss_mb: float
    server_cpu_ms: float
    error_kinds: dict[str, int]


# ---------------------------------------------------------------- the server

class ServerProcess(ServedProcess):
    """``lorescan serve`` on the data directory ``data`` (its log beside it)."""

    def __init__(self, data: Path, workers: int, processes: int = 1) -> None:
        super().__init__(["-m", "lorescan", "serve", "--port", "{port}", "--data", str(data), "--log-level", "warning",
                          "--workers", str(workers), "--processes", str(processes)], "/healthz",
                         data.parent / "serve.log")


def put_book(server: ServerProcess, data: bytes) -> dict[str, Any]:
    request = urllib.request.Request(server.url(f"/v1/books/{BOOK}?tokenizer=cl100k"), data=data, method="PUT")
    with urllib.request.urlopen(request, timeout=600) as reply:
        return json.loads(reply.read())


# ---------------------------------------------------------------- the client

class Client:
    """HTTP/1.1 POSTs on a pool of keep-alive connections (a new one when none is free). A request
    that finds its reused connection closed by the server (idle too long) is sent again on a new
    one, as browsers do; any other failure is an error."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.open = 0
        self.free = asyncio.Condition()

    async def _connection(self, fresh: bool) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        async with self.free:
            while not self.idle and self.open >= MAX_CONNECTIONS:
                await self.free.wait()
            if self.idle and not fresh:
                return (*self.idle.pop(), True)
            self.open += 1
        try:
            return (*await asyncio.open_connection("127.0.0.1", self.port), False)
        except OSError:
            await self._release(None, None)
            raise

    async def _release(self, reader: asyncio.StreamReader | None, writer: asyncio.StreamWriter | None,
                       keep: bool = False) -> None:
        async with self.free:
            if keep and reader is not None and writer is not None:
                self.idle.append((reader, writer))
            else:
                if writer is not None:
                    writer.close()
                self.open -= 1
            self.free.notify()

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        request = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % (path.encode(), len(body)) + body)
        for attempt in range(2):
            reader, writer, reused = await self._connection(fresh=attempt > 0)
            keep = False
            try:
                writer.write(request)
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError) as exc:
                    if reused and not getattr(exc, "partial", b""):
                        continue                    # closed while idle: send it again
                    raise
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                payload = await reader.readexactly(length)
                keep = True
                return status, payload
            finally:
                await self._release(reader, writer, keep)
        raise ConnectionError("the server closed a new connection without answering")

    async def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


class Chats:
    """Each session's chat, serialised once per message, and the body of its next generation."""

    def __init__(self, entries: list[dict[str, Any]], sessions: int, length: int, start: int, seed: int,
                 user_names: int = 1) -> None:
        settings = generate.bench_settings(recursive=True).model_dump()
        # each session's user (persona) name: one for all, or one of ``user_names``, as users' own
        self.prefixes = [json.dumps({"stored_books": [BOOK], "settings": settings, "tokenizer": "cl100k",
                                     "user_name": user_name(s, user_names), "char_name": generate.CHAR_NAME})[:-1]
                         for s in range(sessions)]
        self.messages = [[json.dumps({"name": m["name"], "is_user": m["is_user"], "mes": m["mes"]})
                          for m in generate.make_chat(entries, length, seed=seed * 10_000 + s)]
                         for s in range(sessions)]
        self.start = start

    def body(self, tag: str, session: int, generation: int) -> bytes:
        chat = self.messages[session][:self.start + generation]
        return (f'{self.prefixes[session]},"session":"{tag}-{session}","chat":[' + ",".join(chat) + "]}").encode()


def user_name(session: int, user_names: int) -> str:
    """The user name of a session: the generator's, or with ``user_names`` above 1 one of as many."""
    return generate.USER_NAME if user_names <= 1 else f"{generate.USER_NAME} {session % user_names}"


async def run_rate(port: int, chats: Chats, tag: str, rate: float, duration: float,
                   sessions: int) -> tuple[list[float], Counter[str]]:
    """Send ``rate`` generations per second for ``duration`` seconds; latencies (s) and errors by kind."""
    client = Client(port)
    loop = asyncio.get_running_loop()
    total = int(rate * duration)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    generation = [0] * sessions

    async def one(body: bytes, due: float) -> None:
        try:
            status, payload = await asyncio.wait_for(client.post("/v1/activate", body), TIMEOUT)
            if status != 200 or not payload.startswith(b'{"result":'):
                errors[f"HTTP {status}: {payload[:120].decode(errors='replace')}"] += 1
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            errors[type(exc).__name__] += 1
        latencies.append(loop.time() - due)

    tasks = []
    # the client's own collector stays off while it sends: a full collection of this process paused
    # it for 60-130 ms (seen with gc.callbacks), and every request due meanwhile would have counted
    # the pause as the server's latency
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        start = loop.time() + 0.05
        for k in range(total):
            due = start + k / rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            s = k % sessions
            generation[s] += 1
            tasks.append(asyncio.ensure_future(one(chats.body(tag, s, generation[s]), due)))
        await asyncio.gather(*tasks)
    finally:
        gc.enable()
    await client.close()
    return latencies, errors


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]     # nearest rank


def agrees(server: ServerProcess, chats: Chats, data: bytes) -> bool:
    """Whether the service's answer to one generation equals the library's, in this process."""
    import lorescan
    from lorescan._load import load_bytes
    from lorescan._results import result_json

    body = json.loads(chats.body("check", 0, 1))
    del body["session"]
    request = urllib.request.Request(server.url("/v1/activate"), data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        got = json.loads(reply.read())["result"]
    lore = lorescan.compile(load_bytes(data, BOOK, name=BOOK).books, tokenizer="cl100k")
    want = result_json(lore.activate([lorescan.ChatMessage(**m) for m in body["chat"]],
                                     settings=lorescan.Settings(**body["settings"]), user_name=body["user_name"],
                                     char_name=generate.CHAR_NAME, rng=_Zeros()))
    return bool(got == want and got["activated"])


class _Zeros:
    """The service's draws without a seed or a random list: every one is 0."""

    def random(self) -> float:
        return 0.0


def compiled_size_mb(data: bytes) -> float:
    """The parsed and compiled book's memory, measured here (tracemalloc) as the service builds it."""
    import lorescan
    from lorescan._load import load_bytes

    gc.collect()
    tracemalloc.start()
    book = load_bytes(data, BOOK, name=BOOK).books[0]
    lore = lorescan.compile([book], tokenizer="cl100k", settings=generate.bench_settings(recursive=True))
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del lore, book
    return size / 1e6


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1,000 entries, 20 sessions, 2 s at 50/s (CI)")
    p.add_argument("--entries", type=int, default=20_000)
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--duration", type=float, default=30.0, help="seconds per rate")
    p.add_argument("--rates", type=float, nargs="+", default=[100, 200, 300, 400, 500, 600])
    p.add_argument("--start", type=int, default=10, help="messages in each chat before the first generation")
    p.add_argument("--workers", type=int, default=4, help="the server's --workers")
    p.add_argument("--processes", type=int, default=1,
                   help="the server's --processes (its CPU and RSS are then summed over its processes)")
    p.add_argument("--warmup", type=float, default=20.0, metavar="SECONDS",
                   help="generations at 40/s first, on other chats: the compiled book builds what it builds on "
                        "first use (regex keys, entry records) and the first messages are scanned")
    p.add_argument("--user-names", type=int, default=1, metavar="N",
                   help="the sessions' user names: one for all (the default), or N of them, session by session "
                        "(users with personas of their own on one stored book)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)
    if args.quick:
        args.entries, args.sessions, args.duration, args.rates, args.warmup = 1000, 20, 2.0, [50.0], 1.0
    entries = generate.make_entries(args.entries, seed=1)
    data = json.dumps({"entries": {str(e["uid"]): e for e in entries}}, ensure_ascii=False).encode()
    longest = args.start + int(max(max(args.rates) * args.duration, WARMUP_RATE * args.warmup) / args.sessions) + 2
    # new chats for every run (a message's key hits are computed once, as in a real chat)
    chats = [Chats(entries, args.sessions, longest, args.start, seed, args.user_names)
             for seed in range(len(args.rates) + 1)]
    with tempfile.TemporaryDirectory(prefix="lorescan-load-") as tmp:
        server = ServerProcess(Path(tmp) / "data", args.workers, args.processes)
        try:
            idle = server.status()
            stored = put_book(server, data)
            time.sleep(0.5)                     # the reply is sent before the freed memory is handed back
            stored_rss = server.status()
            same = agrees(server, chats[0], data)
            warm, warm_errors = asyncio.run(run_rate(server.port, chats[0], "warm", WARMUP_RATE, args.warmup,
                                                     args.sessions))
            warm_ms = [x * 1000 for x in warm]
            print(f"warm-up: {len(warm)} generations at {WARMUP_RATE:g}/s, p50 {percentile(warm_ms, 50):.1f} ms, "
                  f"p99 {percentile(warm_ms, 99):.1f} ms, {sum(warm_errors.values())} errors", flush=True)
            warmed = server.status()
            results = []
            for n, rate in enumerate(args.rates, 1):
                server.reset_peak()
                cpu = server.cpu_seconds()
                lat, errors = asyncio.run(run_rate(server.port, chats[n], f"r{rate:g}", rate, args.duration,
                                                   args.sessions))
                cpu = (server.cpu_seconds() - cpu) * 1000 / max(1, len(lat))
                ms = [x * 1000 for x in lat]
                results.append(RateResult(rate, len(lat), sum(errors.values()), percentile(ms, 50),
                                          percentile(ms, 95), percentile(ms, 99), max(ms), len(lat) / args.duration,
                                          server.status()["VmHWM"] / 1024, cpu, dict(errors)))
                print(_row(results[-1]), flush=True)
        finally:
            server.stop()
    ok = [r.rate for r in results if r.p99_ms < TARGET_P99_MS and r.errors == 0]
    figures = {"entries": args.entries, "sessions": args.sessions, "duration_s": args.duration,
               "processes": args.processes, "os_processes": warmed["processes"],
               "book_bytes": len(data), "stored_entries": stored["entries"], "agrees_with_library": same,
               "warmup": {"seconds": args.warmup, "rate": WARMUP_RATE, "p50_ms": percentile(warm_ms, 50),
                          "p99_ms": percentile(warm_ms, 99)},
               "warm_errors": sum(warm_errors.values()),
               "idle_rss_mb": idle["VmRSS"] / 1024, "rss_after_put_mb": stored_rss["VmRSS"] / 1024,
               "peak_rss_during_put_mb": stored_rss["VmHWM"] / 1024, "rss_after_warmup_mb": warmed["VmRSS"] / 1024,
               "rates": [asdict(r) for r in results], "highest_rate_p99_under_50ms": max(ok) if ok else None}
    if not args.quick:
        figures["compiled_book_mb"] = compiled_size_mb(data)
    print(f"server RSS: idle {figures['idle_rss_mb']:.0f} MB; after storing the book {figures['rss_after_put_mb']:.0f} "
          f"MB (peak while storing {figures['peak_rss_during_put_mb']:.0f} MB); after the warm-up "
          f"{figures['rss_after_warmup_mb']:.0f} MB"
          + (f"; the compiled book alone {figures['compiled_book_mb']:.0f} MB"
             if "compiled_book_mb" in figures else ""))
    print(f"highest rate with p99 < {TARGET_P99_MS:g} ms and no errors: {figures['highest_rate_p99_under_50ms']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return figures


def _row(r: RateResult) -> str:
    return (f"rate {r.rate:>5g}/s: {r.requests} requests ({r.achieved_rate:.0f}/s), {r.errors} errors, "
            f"p50 {r.p50_ms:.1f} ms, p95 {r.p95_ms:.1f} ms, p99 {r.p99_ms:.1f} ms, max {r.max_ms:.0f} ms, "
            f"peak RSS {r.peak_rss_mb:.0f} MB, server CPU {r.server_cpu_ms:.2f} ms per request"
            + (f" {r.error_kinds}" if r.error_kinds else ""))


if __name__ == "__main__":
    main()
