"""A minimal HTTP/1.1 client for plain-HTTP servers on loopback (the reference platform).

General-purpose clients spend about a millisecond of CPU per request in Python; at 32
concurrent episodes that is most of the harness's CPU. This client keeps a pool of keep-alive
connections (asyncio streams) to one ``host:port`` and does only what a loopback JSON API
needs: one request with a ``Content-Length`` body, a response with ``Content-Length`` or
chunked transfer encoding (or read to EOF). No TLS, no redirects, no proxies, no compression.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from dabench.errors import HarnessError

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


class LoopbackHttp:
    """Pooled keep-alive HTTP/1.1 connections to one ``http://host:port``."""

    def __init__(self, base_url: str, *, timeout_s: float = 120.0, max_idle: int = 64) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None:
            raise HarnessError(f"{base_url}: the loopback client speaks plain http only")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout_s = timeout_s
        self.max_idle = max_idle
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
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
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self._connect(path)
            try:
                async with asyncio.timeout(self.timeout_s):
                    conn[1].write(head + body)
                    await conn[1].drain()
                    response, keep = await _read_response(conn[0], method)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                _close(conn[1])
                if reused and attempt == 0:
                    continue  # a kept-alive connection the server had closed: retry once
                raise HarnessError(f"{method} {self.url(path)} failed: {exc!r}") from exc
            except BaseException:
                _close(conn[1])
                raise
            if keep and len(self._idle) < self.max_idle and not self._closed:
                self._idle.append(conn)
            else:
                _close(conn[1])
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            async with asyncio.timeout(30):
                return await asyncio.open_connection(self.host, self.port)
        except (OSError, TimeoutError) as exc:
            raise HarnessError(f"cannot connect to {self.url(path)}: {exc!r}") from exc

    async def aclose(self) -> None:
        """Close every pooled connection."""
        self._closed = True
        idle, self._idle = self._idle, []
        for _, writer in idle:
            _close(writer)
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[HttpResponse, bool]:
    status_line = await reader.readline()
    if not status_line:
        raise asyncio.IncompleteReadError(b"", None)
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
