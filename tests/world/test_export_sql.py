"""The world exported to real engines: a PostgreSQL started by the test, Parquet files, a
DuckDB file in an older storage format and a SQLite file. Each export is checked by recomputing
every task's truth on it (``dabench tasks validate --warehouse``) against the world's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.postgres_server import postgres_cluster
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.tasks.engines import (
    check_warehouse,
    open_engine,
    sqlite_to_duckdb,
    to_postgres,
    to_sqlite,
    truth_sql_for,
)
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.lock import compute_lock
from dabench.tasks.model import Grading
from dabench.world.export_sql import (
    export_duckdb,
    export_parquet,
    pg_type,
    storage_version_number,
)
from dabench.world.export_sqlite import export_sqlite, sqlite_type
from dabench.world.load import World

cli = CliRunner()


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    """A throwaway PostgreSQL cluster for this module."""
    with postgres_cluster() as dsn:
        yield dsn


def _validate(world_dir: Path, where: str) -> str:
    result = cli.invoke(app, ["tasks", "validate", "--world", str(world_dir), "--warehouse", where])
    assert result.exit_code == 0, result.output
    return result.output


def test_postgres_export_is_complete_idempotent_and_recomputes_every_truth(
    world_dir: Path, world: World, postgres_dsn: str
) -> None:
    import psycopg

    for _ in range(2):  # a second export replaces the first: same tables, same rows
        result = cli.invoke(
            app, ["world", "export", "--world", str(world_dir), "--postgres", postgres_dsn]
        )
        assert result.exit_code == 0, result.output
        rows = sum(d.row_count for d in world.catalog.datasets)
        assert f"{len(world.catalog.datasets)} tables, {rows:,} rows" in result.output
    assert "0 mismatches" not in (out := _validate(world_dir, postgres_dsn))
    assert out.strip().splitlines()[-1].startswith("ok: ")
    with psycopg.connect(postgres_dsn) as pg:
        for ds in world.catalog.datasets:
            row = pg.execute(f"SELECT count(*) FROM {ds.id}").fetchone()
            assert row == (ds.row_count,), ds.id
        orders = next(d for d in world.catalog.datasets if d.id == "sales.orders")
        comment = pg.execute("SELECT obj_description('sales.orders'::regclass)").fetchone()
        assert comment == (orders.description,)
        col = orders.columns[1]
        described = pg.execute(
            "SELECT col_description('sales.orders'::regclass, %s)", (2,)
        ).fetchone()
        assert described and described[0].startswith(col.description)
        pk = pg.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'sales.orders'::regclass "
            "AND i.indisprimary"
        ).fetchall()
        assert pk == [("order_id",)]
        pages = pg.execute("SELECT count(*) FROM dabench_knowledge.pages").fetchone()
        terms = pg.execute("SELECT count(*) FROM dabench_knowledge.glossary").fetchone()
        queries = pg.execute("SELECT count(*) FROM dabench_knowledge.curated_queries").fetchone()
        ident = pg.execute("SELECT world_hash FROM dabench_knowledge.world").fetchone()
    assert pages == (len(world.pages),) and terms == (len(world.catalog.glossary),)
    assert queries == (len(world.catalog.curated_queries),)
    assert ident == (world.world_hash,)


def test_parquet_export_recomputes_every_truth(
    world_dir: Path, world: World, tmp_path: Path
) -> None:
    out = tmp_path / "pq"
    summary = export_parquet(world, out)
    assert len(summary.tables) == len(world.catalog.datasets)
    assert (out / "sales" / "orders.parquet").exists() and (out / "catalog.json").exists()
    assert sorted(p.name for p in (out / "knowledge").iterdir()) == sorted(
        p.name for p in (world_dir / "knowledge").iterdir()
    )
    _validate(world_dir, str(out))
    with pytest.raises(UserInputError, match="not empty"):
        export_parquet(world, out)
    export_parquet(world, out, force=True)  # replaced in place


def test_duckdb_export_in_an_older_storage_format(
    world_dir: Path, world: World, tmp_path: Path
) -> None:
    out = tmp_path / "old.duckdb"
    export_duckdb(world, out, storage_version="v1.5.0")
    assert storage_version_number(out) == 68  # what DuckDB 1.5 readers accept (64..68)
    assert (tmp_path / "old.duckdb.world" / "world.json").exists()
    _validate(world_dir, str(out))
    export_duckdb(world, out, storage_version="v1.0.0", force=True)
    assert storage_version_number(out) == 64
    with pytest.raises(UserInputError, match="expected one of"):
        export_duckdb(world, tmp_path / "x.duckdb", storage_version="v0.9")
    with pytest.raises(UserInputError, match="exists"):
        export_duckdb(world, out)


def test_sqlite_export_flattens_schemas_and_recomputes_every_truth(
    world_dir: Path, world: World, tmp_path: Path
) -> None:
    import sqlite3

    out = tmp_path / "w.sqlite"
    result = cli.invoke(app, ["world", "export", "--world", str(world_dir), "--sqlite", str(out)])
    assert result.exit_code == 0, result.output
    assert "(tables named <schema>__<table>)" in result.output
    assert "verify: dabench tasks validate --warehouse" in result.output
    assert (tmp_path / "w.sqlite.world" / "catalog.json").exists()
    assert _validate(world_dir, str(out)).strip().splitlines()[-1].startswith("ok: ")
    con = sqlite3.connect(out)
    try:
        for ds in world.catalog.datasets:
            flat = ds.id.replace(".", "__")
            assert con.execute(f'SELECT count(*) FROM "{flat}"').fetchone() == (ds.row_count,)
        orders = next(d for d in world.catalog.datasets if d.id == "sales.orders")
        ddl = con.execute("SELECT sql FROM sqlite_master WHERE name = 'sales__orders'").fetchone()
        assert ddl and orders.description.split()[0] in ddl[0] and "PRIMARY KEY" in ddl[0]
        info = {r[1]: r[2] for r in con.execute("PRAGMA table_info(sales__orders)")}
        assert info["order_id"] == "INTEGER" and info["order_date"] == "DATE"
        day = con.execute("SELECT order_date FROM sales__orders LIMIT 1").fetchone()
        assert day and len(day[0]) == 10 and day[0][4] == "-"  # ISO text
    finally:
        con.close()
    with pytest.raises(UserInputError, match="exists"):
        export_sqlite(world, out)
    export_sqlite(world, out, force=True)


def test_translation_to_sqlite_and_back() -> None:
    sql = (
        "SELECT median(epoch(b - a) / 3600) FROM support.tickets "
        "WHERE year(a) = 2024 AND date_trunc('month', a) = DATE '2024-03-01'"
    )
    lite = to_sqlite(sql)
    assert "support__tickets" in lite and "support." not in lite
    assert "STRFTIME('%Y', a)" in lite and "DATE(a, 'start of month')" in lite
    assert "ROW_NUMBER() OVER (ORDER BY _m)" in lite and "MEDIAN" not in lite.upper()
    shifted = to_sqlite("SELECT hour(ts - INTERVAL (8) HOUR) FROM marketing.web_events")
    assert "DATETIME(ts, '-8 hours')" in shifted
    inlined = to_sqlite("WITH a AS (SELECT 1 AS x), b AS (SELECT * FROM a) SELECT * FROM b, a")
    assert inlined.startswith("SELECT") and "WITH" not in inlined and inlined.count("SELECT 1") == 2
    back = sqlite_to_duckdb("SELECT count(*) FROM sales__orders o JOIN core__stores USING (x)")
    assert "sales.orders" in back and "core.stores" in back
    own = Grading(kind="numeric", truth_sql="SELECT 1", truth_sql_dialects={"sqlite": "SELECT 3"})
    assert truth_sql_for(own, "sqlite") == "SELECT 3"
    assert sqlite_type("DECIMAL(14,2)") == "REAL" and sqlite_type("BIGINT") == "INTEGER"


def test_a_wrong_export_is_caught(world_dir: Path, world: World, tmp_path: Path) -> None:
    """Recomputing on a warehouse that lost rows reports the tasks whose truth moved."""
    import duckdb

    out = tmp_path / "bad.duckdb"
    export_duckdb(world, out)
    con = duckdb.connect(str(out))
    con.execute("DELETE FROM sales.orders WHERE order_id % 10 = 0")
    con.close()
    ts = load_builtin_tasks()
    engine = open_engine(str(out))
    try:
        report = check_warehouse(ts, compute_lock(ts, world_dir), engine)
    finally:
        engine.close()
    assert not report.ok and report.checked > 50
    assert any("gives" in p for p in report.problems), report.problems[:3]
    assert all(" gives " in p for p in report.problems)  # moved answers, not broken SQL


def test_translation_to_postgres_and_per_dialect_overrides() -> None:
    sql = "SELECT max(n) FROM (SELECT hour(ts + INTERVAL (-8) HOUR) AS n FROM t) JOIN u USING (id)"
    pg = to_postgres(sql)
    assert "INTERVAL '-8 HOUR'" in pg and "EXTRACT(HOUR FROM" in pg
    assert ") AS _derived" in pg
    own = Grading(kind="numeric", truth_sql="SELECT 1", truth_sql_dialects={"postgres": "SELECT 2"})
    assert truth_sql_for(own, "postgres") == "SELECT 2"
    assert truth_sql_for(own, "duckdb") == "SELECT 1"
    assert pg_type("DECIMAL(14,2)") == "numeric(14,2)" and pg_type("VARCHAR") == "text"


def test_export_command_needs_exactly_one_destination(world_dir: Path, tmp_path: Path) -> None:
    for args in ([], ["--parquet", str(tmp_path / "a"), "--duckdb", str(tmp_path / "b")]):
        result = cli.invoke(app, ["world", "export", "--world", str(world_dir), *args])
        assert result.exit_code == 2
        assert "exactly one destination" in result.output
    bad = cli.invoke(
        app, ["tasks", "validate", "--world", str(world_dir), "--warehouse", str(tmp_path)]
    )
    assert bad.exit_code != 0


def test_dbt_export_over_postgres_checks_the_world_and_settles_a_select_only_reader(
    world: World, postgres_dsn: str, tmp_path: Path
) -> None:
    """``world export --dbt DIR --warehouse DSN`` (the project only; dbt builds it in
    tests/harness/test_semantic_layer.py): it refuses a database without this world, and
    reads through a SELECT-only role, ``--reader``'s or one it creates."""
    import psycopg
    import yaml

    from dabench.world.dbt_warehouse import READER_ROLE
    from dabench.world.export_dbt import MARTS, export_dbt, mart_sql
    from dabench.world.export_sql import export_postgres

    base, db = postgres_dsn.rsplit("/", 1)
    with psycopg.connect(postgres_dsn, autocommit=True) as pg:
        pg.execute("DROP DATABASE IF EXISTS empty")
        pg.execute("CREATE DATABASE empty")
    with pytest.raises(UserInputError, match="no world in this database"):
        export_dbt(world, tmp_path / "p", warehouse=f"{base}/empty")
    with pytest.raises(UserInputError, match="cannot connect"):
        export_dbt(world, tmp_path / "p", warehouse=f"{base}/nosuchdb")
    export_postgres(world, postgres_dsn)
    with pytest.raises(UserInputError, match="must name the warehouse's database"):
        export_dbt(world, tmp_path / "p", warehouse=postgres_dsn, reader=f"{base}/empty")
    # a role that may not create roles: told to pass --reader
    with psycopg.connect(postgres_dsn, autocommit=True) as pg:
        pg.execute("DROP ROLE IF EXISTS plain")
        pg.execute("CREATE ROLE plain LOGIN NOCREATEROLE")
        pg.execute("GRANT USAGE ON SCHEMA dabench_knowledge TO plain")
        pg.execute("GRANT SELECT ON dabench_knowledge.world TO plain")
    plain = postgres_dsn.replace("//dabench@", "//plain@")
    with pytest.raises(UserInputError, match="pass --reader DSN"):
        export_dbt(world, tmp_path / "p", warehouse=plain)

    out = export_dbt(world, tmp_path / "p", warehouse=postgres_dsn)
    profiles = out / "profiles.yml"
    assert profiles.stat().st_mode & 0o777 == 0o600
    outputs = yaml.safe_load(profiles.read_text())["dabench_world"]["outputs"]
    assert outputs["build"]["type"] == outputs["readonly"]["type"] == "postgres"
    assert outputs["build"]["user"] == "dabench" and outputs["build"]["dbname"] == db
    reader = outputs["readonly"]
    assert reader["user"] == READER_ROLE and reader["password"]
    path = reader["search_path"].split(",")
    assert path[0] == "marts" and "sales" in path and "customers" in path
    project = yaml.safe_load((out / "dbt_project.yml").read_text())
    assert project["models"]["dabench_world"]["+grants"] == {"select": [READER_ROLE]}
    assert "target.name == 'build'" in project["on-run-end"][0]
    sources = yaml.safe_load((out / "models" / "sources.yml").read_text())["sources"]
    assert all("database" not in s for s in sources)  # the target's own database
    for name in MARTS:  # no DuckDB-only function left in the PostgreSQL SQL
        sql = (out / "models" / "marts" / f"{name}.sql").read_text()
        assert sql == mart_sql(name, "postgres").strip() + "\n"
        assert "hour(" not in sql.replace("extract(hour", "") and "interval (" not in sql
    assert "generate_series" in (out / "models" / "metricflow_time_spine.sql").read_text()
    # the role it made reads the world and writes nothing
    as_reader = (
        f"postgresql://{READER_ROLE}:{reader['password']}@{reader['host']}:{reader['port']}/{db}"
    )
    with psycopg.connect(as_reader, autocommit=True) as pg:
        assert pg.execute("SELECT count(*) FROM sales.orders").fetchone()[0] > 0  # type: ignore[index]
        for stmt in ("DELETE FROM sales.orders", "CREATE TABLE sales.x (i int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                pg.execute(stmt)
    # --reader: that role, untouched (no role is created)
    with psycopg.connect(postgres_dsn, autocommit=True) as pg:
        pg.execute(f"DROP OWNED BY {READER_ROLE}")
        pg.execute(f"DROP ROLE {READER_ROLE}")
    out = export_dbt(world, tmp_path / "p", warehouse=postgres_dsn, reader=plain, force=True)
    outputs = yaml.safe_load((out / "profiles.yml").read_text())["dabench_world"]["outputs"]
    assert outputs["readonly"]["user"] == "plain"
    with psycopg.connect(postgres_dsn) as pg:
        assert (
            pg.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone()
            is None
        )
