"""A child process serving HTTP on a free loopback port, for the benchmarks that time a server.

``ServedProcess(args, health, log)`` runs ``python <args>`` from the source checkout (``{port}`` in
an argument is the port picked for it), waits until ``GET <health>`` answers 200, and is stopped
with SIGTERM (killed if it does not stop within 30 s). Its CPU time and memory are read from
``/proc`` (Linux), summed over the process and every process it started (``lorescan serve
--processes N`` serves from child processes).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


class ServedProcess:
    """``python <args>`` serving on ``127.0.0.1:<port>`` (see the module docstring)."""

    def __init__(self, args: list[str], health: str, log: Path, start_seconds: float = 60) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, *[a.replace("{port}", str(self.port)) for a in args]],
                                         cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_seconds
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url(health), timeout=1) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{' '.join(args)} did not start: " + log.read_text(errors="replace"))

    def url(self, path: str) -> str:
        return self.base + path

    def pids(self) -> list[int]:
        """The process and its descendants alive now."""
        parents: dict[int, int] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(stat.parent.name)] = int(fields[1])
        tree = [self.proc.pid]
        for pid in tree:
            tree.extend(child for child, parent in parents.items() if parent == pid)
        return tree

    def cpu_seconds(self) -> float:
        """CPU time used (user + system, all threads) by the process and its descendants alive now."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def status(self) -> dict[str, int]:
        """VmRSS and VmHWM (each one's peak) in kB, summed over the process and its descendants; and
        ``processes``, how many were summed."""
        out = {"VmRSS": 0, "VmHWM": 0, "processes": 0}
        for pid in self.pids():
            try:
                lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                continue
            out["processes"] += 1
            for line in lines:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] += int(line.split()[1])
        return out

    def reset_peak(self) -> None:
        """Reset the kernel's RSS high-water marks (``clear_refs`` 5)."""
        for pid in self.pids():
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            except OSError:
                pass

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
