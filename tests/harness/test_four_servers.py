"""The five servers of examples/targets/ installed as a new user would (each in its own venv
or npm prefix, cached across sessions: ``tests/harness/third_party.py``), pointed at the
world exported to PostgreSQL, DuckDB and SQLite: `dabench target inspect` proposes exactly the
example's role map, `--check` passes with it unedited, and the servers still answer the probe
query and a failing query as the result corpus recorded (a new server version that changes
its format shows here first)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.postgres_server import postgres_cluster
from typer.testing import CliRunner

from dabench.cli import app
from dabench.world.export_sql import export_duckdb, export_postgres
from dabench.world.export_sqlite import export_sqlite
from dabench.world.load import load_world

from .test_sql_result import SERVERS as CORPUS
from .third_party import dbhub_command, grant_reader, pypi_server_command

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["postgres-mcp", "mcp-alchemy", "dbhub", "mcp-server-duckdb", "mcp-server-sqlite"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # installs on an empty cache


@pytest.fixture(scope="module")
def reader_dsn(real_world: Path) -> Iterator[str]:
    """The world exported to a throwaway PostgreSQL; the DSN of its read-only role."""
    with postgres_cluster() as dsn:
        export_postgres(load_world(real_world), dsn)
        yield grant_reader(dsn)


@pytest.fixture(scope="module")
def duckdb_export(real_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("duck") / "w930-export.duckdb"
    export_duckdb(load_world(real_world), out)
    return out


@pytest.fixture(scope="module")
def sqlite_export(real_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lite") / "w930.sqlite"
    export_sqlite(load_world(real_world), out)
    return out


def _server(name: str, dsn: str, duck: Path, lite: Path) -> tuple[list[str], list[str], str]:
    """(inspect's server words, --env words, SQL dialect) of one server."""
    if name == "postgres-mcp":
        command = [*pypi_server_command(name), "--access-mode=restricted"]
        return command, ["--env", f"DATABASE_URI={dsn}"], "postgres"
    if name == "mcp-alchemy":
        return pypi_server_command(name), ["--env", f"DB_URL={dsn}"], "postgres"
    if name == "dbhub":
        return dbhub_command(), ["--env", f"DSN={dsn}?sslmode=disable"], "postgres"
    if name == "mcp-server-sqlite":
        return [*pypi_server_command(name), "--db-path", str(lite)], [], "sqlite"
    command = [*pypi_server_command(name), "--db-path", str(duck), "--readonly"]
    return command, [], "duckdb"


def _example_roles(name: str) -> dict[str, Any]:
    exp = yaml.safe_load((ROOT / "examples" / "targets" / f"{name}.yaml").read_text())
    arm = next(a for a in exp["arms"] if a["name"] == name)
    roles: dict[str, Any] = arm["target"]["roles"]
    return roles


@pytest.mark.parametrize("name", NAMES)
def test_inspect_check_passes_unedited(
    name: str,
    real_world: Path,
    reader_dsn: str,
    duckdb_export: Path,
    sqlite_export: Path,
    tmp_path: Path,
) -> None:
    command, env, dialect = _server(name, reader_dsn, duckdb_export, sqlite_export)
    config = tmp_path / "target.yaml"
    config.write_text(f"sql_dialect: {dialect}\n")
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--check", "--world", str(real_world), "--format", "json",
            "--check-dir", str(tmp_path / "check"), "--target-config", str(config),
            *env, "--", *command,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["roles"] == _example_roles(name)
    assert body["probe"]["ok"] and body["probe"]["adapter"] is None, body["probe"]
    assert len(body["check"]) == 10 and all(c["passed"] for c in body["check"]), body["check"]
    recorded = next(e for e in CORPUS if e["server"] == name and e["case"] == "probe")
    fmt = recorded["expect"]["format"]
    assert body["probe"]["read"].startswith(f"{fmt}: 1 row x 2 col"), body["probe"]
    assert all(r.startswith(f"{fmt}: ") for c in body["check"] for r in c["read"]), body["check"]
