"""Fair sharing of the warehouse's query slots among identities and sessions.

A query takes one of ``slots`` (the warehouse's workers or connections) before it runs. One
identity holds at most ``per_user`` slots and one session at most ``per_session``; queries
beyond that, or beyond the free slots, wait in their identity's queue, and a freed slot goes
to the next identity in turn (round robin over the identities that wait), first in first out
within an identity. So many sessions of one identity cannot starve another identity, and a
query's timeout starts only when it holds its slot: the wait is reported apart.

Slots share the workers, not the CPU: on a machine with fewer cores than slots, queries that
burn CPU slow everyone's short queries down. So a caller whose query cost its worker
(``QUERY_TIMEOUT`` or ``QUERY_MEMORY_LIMIT``: the worker was interrupted, killed or
exhausted its memory, and is replaced) is *penalized* for :data:`PENALTY_S`: its queries run
at low CPU priority from their first instant (they still run, as fast as the CPU others
leave them), instead of only after half a second (see ``warehouse.worker``). The caller is
named by the platform (an episode, or an identity with a static key).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dabench.platform.errors import ToolError

PENALTY_S = 60.0
"""How long after its last costly query a caller's queries run at low CPU priority."""

COSTLY_CODES = frozenset({"QUERY_TIMEOUT", "QUERY_MEMORY_LIMIT"})
"""Error codes that penalize the caller whose query ended with them."""


@dataclass(eq=False)
class _Waiter:
    session: str
    granted: bool = False
    event: threading.Event = field(default_factory=threading.Event)
    loop: asyncio.AbstractEventLoop | None = None
    """Set for a query waiting on an asyncio loop (:meth:`QueryScheduler.acquire_async`)."""
    woken: asyncio.Future[None] | None = None

    def wake(self) -> bool:
        """Tell the waiting query its slot is granted; ``False`` when it waited on an
        asyncio loop that is closed (nobody waits there any more)."""
        if self.loop is None or self.woken is None:
            self.event.set()
            return True
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        try:
            if running is self.loop:
                self.loop.call_soon(_wake, self.woken)
            else:
                self.loop.call_soon_threadsafe(_wake, self.woken)
        except RuntimeError:
            return False
        self.event.set()
        return True


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


