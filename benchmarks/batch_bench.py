"""Batch replay throughput: generations per second on 1 process, 2 processes and a 2-worker Dask
``LocalCluster``, the scaling efficiency, and each worker's peak RSS, on the corpus of
``batch_corpus.py`` (chats of 50 messages against the 20,000-entry benchmark book, recursion on).

    python benchmarks/batch_bench.py [--corpus DIR] [--sizes 1000 10000] [--repeat 3] [--json out.json]
    python benchmarks/batch_bench.py --quick          # a tiny corpus, once: what the test runs

Every run of a size must give the same aggregates (compared as the JSON report); the script exits
with status 1 if they differ. Wall-clock rates include starting the workers and compiling the book
in each; ``cpu gen/s`` divides by the workers' CPU time instead, which other programs on a shared
machine disturb much less. Peak RSS is each worker's high-water mark (``VmHWM``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
for _p in (str(BENCH.parent), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import batch_corpus  # noqa: E402

from lorescan._batch import BatchSpec, report, tasks  # noqa: E402
from lorescan._batch.local import run_pool  # noqa: E402
from lorescan._inputs import read_settings  # noqa: E402

MODES = ("1 process", "2 processes", "dask, 2 workers")


def _proc(pid: int) -> tuple[int, float]:
    """(peak RSS in bytes, CPU seconds) of a process, from /proc."""
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return hwm, (int(fields[11]) + int(fields[12])) / ticks


def _self_proc() -> tuple[int, float]:
    return _proc(os.getpid())


def run_local(spec: BatchSpec, ts: list, jobs: int) -> tuple[Any, float, list[int], float]:
    """A pool run: (aggregate, wall seconds, worker peak RSS, worker CPU seconds)."""
    seen: dict[int, tuple[int, float]] = {}

    def sample(_task_id: int, _agg: Any) -> None:
        for child in multiprocessing.active_children():
            if child.pid is not None:
                try:
                    seen[child.pid] = _proc(child.pid)
                except OSError:
                    pass

    start = time.perf_counter()
    agg = run_pool(spec, ts, jobs, sample)
    wall = time.perf_counter() - start
    return agg, wall, [hwm for hwm, _ in seen.values()], sum(cpu for _, cpu in seen.values())


def run_on_dask(spec: BatchSpec, ts: list, workers: int) -> tuple[Any, float, list[int], float]:
    """A run on a fresh LocalCluster of ``workers`` single-threaded worker processes."""
    import distributed

    from lorescan._batch.dask_run import local_cluster, run_dask

    with local_cluster(workers) as cluster, distributed.Client(cluster) as client:
        start = time.perf_counter()
        before = client.run(_self_proc)
        agg = run_dask(spec, ts, client)
        wall = time.perf_counter() - start
        after = client.run(_self_proc)
    cpu = sum(after[w][1] - before.get(w, (0, 0.0))[1] for w in after)
    return agg, wall, [hwm for hwm, _ in after.values()], cpu


def digest(rep: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(rep, sort_keys=True).encode()).hexdigest()[:16]


def measure(corpus: Path, sizes: list[int], repeat: int, modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    meta = json.loads((corpus / "corpus.json").read_text())
    settings, _ = read_settings(str(corpus / meta["settings"]))
    spec = BatchSpec(books=((meta["book"], (corpus / meta["book"]).read_bytes()),), settings=settings)
    all_tasks = tasks([str(corpus / meta["chat_dir"])])
    out: dict[str, Any] = {"corpus": meta, "cpus": os.cpu_count(), "python": sys.version.split()[0], "sizes": {}}
    for size in sizes:
        ts = all_tasks[:size]
        rows: dict[str, Any] = {}
        digests = set()
        for mode in modes:
            runs = []
            for _ in range(repeat):
                if mode == "dask, 2 workers":
                    agg, wall, rss, cpu = run_on_dask(spec, ts, 2)
                else:
                    agg, wall, rss, cpu = run_local(spec, ts, 1 if mode == "1 process" else 2)
                digests.add(digest(report(agg, spec)))
                runs.append({"generations": agg.generations, "wall": wall, "gen_per_s": agg.generations / wall,
                             "cpu": cpu, "cpu_gen_per_s": agg.generations / cpu if cpu else None,
                             "peak_rss_mb": [round(r / 2**20, 1) for r in rss]})
                print(f"{size} chats, {mode}: {runs[-1]['gen_per_s']:.0f} gen/s "
                      f"(cpu {runs[-1]['cpu_gen_per_s'] or 0:.0f} gen/s), peak RSS {runs[-1]['peak_rss_mb']} MB",
                      file=sys.stderr, flush=True)
            rows[mode] = {"runs": runs, "median_gen_per_s": statistics.median(r["gen_per_s"] for r in runs),
                          "median_cpu_gen_per_s": statistics.median(r["cpu_gen_per_s"] or 0 for r in runs),
                          "max_peak_rss_mb": max(max(r["peak_rss_mb"] or [0]) for r in runs)}
        rate = {m: rows[m]["median_gen_per_s"] if m in rows else None for m in MODES}
        one = rate["1 process"]
        out["sizes"][str(size)] = {
            "modes": rows, "identical_aggregates": len(digests) == 1,
            "generations": next(iter(rows.values()))["runs"][0]["generations"],
            "efficiency_2_processes": rate["2 processes"] / (2 * one) if one and rate["2 processes"] else None,
            "efficiency_dask": rate["dask, 2 workers"] / (2 * one) if one and rate["dask, 2 workers"] else None}
    return out


def table(result: dict[str, Any]) -> str:
    lines = ["| chats | generations | mode | gen/s (median) | CPU gen/s per worker | scaling efficiency | "
             "peak RSS per worker (MB) |", "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for size, s in result["sizes"].items():
        for mode, row in s["modes"].items():
            e = s["efficiency_2_processes"] if mode == "2 processes" else s["efficiency_dask"]
            eff = "" if mode == "1 process" or e is None else f"{100 * e:.0f} %"
            lines.append(f"| {int(size):,} | {s['generations']:,} | {mode} | {row['median_gen_per_s']:,.0f} | "
                         f"{row['median_cpu_gen_per_s']:,.0f} | {eff} | {row['max_peak_rss_mb']:.0f} |")
    same = all(s["identical_aggregates"] for s in result["sizes"].values())
    lines.append("")
    lines.append(f"Identical aggregates across all runs of each size: {'yes' if same else 'NO'}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", help="corpus folder (written by batch_corpus.py if missing)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="which runs (default: all three)")
    p.add_argument("--json", help="write the figures as JSON")
    p.add_argument("--quick", action="store_true", help="a tiny corpus (1,000 entries, 16 chats of 10 messages)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            corpus = Path(tmp) / "corpus"
            batch_corpus.write_corpus(corpus, chats=16, messages=10, entries=1000)
            sizes, repeat = [8, 16], 1
        else:
            corpus = Path(args.corpus or Path(tmp) / "corpus")
            meta = corpus / "corpus.json"
            if not meta.exists() or json.loads(meta.read_text())["chats"] < max(args.sizes):
                batch_corpus.write_corpus(corpus, chats=max(args.sizes))
            sizes, repeat = args.sizes, args.repeat
        result = measure(corpus, sizes, repeat, tuple(args.modes))
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0 if all(s["identical_aggregates"] for s in result["sizes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
