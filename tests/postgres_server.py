"""A throwaway PostgreSQL cluster on loopback for tests (initdb + postgres, trust auth).

The tests that need a real PostgreSQL (audit store, world export, warehouse validation) start
one per module with :func:`postgres_cluster`; a missing server is a skip on a developer machine
and a failure in CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.environment import skip_unless_ci

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    runuser = shutil.which("runuser")
    if runuser is None:
        skip_unless_ci("running as root without runuser")
    return [runuser, "-u", "postgres", "--", *argv]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a cluster on a free 127.0.0.1 port; yields its DSN; stops and removes it after."""
    if not (PG_BIN / "postgres").exists():
        skip_unless_ci("PostgreSQL binaries are not installed")
    base = Path("/tmp") / f"dabench-pg-{os.getpid()}-{time.monotonic_ns()}"
    base.mkdir(mode=0o700)
    data = base / "data"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    subprocess.run(
        _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "dabench", "--auth=trust"]),
        check=True,
        capture_output=True,
    )
    port = _free_port()
    proc = subprocess.Popen(
        _as_postgres(
            [
                str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={base}",
                "-c", "fsync=off",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    dsn = f"postgresql://dabench@127.0.0.1:{port}/postgres"
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(dsn).close()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("PostgreSQL did not start")
            time.sleep(0.2)
    try:
        yield dsn
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)
