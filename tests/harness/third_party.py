"""Real third-party MCP servers over the exported world, for the third-party proof tests.

- ``mcp-server-motherduck`` (PyPI) in its own virtual environment: it pins DuckDB 1.5, older
  than dabench's, so it reads the world exported with ``--storage-version v1.5.0``.
- ``@modelcontextprotocol/server-postgres`` (npm) over the world exported to a throwaway
  PostgreSQL (:mod:`tests.postgres_server`), connected as a read-only role.

Both are installed once into a cache directory (``DABENCH_TEST_CACHE``, default
``~/.cache/dabench-tests``) and reused by later sessions. An install that fails (no registry)
is a skip on a developer machine and a failure in CI.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from tests.environment import skip_unless_ci

MOTHERDUCK_PIN = "1.1.0"
"""``mcp-server-motherduck`` version (it pins ``duckdb==1.5.*``: storage versions 64..68)."""
MOTHERDUCK_STORAGE = "v1.5.0"
"""The ``dabench world export --storage-version`` its DuckDB reads."""
SERVER_POSTGRES_PKG = "@modelcontextprotocol/server-postgres"
SERVER_POSTGRES_PIN = "0.6.2"
INSTALL_TIMEOUT_S = 300
READER_ROLE = "dabench_reader"
"""The login role the PostgreSQL MCP server connects as: SELECT only, read-only sessions."""


def cache_dir() -> Path:
    """Where the third-party servers are installed across test sessions."""
    default = Path.home() / ".cache" / "dabench-tests"
    path = Path(os.environ.get("DABENCH_TEST_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _install_lock(name: str) -> Iterator[None]:
    """One installer at a time per package (parallel test sessions share the cache)."""
    with (cache_dir() / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        skip_unless_ci(f"installing {what} took over {INSTALL_TIMEOUT_S}s (registry unreachable?)")
        raise
    if proc.returncode != 0:
        skip_unless_ci(f"could not install {what}: {(proc.stderr or proc.stdout)[-800:]}")


def motherduck_command() -> list[str]:
    """``mcp-server-motherduck`` from PyPI in its own venv under the cache (installed once)."""
    what = f"mcp-server-motherduck=={MOTHERDUCK_PIN}"
    venv = cache_dir() / f"motherduck-{MOTHERDUCK_PIN}"
    binary = venv / "bin" / "mcp-server-motherduck"
    with _install_lock(venv.name):
        if not binary.exists():
            shutil.rmtree(venv, ignore_errors=True)
            python = shutil.which("python3") or sys.executable
            _install([python, "-m", "venv", str(venv)], f"a venv for {what}")
            _install([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", what], what)
            if not binary.exists():
                skip_unless_ci(f"{what} installed no mcp-server-motherduck script")
    return [str(binary)]


def server_postgres_command() -> list[str]:
    """``@modelcontextprotocol/server-postgres`` from npm under the cache (installed once);
    the DSN is its last argument."""
    npm = shutil.which("npm")
    what = f"{SERVER_POSTGRES_PKG}@{SERVER_POSTGRES_PIN}"
    if npm is None:
        skip_unless_ci(f"npm is not installed: cannot install {what}")
        raise AssertionError("unreachable")
    prefix = cache_dir() / f"server-postgres-{SERVER_POSTGRES_PIN}"
    binary = prefix / "node_modules" / ".bin" / "mcp-server-postgres"
    with _install_lock(prefix.name):
        if not binary.exists():
            prefix.mkdir(parents=True, exist_ok=True)
            _install(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), what], what
            )
            if not binary.exists():
                skip_unless_ci(f"{what} installed no mcp-server-postgres binary")
    return [str(binary)]


def grant_reader(dsn: str) -> str:
    """Create (or refresh) :data:`READER_ROLE` with SELECT on every exported schema and
    read-only sessions; returns the DSN that logs in as it (trust auth, no password)."""
    with psycopg.connect(dsn, autocommit=True) as con:
        schemas = [
            row[0]
            for row in con.execute(
                "SELECT schema_name FROM information_schema.schemata "
                "WHERE schema_name NOT LIKE 'pg\\_%' AND schema_name <> 'information_schema'"
            )
        ]
        exists = con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone()
        role = sql.Identifier(READER_ROLE)
        if exists is None:
            con.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
        con.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(role))
        for schema in schemas:
            name = sql.Identifier(schema)
            con.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(name, role))
            con.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(name, role))
    head, _, tail = dsn.partition("://")
    return f"{head}://{READER_ROLE}@{tail.split('@', 1)[1]}"
