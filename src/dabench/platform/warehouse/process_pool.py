"""A pool of SQL worker processes (:mod:`.worker`): one query per worker at a time, a worker
past its time (plus a grace period) killed and replaced.

Each worker opens the world read-only under its own address-space limit, so a query can only
exhaust its own worker. The parent talks to a worker over its stdin/stdout pipes, one JSON
object per line; the parent's side of a call is a write and a blocking read on the caller's
thread (no thread or event loop of the parent is held by a query's work, only by its wait),
or, when a worker is idle, a write and a wait on the asyncio loop's selector
(:meth:`WorkerPool.request_async`: no thread is handed the call and none waits on the pipe,
two wake-ups fewer per query).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from dabench.platform.errors import ToolError
from dabench.platform.warehouse.base import (
    QueryCancel,
    cancelled_error,
    memory_error,
    timeout_error,
)
from dabench.platform.warehouse.priority import set_group_nice
from dabench.platform.warehouse.watchdog import Watchdog

_log = logging.getLogger(__name__)

KILL_GRACE_S = 1.0
"""How long a worker may run past a query's timeout (its own interrupt should have stopped
the query) before the parent kills it."""

SPAWN_AFTER_S = 0.5
"""A query that finds every worker busy starts another (up to the pool's size) once one of
them has run its query this long: queries waiting behind short ones share the workers
that live (a short query frees one sooner than a new one starts), while a long query
never holds up the others for more than this plus a worker's start."""

IDLE_STOP_S = 30.0
"""A worker idle this long is stopped while more than the pool's minimum live."""


STARTUP_NICE = 10
"""A replacement worker starts (imports, connects: about 0.5 s of CPU) at this nice value
and returns to 0 once ready, so replacing workers that hostile queries cost does not take
the CPU from other sessions' short queries (where the threads' nice values count: not
under autogroup scheduling, see :class:`WorkerProcess`). A worker started for a waiting
query that is not low-priority starts at 0: that query waits for it."""

_WORKER_BOOT = (
    "import os, runpy; os.nice({nice}); "
    "runpy.run_module('dabench.platform.warehouse.worker', run_name='__main__')"
)


ASYNC_MAX_REQUEST_BYTES = 32 * 1024
"""Encoded queries up to this size may be sent from the event loop
(:meth:`WorkerPool.request_async`): half a Linux pipe's default buffer, so the write never
waits for the worker to read."""

_READ_BYTES = 1 << 16


class WorkerDied(Exception):
    """The worker's pipe closed mid-call (killed, or crashed)."""


def encode_request(req: dict[str, Any]) -> bytes:
    """One query as the line a worker reads."""
    return json.dumps(req).encode() + b"\n"


def _worker_env() -> dict[str, str]:
    """The parent's environment with this package importable (whatever put it on the path)."""
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _died(exc: WorkerDied, killed: bool, timeout_s: float) -> ToolError:
    """The error of a query whose worker died: killed past its time (``QUERY_TIMEOUT``), or
    dead by itself (``QUERY_MEMORY_LIMIT``)."""
    if killed:
        return timeout_error(timeout_s)
    return memory_error(f"its worker process died: {exc}")


class WorkerProcess:
    """One ``dabench.platform.warehouse.worker`` process (started at :data:`STARTUP_NICE`)
    in a session of its own (a Ctrl-C to the server's group is the server's to handle).

    With Linux's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on by
    default where processes sit in the root CPU cgroup) every session is one scheduling
    group, and groups share the CPU equally whatever their threads' nice values (two busy
    loops on one core at nice 0 and 10: 0.69 / 0.12 s of CPU in one session, 0.43 / 0.92 s
    in two). So the worker also sets its autogroup's nice value (it is alone in its
    session, see :mod:`~dabench.platform.warehouse.priority`) for a long or low-priority
    query, but not while it starts: a starting worker holds a place in the pool that a
    waiting query may need. A niced worker gets its share back before it is interrupted
    or killed (:meth:`WorkerPool.request`, :meth:`kill`): a killed process exits at its own
    priority, and at autogroup nice 10 on a busy machine that once took 2-5 s."""

    def __init__(self, hello: dict[str, Any], nice: int = STARTUP_NICE) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_BOOT.format(nice=nice)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_worker_env(),
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout
        self._in_fd = self._in.fileno()
        self._out_fd = self._out.fileno()
        self._buf = bytearray()
        """Bytes read from the worker past the last answer (none, as it answers one line
        per request): both paths read the pipe's descriptor, never the buffered file."""
        self._send(json.dumps(hello).encode() + b"\n")

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.proc.pid

    def ready(self) -> dict[str, Any]:
        """Wait for the start-up answer (tables, settings); raises on a failed start."""
        answer = self._read()
        if "ok" not in answer:
            raise RuntimeError(f"SQL worker failed to start: {answer}")
        return dict(answer["ok"])

    def request(self, req: dict[str, Any]) -> dict[str, Any]:
        """Send one query, wait for its answer."""
        self._send(encode_request(req))
        return self._read()

    async def request_async(self, line: bytes) -> dict[str, Any]:
        """Send one encoded query (:func:`encode_request`) and wait for its answer on the
        running asyncio loop (the pipe watched by the loop's selector: no thread waits).
        ``line`` must fit the pipe's buffer (:data:`ASYNC_MAX_REQUEST_BYTES`): the worker
        is idle, so writing it never blocks."""
        self._send(line)
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[bool] = loop.create_future()

        def readable() -> None:
            if answered.done():
                return
            try:
                chunk = os.read(self._out_fd, _READ_BYTES)
            except OSError as exc:
                answered.set_exception(WorkerDied(str(exc)))
                return
            if not chunk:
                answered.set_exception(WorkerDied(f"exit status {self.proc.poll()}"))
                return
            self._buf += chunk
            if b"\n" in chunk:
                answered.set_result(True)

        loop.add_reader(self._out_fd, readable)
        try:
            await answered
        finally:
            loop.remove_reader(self._out_fd)
        return self._answer()

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._in_fd, view) :]
        except OSError as exc:  # BrokenPipeError included
            raise WorkerDied(str(exc)) from exc

    def _read(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            chunk = os.read(self._out_fd, _READ_BYTES)
            if not chunk:
                raise WorkerDied(f"exit status {self.proc.wait()}")
            self._buf += chunk
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        """The first line of what was read, parsed (the rest stays for the next read)."""
        end = self._buf.index(b"\n") + 1
        answer: dict[str, Any] = json.loads(self._buf[:end])
        del self._buf[:end]
        return answer

    def unnice(self) -> None:
        """The worker's autogroup back to nice 0 (it exits, or handles an interrupt, at the
        priority it has)."""
        set_group_nice(0, self.proc.pid, tries=3)

    def kill(self) -> None:
        """SIGKILL the worker (its pipe then closes, ending a pending read), at normal
        priority."""
        self.unnice()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)

    def stop(self, wait_s: float = 2.0) -> None:
        """Close its stdin (it exits), kill it if it does not within ``wait_s``."""
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
        self._out.close()


