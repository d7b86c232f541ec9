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
``CAP_SYS_NICE``; a new backend starts at the server's own). A nice value orders a backend
only inside the server's autogroup, which as a whole still weighs as much as the platform's;
so where the CPU cgroup hierarchy (v1, ``/sys/fs/cgroup/cpu``) is writable (root), the
backend also moves into :data:`LOW_CGROUP` (``cpu.shares`` :data:`LOW_SHARES`, shared by
every lowered backend) and back after the query. Only a backend provably on this machine is
touched: the connection is over a Unix socket or loopback and the process id names a
``postgres:`` process.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

LONG_QUERY_S = 0.5
"""A query running longer than this drops to :data:`LONG_QUERY_NICE` for the rest of its
run, so short queries of other sessions (and the platform process) get the CPU first."""
LONG_QUERY_NICE = 10

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})

CPU_CGROUP_ROOT = "/sys/fs/cgroup/cpu"
"""Where the CPU controller's (v1) hierarchy is mounted."""
LOW_CGROUP = "dabench-low-priority"
"""The CPU cgroup lowered PostgreSQL backends share."""
LOW_SHARES = 102
"""Its ``cpu.shares``: a tenth of a default group's 1 024 (about nice 10's weight)."""

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
    """Set the nice value of process (or thread) ``pid``; ``False`` when not permitted or
    gone."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError:
        return False
    return True


@functools.cache
def low_cgroup(root: str = CPU_CGROUP_ROOT) -> str | None:
    """The low-priority CPU cgroup's directory (made on first use, with
    :data:`LOW_SHARES`), or ``None`` where the hierarchy is absent or not writable."""
    path = os.path.join(root, LOW_CGROUP)
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "cpu.shares"), "w", encoding="ascii") as fh:
            fh.write(str(LOW_SHARES))
    except OSError:
        return None
    return path


def cpu_cgroup(pid: int, root: str = CPU_CGROUP_ROOT) -> str | None:
    """The directory of process ``pid``'s CPU cgroup (v1), or ``None``."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpu" in controllers.split(","):
                    return os.path.join(root, path.lstrip("/"))
    except (OSError, ValueError):
        return None
    return None


def move_to_cgroup(pid: int, directory: str) -> bool:
    """Move process ``pid`` into the CPU cgroup ``directory``; ``False`` when not possible."""
    try:
        with open(os.path.join(directory, "cgroup.procs"), "w", encoding="ascii") as fh:
            fh.write(str(pid))
    except OSError:
        return False
    return True


def lower_backend(pid: int) -> tuple[bool, str | None]:
    """Backend ``pid`` to :data:`LONG_QUERY_NICE` and, where possible, into
    :func:`low_cgroup`: whether it was reniced, and the CPU cgroup it left (``None``: not
    moved)."""
    low = low_cgroup()
    origin = cpu_cgroup(pid) if low is not None else None
    if low is None or origin is None or origin == low or not move_to_cgroup(pid, low):
        origin = None
    return renice(pid, LONG_QUERY_NICE), origin  # the nice value last: it marks the move done


def restore_backend(pid: int, origin: str | None) -> bool:
    """Backend ``pid`` back to the CPU cgroup ``origin`` (if it left one) and nice 0;
    ``False`` when either is not permitted (then its connection should be closed)."""
    moved = origin is None or move_to_cgroup(pid, origin)
    return renice(pid, 0) and moved
