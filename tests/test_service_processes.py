"""``lorescan serve --processes 2``: two service processes on one port and one store. Requests on
new connections land on either process; chats keep their exact timed results, books stored through
one process are read through the other, metrics are summed, a killed process is replaced, and
SIGTERM stops them all."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_helpers import ROOT, STOPPED, Server, httpx
from .test_service_api import BOOK
from .test_service_conformance import turn_bodies
from .test_service_lifecycle import _timed_scenarios


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("pair") / "data", "--processes", "2")
    try:
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


def fresh(server: Server) -> httpx.Client:
    """A client that opens a new connection for every request (so either process may answer it)."""
    return httpx.Client(base_url=server.url, timeout=60.0, headers={"Connection": "close"},
                        limits=httpx.Limits(max_keepalive_connections=0))


def answering(server: Server, seconds: float = 60.0) -> set[int]:
    """The processes seen answering ``/healthz`` until two were seen (or ``seconds`` passed: the
    server answers as soon as one process is up, and the other may still be starting)."""
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    with fresh(server) as c:
        while len(seen) < 2 and time.monotonic() < deadline:
            seen.add(c.get("/healthz").json()["process"])
            if len(seen) < 2:
                time.sleep(0.01)
    return seen


def test_two_processes_answer_on_one_port(pair: Server) -> None:
    pids = answering(pair)
    assert len(pids) == 2 and pair.proc.pid not in pids
    assert "2 processes" in pair.output()


def test_chats_sent_to_either_process_keep_their_exact_timed_results(pair: Server) -> None:
    scenarios = _timed_scenarios()
    assert len(scenarios) >= 20
    with fresh(pair) as c:
        assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code in (200, 201)
        seen: set[int] = set()
        for sc in scenarios:
            got = []
            for body in turn_bodies(sc, session="p-" + sc["name"]):
                got.append(c.post("/v1/activate", json=body).json()["result"])
                seen.add(c.get("/healthz").json()["process"])
            assert got == sc["expected"]["turns"], sc["name"]
        assert len(seen) == 2


def test_a_book_stored_through_one_process_is_read_through_the_other(pair: Server) -> None:
    with fresh(pair) as c:
        assert c.put("/v1/books/tide", content=BOOK.read_bytes()).status_code in (200, 201)
        listed = [sorted(b["name"] for b in c.get("/v1/books").json()["books"]) for _ in range(20)]
        assert all("tide" in names for names in listed)
        body = {"stored_books": ["tide"], "chat": [{"name": "U", "is_user": True, "mes": "the beacon"}]}
        keys = {tuple(c.post("/v1/activate", json=body).json()["result"]["activated"]) for _ in range(20)}
        assert keys == {("tide.0", "tide.1")}
        assert c.delete("/v1/books/tide").status_code == 204
        for _ in range(20):
            assert "tide" not in [b["name"] for b in c.get("/v1/books").json()["books"]]
            assert c.post("/v1/activate", json=body).status_code == 404


def _metric(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    assert found, name
    return float(found.group(1))


def test_metrics_are_summed_over_the_processes(pair: Server) -> None:
    body = {"entries": [{"uid": 0, "key": ["beacon"], "content": "The beacon."}],
            "chat": [{"name": "U", "is_user": True, "mes": "the beacon"}]}
    with fresh(pair) as c:
        before = [_metric(c.get("/metrics").text, "lorescan_activations_total") for _ in range(10)]
        assert len(set(before)) == 1          # the same figure whichever process answers
        for _ in range(30):
            assert c.post("/v1/activate", json=body).json()["result"]["activated"] == ["global.0"]
        after = {_metric(c.get("/metrics").text, "lorescan_activations_total") for _ in range(10)}
        assert after == {before[0] + 30}


def test_a_killed_process_is_replaced(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data", "--processes", "2")
    try:
        first = answering(srv)
        assert len(first) == 2
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        now: set[int] = set()
        while time.monotonic() < deadline and (len(now) < 2 or victim in now):
            time.sleep(0.2)
            now = answering(srv, seconds=1.0)
        assert len(now) == 2 and victim not in now and (first - {victim}) < now
        assert f"service process {victim} exited with -9; starting another" in srv.output()
    finally:
        status = srv.stop()
    assert status in STOPPED, srv.output()
    assert all(not _alive(pid) for pid in now | first)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")
def test_sighup_to_the_supervisor_stops_every_process(tmp_path: Path) -> None:
    # it used to end the supervisor alone: its processes went on serving, and the temporary
    # directory of the summed metrics stayed behind
    temp = tmp_path / "temp"
    temp.mkdir()
    srv = Server(tmp_path / "data", "--processes", "2", env={"TMPDIR": str(temp)})
    try:
        pids = answering(srv)
        assert len(pids) == 2
        assert [p.name[:16] for p in temp.iterdir()] == ["lorescan-metrics"]
        srv.proc.send_signal(signal.SIGHUP)
        status = srv.proc.wait(60)
    finally:
        srv.stop()
    assert status == 0, srv.output()
    assert all(not _alive(pid) for pid in pids)
    assert list(temp.iterdir()) == []
    with pytest.raises(httpx.TransportError):
        httpx.get(srv.url + "/healthz", timeout=2.0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_processes_is_checked_on_the_command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "lorescan", "serve", "--processes", "0"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "--processes: must be at least 1: '0'" in out.stderr
    helped = subprocess.run([sys.executable, "-m", "lorescan", "serve", "--help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert "--processes N" in helped.stdout and "'auto'" in helped.stdout


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_port_in_use_is_a_one_line_error(tmp_path: Path, processes: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "lorescan", "serve", "--port", str(port), "--processes", processes,
                              "--data", str(tmp_path / "data")], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"lorescan: error: cannot listen on 127.0.0.1:{port}: "
                                               "Address already in use"]
    assert not (tmp_path / "data").exists()      # no store made for a service that cannot listen


def _has_ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize(("host", "in_url"), [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]")])
def test_port_0_is_shown_as_the_port_it_became(tmp_path: Path, host: str, in_url: str) -> None:
    if host == "::1" and not _has_ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lorescan", "serve", "--host", host, "--port", "0",
                                 "--log-level", "warning", "--data", str(tmp_path / "data")],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        pattern = re.compile(rf"^lorescan serve: http://{re.escape(in_url)}:(\d+) ", re.M)
        while not (shown := pattern.search(log.read_text())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert shown is not None, log.read_text()
        port = int(shown.group(1))
        assert port > 0
        while time.monotonic() < deadline:
            try:
                assert httpx.get(f"http://{in_url}:{port}/healthz", timeout=1.0).json()["process"] == proc.pid
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise AssertionError(log.read_text())
    finally:
        proc.terminate()
        assert proc.wait(30) in STOPPED
