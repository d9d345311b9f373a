"""The proxy's HTTP/1.1 client for its upstream: a keep-alive connection pool on asyncio streams,
with answers parsed by httptools (llhttp, in C).

The proxy sends each request once, whole, to the base URL it was started with, and relays the
answer as it comes; it needs no redirects, cookies, authentication, content decoding nor HTTP/2.
A general pure-Python client costs several times more CPU per request than this one, which is
most of what passing a request through costs.

- Connections are pooled per origin (scheme, host, port): at most ``max_connections`` open, of
  which at most ``max_idle`` kept alive between requests, each for at most ``KEEPALIVE_SECONDS``.
  ``https`` uses :func:`ssl.create_default_context` (certificates and host names verified against
  the system's trusted authorities, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``).
- A request is its method, its URL (path and query are sent as they are; IPv6 literals in
  brackets), its headers as given, and its body; ``Host`` and ``Content-Length`` are added here.
- An answer has its status, its headers exactly as sent (order, case, repeats) and its body, read
  whole (:meth:`UpstreamResponse.read`) or piece by piece as it arrives
  (:meth:`UpstreamResponse.stream`); ``Content-Length``, chunked and close-delimited bodies.
  Interim ``1xx`` answers are skipped. No ``Accept-Encoding`` is sent, but a server may encode
  anyway: a gzip or deflate body is decoded (its headers stay as sent), any other coding is an
  :class:`UpstreamError`.
- A connection is used again only when its answer was read to its end and neither side said
  ``Connection: close``. A request sent on a kept-alive connection the upstream had meanwhile
  closed (end of stream or reset before any byte of an answer) is sent once more, on a new one.
- ``timeout`` bounds connecting, sending, each read and the wait for a free connection:
  :class:`UpstreamTimeout`. Anything else that goes wrong (refused, unknown host, TLS, reset,
  an answer that is not HTTP/1.1) is an :class:`UpstreamError`; their messages name no header
  value, so no key.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
import ssl
import zlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import httptools

MAX_CONNECTIONS = 1000
MAX_IDLE = 100
#: an idle connection older than this is closed, not used again (servers drop idle ones too)
KEEPALIVE_SECONDS = 5.0
READ_SIZE = 65536
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\r\n\0]")
_UNSAFE_TARGET = re.compile(r"[^\x21-\x7e]")


class UpstreamError(Exception):
    """The upstream cannot be reached, or its answer is not HTTP/1.1 this client reads (a 502)."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not connect, take the request, answer or send more in time (a 504)."""


class _Stale(Exception):
    """A kept-alive connection the upstream had closed before answering: send the request again."""


@dataclass(frozen=True)
class Origin:
    """Where connections go: ``scheme`` (http or https), ``host`` (an IPv6 literal without its
    brackets) and ``port``."""

    scheme: str
    host: str
    port: int

    @property
    def authority(self) -> bytes:
        """The ``Host`` header's value: the port only when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        text = host if self.port == default else f"{host}:{self.port}"
        return text.encode("ascii") if text.isascii() else text.encode("idna")


@functools.lru_cache(maxsize=256)
def split_url(url: str) -> tuple[Origin, bytes]:
    """An absolute http(s) URL as its origin and its request target (path and query)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError("its URL is not an absolute http(s) URL")
    try:
        port = parts.port
    except ValueError:
        raise UpstreamError("its URL's port is not a number from 0 to 65535") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if _UNSAFE_TARGET.search(target):
        target = quote(target, safe="!#$%&'()*+,/:;=?@[]~")
    origin = Origin(scheme, parts.hostname, port or (443 if scheme == "https" else 80))
    return origin, target.encode("ascii")


def request_head(method: str, target: bytes, origin: Origin, headers: Iterable[tuple[bytes, bytes]],
                 body: bytes | None) -> bytes:
    """The request line and headers: ``Host`` first, ``Content-Length`` last (when there is a body)."""
    if not _TOKEN.fullmatch(method.encode("latin-1", "replace")):
        raise UpstreamError(f"the method {method!r} cannot be sent")
    out = [b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (method.encode("ascii"), target, origin.authority)]
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise UpstreamError(f"the request header {name[:40]!r} cannot be sent (not a valid HTTP header)")
        out.append(b"%s: %s\r\n" % (name, value))
    if body is not None:
        out.append(b"Content-Length: %d\r\n" % len(body))
    out.append(b"\r\n")
    return b"".join(out)


def reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words (no URL, no header: nothing secret)."""
    if isinstance(exc, socket.gaierror):
        return f"its host name does not resolve ({exc.strerror or exc})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: {exc.verify_message or exc.reason or exc}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return "the connection was reset"
    return str(exc) or type(exc).__name__


class _Decoder:
    """A gzip or deflate body, decoded piece by piece (deflate: zlib-wrapped, or raw as some
    servers send it)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding != "deflate" else zlib.MAX_WBITS)
        self.started = False

    def decode(self, data: bytes) -> bytes:
        if not self.started and self.coding == "deflate":
            self.started = True
            try:
                return self.zlib.decompress(data)
            except zlib.error:
                self.zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        self.started = True
        return self.zlib.decompress(data)

    def flush(self) -> bytes:
        return self.zlib.flush()


