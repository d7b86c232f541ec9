"""A minimal HTTP/1.1 client for plain-HTTP servers on loopback (the reference platform).

General-purpose clients spend about a millisecond of CPU per request in Python; at 32
concurrent episodes that is most of the harness's CPU. This client keeps a pool of keep-alive
connections (asyncio streams) to one ``host:port`` and does only what a loopback JSON API
needs: one request with a ``Content-Length`` body, a response with ``Content-Length`` or
chunked transfer encoding (or read to EOF). No TLS, no redirects, no proxies, no compression.

Connections never go stale. A pooled connection idle for ``idle_s`` or longer (by default
:func:`~dabench.keepalive.client_idle_limit` of the server's keep-alive, 4 s for the
platform's 5 s) is closed instead of reused, and so is one whose peer has already closed it
(end of stream seen by the event loop). A request on a reused connection that the server
closed without sending a single byte of response (it closed an idle connection as the
request went out) is sent again once, on a new connection; a failure after any byte of the
response arrived is never repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from dabench.errors import HarnessError
from dabench.keepalive import SERVER_KEEP_ALIVE_S, client_idle_limit

_MAX_HEADER_LINES = 100


@dataclass
class HttpResponse:
    """Status, lower-cased headers and the body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def content_type(self) -> str:
        """The ``content-type`` header (empty when absent)."""
        return self.headers.get("content-type", "")


@dataclass
class PoolStats:
    """What the pool did with its connections (counts since the client was made)."""

    opened: int = 0
    """New connections."""
    reused: int = 0
    """Requests sent on a pooled connection."""
    expired: int = 0
    """Pooled connections closed unused because they were idle for ``idle_s`` or longer."""
    peer_closed: int = 0
    """Pooled connections found already closed by the server and dropped before reuse."""
    resent: int = 0
    """Requests sent again on a new connection after the server closed a reused one unanswered."""

    def add(self, other: PoolStats) -> None:
        """Add ``other``'s counts to these."""
        for name in ("opened", "reused", "expired", "peer_closed", "resent"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass
class _Pooled:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    since: float = field(default_factory=time.monotonic)
    """When it went idle (monotonic seconds)."""


class _NoResponse(ConnectionError):
    """The server closed the connection before sending any byte of a response."""


class LoopbackHttp:
    """Pooled keep-alive HTTP/1.1 connections to one ``http://host:port``."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 120.0,
        max_idle: int = 64,
        idle_s: float | None = None,
    ) -> None:
        """``idle_s``: close pooled connections idle this long (default: 80 % of the
        platform's 5 s keep-alive); keep it below the server's keep-alive."""
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None:
            raise HarnessError(f"{base_url}: the loopback client speaks plain http only")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout_s = timeout_s
        self.max_idle = max_idle
        self.idle_s = client_idle_limit(SERVER_KEEP_ALIVE_S) if idle_s is None else idle_s
        self.stats = PoolStats()
        self._idle: deque[_Pooled] = deque()
        self._closed = False

    def url(self, path: str, params: dict[str, str | int] | None = None) -> str:
        """Absolute URL of ``path`` (for messages)."""
        query = f"?{urlencode(params)}" if params else ""
        return f"http://{self.host}:{self.port}{path}{query}"

    async def request(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        params: dict[str, str | int] | None = None,
    ) -> HttpResponse:
        """Send one request; a connection or protocol failure raises :class:`HarnessError`."""
        if self._closed:
            raise HarnessError(f"{self.url(path)}: client is closed")
        target = path + (f"?{urlencode(params)}" if params else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        for attempt in (0, 1):
            conn = self._take() if attempt == 0 else None
            reused = conn is not None
            if conn is None:
                conn = await self._connect(path)
            try:
                async with asyncio.timeout(self.timeout_s):
                    await _send(conn[1], head + body)
                    response, keep = await _read_response(conn[0], method)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                _close(conn[1])
                if reused and isinstance(exc, _NoResponse):
                    self.stats.resent += 1
                    continue  # the server closed an idle connection as we sent: a new one
                raise HarnessError(f"{method} {self.url(path)} failed: {exc!r}") from exc
            except BaseException:
                _close(conn[1])
                raise
            if keep and len(self._idle) < self.max_idle and not self._closed:
                self._idle.append(_Pooled(*conn))
            else:
                _close(conn[1])
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self) -> Connection | None:
        """The most recently used pooled connection that is neither expired nor closed by
        the server; expired and closed ones are closed on the way."""
        now = time.monotonic()
        while self._idle and now - self._idle[0].since >= self.idle_s:
            _close(self._idle.popleft().writer)  # oldest first: every one past the limit
            self.stats.expired += 1
        while self._idle:
            pooled = self._idle.pop()
            if _peer_closed(pooled.reader, pooled.writer):
                _close(pooled.writer)
                self.stats.peer_closed += 1
                continue
            self.stats.reused += 1
            return pooled.reader, pooled.writer
        return None

    async def _connect(self, path: str) -> Connection:
        try:
            async with asyncio.timeout(30):
                conn = await asyncio.open_connection(self.host, self.port)
        except (OSError, TimeoutError) as exc:
            raise HarnessError(f"cannot connect to {self.url(path)}: {exc!r}") from exc
        self.stats.opened += 1
        return conn

    async def aclose(self) -> None:
        """Close every pooled connection."""
        self._closed = True
        idle, self._idle = self._idle, deque()
        for pooled in idle:
            _close(pooled.writer)
            with contextlib.suppress(Exception):
                await pooled.writer.wait_closed()


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    try:
        writer.write(data)
        await writer.drain()
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise _NoResponse(f"connection closed while sending: {exc!r}") from exc


def _peer_closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Whether the server closed (or reset) the connection while it sat in the pool."""
    return writer.is_closing() or reader.at_eof() or reader.exception() is not None


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[HttpResponse, bool]:
    try:
        status_line = await reader.readline()
    except ConnectionResetError as exc:
        raise _NoResponse(f"connection reset before a response: {exc!r}") from exc
    if not status_line:
        raise _NoResponse("connection closed before a response")
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"bad status line {status_line[:80]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADER_LINES):
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close" and parts[0] == "HTTP/1.1"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return HttpResponse(status, headers, b""), keep
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return HttpResponse(status, headers, b"".join(chunks)), keep
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
        return HttpResponse(status, headers, body), keep
    return HttpResponse(status, headers, await reader.read()), False
