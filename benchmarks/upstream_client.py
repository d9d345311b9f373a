"""What the proxy's HTTP client costs per request: ``lorescan._service.upstream.UpstreamPool``
against httpx's ``AsyncHTTPTransport`` (what the proxy used before), on loopback.

The fake upstream (``tests/fake_upstream.py``) runs as a process of its own; this process sends it
``--requests`` chat completions (a ~24 KB body, one at a time over a kept-alive connection) with
each client in turn, twice, and reports per request the client's CPU time (this process's, which
the upstream's work does not enter) and the wall-clock time, as medians of the rounds.

    python benchmarks/upstream_client.py                  # 1,000 requests per round
    python benchmarks/upstream_client.py --requests 200 --rounds 3

Needs the ``serve`` extra, and httpx (the ``test`` extra) for the comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lorescan._service.upstream import UpstreamPool  # noqa: E402
from tests.fake_upstream import free_port  # noqa: E402

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello " * 400}] * 10}).encode()
HEADERS = [(b"content-type", b"application/json"), (b"authorization", b"Bearer sk-bench")]


async def via_httpx(url: str, n: int) -> None:
    import httpx

    transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))
    limit = {"timeout": {"connect": 30.0, "read": 30.0, "write": 30.0, "pool": 30.0}}
    for _ in range(n):
        reply = await transport.handle_async_request(httpx.Request("POST", url, content=BODY, headers=HEADERS,
                                                                   extensions=limit))
        data = await reply.aread()
        await reply.aclose()
        if reply.status_code != 200 or not data:
            raise RuntimeError(f"httpx: HTTP {reply.status_code}")
    await transport.aclose()


async def via_pool(url: str, n: int) -> None:
    pool = UpstreamPool(30.0)
    for _ in range(n):
        reply = await pool.request("POST", url, HEADERS, BODY)
        data = await reply.read()
        await reply.aclose()
        if reply.status != 200 or not data:
            raise RuntimeError(f"upstream client: HTTP {reply.status}")
    await pool.aclose()


def timed(fn: Callable[[str, int], Awaitable[None]], url: str, n: int) -> tuple[float, float]:
    """(client CPU ms, wall ms) per request."""
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(fn(url, n))   # type: ignore[arg-type]
    return (time.process_time() - cpu) * 1000 / n, (time.perf_counter() - wall) * 1000 / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    port = free_port()
    upstream = subprocess.Popen([sys.executable, "-m", "tests.fake_upstream", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                asyncio.run(via_pool(url, 1))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        clients = {"httpx AsyncHTTPTransport": via_httpx, "lorescan UpstreamPool": via_pool}
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, fn in clients.items():
                asyncio.run(fn(url, 50))                  # warm-up
                figures[name].append(timed(fn, url, args.requests))
    finally:
        upstream.terminate()
        upstream.wait(30)
    print(f"{args.requests} POSTs of {len(BODY):,} bytes per round, {args.rounds} rounds, medians")
    print(f"{'':28} {'client CPU':>12} {'wall':>10}")
    for name, rows in figures.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        print(f"{name:28} {cpu:9.3f} ms {wall:7.3f} ms")


if __name__ == "__main__":
    main()
