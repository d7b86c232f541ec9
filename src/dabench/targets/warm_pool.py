"""A warm pool of stdio MCP server processes (``warm_pool: N`` on an ``mcp`` target).

A stdio server has one MCP session per process, so per-episode isolation means one process
per episode, and an episode would otherwise wait for its server to start (seconds for a
server that loads a world or a JVM). The pool keeps ``N`` processes started and initialized
(MCP handshake done) ahead of need. An episode session takes the oldest one and owns it:
it is closed with the session, never handed to another episode. Taking one immediately
starts a replacement in the background, so the pool stays ``N`` deep while episodes run.

A process that failed to start is reported to the session that takes it (the same
:class:`~dabench.errors.HarnessError` an unpooled start raises), and a replacement is started
as for any other. :meth:`WarmPool.close` stops every process not yet taken.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from dabench.targets.mcp_connection import McpConnection


class WarmPool:
    """Up to ``size`` server processes started ahead of the sessions that will own them."""

    def __init__(self, make: Callable[[], McpConnection], size: int) -> None:
        if size < 1:
            raise ValueError("a warm pool holds at least one process")
        self._make = make
        self.size = size
        self._ready: deque[tuple[McpConnection, asyncio.Task[None]]] = deque()
        self._closed = False
        self.started = 0
        """Processes started by the pool (taken, waiting or failed)."""

    def _spawn(self) -> None:
        conn = self._make()
        task = asyncio.create_task(conn.open(), name="mcp-warm-start")
        # A start that fails before anyone takes it must not log "exception never retrieved".
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._ready.append((conn, task))
        self.started += 1

    def fill(self) -> None:
        """Start processes until ``size`` are starting or ready (call within the loop)."""
        while not self._closed and len(self._ready) < self.size:
            self._spawn()

    async def take(self) -> McpConnection:
        """The oldest process, started and initialized (waits for it when it is still
        starting); a replacement starts before this returns. Raises what its start raised."""
        if self._closed:
            raise RuntimeError("the warm pool is closed")
        self.fill()
        conn, task = self._ready.popleft()
        self.fill()
        try:
            await asyncio.shield(task)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(conn.close())
            raise
        return conn

    async def close(self) -> None:
        """Stop every process not yet taken; safe to call twice."""
        self._closed = True
        pending, self._ready = list(self._ready), deque()
        for conn, task in pending:
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
            with contextlib.suppress(Exception):
                await conn.close()
