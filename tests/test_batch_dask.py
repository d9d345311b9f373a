"""Batch replay on a real Dask ``LocalCluster`` (two worker processes): the same aggregates as one
process, the books compiled once per worker, the CLI's ``--dask ADDRESS``, and a worker killed
mid-run whose chats run again elsewhere without being counted twice."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from lorescan._batch import BatchSpec, report, run_batch, tasks
from lorescan._batch.dask_run import local_cluster, run_dask
from lorescan._cli.main import main
from lorescan._model import Settings

from .batch_helpers import ENTRIES, SETTINGS, cli_args, write_set

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(2)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_the_local_cluster_listens_on_loopback_only_and_never_on_dasks_8787(client) -> None:
    """Every address the cluster's scheduler and workers listen on (their RPC and HTTP servers) is
    on 127.0.0.1, and the scheduler's HTTP server takes a free port rather than 8787, where a user's
    own dashboard may be."""
    info = client.scheduler_info()
    http = client.cluster.scheduler.http_server
    assert (http.address, http.port != 8787) == ("127.0.0.1", True)
    assert client.scheduler.address.startswith("tcp://127.0.0.1:")
    assert len(info["workers"]) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in info["workers"])
    hosts = client.run(lambda dask_worker: (dask_worker.ip, dask_worker.http_server.address))
    assert set(hosts.values()) == {("127.0.0.1", "127.0.0.1")}


def _spec(paths: dict[str, Path], seed: int = 5) -> BatchSpec:
    coin = {"uid": 8, "key": ["sure", "here", "yes"], "content": "Coin.", "probability": 50, "useProbability": True}
    paths["book"].write_text(json.dumps({"entries": {str(e["uid"]): e for e in [*ENTRIES, coin]}}), encoding="utf-8")
    return BatchSpec(books=(("lore.json", paths["book"].read_bytes()),), settings=Settings(**SETTINGS),
                     tokenizer="chars4", seed=seed)


def test_local_cluster_gives_the_aggregates_of_one_process(client, tmp_path: Path) -> None:
    paths = write_set(tmp_path, copies=12, many=3)
    spec = _spec(paths)
    ts = tasks([str(paths["chats"])])
    serial = report(run_batch(spec, ts, jobs=1), spec)
    on_dask = report(run_dask(spec, ts, client), spec)
    assert on_dask == serial
    assert serial["chats"] == 15 and len(serial["failures"]) == 1
    coin = next(e for e in serial["entries"] if e["key"] == "lore.8")
    assert 0 < coin["fired_generations"] < 60
    # the books were compiled once in each worker that ran a task, not once per chat
    from lorescan._batch import work

    compiles = client.run(lambda: list(work.COMPILES))
    assert all(c in ([], [spec.digest()]) for c in compiles.values()), compiles
    assert sum(len(c) for c in compiles.values()) >= 1


def test_cli_runs_on_a_dask_scheduler_address(client, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    assert main(cli_args(paths, "--json", "--jobs", "1", "--seed", "2")) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(cli_args(paths, "--json", "--dask", client.scheduler.address, "--seed", "2")) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == one and one["chats"] == 5


def test_cli_dask_local_starts_and_stops_its_own_cluster(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path, copies=2, many=0, bad=False)
    assert main(cli_args(paths, "--json", "--jobs", "1")) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(cli_args(paths, "--json", "--dask", "local", "--jobs", "2")) == 0
    assert json.loads(capsys.readouterr().out) == one and one["chats"] == 2


def test_worker_killed_mid_run_reruns_its_tasks_once(client, tmp_path: Path) -> None:
    paths = write_set(tmp_path, copies=60, many=0, bad=False)
    spec = _spec(paths, seed=9)
    ts = tasks([str(paths["chats"])])
    clean = report(run_batch(spec, ts, jobs=1), spec)
    pids = client.run(os.getpid)
    killed: list[int] = []

    def kill_one(merged: int) -> None:
        if not killed:
            pid = sorted(pids.values())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    got = report(run_dask(spec, ts, client, on_result=kill_one), spec)
    assert killed
    assert got == clean and got["chats"] == 60 and not got["failures"]
    client.wait_for_workers(2, timeout=60)             # the nanny restarted the killed worker


def test_chats_go_to_the_cluster_a_few_per_dask_task() -> None:
    """A Dask task (as a pool worker's task) replays up to CHUNK chats in a row (each Dask task
    costs the client and the scheduler about 10 ms), fewer when there are few chats, so each
    worker thread still gets several."""
    from lorescan._batch.local import WINDOW
    from lorescan._batch.sources import ChatTask
    from lorescan._batch.work import CHUNK, chunks

    ts = [ChatTask(i, f"c{i}.json") for i in range(100)]
    got = chunks(ts, 2, WINDOW)
    assert CHUNK == 8 and [len(c) for c in got] == [8] * 12 + [4]
    assert [t for c in got for t in c] == ts
    assert [len(c) for c in chunks(ts[:20], 2, WINDOW)] == [2] * 10
    assert [len(c) for c in chunks(ts[:3], 2, WINDOW)] == [1, 1, 1]


def test_a_book_the_workers_cannot_read_makes_each_chat_a_failure_once(client, tmp_path: Path) -> None:
    paths = write_set(tmp_path, copies=5, many=0, bad=False)
    spec = BatchSpec(books=(("lore.json", b"{not json"),), settings=Settings(**SETTINGS), tokenizer="chars4")
    ts = tasks([str(paths["chats"])])
    agg = run_dask(spec, ts, client)
    assert agg.chats == 0 and sorted(f.path for f in agg.failures) == sorted(t.path for t in ts)
    assert {f.error.split(": ", 2)[:2][0] for f in agg.failures} == {"failed on the cluster"}
    assert all("lore.json" in f.error for f in agg.failures), agg.failures[0].error
