"""Running a batch on this machine: in this process (``jobs=1``) or on a pool of worker processes.

Tasks go to the workers in runs of a few (:func:`~.work.chunks`), each replayed into one
aggregate, and stream into the pool a few runs per worker at a time, so neither the pool's queue
nor a worker's memory grows with the number of chats. Each worker gets the :class:`BatchSpec`
once, when it starts, and compiles the books once. When a worker process dies (killed, out of
memory), the pool breaks: the tasks of the runs that had not returned are sent again to a new
pool, one at a time (see :class:`_PoolRun`); a run's result is merged only once, so no chat is
counted twice. A task that kills its worker :data:`MAX_ATTEMPTS` times has its chats listed as
failures instead of being tried forever.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from .._engine import OWNED_GC_THRESHOLDS
from .aggregate import Aggregate
from .sources import ChatTask
from .work import BatchSpec, chunks, run_chunk

#: tries per run of tasks before its chats are listed as failures ("the worker died")
MAX_ATTEMPTS = 3
#: runs of tasks in flight per worker
WINDOW = 4
#: the cyclic collector's thresholds in a pool worker, a process the pool owns
WORKER_GC_THRESHOLDS = OWNED_GC_THRESHOLDS

Done = Callable[[Sequence[int], Aggregate], None]
"""Called with the ids of finished tasks and their aggregate (progress, tests)."""

_SPEC: BatchSpec | None = None
_DIGEST: str | None = None


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not on Linux
        return max(1, os.cpu_count() or 1)


def run_serial(spec: BatchSpec, tasks: Sequence[ChatTask], done: Done | None = None) -> Aggregate:
    """Every task in this process, in order."""
    total = Aggregate()
    digest = spec.digest()
    for chunk in chunks(tasks, 1, WINDOW):
        ids, agg = run_chunk(spec, chunk, digest)
        total.merge(agg)
        if done is not None:
            done(ids, agg)
    return total


def _init(spec: BatchSpec) -> None:
    global _SPEC, _DIGEST
    _SPEC, _DIGEST = spec, spec.digest()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


def _pool_chunk(chunk: tuple[ChatTask, ...]) -> tuple[tuple[int, ...], Aggregate]:
    assert _SPEC is not None, "worker started without its BatchSpec"
    return run_chunk(_SPEC, chunk, _DIGEST)


def run_pool(spec: BatchSpec, tasks: Sequence[ChatTask], jobs: int, done: Done | None = None,
             context: str = "spawn", stats: dict[str, int] | None = None) -> Aggregate:
    """Every task on ``jobs`` worker processes (see the module's note on dead workers); ``stats``
    gets the number of pools started and of tasks sent again."""
    run = _PoolRun(chunks(tasks, jobs, WINDOW), done)
    ctx = multiprocessing.get_context(context)
    while run.todo or run.suspects:
        run.pools += 1
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(spec,)) as pool:
            broken = run.drive(pool, jobs * WINDOW)
            if broken:
                pool.shutdown(wait=False, cancel_futures=True)
    if stats is not None:
        stats.update(pools=run.pools, resent=run.resent)
    return run.total


class _PoolRun:
    """The runs of tasks of one :func:`run_pool` call: those to send, those in flight, the merged.

    When a worker dies, every run in flight fails with the pool, and nothing says which one killed
    it. Each of their tasks is then a suspect: suspects are sent one at a time, alone in the pool,
    so a chat that kills its worker again is the only one charged with it (and listed as a failure
    after :data:`MAX_ATTEMPTS`), while the others are counted once."""

    def __init__(self, runs: list[tuple[ChatTask, ...]], done: Done | None) -> None:
        self.todo = list(reversed(runs))         # popped from the end: in order
        self.suspects: list[tuple[ChatTask, ...]] = []
        self.done = done
        self.total = Aggregate()
        self.merged: set[int] = set()            # the first task id of each run merged
        self.attempts: dict[int, int] = {}
        self.pools = self.resent = 0

    def drive(self, pool: ProcessPoolExecutor, window: int) -> bool:
        """Send and merge runs until all are merged or the pool breaks (True)."""
        running: dict[Future[tuple[tuple[int, ...], Aggregate]], tuple[ChatTask, ...]] = {}
        while True:
            while len(running) < (1 if self.suspects else window):     # a suspect runs alone
                source = self.suspects or self.todo
                if not source:
                    break
                chunk = source.pop()
                try:
                    running[pool.submit(_pool_chunk, chunk)] = chunk
                except BrokenProcessPool:
                    source.append(chunk)
                    return self._broken(running)
            if not running:
                return False
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            if any(isinstance(fut.exception(), BrokenProcessPool) for fut in finished):
                return self._broken(running)
            for fut in finished:
                running.pop(fut)
                self._merge(*fut.result())

    def _merge(self, ids: tuple[int, ...], agg: Aggregate) -> None:
        if ids[0] not in self.merged:
            self.merged.add(ids[0])
            self.total.merge(agg)
            if self.done is not None:
                self.done(ids, agg)

    def _broken(self, running: dict[Future[tuple[tuple[int, ...], Aggregate]], tuple[ChatTask, ...]]) -> bool:
        """Merge what finished before the pool broke; the rest become suspects (or failures)."""
        for fut, chunk in running.items():
            if fut.done() and not isinstance(fut.exception(), BrokenProcessPool):
                self._merge(*fut.result())      # (a task's own error is raised here, as it would be)
            else:
                self._retry(chunk)
        return True

    def _retry(self, chunk: tuple[ChatTask, ...]) -> None:
        """Send a run's tasks again, one at a time, or list its chats as failed once it has been in
        :data:`MAX_ATTEMPTS` pools that broke."""
        n = self.attempts.get(chunk[0].id, 0) + 1
        if n < MAX_ATTEMPTS:
            for task in reversed(chunk):         # popped from the end: in order
                self.attempts[task.id] = n
                self.suspects.append((task,))
                self.resent += 1
            return
        for task in chunk:
            self.total.fail(task.where, f"its worker process died {n} times (killed or out of memory)")
