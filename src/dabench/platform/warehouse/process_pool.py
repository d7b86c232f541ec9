"""A pool of SQL worker processes (:mod:`.worker`): one query per worker at a time, a worker
past its time (plus a grace period) killed and replaced.

Each worker opens the world read-only under its own address-space limit, so a query can only
exhaust its own worker. The parent talks to a worker over its stdin/stdout pipes, one JSON
object per line; the parent's side of a call is a write and a blocking read on the caller's
thread (no thread or event loop of the parent is held by a query's work, only by its wait).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from dabench.platform.warehouse.base import memory_error, timeout_error
from dabench.platform.warehouse.watchdog import Watchdog

_log = logging.getLogger(__name__)

KILL_GRACE_S = 1.0
"""How long a worker may run past a query's timeout (its own interrupt should have stopped
the query) before the parent kills it."""


class WorkerDied(Exception):
    """The worker's pipe closed mid-call (killed, or crashed)."""


def _worker_env() -> dict[str, str]:
    """The parent's environment with this package importable (whatever put it on the path)."""
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class WorkerProcess:
    """One ``python -m dabench.platform.warehouse.worker`` process."""

    def __init__(self, hello: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dabench.platform.warehouse.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_worker_env(),
            start_new_session=True,  # a Ctrl-C to the server's group is the server's to handle
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout
        self._in.write(json.dumps(hello).encode() + b"\n")
        self._in.flush()

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
        try:
            self._in.write(json.dumps(req).encode() + b"\n")
            self._in.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(str(exc)) from exc
        return self._read()

    def _read(self) -> dict[str, Any]:
        line = self._out.readline()
        if not line.endswith(b"\n"):
            raise WorkerDied(f"exit status {self.proc.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def kill(self) -> None:
        """SIGKILL the worker (its pipe then closes, ending a pending read)."""
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


class WorkerPool:
    """``size`` worker processes, each serving one query at a time."""

    def __init__(self, hello: dict[str, Any], size: int) -> None:
        if size < 1:
            raise ValueError(f"the SQL worker pool needs at least 1 worker, got {size}")
        self._hello = hello
        self._cond = threading.Condition()
        self._closed = False
        self._busy: set[WorkerProcess] = set()
        self.replaced = 0
        """Workers killed or dead and replaced since start."""
        started = [WorkerProcess(hello) for _ in range(size)]
        try:
            infos = [w.ready() for w in started]
        except BaseException:
            for w in started:
                w.kill()
            raise
        self.info = infos[0]
        """The first worker's start-up answer: tables, catalog, DuckDB settings, limit."""
        self._idle: list[WorkerProcess] = started
        self._killer = Watchdog("sql-worker-killer")
        self._local = threading.local()

    def last_wait_s(self) -> float:
        """How long this thread's last :meth:`request` waited for an idle worker (one being
        replaced); the timeout starts after it."""
        return float(getattr(self._local, "wait_s", 0.0))

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (idle and busy)."""
        with self._cond:
            return sorted(w.pid for w in [*self._idle, *self._busy])

    def request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run ``req`` on an idle worker; kill the worker ``KILL_GRACE_S`` after ``timeout_s``.

        Raises ``QUERY_TIMEOUT`` when the worker had to be killed, ``QUERY_MEMORY_LIMIT`` when
        it died by itself (an allocation failing outside DuckDB's error handling)."""
        self._local.wait_s = 0.0
        started = time.perf_counter()
        worker = self._take()
        self._local.wait_s = time.perf_counter() - started
        ticket = self._killer.arm(worker.kill, timeout_s + KILL_GRACE_S)
        try:
            answer = worker.request(req)
        except WorkerDied as exc:
            killed = not self._killer.disarm(ticket)
            self._replace(worker)
            if killed:
                raise timeout_error(timeout_s) from exc
            raise memory_error(f"its worker process died: {exc}") from exc
        except BaseException:
            self._killer.disarm(ticket)
            self._replace(worker)
            raise
        if self._killer.disarm(ticket) and not answer.get("recycle"):
            self._give(worker)
        else:  # killed just after answering, or asked to be: the answer stands
            self._replace(worker)
        return answer

    def _take(self) -> WorkerProcess:
        with self._cond:
            while not self._idle:
                if self._closed:
                    raise RuntimeError("the SQL worker pool is closed")
                self._cond.wait()
            worker = self._idle.pop()
            self._busy.add(worker)
            return worker

    def _give(self, worker: WorkerProcess) -> None:
        with self._cond:
            self._busy.discard(worker)
            if self._closed:
                worker.stop()
                return
            self._idle.append(worker)
            self._cond.notify()

    def _replace(self, worker: WorkerProcess) -> None:
        """Reap ``worker`` and start its successor on this thread: the caller whose query
        cost the worker keeps its query slot until the pool is whole again (its wait is
        counted in :meth:`last_wait_s`, not as query time). If the start fails, a
        background thread retries."""
        started = time.perf_counter()
        worker.kill()
        with self._cond:
            self._busy.discard(worker)
            self.replaced += 1
            closed = self._closed
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
        with self._cond:
            if self._closed:
                worker.stop()
                return
            self._idle.append(worker)
            self._cond.notify()

    def _start_one(self) -> None:
        delay = 0.5
        while True:
            with self._cond:
                if self._closed:
                    return
            try:
                worker = WorkerProcess(self._hello)
                worker.ready()
            except Exception:
                _log.exception("starting a SQL worker failed; retrying in %.1f s", delay)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            self._add(worker)
            return

    def close(self) -> None:
        """Stop every worker (a busy one is killed)."""
        with self._cond:
            self._closed = True
            idle, busy = list(self._idle), list(self._busy)
            self._idle.clear()
            self._cond.notify_all()
        for w in busy:
            w.kill()
        for w in idle:
            w.stop()
