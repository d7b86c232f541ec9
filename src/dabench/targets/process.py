"""Child server processes that never outlive the harness.

A child is started in its own process group with ``PR_SET_PDEATHSIG`` (Linux), so it gets
SIGTERM even when the harness is killed with SIGKILL; :meth:`ServerProcess.stop` sends
SIGTERM, waits, then SIGKILL; an ``atexit`` hook stops any child left running.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

_LIVE: set[ServerProcess] = set()


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


SECRET_FD_ARG = "{secret_fd}"
"""An argv item replaced by the number of the descriptor the child reads
:attr:`ServerProcess.secret_input` from."""
_PIPE_MAX = 65536
_SECRET_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_KEEP = {"PGPASSFILE", "PGPASSWORD"}
"""Secret-looking variables a server may need (``--warehouse`` on PostgreSQL)."""


def scrubbed_environ() -> dict[str, str]:
    """The harness's environment without variables whose names look like secrets (API keys,
    tokens, passwords, credentials), which no server child needs; PostgreSQL's password
    variables stay (a ``--warehouse`` may log in with them)."""
    return {k: v for k, v in os.environ.items() if k in _KEEP or not _SECRET_NAMES.search(k)}


def _secret_pipe(data: bytes) -> int:
    """The read end of a pipe holding ``data`` (its write end closed; not inheritable but
    by a child it is passed to)."""
    if len(data) >= _PIPE_MAX:
        raise ValueError(f"secret input of {len(data)} bytes does not fit a pipe")
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


def tree_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (with its reaped children's) and of its live
    descendants (Linux ``/proc``); ``None`` when ``pid`` is gone."""
    ticks = _tree_cpu_ticks(pid)
    return None if ticks is None else ticks / os.sysconf("SC_CLK_TCK")


def _tree_cpu_ticks(pid: int) -> int | None:
    """CPU clock ticks of ``pid`` (user + system, with its reaped children's) plus those of
    its live descendants; ``None`` when ``pid`` is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    total = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total + sum(_tree_cpu_ticks(c) or 0 for c in children(pid))


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux ``/proc``; empty when it is gone)."""
    try:
        return [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except (OSError, ValueError):
        return []


def tree_pss_bytes(pid: int) -> int:
    """Proportional set size of ``pid`` and its live descendants together (pages shared
    between them counted once; Linux ``smaps_rollup``); 0 when ``pid`` is gone."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total = int(line.split()[1]) * 1024
                break
    except OSError:
        return 0
    return total + sum(tree_pss_bytes(c) for c in children(pid))


class ServerProcess:
    """A server subprocess with its output in a log file."""

    def __init__(
        self,
        argv: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        *,
        detached: bool = False,
        secret_input: bytes | None = None,
    ):
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.secret_input = secret_input
        """Bytes the child reads from an inherited pipe (its number replaces
        :data:`SECRET_FD_ARG` in ``argv``): keys it needs, never in its argv or environment."""
        self.detached = detached
        """A detached child outlives the harness process (``dabench play`` keeps the platform
        running between commands and stops it with :func:`stop_pid`)."""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Spawn the process (its environment: the harness's without secrets, plus ``env``)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        secret = _secret_pipe(self.secret_input) if self.secret_input is not None else None
        argv = [str(secret) if a == SECRET_FD_ARG and secret is not None else a for a in self.argv]
        try:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**scrubbed_environ(), **(self.env or {})},
                    preexec_fn=None if self.detached else _die_with_parent,
                    start_new_session=True,
                    pass_fds=(secret,) if secret is not None else (),
                )
        finally:
            if secret is not None:
                os.close(secret)
        if not self.detached:
            _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        """Whether the child is alive."""
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self) -> float | None:
        """User + system CPU time so far of the child and every process under it (its SQL
        workers: live ones and those it reaped), from Linux ``/proc``, else ``None``."""
        if self.proc is None:
            return None
        return tree_cpu_seconds(self.proc.pid)

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the child's output (for error messages)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def kill_now(self, grace_s: float = 5.0) -> None:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL (synchronous)."""
        proc = self.proc
        _LIVE.discard(self)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop the child without blocking the event loop."""
        await asyncio.to_thread(self.kill_now, grace_s)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != "Z"


def stop_pid(pid: int, grace_s: float = 5.0) -> None:
    """Stop the process group of a detached child started by an earlier harness process:
    SIGTERM, wait up to ``grace_s``, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        # SIGKILL cannot be refused, but a process that holds much memory takes a moment to
        # exit on a loaded machine: wait for it (bounded), so "stopped" means gone.
        deadline = time.monotonic() + _KILL_WAIT_S
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
    # Reap it when it is our own child (a test that started and stops it in one process).
    _reap(pid)


_KILL_WAIT_S = 60.0
"""How long :func:`stop_pid` waits for a killed process to exit (a safety net only)."""


def _reap(pid: int) -> None:
    """Collect ``pid``'s exit status when it is our own child (no-op otherwise)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


@atexit.register
def _stop_all() -> None:  # pragma: no cover - exercised at interpreter exit
    for p in list(_LIVE):
        p.kill_now(grace_s=2.0)
