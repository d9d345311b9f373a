"""``lorescan serve --processes N``: N service processes on one listening socket and one store.

One service process runs Python on one core at a time. With ``--processes N`` this process binds
the address, starts N service processes that accept connections from the same socket (the kernel
hands each new connection to one of them), and supervises them:

- Each process compiles the books it is asked about and keeps its own compiled-book cache
  (``--cache-mb`` is per process); all of them share the store, which keeps their books and
  sessions consistent (see :mod:`lorescan._service.store`).
- Metrics are summed over the processes (Prometheus's multiprocess mode, in a temporary
  directory), so ``/metrics`` says the same whichever process answers it.
- A process that dies is started again (and its requests in flight fail); one that dies at once,
  twice in a row, stops the service with an error.
- ``SIGTERM``, ``SIGINT`` or ``SIGHUP`` (its terminal closed) reach every process, which finish
  their requests in flight and flush the store; then this one exits.

Every service process, one of N or the only one (and the workbench's), runs its server with
:func:`run_until_stopped`, so that SIGTERM and SIGHUP stop it gracefully and its caller cleans up
before the process ends by the signal (:func:`end_by`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from .config import ServiceConfig, access_log

log = logging.getLogger("lorescan.serve")

#: a process that exits sooner than this after it started counts as failing to start
QUICK_DEATH = 5.0
#: seconds a stopping process gets to finish its requests in flight before it is killed
GRACE = 30
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (IPv6 when the host is), for the service processes to
    accept on. Raises ``OSError`` (address in use, unknown host)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def serve_processes(config: ServiceConfig, sock: socket.socket, processes: int, log_level: str) -> int:
    """Run ``processes`` service processes on ``sock`` until a signal stops them; the exit status."""
    metrics_dir = tempfile.mkdtemp(prefix="lorescan-metrics-")
    os.environ[MULTIPROC_ENV] = metrics_dir         # read by each process as it imports its metrics
    context = multiprocessing.get_context("spawn")
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (*stop_signals(), signal.SIGINT)}
    children: dict[int, tuple[BaseProcess, float]] = {}

    def start(slot: int) -> None:
        child = context.Process(target=run_child, args=(config, sock, log_level), name=f"lorescan-serve-{slot}",
                                daemon=False)
        child.start()
        children[slot] = (child, time.monotonic())

    status = 0
    try:
        for slot in range(processes):
            start(slot)
        quick: dict[int, int] = {}
        while not stopping:
            wait([child.sentinel for child, _ in children.values()], timeout=0.5)
            for slot, (child, started) in list(children.items()):
                if child.is_alive() or stopping:
                    continue
                _forget_metrics(child.pid)
                quick[slot] = quick.get(slot, 0) + 1 if time.monotonic() - started < QUICK_DEATH else 0
                if quick[slot] >= 2:
                    print(f"lorescan serve: a service process exited with {child.exitcode} as it started, twice; "
                          "stopping", file=sys.stderr, flush=True)
                    status = 1
                    stopping.append(signal.SIGTERM)
                    break
                print(f"lorescan serve: service process {child.pid} exited with {child.exitcode}; starting "
                      "another", file=sys.stderr, flush=True)
                start(slot)
    finally:
        _stop(list(children.values()))
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(metrics_dir, ignore_errors=True)
        os.environ.pop(MULTIPROC_ENV, None)
    return status


def _stop(children: list[tuple[BaseProcess, float]]) -> None:
    """SIGTERM to every process still running, then wait for them (killed after the grace time)."""
    for child, _ in children:
        if child.is_alive():
            child.terminate()
    deadline = time.monotonic() + GRACE + 5
    for child, _ in children:
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join()


def _forget_metrics(pid: int | None) -> None:
    """Drop a dead process's gauges from the summed metrics (its counters stay counted)."""
    if pid is None:
        return
    try:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
    except (ImportError, OSError):
        pass


def run_child(config: ServiceConfig, sock: socket.socket, log_level: str) -> None:
    """One service process: the app on the shared socket, until SIGTERM or SIGINT."""
    import uvicorn

    from .app import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level=log_level, timeout_graceful_shutdown=GRACE,
                                           access_log=access_log(log_level)))
    end_by(run_until_stopped(server, [sock]))


def stop_signals() -> list[signal.Signals]:
    """The signals that stop a service gracefully besides Ctrl-C: SIGTERM, and SIGHUP (its terminal
    closed) where there is one, unless it is ignored (``nohup``: the service outlives its terminal)."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is None or signal.getsignal(hangup) is signal.SIG_IGN:
        return [signal.SIGTERM]
    return [signal.SIGTERM, hangup]


def run_until_stopped(server: Any, sockets: list[socket.socket] | None = None) -> int | None:
    """Run a uvicorn server until it is stopped; the stop signal (SIGTERM or SIGHUP) that stopped
    it, else None (Ctrl-C raises KeyboardInterrupt, as before).

    uvicorn shuts down gracefully on SIGTERM but then raises it again with the handler it found, and
    it leaves SIGHUP alone: either ended the process before its caller could clean up (the
    workbench's temporary store, a supervisor's processes). Here both shut the server down
    gracefully, and the caller ends the process by the signal (:func:`end_by`) once it is done."""
    if threading.current_thread() is not threading.main_thread():
        server.run(sockets=sockets)
        return None
    received: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        server.handle_exit(signum, frame)

    previous = {sig: signal.signal(sig, on_signal) for sig in stop_signals()}
    try:
        server.run(sockets=sockets)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return received[0] if received else None


def end_by(signum: int | None) -> None:
    """End this process as the stop signal ends a process (the status supervisors expect), if one
    stopped it; else return."""
    if signum is not None:
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


def cpu_count() -> int:
    """The cores this process may run on (``--processes auto``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1

