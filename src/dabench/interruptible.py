"""Running one blocking database call so that a time limit and Ctrl-C both stop it.

A database engine's C code does not see SIGINT while it runs a query on the main thread, so
:func:`bounded` runs the call in a worker thread; the waiting main thread sees the time limit
or the KeyboardInterrupt and calls the engine's ``interrupt`` (DuckDB's ``con.interrupt``,
SQLite's ``interrupt``, psycopg's ``cancel_safe``) until the call returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class QueryTimeout(Exception):
    """A query ran longer than its time limit and was interrupted."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"took longer than {timeout_s:g} s (interrupted)")
        self.timeout_s = timeout_s


def bounded(call: Callable[[], T], interrupt: Callable[[], None], timeout_s: float) -> T:
    """``call()``, interrupted after ``timeout_s`` seconds or on Ctrl-C.

    Raises :class:`QueryTimeout` on the time limit (whatever error the interrupted call
    raised is its cause); a KeyboardInterrupt passes on once the call has stopped."""
    outcome: dict[str, Any] = {}
    done = threading.Event()  # not Thread.join: Ctrl-C during a join marks the thread stopped

    def work() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    try:
        threading.Thread(target=work, name="dabench-query", daemon=True).start()
        timed_out = not done.wait(timeout_s)
        _stop(done, interrupt)
    except KeyboardInterrupt:
        _stop(done, interrupt)
        raise
    if timed_out:
        raise QueryTimeout(timeout_s) from outcome.get("error")
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def _stop(done: threading.Event, interrupt: Callable[[], None]) -> None:
    """Interrupt until the call has ended (an interrupt sent before a query starts is lost)."""
    while not done.is_set():
        interrupt()
        done.wait(0.1)