@dataclass(eq=False)
class _LoopWaiter:
    """A query waiting on an asyncio loop for a worker (:meth:`WorkerPool.take_async`)."""

    loop: asyncio.AbstractEventLoop
    woken: asyncio.Future[None]
    worker: WorkerProcess | None = None
    """The worker handed to it (set under the pool's lock, before it is woken)."""


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


class WorkerPool:
    """Up to ``size`` worker processes, each serving one query at a time.

    Workers start on demand: one at construction; another when a query waits for a worker
    and some busy worker has run its query for ``spawn_after_s`` (so a platform whose
    queries are short runs on one, and a long query does not hold up the others). A worker
    idle for ``idle_stop_s`` is stopped while more than ``min_workers`` live, so an idle
    platform is small."""

    def __init__(
        self,
        hello: dict[str, Any],
        size: int,
        *,
        min_workers: int = 1,
        spawn_after_s: float = SPAWN_AFTER_S,
        idle_stop_s: float = IDLE_STOP_S,
    ) -> None:
        if size < 1:
            raise ValueError(f"the SQL worker pool needs at least 1 worker, got {size}")
        if not 1 <= min_workers <= size:
            raise ValueError(f"min_workers must be between 1 and {size}, got {min_workers}")
        self._hello = hello
        self.size = size
        self.min_workers = min_workers
        self._spawn_after_s = spawn_after_s
        self._idle_stop_s = idle_stop_s
        self._cond = threading.Condition()
        self._closed = False
        self._closing = threading.Event()  # wakes the reaper (its own: never a notify's)
        self._busy: dict[WorkerProcess, float] = {}
        """Busy workers and when each took its query."""
        self._idle: list[tuple[WorkerProcess, float]] = []
        """Idle workers and when each became idle; the most recently used last (taken
        first), so the least used age out."""
        self._starting = 0
        self._waiting = 0
        """Queries in :meth:`_take` (:meth:`try_take` never passes them by)."""
        self._low_waiting = 0
        """Low-priority queries waiting in :meth:`_take` (they may pass an idle worker by)."""
        self._loop_waiters: deque[_LoopWaiter] = deque()
        """Queries waiting in :meth:`take_async`, first come first served (after every
        thread waiting in :meth:`_take`)."""
        self.replaced = 0
        """Workers killed or dead and replaced since start."""
        self.started = 0
        """Workers started since construction (the first ``min_workers`` included)."""
        self.stopped_idle = 0
        """Workers stopped for being idle ``idle_stop_s``."""
        started = [WorkerProcess(hello) for _ in range(min_workers)]
        try:
            infos = [w.ready() for w in started]
        except BaseException:
            for w in started:
                w.kill()
            raise
        self.started = len(started)
        self.info = infos[0]
        """The first worker's start-up answer: tables, catalog, DuckDB settings, limit."""
        now = time.monotonic()
        self._idle = [(w, now) for w in started]
        self._killer = Watchdog("sql-worker-killer")
        self._local = threading.local()
        threading.Thread(target=self._reap_idle, name="sql-worker-reaper", daemon=True).start()

    def last_wait_s(self) -> float:
        """How long this thread's last :meth:`request` waited for an idle worker (one being
        started or replaced); the timeout starts after it."""
        return float(getattr(self._local, "wait_s", 0.0))

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (idle and busy)."""
        with self._cond:
            return sorted(w.pid for w in [*(w for w, _ in self._idle), *self._busy])

    def _live(self) -> int:
        return len(self._idle) + len(self._busy) + self._starting

    def request(
        self, req: dict[str, Any], timeout_s: float, cancel: QueryCancel | None = None
    ) -> dict[str, Any]:
        """Run ``req`` on an idle worker; kill the worker ``KILL_GRACE_S`` after ``timeout_s``.

        Raises ``QUERY_TIMEOUT`` when the worker had to be killed, ``QUERY_MEMORY_LIMIT`` when
        it died by itself (an allocation failing outside DuckDB's error handling, or its
        resident memory past its budget). ``cancel``: the call's cancellation, which kills
        the worker at once (as its time limit would, past the grace) and replaces it
        (``CANCELLED``)."""
        self._local.wait_s = 0.0
        started = time.perf_counter()
        worker = self._take(bool(req.get("low_priority")))
        self._local.wait_s = time.perf_counter() - started
        if cancel is not None and not cancel.attach(worker.kill):
            self._give(worker)
            raise cancelled_error()
        tickets = self._arm(worker, timeout_s)
        try:
            answer = worker.request(req)
        except WorkerDied as exc:
            killed = self._disarm(tickets)
            cancelled = cancel is not None and not cancel.attach(None)
            self._replace(worker)
            if cancelled:
                raise cancelled_error() from exc
            raise _died(exc, killed, timeout_s) from exc
        except BaseException:
            self._disarm(tickets)
            if cancel is not None:
                cancel.attach(None)
            self._replace(worker)
            raise
        killed = self._disarm(tickets)
        if cancel is not None and not cancel.attach(None):
            killed = True  # cancelled as it answered: its kill was sent
        if not killed and not answer.get("recycle"):
            self._give(worker)
        else:  # killed just after answering, or asked to be: the answer stands
            self._replace(worker)
        return answer

    def try_take(self) -> WorkerProcess | None:
        """An idle worker for :meth:`request_async` if one is free now, else ``None`` (then
        :meth:`request`, on a thread, waits for one or starts one)."""
        with self._cond:
            if self._closed or not self._idle or self._waiting or self._loop_waiters:
                return None
            worker, _ = self._idle.pop()
            self._busy[worker] = time.monotonic()
            return worker

    async def take_async(self) -> WorkerProcess | None:
        """An idle worker for :meth:`request_async`, waited for on the running loop (no
        thread waits): a worker coming free is handed to the longest-waiting such query.
        ``None`` when none came before a worker could be started for it (a busy one has
        run ``spawn_after_s``; the pool has room), or a query waits on a thread (those go
        first: low-priority ones follow the pool's rules), or the pool is closed: then
        :meth:`request` on a thread waits or starts one. Cancelled, it gives back a worker
        it was handed."""
        loop = asyncio.get_running_loop()
        with self._cond:
            if self._closed or self._waiting:
                return None
            if self._idle and not self._loop_waiters:
                worker, _ = self._idle.pop()
                self._busy[worker] = time.monotonic()
                return worker
            now = time.monotonic()
            room = self._live() < self.size
            spawn_at = min(self._busy.values(), default=now) + self._spawn_after_s
            # past the spawn point (or, in a full pool, as long) the thread path takes over
            wait_s = max(spawn_at - now, 0.01) if room else self._spawn_after_s
            waiter = _LoopWaiter(loop, loop.create_future())
            self._loop_waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.woken), wait_s)
        except TimeoutError:
            pass
        except BaseException:
            with self._cond:
                handed = self._forget(waiter)
            if handed is not None:
                self._give(handed)
            raise
        with self._cond:
            return self._forget(waiter)

    def _forget(self, waiter: _LoopWaiter) -> WorkerProcess | None:
        """With the lock held: ``waiter`` leaves the queue; the worker it was handed."""
        if waiter.worker is None:
            with contextlib.suppress(ValueError):
                self._loop_waiters.remove(waiter)
        return waiter.worker

    def _hand_locked(self, worker: WorkerProcess) -> bool:
        """With the lock held: hand ``worker`` (free) to the longest-waiting loop query
        unless a thread waits (threads go first); whether it was handed. A waiter whose
        loop is closed is dropped."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        while self._loop_waiters and not self._waiting:
            waiter = self._loop_waiters.popleft()
            try:
                if running is waiter.loop:
                    waiter.loop.call_soon(_wake, waiter.woken)
                else:
                    waiter.loop.call_soon_threadsafe(_wake, waiter.woken)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue
            waiter.worker = worker
            self._busy[worker] = time.monotonic()
            return True
        return False

    async def request_async(
        self, worker: WorkerProcess, line: bytes, timeout_s: float
    ) -> dict[str, Any]:
        """:meth:`request` on the running asyncio loop, for a worker :meth:`try_take` gave
        and an encoded query of at most :data:`ASYNC_MAX_REQUEST_BYTES`: the same deadlines
        (the watchdog kills the worker past its time, which ends the wait), the same
        answers and errors, without a thread waiting on the pipe. Replacing a worker (a
        start of about half a second) runs on a thread; the caller must not be cancelled
        while it waits (shield it), or the worker is replaced."""
        tickets = self._arm(worker, timeout_s)
        try:
            answer = await worker.request_async(line)
        except WorkerDied as exc:
            killed = self._disarm(tickets)
            await anyio.to_thread.run_sync(self._replace, worker)
            raise _died(exc, killed, timeout_s) from exc
        except BaseException:
            self._disarm(tickets)
            threading.Thread(target=self._replace, args=(worker,), daemon=True).start()
            raise
        if not self._disarm(tickets) and not answer.get("recycle"):
            self._give(worker)
        else:  # killed just after answering, or asked to be: the answer stands
            await anyio.to_thread.run_sync(self._replace, worker)
        return answer

    def _arm(self, worker: WorkerProcess, timeout_s: float) -> tuple[int, int]:
        """The deadlines of one query on ``worker``: its kill, ``KILL_GRACE_S`` after the
        timeout, and its return to full CPU share at the timeout (for its interrupt)."""
        kill = self._killer.arm(worker.kill, timeout_s + KILL_GRACE_S)
        return kill, self._killer.arm(worker.unnice, timeout_s)

    def _disarm(self, tickets: tuple[int, int]) -> bool:
        """Cancel a query's deadlines; whether the kill had already fired."""
        kill, unnice = tickets
        self._killer.disarm(unnice)
        return not self._killer.disarm(kill)

    def _take(self, low_priority: bool) -> WorkerProcess:
        """An idle worker. A query that waits starts one (up to the pool's size) once a busy
        worker has run ``spawn_after_s``; a low-priority query counts as having run that
        long from its start, and the worker started for a waiting query that is not
        low-priority starts at nice 0. A low-priority query never takes the last idle
        worker while the pool can grow: it starts another (at :data:`STARTUP_NICE`) and
        waits, so the pool grows at a penalized caller's expense (``fair_share``) and the
        others' next query finds a worker."""
        with self._cond:
            self._waiting += 1
            if low_priority:
                self._low_waiting += 1
            try:
                return self._take_locked(low_priority)
            finally:
                self._waiting -= 1
                if low_priority:
                    self._low_waiting -= 1
                while self._idle and self._loop_waiters and not self._waiting:
                    self._hand_locked(self._idle.pop()[0])  # held back while threads waited

    def _take_locked(self, low_priority: bool) -> WorkerProcess:
        """:meth:`_take` with the pool's lock held."""
        asked = False
        while True:
            if self._closed:
                raise RuntimeError("the SQL worker pool is closed")
            if low_priority and self._live() < self.size:
                if len(self._idle) > 1:
                    break
                if self._idle and not self._starting:
                    self._starting += 1
                    threading.Thread(target=self._start_one, daemon=True).start()
                if self._idle:
                    self._cond.wait()  # a start in flight notifies
                    continue
            elif self._idle:
                break
            now = time.monotonic()
            spawn_at = min(self._busy.values(), default=now) + self._spawn_after_s
            room = self._live() < self.size
            if not asked and room and (now >= spawn_at if self._busy else not self._live()):
                asked = True  # one start per waiting query at most
                self._starting += 1
                nice = STARTUP_NICE if low_priority else 0
                threading.Thread(target=self._start_one, args=(nice,), daemon=True).start()
            # woken by a worker coming free or starting, or when a busy one turns long
            self._cond.wait(None if asked or not room else max(spawn_at - now, 0.01))
        worker, _ = self._idle.pop()
        long_ago = self._spawn_after_s if low_priority else 0.0
        self._busy[worker] = time.monotonic() - long_ago
        return worker

    def _give(self, worker: WorkerProcess) -> None:
        with self._cond:
            self._busy.pop(worker, None)
            if self._closed:
                worker.stop()
                return
            if self._hand_locked(worker):
                return
            self._idle.append((worker, time.monotonic()))
            if self._low_waiting:
                self._cond.notify_all()  # a low-priority waiter may not take it: wake every one
            else:
                self._cond.notify()  # whoever wakes takes it: waking the others costs CPU

    def _replace(self, worker: WorkerProcess) -> None:
        """Reap ``worker`` and start its successor on this thread: the caller whose query
        cost the worker keeps its query slot until the pool is as large as before (its wait
        is counted in :meth:`last_wait_s`, not as query time), so other sessions never wait
        for a worker that query cost them. If the start fails, a background thread
        retries. (Only being idle shrinks the pool.)"""
        started = time.perf_counter()
        worker.kill()
        with self._cond:
            self._busy.pop(worker, None)
            self.replaced += 1
            closed = self._closed
            if not closed:
                self._starting += 1
        worker.stop(0)
        if closed:
            return
        try:
            successor = WorkerProcess(self._hello)
            successor.ready()
        except Exception:
            _log.exception("starting a SQL worker failed; retrying in the background")
            threading.Thread(target=self._start_one, daemon=True).start()
        else:
            self._add(successor)
        self._local.wait_s = getattr(self._local, "wait_s", 0.0) + time.perf_counter() - started

    def _add(self, worker: WorkerProcess) -> None:
        """A started worker joins the idle list (``_starting`` was counted for it)."""
        with self._cond:
            self._starting -= 1
            self.started += 1
            if self._closed:
                worker.stop()
                return
            if self._hand_locked(worker):
                return
            self._idle.append((worker, time.monotonic()))
            self._cond.notify_all()  # a low-priority waiter may not take it: wake every one

    def _start_one(self, nice: int = STARTUP_NICE) -> None:
        """Start one worker (``_starting`` was counted for it) at ``nice``, retrying with
        back-off."""
        delay = 0.5
        while True:
            with self._cond:
                if self._closed:
                    self._starting -= 1
                    return
            try:
                worker = WorkerProcess(self._hello, nice)
                worker.ready()
            except Exception:
                _log.exception("starting a SQL worker failed; retrying in %.1f s", delay)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            self._add(worker)
            return

    def _reap_idle(self) -> None:
        """Stop workers idle for ``idle_stop_s`` while more than ``min_workers`` live."""
        period = max(self._idle_stop_s / 4, 0.05)
        while not self._closing.wait(period):
            with self._cond:
                now = time.monotonic()
                stale: list[WorkerProcess] = []
                # the least recently used first; never below min_workers
                while (
                    self._idle
                    and self._live() > self.min_workers
                    and now - self._idle[0][1] >= self._idle_stop_s
                ):
                    stale.append(self._idle.pop(0)[0])
                self.stopped_idle += len(stale)
            for w in stale:
                w.stop()

    def close(self) -> None:
        """Stop every worker (a busy one is killed)."""
        with self._cond:
            self._closed = True
            self._closing.set()
            idle, busy = [w for w, _ in self._idle], list(self._busy)
            self._idle.clear()
            self._cond.notify_all()
            waiters, self._loop_waiters = list(self._loop_waiters), deque()
        for waiter in waiters:  # they find the pool closed
            with contextlib.suppress(RuntimeError):  # a loop already closed
                waiter.loop.call_soon_threadsafe(_wake, waiter.woken)
        for w in busy:
            w.kill()
        for w in idle:
            w.stop()
