"""Running a batch on this machine: in this process (``jobs=1``) or on a pool of worker processes.

Tasks stream into the pool a few per worker at a time, so neither the pool's queue nor a worker's
memory grows with the number of chats. Each worker gets the :class:`BatchSpec` once, when it
starts, and compiles the books once. When a worker process dies (killed, out of memory), the pool
breaks: the tasks that had not returned are sent again to a new pool; a result is merged only once
per task, so no chat is counted twice. A task that kills its worker :data:`MAX_ATTEMPTS` times is
listed as a failure instead of being tried forever.
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
from .work import BatchSpec, run_task

#: tries per task before its chats are listed as failures ("the worker died")
MAX_ATTEMPTS = 3
#: tasks in flight per worker
WINDOW = 4
#: the cyclic collector's thresholds in a pool worker, a process the pool owns
WORKER_GC_THRESHOLDS = OWNED_GC_THRESHOLDS

Done = Callable[[int, Aggregate], None]
"""Called with each finished task's id and aggregate (progress, tests)."""

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
    for task in tasks:
        _, agg = run_task(spec, task, digest)
        total.merge(agg)
        if done is not None:
            done(task.id, agg)
    return total


def _init(spec: BatchSpec) -> None:
    global _SPEC, _DIGEST
    _SPEC, _DIGEST = spec, spec.digest()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


def _pool_task(task: ChatTask) -> tuple[int, Aggregate]:
    assert _SPEC is not None, "worker started without its BatchSpec"
    return run_task(_SPEC, task, _DIGEST)


def run_pool(spec: BatchSpec, tasks: Sequence[ChatTask], jobs: int, done: Done | None = None,
             context: str = "spawn", stats: dict[str, int] | None = None) -> Aggregate:
    """Every task on ``jobs`` worker processes (see the module's note on dead workers); ``stats``
    gets the number of pools started and of tasks sent again."""
    stats = stats if stats is not None else {}
    stats.update(pools=0, resent=0)
    total = Aggregate()
    merged: set[int] = set()
    attempts: dict[int, int] = {}
    todo = list(reversed(tasks))         # popped from the end: in order
    ctx = multiprocessing.get_context(context)
    while todo:
        broken = False
        stats["pools"] += 1
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(spec,)) as pool:
            running: dict[Future[tuple[int, Aggregate]], ChatTask] = {}
            while (todo or running) and not broken:
                while todo and len(running) < jobs * WINDOW:
                    task = todo.pop()
                    try:
                        running[pool.submit(_pool_task, task)] = task
                    except BrokenProcessPool:
                        todo.append(task)
                        broken = True
                        break
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    task = running.pop(fut)
                    try:
                        task_id, agg = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        stats["resent"] += _retry(task, attempts, todo, total)
                        continue
                    if task_id not in merged:
                        merged.add(task_id)
                        total.merge(agg)
                        if done is not None:
                            done(task_id, agg)
            if broken:
                for fut, task in running.items():
                    if fut.done() and not fut.exception():
                        task_id, agg = fut.result()
                        if task_id not in merged:
                            merged.add(task_id)
                            total.merge(agg)
                            if done is not None:
                                done(task_id, agg)
                    else:
                        stats["resent"] += _retry(task, attempts, todo, total)
                pool.shutdown(wait=False, cancel_futures=True)
    return total


def _retry(task: ChatTask, attempts: dict[int, int], todo: list[ChatTask], total: Aggregate) -> bool:
    """Send ``task`` again (True), or list it as failed once it has been in :data:`MAX_ATTEMPTS`
    pools that broke."""
    n = attempts[task.id] = attempts.get(task.id, 0) + 1
    if n < MAX_ATTEMPTS:
        todo.append(task)
        return True
    else:
        total.fail(task.where, f"its worker process died {n} times (killed or out of memory)")
        return False
