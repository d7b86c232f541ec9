"""CPU priority of a query: Linux autogroup nice values (SQL workers) and nice values of
local PostgreSQL backends.

**Autogroups.** With autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on
by default for processes in the root CPU cgroup) every session is one scheduling group, and
groups share the CPU by their own nice values, whatever their threads' are. A SQL worker is
alone in its session (``process_pool.WorkerProcess``), so its autogroup's nice value is its
priority against the platform, the other workers and the rest of the machine.

**PostgreSQL backends.** PostgreSQL runs every query in a backend process of its own, all in
the server's session: one autogroup, inside which the backends' nice values order them. A
query running longer than :data:`LONG_QUERY_S` (or sent for a penalized caller) has its
backend reniced to :data:`LONG_QUERY_NICE`; it returns to nice 0 after the query, or its
connection is closed where that is not permitted (raising a priority needs
``CAP_SYS_NICE``; a new backend starts at the server's own). Only a backend provably on
this machine is touched: the connection is over a Unix socket or loopback and the process
id names a ``postgres:`` process.
"""

from __future__ import annotations

import os
import time
from typing import Any

LONG_QUERY_S = 0.5
"""A query running longer than this drops to :data:`LONG_QUERY_NICE` for the rest of its
run, so short queries of other sessions (and the platform process) get the CPU first."""
LONG_QUERY_NICE = 10

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})

GROUP_NICE_TRIES = 10
"""Tries to set a nice value: without ``CAP_SYS_ADMIN`` the kernel allows one change per
100 ms on the whole machine (``EAGAIN`` until then)."""


def _path(pid: int | None) -> str:
    return f"/proc/{'self' if pid is None else pid}/autogroup"


def group_nice(pid: int | None = None) -> int | None:
    """The autogroup nice value of process ``pid`` (default: this one); ``None`` where the
    kernel has no autogroups or the process is gone."""
    try:
        with open(_path(pid), encoding="ascii") as fh:
            return int(fh.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def set_group_nice(nice: int, pid: int | None = None, tries: int = GROUP_NICE_TRIES) -> bool:
    """Set the autogroup nice value of process ``pid`` (default: this one); ``True`` when
    set (or already so), or when the kernel has no autogroups (then threads' nice values
    order processes)."""
    current = group_nice(pid)
    if current is None or current == nice:
        return True
    for _ in range(max(tries, 1)):
        try:
            with open(_path(pid), "w", encoding="ascii") as fh:
                fh.write(str(nice))
        except FileNotFoundError:
            return True
        except BlockingIOError:  # EAGAIN: another change within the last 100 ms
            time.sleep(0.02)
            continue
        except OSError:
            return False
        return True
    return False


def local_backend_pid(conn: Any) -> int | None:
    """The process id of ``conn``'s backend when it runs on this machine, else ``None``."""
    info = conn.info
    host = str(info.host or "")
    if not (host.startswith("/") or host in _LOOPBACK):
        return None
    pid = int(info.backend_pid)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if not fh.read(64).startswith(b"postgres: "):
                return None
    except OSError:
        return None
    return pid


def renice(pid: int, nice: int) -> bool:
    """Set process ``pid``'s nice value; ``False`` when not permitted or gone."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError:
        return False
    return True
