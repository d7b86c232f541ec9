"""A reference target's episode opens and closes, sent together when they pile up.

Every episode on the reference platform is opened (its keys minted) and closed (its keys
revoked, its audit rows read back) through the admin API. :class:`EpisodeBatcher` sends each
open or close at once when no request of its own is out, and otherwise everything asked for
meanwhile as one ``POST /api/v1/admin/episodes/batch`` when that request returns: no open or
close waits for company, and when episodes start and end in bunches (many at once, a fixed
model latency) one request carries many. The platform closes before it opens, each close and
open exactly as ``DELETE /episodes/{id}`` and ``POST /episodes`` would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from dabench.errors import HarnessError

MAX_BATCH = 256
"""Opens, and closes, one request carries at most (the platform's limit)."""

Send = Callable[[dict[str, Any]], Awaitable[Any]]
"""Posts one batch body and returns the platform's answer (raises on an HTTP error)."""


class EpisodeBatcher:
    """Opens and closes episodes through ``send`` (one ``POST /episodes/batch`` each time),
    batching what is asked for while a request is out. ``audit``: the audit rows returned
    with each close (``?audit=``)."""

    def __init__(self, send: Send, audit: int) -> None:
        self._send = send
        self._audit = audit
        self._opens: list[tuple[dict[str, Any], asyncio.Future[dict[str, Any]]]] = []
        self._closes: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.requests = 0
        """Batch requests sent (answered or failed)."""

    async def open(self, label: str, users: list[str]) -> dict[str, Any]:
        """Open an episode: the platform's ``EpisodeOpened`` (``episode_id``, ``keys``)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._opens.append(({"label": label, "users": users}, future))
        self._kick()
        return await future

    async def close(self, episode_id: str) -> dict[str, Any]:
        """Close an open episode: the platform's ``EpisodeClosed`` (with its audit page);
        :class:`HarnessError` when the platform has no such open episode."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._closes.append((episode_id, future))
        self._kick()
        return await future

    def _kick(self) -> None:
        """Start the sender unless it runs on this loop (it takes what is queued)."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:
            self._loop = loop
            self._task = loop.create_task(self._flush())

    async def _flush(self) -> None:
        """Send what is queued, one request at a time, until nothing is."""
        while self._opens or self._closes:
            opens, self._opens = self._opens[:MAX_BATCH], self._opens[MAX_BATCH:]
            closes, self._closes = self._closes[:MAX_BATCH], self._closes[MAX_BATCH:]
            body = {
                "close": [episode for episode, _ in closes],
                "open": [item for item, _ in opens],
                "audit": self._audit,
            }
            self.requests += 1
            try:
                done = await self._send(body)
                opened: list[dict[str, Any]] = list(done["opened"])
                closed = {str(c["episode_id"]): c for c in done["closed"]}
                if len(opened) != len(opens):
                    raise HarnessError(f"episode batch: {len(opened)} opened of {len(opens)}")
            except Exception as exc:
                for _, future in [*opens, *closes]:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), episode in zip(opens, opened, strict=True):
                if future.done():  # its caller gave up (cancelled): the keys must not stay
                    self._closes.append((str(episode["episode_id"]), _unawaited()))
                else:
                    future.set_result(episode)
            for episode_id, future in closes:
                if future.done():
                    continue
                if episode_id in closed:
                    future.set_result(closed[episode_id])
                else:
                    future.set_exception(HarnessError(f"no open episode {episode_id!r}"))


def _unawaited() -> asyncio.Future[dict[str, Any]]:
    """A future nobody awaits (a close the batcher asks for itself); its error is dropped."""
    future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def drop(done: asyncio.Future[dict[str, Any]]) -> None:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            done.exception()

    future.add_done_callback(drop)
    return future
