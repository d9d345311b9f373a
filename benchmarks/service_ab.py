"""Two source trees' services side by side: each generation sent to both, in alternating order.

On a machine whose speed drifts from minute to minute, only measurements taken at the same time
compare two versions fairly. This starts one fake upstream (``tests/fake_upstream.py``) and one
``lorescan serve --upstream`` from each tree (each process imports its own tree's code, C extension
included, so build it there first), stores a ``generate.py`` book of 20,000 entries in both, then
sends every generation of 20 growing chats to both servers, one right after the other (the first
one alternates), through the proxy (``--kind proxy``: a ``LORESCAN_SYSTEM`` header, the session,
the placement) or as ``POST /v1/activate`` (``--kind activate``). It reports each server's median
and p99 wall time and its CPU time per request (from ``/proc``).

    python benchmarks/service_ab.py OLD_TREE NEW_TREE            # 800 generations through the proxy
    python benchmarks/service_ab.py OLD_TREE NEW_TREE --kind activate --generations 2000

Run it from a source checkout with the ``serve`` and ``test`` extras installed (Linux: it reads
``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
for _p in (str(BENCH.parent), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import generate  # noqa: E402
import httpx  # noqa: E402
from processes import free_port  # noqa: E402
from proxy_latency import Generations, percentile  # noqa: E402


def start(tree: Path, args: list[str], health: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, *[a.replace("{port}", str(port)) for a in args]], cwd=tree,
                                stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(base + health, timeout=1) as reply:
                if reply.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{' '.join(args)} did not start in {tree}: {log.read_text(errors='replace')}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trees", nargs=2, type=Path, metavar="TREE", help="two source checkouts (A, then B)")
    p.add_argument("--kind", choices=("proxy", "activate"), default="proxy")
    p.add_argument("--generations", type=int, default=800)
    p.add_argument("--warmup", type=int, default=200, help="generations first, not timed")
    p.add_argument("--entries", type=int, default=20_000)
    args = p.parse_args(argv)
    trees = [t.resolve() for t in args.trees]
    entries = generate.make_entries(args.entries, seed=1)
    data = json.dumps({"entries": {str(e["uid"]): e for e in entries}}, ensure_ascii=False).encode()
    total = args.warmup + args.generations
    gens = Generations(entries, 20, 10 + total // 20 + 2, True)
    names = ("A", "B")
    times: dict[str, list[float]] = {n: [] for n in names}
    cpu = dict.fromkeys(names, 0.0)
    with tempfile.TemporaryDirectory(prefix="lorescan-ab-") as tmp:
        upstream, up_base = start(trees[0], ["-m", "tests.fake_upstream", "{port}"], "/v1/models",
                                  Path(tmp) / "upstream.log")
        servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        try:
            for name, tree in zip(names, trees):
                servers[name] = start(tree, ["-m", "lorescan", "serve", "--port", "{port}", "--data",
                                             f"{tmp}/{name}", "--log-level", "warning", "--upstream",
                                             up_base + "/v1"], "/healthz", Path(tmp) / f"{name}.log")
                httpx.put(f"{servers[name][1]}/v1/books/synth?tokenizer=cl100k", content=data,
                          timeout=600).raise_for_status()
            path = "/v1/chat/completions" if args.kind == "proxy" else "/v1/activate"
            with httpx.Client(timeout=60) as client:
                for k in range(total):
                    session, generation = k % 20, 10 + k // 20
                    body = gens.bodies(session, generation, False)[1] if args.kind == "proxy" \
                        else gens.activation(session, generation)
                    for name in (names if k % 2 else names[::-1]):
                        proc, base = servers[name]
                        before, started = cpu_seconds(proc.pid), time.perf_counter()
                        reply = client.post(base + path, content=body, headers={"Content-Type": "application/json"})
                        elapsed = time.perf_counter() - started
                        if reply.status_code != 200:
                            raise SystemExit(f"{name}: HTTP {reply.status_code}: {reply.text[:300]}")
                        if k >= args.warmup:
                            times[name].append(elapsed * 1000)
                            cpu[name] += cpu_seconds(proc.pid) - before
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait()
            upstream.terminate()
            upstream.wait()
    out = {}
    for name, tree in zip(names, trees):
        out[name] = {"p50_ms": round(statistics.median(times[name]), 3), "p99_ms": round(percentile(times[name], 99), 3),
                     "cpu_ms": round(cpu[name] * 1000 / args.generations, 3)}
        print(f"{name} ({tree}): {args.kind}, p50 {out[name]['p50_ms']:.3f} ms, p99 {out[name]['p99_ms']:.3f} ms, "
              f"server CPU {out[name]['cpu_ms']:.3f} ms per request")
    return out


if __name__ == "__main__":
    main()
