"""The proxy's HTTP/1.1 upstream client (``lorescan._service.upstream``) against small asyncio
servers on loopback that answer exactly the bytes each test gives them."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import subprocess
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

pytest.importorskip("httptools")

from lorescan._service.upstream import (  # noqa: E402
    Origin,
    UpstreamError,
    UpstreamPool,
    UpstreamTimeout,
    split_url,
)

from .serve_helpers import free_port  # noqa: E402

Handler = Callable[["Upstream", asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
SAFETY = 30.0     # a bound on waits that would otherwise hang a broken test; no test measures time


class Upstream:
    """A server on a free loopback port; ``handler(server, reader, writer, n)`` runs for its n-th
    connection (from 0). ``requests`` holds (connection, head, body) of every request read."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1",
                 context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.host = host
        self.context = context
        self.connections = 0
        self.requests: list[tuple[int, bytes, bytes]] = []
        self.closed: list[asyncio.Event] = []
        self.server: asyncio.Server | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.context else 'http'}://{host}:{self.port}"

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self.serve, self.host, 0, ssl=self.context)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = self.connections
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.tasks.append(task)
        self.closed.append(asyncio.Event())
        try:
            await self.handler(self, reader, writer, n)
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass                                     # the client left, or the test is over
        finally:
            writer.close()

    async def request(self, reader: asyncio.StreamReader, n: int) -> bytes | None:
        """Read one request (head and body); ``None`` when the client closed the connection."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.closed[n].set()
            return None
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        body = await reader.readexactly(length)
        self.requests.append((n, head, body))
        return head

    async def answer_all(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int,
                         answer: bytes = OK) -> None:
        while await self.request(reader, n) is not None:
            writer.write(answer)
            await writer.drain()


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, SAFETY))    # type: ignore[arg-type]


async def get(pool: UpstreamPool, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    reply = await pool.request("POST" if body is not None else "GET", url, [], body)
    try:
        return reply.status, await reply.read()
    finally:
        await reply.aclose()


# ---------------------------------------------------------------- requests and answers

def test_a_request_goes_as_given_and_its_answer_is_read_whole_on_a_kept_alive_connection() -> None:
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Thing: a\r\nx-thing: b\r\n"
              b"Content-Length: 7\r\n\r\n{\"a\":1}")

    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("POST", up.url + "/v1/chat/completions?x=1&y=%20",
                                       [(b"content-type", b"application/json"), (b"X-Custom", b"kept")], b'{"m":1}')
            assert reply.status == 200
            assert reply.headers == [(b"Content-Type", b"application/json"), (b"X-Thing", b"a"), (b"x-thing", b"b"),
                                     (b"Content-Length", b"7")]
            assert reply.header("x-thing") == "a" and reply.header("retry-after") is None
            assert await reply.read() == b'{"a":1}'
            await reply.aclose()
            assert await get(pool, up.url + "/v1/models") == (200, b'{"a":1}')
            assert up.requests == [
                (0, b"POST /v1/chat/completions?x=1&y=%%20 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    b"content-type: application/json\r\nX-Custom: kept\r\nContent-Length: 7\r\n\r\n" % up.port,
                 b'{"m":1}'),
                (0, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % up.port, b"")]
            assert up.connections == 1 and pool.idle_connections == 1
            await pool.aclose()
    run(scenario())


def test_a_chunked_answer_is_streamed_piece_by_piece() -> None:
    async def scenario() -> None:
        seen_first = asyncio.Event()

        async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while await up.request(reader, n) is not None:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                             b"\r\n9\r\ndata: 1\n\n\r\n")
                await writer.drain()
                await seen_first.wait()          # the rest only once the client has the first piece
                writer.write(b"9;ext=1\r\ndata: 2\n\n\r\n4\r\nmore\r\n0\r\n\r\n")
                await writer.drain()

        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("POST", up.url + "/v1/chat/completions", [], b"{}")
            pieces = reply.stream()
            assert await pieces.__anext__() == b"data: 1\n\n"
            seen_first.set()
            assert b"".join([piece async for piece in pieces]) == b"data: 2\n\nmore"
            await reply.aclose()
            assert pool.idle_connections == 1           # read to its end: kept alive
            seen_first.clear()
            seen_first.set()
            assert await get(pool, up.url + "/v1/chat/completions", b"{}") == (200, b"data: 1\n\ndata: 2\n\nmore")
            assert up.connections == 1
            await pool.aclose()
    run(scenario())


def test_a_close_delimited_answer_ends_with_its_connection() -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await up.request(reader, n)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ")
        await writer.drain()
        writer.write(b"part two")

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            assert await get(pool, up.url + "/a") == (200, b"part one, part two")
            assert pool.idle_connections == 0 and pool.open_connections == 0
            assert await get(pool, up.url + "/b") == (200, b"part one, part two")
            assert up.connections == 2
    run(scenario())


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
])
def test_an_answer_that_says_close_does_not_keep_its_connection(answer: bytes) -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            assert await get(pool, up.url) == (200, b"ok")
            assert await get(pool, up.url) == (200, b"ok")
            assert pool.idle_connections == 0 and up.connections == 2
    run(scenario())


def test_interim_answers_are_skipped() -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"

    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("POST", up.url, [], b"x")
            assert (reply.status, reply.headers, await reply.read()) == (201, [(b"Content-Length", b"2")], b"ok")
            await reply.aclose()
            assert pool.idle_connections == 1
    run(scenario())


def test_an_answer_left_unread_closes_its_connection() -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n)) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("GET", up.url, [], None)
            await reply.aclose()                     # the body ("ok") is still on the wire or in a buffer
            assert await up.closed[0].wait() is True
            assert pool.open_connections == 0 and pool.idle_connections == 0
    run(scenario())


def deflated(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(wbits=wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize("coding,wbits", [("gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_an_encoded_body_is_decoded(coding: str, wbits: int) -> None:
    body = deflated(b"The bell rings. " * 50, wbits)
    half = len(body) // 2
    answer = (b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (coding.encode(), half, body[:half], len(body) - half, body[half:]))

    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("GET", up.url, [], None)
            assert reply.header("content-encoding") == coding          # the headers stay as sent
            assert await reply.read() == b"The bell rings. " * 50
            await reply.aclose()
            assert pool.idle_connections == 1
    run(scenario())


@pytest.mark.parametrize("answer,says", [
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\nok", "encoded as 'br'"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 8\r\n\r\nnot gzip", "gzip body cannot be decoded"),
])
def test_a_body_that_cannot_be_decoded_is_an_error(answer: bytes, says: str) -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            with pytest.raises(UpstreamError, match=says):
                await get(pool, up.url)
            assert pool.open_connections == 0
    run(scenario())


# ---------------------------------------------------------------- stale connections

def reset(writer: asyncio.StreamWriter) -> None:
    """Close a connection with a TCP reset rather than an orderly end."""
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@pytest.mark.parametrize("how", ["closed", "reset"])
def test_a_kept_alive_connection_the_upstream_closed_is_retried_once_on_a_new_one(how: str) -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        if n == 0:
            await up.request(reader, n)
            writer.write(OK)                         # kept alive, as far as the client knows
            await writer.drain()
            await up.request(reader, n)              # the next request: closed without an answer
            if how == "reset":
                reset(writer)
            return
        await up.answer_all(reader, writer, n, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain")

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            assert await get(pool, up.url + "/first", b"1") == (200, b"ok")
            assert await get(pool, up.url + "/second", b"2") == (200, b"again")
            assert [(n, head.split(b" ")[1], body) for n, head, body in up.requests] == [
                (0, b"/first", b"1"), (0, b"/second", b"2"), (1, b"/second", b"2")]
    run(scenario())


def test_a_request_is_sent_again_only_once() -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await up.request(reader, n)
        if n == 0:
            writer.write(OK)
            await writer.drain()
            await up.request(reader, n)

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            assert await get(pool, up.url, b"1") == (200, b"ok")
            with pytest.raises(UpstreamError, match="closed the connection before its answer was complete"):
                await get(pool, up.url, b"2")
            assert [(n, body) for n, _, body in up.requests] == [(0, b"1"), (0, b"2"), (1, b"2")]
            assert pool.open_connections == 0
    run(scenario())


def test_a_new_connection_closed_before_an_answer_is_an_error_at_once() -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await up.request(reader, n)

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            with pytest.raises(UpstreamError, match="closed the connection before its answer was complete"):
                await get(pool, up.url, b"1")
            assert len(up.requests) == 1 and pool.open_connections == 0
    run(scenario())


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok",
    b"hello, this is not HTTP\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok",
])
def test_a_malformed_answer_is_an_error(answer: bytes) -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n, answer)) as up:
            pool = UpstreamPool(SAFETY)
            with pytest.raises(UpstreamError, match=r"its answer is not valid HTTP/1\.1") as caught:
                await get(pool, up.url)
            assert not isinstance(caught.value, UpstreamTimeout)
            assert pool.open_connections == 0
    run(scenario())


def test_a_body_cut_short_is_an_error() -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await up.request(reader, n)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(SAFETY)
            reply = await pool.request("GET", up.url, [], None)
            with pytest.raises(UpstreamError, match="closed the connection before its answer was complete"):
                await reply.read()
            await reply.aclose()
    run(scenario())


def test_timeouts_to_answer_and_to_get_a_connection() -> None:
    async def handler(up: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        head = await up.request(reader, n)
        if head is not None and b"/partial" in head:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
            await writer.drain()
        await up.request(reader, n)                   # nothing more, until the client leaves

    async def scenario() -> None:
        async with Upstream(handler) as up:
            pool = UpstreamPool(0.2, max_connections=1)
            with pytest.raises(UpstreamTimeout, match="sent nothing more in time"):
                await get(pool, up.url + "/silent")
            held = await pool.request("GET", up.url + "/partial", [], None)
            with pytest.raises(UpstreamTimeout, match="no connection to it came free in time"):
                await get(pool, up.url + "/next")
            with pytest.raises(UpstreamTimeout, match="sent nothing more in time"):
                await held.read()
            await held.aclose()
            assert pool.open_connections == 0
    run(scenario())


def test_a_refused_connection_and_an_unsendable_header() -> None:
    async def scenario() -> None:
        pool = UpstreamPool(SAFETY)
        with pytest.raises(UpstreamError, match="connection refused"):
            await get(pool, f"http://127.0.0.1:{free_port()}/v1/models")
        secret = b"Bearer sk-secret-value\r\nX-Injected: 1"
        with pytest.raises(UpstreamError, match="the request header b'authorization' cannot be sent") as caught:
            await pool.request("GET", f"http://127.0.0.1:{free_port()}/", [(b"authorization", secret)], None)
        assert b"sk-secret" not in str(caught.value).encode()
        assert pool.open_connections == 0
    run(scenario())


def test_close_closes_every_connection() -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n)) as up:
            pool = UpstreamPool(SAFETY)
            held = await pool.request("GET", up.url, [], None)     # in use, its body unread
            assert await get(pool, up.url) == (200, b"ok")             # on a second connection, kept alive
            assert (pool.open_connections, pool.idle_connections) == (2, 1)
            await pool.aclose()
            assert await up.closed[0].wait() and await up.closed[1].wait()
            assert pool.open_connections == 0
            await held.aclose()
            with pytest.raises(UpstreamError, match="the client is closed"):
                await get(pool, up.url)
    run(scenario())


# ---------------------------------------------------------------- URLs

def test_urls_split_into_origin_and_target() -> None:
    assert split_url("http://127.0.0.1:8080/v1/chat/completions") == (
        Origin("http", "127.0.0.1", 8080), b"/v1/chat/completions")
    assert split_url("https://user:pw@api.example.com/v1/models?a=1") == (
        Origin("https", "api.example.com", 443), b"/v1/models?a=1")
    assert split_url("http://[::1]:5000/base/v1/models") == (Origin("http", "::1", 5000), b"/base/v1/models")
    assert split_url("http://h/caf\u00e9 x") == (Origin("http", "h", 80), b"/caf%C3%A9%20x")
    assert split_url("http://h") == (Origin("http", "h", 80), b"/")
    assert Origin("http", "::1", 5000).authority == b"[::1]:5000"
    assert Origin("https", "h", 443).authority == b"h" and Origin("http", "h", 443).authority == b"h:443"
    with pytest.raises(UpstreamError, match="port is not a number"):
        split_url("http://h:99999/v1")


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback here")
def test_an_ipv6_literal_upstream() -> None:
    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n), host="::1") as up:
            pool = UpstreamPool(SAFETY)
            assert await get(pool, up.url + "/v1/models") == (200, b"ok")
            assert up.requests[0][1] == b"GET /v1/models HTTP/1.1\r\nHost: [::1]:%d\r\n\r\n" % up.port
            await pool.aclose()
    run(scenario())


# ---------------------------------------------------------------- https

@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made here with the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                           "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                           "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True, timeout=60)
    if made.returncode != 0:
        pytest.skip(f"openssl cannot make a certificate: {made.stderr[-200:]!r}")
    return cert, key


def test_https_verifies_the_upstream_certificate(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def scenario() -> None:
        async with Upstream(lambda s, r, w, n: s.answer_all(r, w, n), context=served) as up:
            assert up.url.startswith("https://127.0.0.1:")
            untrusting = UpstreamPool(SAFETY)
            with pytest.raises(UpstreamError, match="TLS: .*self.signed"):
                await get(untrusting, up.url + "/v1/models")
            trusting = UpstreamPool(SAFETY, ssl_context=ssl.create_default_context(cafile=str(cert)))
            assert await get(trusting, up.url + "/v1/models") == (200, b"ok")
            assert await get(trusting, up.url + "/v1/models") == (200, b"ok")
            assert up.requests[-1][1] == b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % up.port
            assert trusting.idle_connections == 1 and len({n for n, _, _ in up.requests}) == 1 == len(up.requests) - 1
            await trusting.aclose()
    run(scenario())
