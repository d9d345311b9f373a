"""A child process serving HTTP on a free loopback port, for the benchmarks that time a server.

``ServedProcess(args, health, log)`` runs ``python <args>`` from the source checkout (``{port}`` in
an argument is the port picked for it), waits until ``GET <health>`` answers 200, and is stopped
with SIGTERM (killed if it does not stop within 30 s). Its CPU time and memory are read from
``/proc`` (Linux).
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

    def cpu_seconds(self) -> float:
        """CPU time the process has used (user + system, all threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak) in kB."""
        out = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
        return out

    def reset_peak(self) -> None:
        """Reset the kernel's RSS high-water mark (``clear_refs`` 5)."""
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
