"""Batch replay: lorebook analytics over any number of chats, on this machine or a Dask cluster.

An edge of lorescan (it reads files and starts processes); the counting itself is pure
(:mod:`.aggregate`). :func:`run_batch` replays every chat the paths name against the books of a
:class:`BatchSpec` and returns the merged :class:`Aggregate`; :func:`report` turns it into the JSON
report the CLI prints, writes as CSV and draws as HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .aggregate import Aggregate, EntryInfo, csv_rows, to_json
from .local import Done, default_jobs, run_pool, run_serial
from .sources import ChatTask, expand, tasks
from .work import BatchSpec, chat_seed, read_books, run_task

__all__ = ["Aggregate", "BatchSpec", "ChatTask", "EntryInfo", "catalog", "chat_seed", "csv_rows", "default_jobs",
           "expand", "report", "run_batch", "run_task", "tasks"]


def run_batch(spec: BatchSpec, chat_tasks: Sequence[ChatTask], *, jobs: int | None = None,
              dask: str | None = None, done: Done | None = None) -> Aggregate:
    """Replay every task: on a Dask cluster (``dask``: an address, or ``"local"``), else on ``jobs``
    processes (default: every core; 1: in this process)."""
    if dask is not None:
        from .dask_run import dask_client, run_dask

        with dask_client(dask, jobs) as client:
            return run_dask(spec, chat_tasks, client, done)
    jobs = jobs or default_jobs()
    if jobs <= 1 or len(chat_tasks) <= 1:
        return run_serial(spec, chat_tasks, done)
    return run_pool(spec, chat_tasks, min(jobs, len(chat_tasks)), done)


def catalog(spec: BatchSpec, edited: bool = False) -> list[EntryInfo]:
    """Every entry of the spec's books (``edited``: of the edited version's), in book order."""
    from .._compile import compile_books

    books, edited_books, _ = read_books(spec)
    out: dict[str, EntryInfo] = {}
    for bs in ((edited_books or []) if edited else books,):
        for _, entries in compile_books(bs):
            for ce in entries:
                if ce.key not in out:
                    out[ce.key] = EntryInfo(ce.key, ce.book, ce.uid, ce.entry.comment_text)
    return list(out.values())


def report(agg: Aggregate, spec: BatchSpec, **options: Any) -> dict[str, Any]:
    """The JSON report of a batch (see :func:`lorescan._batch.aggregate.to_json`)."""
    edited = catalog(spec, edited=True) if spec.edited is not None else []
    return to_json(agg, catalog(spec), seed=spec.seed, edited=edited, **options)