def decoder_for(coding: bytes) -> _Decoder | None:
    """The decoder of a ``Content-Encoding`` value (``None``: the body is as sent)."""
    name = coding.strip().lower().decode("latin-1")
    if name in ("", "identity"):
        return None
    if name in ("gzip", "x-gzip", "deflate"):
        return _Decoder(name)
    raise UpstreamError(f"its answer is encoded as {name[:40]!r}, which is not decoded here")


class _Connection:
    """One open connection to an origin."""

    __slots__ = ("origin", "reader", "writer", "idle_since", "reused")

    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0
        self.reused = False

    def usable(self, now: float) -> bool:
        """Still open, not idle too long, and nothing unasked-for waiting on it."""
        reader = self.reader
        return (now - self.idle_since < KEEPALIVE_SECONDS and not self.writer.is_closing()
                and not reader.at_eof() and reader.exception() is None and not getattr(reader, "_buffer", b""))

    def close(self) -> None:
        self.writer.close()


class UpstreamResponse:
    """An answer being read from its connection; :meth:`aclose` gives the connection back (kept
    alive only when the answer was read to its end and both sides allow it)."""

    def __init__(self, pool: UpstreamPool, conn: _Connection, head_only: bool) -> None:
        self.status = 0
        #: the answer's headers as sent: order, case and repeats kept
        self.headers: list[tuple[bytes, bytes]] = []
        self._pool = pool
        self._conn: _Connection | None = conn
        self._parser = httptools.HttpResponseParser(self)
        self._pieces: list[bytes] = []
        self._head_only = head_only
        self._interim = False
        self._head_done = False
        self._complete = False
        self._keep_alive = False
        self._until_eof = False
        self._got_bytes = False
        self._decoder: _Decoder | None = None
        self._broken: UpstreamError | None = None     # found in a callback, raised after it

    def header(self, name: str) -> str | None:
        """The first value of a header (``name`` in lower case), or ``None``."""
        wanted = name.encode("latin-1")
        for key, value in self.headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return None

    # -- httptools callbacks ------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self._interim = True            # 100 Continue and the like: the answer follows
            self.headers = []
            return
        self.status = status
        self._head_done = True
        self._keep_alive = self._parser.should_keep_alive() and not self._head_only
        framed = False
        for key, value in self.headers:
            key = key.lower()
            if key in (b"content-length", b"transfer-encoding"):
                framed = True
            elif key == b"content-encoding":
                try:
                    self._decoder = decoder_for(value)
                except UpstreamError as exc:
                    self._broken = exc
        self._until_eof = not framed and status not in (101, 204, 304) and not self._head_only
        if self._head_only:
            self._complete = True

    def on_body(self, body: bytes) -> None:
        if self._decoder is not None:
            try:
                body = self._decoder.decode(body)
            except zlib.error:
                self._broken = UpstreamError(f"its {self._decoder.coding} body cannot be decoded")
                self._decoder = None
                return
        self._pieces.append(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
        else:
            self._finish()

    def _finish(self) -> None:
        self._complete = True
        if self._decoder is not None:
            self._pieces.append(self._decoder.flush())

    # -- reading ------------------------------------------------------------------------------
    def _feed(self, data: bytes) -> None:
        self._got_bytes = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._complete, self._keep_alive = self._head_done, False
            if not self._head_done:
                raise UpstreamError("its answer is not HTTP/1.1 (a protocol switch)") from None
        except httptools.HttpParserError as exc:
            if not self._complete:
                raise UpstreamError(f"its answer is not valid HTTP/1.1 ({exc})") from None
            self._keep_alive = False          # bytes after the answer: do not use the connection again
        if self._broken is not None:
            self._complete = self._keep_alive = False
            raise self._broken

    async def _receive(self) -> None:
        """Read once from the connection and parse what came."""
        conn = self._conn
        if conn is None:
            raise UpstreamError("the answer was closed before it was read")
        try:
            async with asyncio.timeout(self._pool.timeout):
                data = await conn.reader.read(READ_SIZE)
        except TimeoutError:
            raise UpstreamTimeout("it sent nothing more in time") from None
        except OSError as exc:
            if conn.reused and not self._got_bytes:
                raise _Stale from exc
            raise UpstreamError(reason(exc)) from None
        if data:
            self._feed(data)
        elif self._head_done and self._until_eof:
            self._keep_alive = False                            # a close-delimited body ends here
            self._finish()
        elif conn.reused and not self._got_bytes:
            raise _Stale
        else:
            raise UpstreamError("it closed the connection before its answer was complete")

    async def _read_head(self) -> None:
        while not self._head_done:
            await self._receive()

    async def read(self) -> bytes:
        """The whole body."""
        while not self._complete:
            await self._receive()
        data = b"".join(self._pieces)
        self._pieces = []
        return data

    async def stream(self) -> AsyncIterator[bytes]:
        """The body piece by piece, each as soon as it has arrived."""
        while True:
            if self._pieces:
                data = b"".join(self._pieces)
                self._pieces = []
                yield data
            if self._complete:
                return
            await self._receive()

    async def aclose(self) -> None:
        """Give the connection back (or close it); again is harmless."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, self._complete and self._keep_alive and not self._pieces)


class UpstreamPool:
    """Keep-alive connections to upstream origins (see the module docstring)."""

    def __init__(self, timeout: float, max_connections: int = MAX_CONNECTIONS, max_idle: int = MAX_IDLE,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.timeout = timeout
        self.max_idle = max_idle
        self._max_connections = max_connections
        self._slots: asyncio.Semaphore | None = None
        self._ssl = ssl_context
        self._idle: dict[Origin, list[_Connection]] = {}
        self._idle_count = 0
        self._open: set[_Connection] = set()
        self._closed = False

    @property
    def open_connections(self) -> int:
        return len(self._open)

    @property
    def idle_connections(self) -> int:
        return self._idle_count

    async def request(self, method: str, url: str, headers: Iterable[tuple[bytes, bytes]],
                      body: bytes | None) -> UpstreamResponse:
        """Send a request and read its answer's status and headers; the body is read from the
        returned response, which must then be closed (:meth:`UpstreamResponse.aclose`)."""
        origin, target = split_url(url)
        head = request_head(method, target, origin, headers, body)
        payload = head + body if body else head
        conn = self._take_idle(origin) or await self._connect(origin)
        try:
            return await self._exchange(conn, payload, method)
        except _Stale:
            return await self._exchange(await self._connect(origin), payload, method)

    async def _exchange(self, conn: _Connection, payload: bytes, method: str) -> UpstreamResponse:
        response = UpstreamResponse(self, conn, head_only=method.upper() == "HEAD")
        try:
            try:
                conn.writer.write(payload)
                if conn.writer.transport.get_write_buffer_size():   # not all sent at once: wait for it
                    async with asyncio.timeout(self.timeout):      # (a failed send shows on the read)
                        await conn.writer.drain()
            except TimeoutError:
                raise UpstreamTimeout("it did not take the request in time") from None
            except OSError as exc:
                if conn.reused:
                    raise _Stale from exc
                raise UpstreamError(reason(exc)) from None
            await response._read_head()
        except BaseException:
            await response.aclose()             # not complete: the connection is closed
            raise
        return response

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.usable(now):
                conn.reused = True
                return conn
            self._discard(conn)
        return None

    def _slots_now(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_connections)
        return self._slots

    async def _connect(self, origin: Origin) -> _Connection:
        if self._closed:
            raise UpstreamError("the client is closed")
        slots = self._slots_now()
        if slots.locked():
            self._close_one_idle()
        try:
            async with asyncio.timeout(self.timeout):
                await slots.acquire()
        except TimeoutError:
            raise UpstreamTimeout("no connection to it came free in time") from None
        try:
            async with asyncio.timeout(self.timeout):
                if origin.scheme == "https":
                    reader, writer = await asyncio.open_connection(
                        origin.host, origin.port, ssl=self._ssl_context(), server_hostname=origin.host)
                else:
                    reader, writer = await asyncio.open_connection(origin.host, origin.port)
        except BaseException as exc:
            slots.release()
            if isinstance(exc, TimeoutError):
                raise UpstreamTimeout("it did not accept a connection in time") from None
            if isinstance(exc, (OSError, UnicodeError)):
                raise UpstreamError(reason(exc)) from None
            raise
        conn = _Connection(origin, reader, writer)
        self._open.add(conn)
        return conn

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            context = ssl.create_default_context()        # verifies certificates and host names
            context.set_alpn_protocols(["http/1.1"])
            self._ssl = context
        return self._ssl

    def release(self, conn: _Connection, reusable: bool) -> None:
        """A connection back from an answer: kept alive for the next request, or closed."""
        if (not reusable or self._closed or self._idle_count >= self.max_idle or conn not in self._open
                or self._slots_now().locked()):      # someone waits for a connection: free one instead
            self._discard(conn)
            return
        conn.idle_since = asyncio.get_running_loop().time()
        self._idle.setdefault(conn.origin, []).append(conn)
        self._idle_count += 1

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        if conn in self._open:
            self._open.discard(conn)
            self._slots_now().release()

    def _close_one_idle(self) -> None:
        for idle in self._idle.values():
            if idle:
                self._idle_count -= 1
                self._discard(idle.pop(0))
                return

    async def aclose(self) -> None:
        """Close every connection, idle or in use; the pool takes no more requests."""
        self._closed = True
        self._idle.clear()
        self._idle_count = 0
        for conn in list(self._open):
            self._discard(conn)
