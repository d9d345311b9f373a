"""Running a batch on a Dask distributed cluster (the ``dask`` extra; imported only here).

The spec (books as bytes, settings) is scattered to every worker once; each Dask task is
``run_chunk(spec, tasks)``: a few of the batch's tasks (chats) in a row, a pure function of its
inputs that returns their aggregate, so Dask may run it again when a worker dies (its ``retries``
and the scheduler's own rescheduling) and the caller still merges exactly one result per run. A
Dask task costs the client and the scheduler about 10 ms of CPU, beside the workers on a small
machine, so a run holds up to :data:`~.work.CHUNK` chats (fewer when there are few, so every
worker gets some). Runs are submitted a few per worker thread at a time, so the scheduler holds a
bounded window whatever the number of chats.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._errors import LorescanError
from .aggregate import Aggregate
from .local import WINDOW, Done, default_jobs
from .sources import ChatTask
from .work import BatchSpec, chunks, run_chunk

#: Dask retries per task (on top of the scheduler re-running the tasks of a worker that died)
RETRIES = 3


def distributed_module() -> Any:
    """``distributed``, or a one-line error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise LorescanError("--dask needs Dask: pip install 'lorescan[dask]'") from None
    return distributed


def local_cluster(workers: int) -> Any:
    """A ``LocalCluster`` of ``workers`` single-threaded worker processes on loopback, with no
    dashboard; the scheduler's own HTTP server (health and metrics routes) listens on a free
    loopback port instead of Dask's 8787, so it never meets a dashboard the user already runs."""
    return distributed_module().LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1",
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40)


@contextmanager
def dask_client(address: str, workers: int | None = None) -> Iterator[Any]:
    """A client of the cluster at ``address``, or of a new ``LocalCluster`` (one single-threaded
    worker process per core, or ``workers``) for ``address == "local"``, closed afterwards."""
    distributed = distributed_module()
    if address == "local":
        cluster = local_cluster(workers or default_jobs())
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise LorescanError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def run_dask(spec: BatchSpec, tasks: Sequence[ChatTask], client: Any, done: Done | None = None,
             on_result: Callable[[int], None] | None = None) -> Aggregate:
    """Every task on the cluster ``client`` talks to; ``on_result`` is called after each run of
    tasks is merged (with the number of tasks merged so far)."""
    distributed = distributed_module()
    digest = spec.digest()
    spec_data = client.scatter(spec, broadcast=True, hash=False)
    threads = sum(client.nthreads().values()) or 1
    window = max(2, threads * 2)
    run = uuid.uuid4().hex[:12]
    total = Aggregate()
    merged: set[int] = set()
    pending = iter(chunks(tasks, threads, WINDOW))
    queue = distributed.as_completed(with_results=False)
    sent: dict[str, tuple[ChatTask, ...]] = {}

    def submit(n: int) -> None:
        for chunk in pending:
            key = f"lorescan-{run}-{chunk[0].id}"
            sent[key] = chunk
            queue.add(client.submit(run_chunk, spec_data, chunk, digest, key=key, retries=RETRIES, pure=False))
            n -= 1
            if n <= 0:
                return

    submit(window)
    for fut in queue:
        chunk = sent.pop(fut.key)
        try:
            ids, agg = fut.result()
        except Exception as exc:   # the chunk failed on every try: its chats are failures
            why = f"failed on the cluster: {type(exc).__name__}: {exc}".splitlines()[0]
            for task in chunk:
                if task.id not in merged:
                    merged.add(task.id)
                    total.fail(task.where, why)
            submit(1)
            continue
        finally:
            fut.release()
        if ids[0] not in merged:
            merged.update(ids)
            total.merge(agg)
            if done is not None:
                done(ids, agg)
            if on_result is not None:
                on_result(len(merged))
        submit(1)
    return total