class QueryScheduler:
    """Slots with per-identity and per-session quotas and round-robin queueing, and the
    low-priority penalty of identities whose queries cost their workers."""

    def __init__(
        self,
        slots: int,
        per_user: int | None = None,
        per_session: int = 1,
        penalty_s: float = PENALTY_S,
    ) -> None:
        if slots < 1 or per_session < 1 or (per_user is not None and per_user < 1):
            raise ValueError("slots and quotas must be at least 1")
        if penalty_s < 0:
            raise ValueError(f"penalty_s must be at least 0, got {penalty_s}")
        self.penalty_s = penalty_s
        self._penalized: dict[str, float] = {}
        """Penalized callers and when (``time.monotonic``) their penalty ends."""
        self.strikes: dict[str, int] = {}
        """Costly queries per caller since start (what :meth:`strike` counted)."""
        self.slots = slots
        self.per_user = per_user if per_user is not None else max(1, slots - 1)
        self.per_session = per_session
        self._lock = threading.Lock()
        self._running = 0
        self._by_user: dict[str, int] = {}
        self._by_session: dict[str, int] = {}
        self._queues: dict[str, deque[_Waiter]] = {}
        self._turn: deque[str] = deque()
        """Identities with waiting queries, in the order they are served."""

    @contextmanager
    def slot(self, user: str, session: str, queue_timeout_s: float) -> Iterator[float]:
        """Hold one slot for ``user``'s ``session``; yields the seconds waited for it.
        Raises ``SQL_BUSY`` after ``queue_timeout_s`` without a slot."""
        waited = self.acquire(user, session, queue_timeout_s)
        try:
            yield waited
        finally:
            self.release(user, session)

    def acquire(self, user: str, session: str, queue_timeout_s: float) -> float:
        """:meth:`slot` without the context: take one slot for ``user``'s ``session``,
        waiting on this thread; the seconds waited (``SQL_BUSY`` after ``queue_timeout_s``).
        The caller gives the slot back with :meth:`release`."""
        if self.try_slot(user, session):  # no waiter (and no event) on the usual path
            return 0.0
        started = time.perf_counter()
        self._wait(user, session, queue_timeout_s)
        return time.perf_counter() - started

    def _wait(self, user: str, session: str, queue_timeout_s: float) -> None:
        """Queue for a slot and wait for it (``SQL_BUSY`` after ``queue_timeout_s``)."""
        waiter = _Waiter(session)
        self._queue(user, waiter)
        if not waiter.granted and not waiter.event.wait(queue_timeout_s):
            self._give_up(user, waiter, queue_timeout_s)

    async def acquire_async(self, user: str, session: str, queue_timeout_s: float) -> float:
        """:meth:`slot`'s wait on the running asyncio loop (no thread waits): take one slot
        for ``user``'s ``session``, queued as :meth:`slot` queues; the seconds waited.
        Raises ``SQL_BUSY`` after ``queue_timeout_s``; the caller gives the slot back with
        :meth:`release`. Cancelled, it gives back a slot it was granted."""
        started = time.perf_counter()
        if self.try_slot(user, session):
            return 0.0
        loop = asyncio.get_running_loop()
        waiter = _Waiter(session, loop=loop, woken=loop.create_future())
        self._queue(user, waiter)
        if not waiter.granted:
            assert waiter.woken is not None
            try:
                await asyncio.wait_for(asyncio.shield(waiter.woken), queue_timeout_s)
            except TimeoutError:
                self._give_up(user, waiter, queue_timeout_s)
            except BaseException:
                try:
                    self._give_up(user, waiter, queue_timeout_s)
                except ToolError:
                    pass
                else:  # granted meanwhile: given back
                    self.release(user, session)
                raise
        return time.perf_counter() - started

    def _queue(self, user: str, waiter: _Waiter) -> None:
        """Grant ``waiter`` a slot now if nobody of ``user`` waits and it fits, else queue it."""
        with self._lock:
            if not self._queues.get(user) and self._fits(user, waiter.session):
                self._grant(user, waiter)
            else:
                if user not in self._queues or not self._queues[user]:
                    self._queues[user] = deque()
                    self._turn.append(user)
                self._queues[user].append(waiter)

    def _give_up(self, user: str, waiter: _Waiter, queue_timeout_s: float) -> None:
        """A wait ended without its wake-up: ``SQL_BUSY`` (the waiter leaves the queue)
        unless the slot was granted meanwhile."""
        with self._lock:
            if waiter.granted:
                return
            queue = self._queues.get(user)
            if queue is not None and waiter in queue:  # (a waiter that could not wake is gone)
                queue.remove(waiter)
                if not queue:
                    del self._queues[user]
                    self._turn.remove(user)
        raise ToolError(
            "SQL_BUSY",
            f"no query slot became free within {queue_timeout_s:g} s "
            f"({self.per_user} at once per identity, {self.per_session} per session)",
            "wait for your other queries to finish, then retry",
        )

    def try_slot(self, user: str, session: str) -> bool:
        """Take one slot for ``user``'s ``session`` if that needs no wait (a slot is free,
        the quotas allow it and none of ``user``'s queries waits); the caller gives it back
        with :meth:`release`. ``False``: nothing was taken (:meth:`slot` waits instead)."""
        with self._lock:
            if self._queues.get(user) or not self._fits(user, session):
                return False
            self._count(user, session)
            return True

    def release(self, user: str, session: str) -> None:
        """Give back a slot taken by :meth:`try_slot` (or :meth:`slot`, which does this)."""
        with self._lock:
            self._uncount(user, session)
            self._dispatch()

    def strike(self, culprit: str, code: str) -> bool:
        """Record how ``culprit``'s query ended: a code in :data:`COSTLY_CODES` penalizes
        it for ``penalty_s`` from now. Returns whether it did."""
        if code not in COSTLY_CODES or self.penalty_s == 0:
            return False
        with self._lock:
            now = time.monotonic()
            penalized = {c: t for c, t in self._penalized.items() if t > now}
            penalized[culprit] = now + self.penalty_s
            self._penalized = penalized  # replaced whole: readers take no lock
            self.strikes[culprit] = self.strikes.get(culprit, 0) + 1
        return True

    def low_priority(self, culprit: str) -> bool:
        """Whether ``culprit``'s next query runs at low CPU priority (its penalty holds)."""
        until = self._penalized.get(culprit)  # one dict read on the normal path, no lock
        return until is not None and until > time.monotonic()

    def _fits(self, user: str, session: str) -> bool:
        return (
            self._running < self.slots
            and self._by_user.get(user, 0) < self.per_user
            and self._by_session.get(session, 0) < self.per_session
        )

    def _count(self, user: str, session: str) -> None:
        self._running += 1
        self._by_user[user] = self._by_user.get(user, 0) + 1
        self._by_session[session] = self._by_session.get(session, 0) + 1

    def _uncount(self, user: str, session: str) -> None:
        self._running -= 1
        self._by_user[user] -= 1
        self._by_session[session] -= 1
        if not self._by_user[user]:
            del self._by_user[user]
        if not self._by_session[session]:
            del self._by_session[session]

    def _grant(self, user: str, waiter: _Waiter) -> None:
        self._count(user, waiter.session)
        waiter.granted = True
        if not waiter.wake():  # its loop is closed: the slot stays free
            waiter.granted = False
            self._uncount(user, waiter.session)

    def _dispatch(self) -> None:
        """Give free slots to waiting queries, one identity after another."""
        progress = True
        while progress and self._running < self.slots and self._turn:
            progress = False
            for _ in range(len(self._turn)):
                user = self._turn[0]
                self._turn.rotate(-1)
                queue = self._queues[user]
                waiter = next((w for w in queue if self._fits(user, w.session)), None)
                if waiter is None:
                    continue
                queue.remove(waiter)
                self._grant(user, waiter)
                if not queue:
                    del self._queues[user]
                    self._turn.remove(user)
                progress = True
                break
