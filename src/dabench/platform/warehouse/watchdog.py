"""One daemon thread that runs an action (interrupt a cursor, cancel a connection, kill a
worker process) when a deadline passes, unless disarmed first."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

_log = logging.getLogger(__name__)


class Watchdog:
    """Deadlines on one thread: cheaper than a timer thread per query, as arming and
    disarming are a heap push and a dictionary delete under a condition variable."""

    GRANULARITY_S = 0.05
    """The watchdog's resolution: an action fires up to this much late."""

    def __init__(self, name: str = "sql-watchdog") -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Callable[[], object]] = {}
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def arm(self, action: Callable[[], object], timeout_s: float) -> int:
        """Run ``action`` after ``timeout_s`` unless disarmed; returns a ticket."""
        ticket = next(self._seq)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._armed[ticket] = action
            # Wake the thread only when its next deadline moves earlier: with one timeout for
            # every query a new deadline is never the earliest, so most calls switch no thread.
            wake = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, ticket))
            if wake:
                self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> bool:
        """Cancel a pending action; ``False`` when it already ran (or is running)."""
        with self._cond:
            return self._armed.pop(ticket, None) is not None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, ticket = self._heap[0]
                now = time.monotonic()
                if deadline > now:
                    # Disarmed tickets stay in the heap until their deadline; waking at most
                    # every GRANULARITY_S pops them in batches instead of one wake-up per query.
                    self._cond.wait(max(deadline - now, self.GRANULARITY_S))
                    continue
                heapq.heappop(self._heap)
                action = self._armed.pop(ticket, None)
            if action is not None:
                try:
                    action()
                except Exception:  # one failed action must not stop the others
                    _log.exception("watchdog action failed")
