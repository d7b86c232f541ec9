"""The warehouse on PostgreSQL: a world exported to a real throwaway cluster, served through a
SELECT-only role by a real platform process (``platform serve --warehouse DSN``)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from platform_helpers import (
    TIGHT_PROFILE,
    RunningPlatform,
    call,
    guard_mismatches,
    mcp_client,
    open_session,
    start_platform,
    stop_platform,
)
from tests.postgres_server import postgres_cluster
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope, check_sql
from dabench.platform.warehouse.postgres_backend import PostgresWarehouse
from dabench.platform.warehouse.priority import (
    LONG_QUERY_NICE,
    cpu_cgroup,
    local_backend_pid,
    low_cgroup,
)
from dabench.world import World
from dabench.world.export_sql import export_postgres
from dabench.world.postgres_roles import create_read_only_role

DATA = Path(__file__).parent / "data"
CORPUS = [json.loads(line) for line in (DATA / "pg_escape_corpus.jsonl").read_text().splitlines()]
READER = "dabench_reader"


@pytest.fixture(scope="module")
def pg(world: World) -> Iterator[tuple[str, str]]:
    """(admin DSN, read-only DSN) of a cluster holding the exported world."""
    with postgres_cluster() as admin:
        export_postgres(world, admin)
        create_read_only_role(admin, READER, [ds.id for ds in world.catalog.datasets])
        yield admin, admin.replace("dabench@", f"{READER}@", 1)


def _tables(world: World) -> frozenset[str]:
    return frozenset(ds.id for ds in world.catalog.datasets)


@pytest.fixture(scope="module")
def warehouse(pg: tuple[str, str], world: World) -> Iterator[PostgresWarehouse]:
    """The PostgreSQL backend as the platform opens it."""
    wh = PostgresWarehouse(pg[1], expected_tables=_tables(world), world_hash=world.world_hash)
    yield wh
    wh.close()


def _row_counts(admin: str, world: World) -> dict[str, int]:
    import psycopg

    with psycopg.connect(admin) as conn:
        return {
            ds.id: int(conn.execute(f"SELECT count(*) FROM {ds.id}").fetchone()[0])  # type: ignore[index]
            for ds in world.catalog.datasets
        }


def test_corpus_is_large_and_covers_every_class() -> None:
    assert len(CORPUS) >= 200
    kinds = {row["kind"] for row in CORPUS}
    assert {"write", "settings", "tx", "multi", "file", "catalog", "dynamic", "side"} <= kinds


def test_guard_refuses_every_postgres_attempt(world: World) -> None:
    scope = SqlScope("postgres", _tables(world), "postgres")
    assert guard_mismatches(CORPUS, scope) == []


ACCEPTED = [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "SELECT DISTINCT ON (customer_id) customer_id, amount FROM sales.orders "
    "ORDER BY customer_id, amount DESC",
    "SELECT count(*) FILTER (WHERE status = 'completed'), sum(amount)::numeric / 100 "
    "FROM sales.orders",
    "SELECT order_date + INTERVAL '1 day', date_trunc('month', order_date)::date, "
    "EXTRACT(dow FROM order_date) FROM sales.orders",
    "SELECT rank() OVER (PARTITION BY channel ORDER BY amount DESC), "
    "coalesce(promo_code, '-') FROM sales.orders",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM sales.orders",
    "SELECT CASE WHEN amount > 10 THEN 'a' ELSE 'b' END, amount::text || 'x', "
    "substring(status FROM 1 FOR 3), trim(status), position('a' IN status) FROM sales.orders",
    "SELECT * FROM unnest(ARRAY[1, 2]) AS u(x) CROSS JOIN generate_series(1, 3) AS g",
    "SELECT x FROM (VALUES (1), (2)) AS v(x)",
    "SELECT status, count(*) FROM sales.orders GROUP BY ROLLUP (status) HAVING count(*) > 1",
    "WITH c AS (SELECT customer_id FROM sales.orders) SELECT count(*) FROM c "
    "WHERE customer_id IN (SELECT customer_id FROM c)",
    "SELECT pg_size_pretty(amount) FROM sales.orders LIMIT 1",
]
"""Ordinary analyst SQL the PostgreSQL guard must let through (and the server must run)."""


def test_ordinary_postgres_sql_is_accepted_and_runs(warehouse: PostgresWarehouse) -> None:
    for sql in ACCEPTED:
        checked = check_sql(sql, 10000, warehouse.scope())
        assert warehouse.run(checked.sql, 5, 10.0).rows, sql


GUARDED_ACCEPTED = [
    "SELECT count(*) FROM sales.orders TABLESAMPLE BERNOULLI (50) REPEATABLE (7)",
    "SELECT jsonb_array_elements('[1, 2]'::jsonb) AS e",
    "SELECT regexp_matches('a1b2', '[0-9]', 'g') AS m",
    "SELECT 1 n" + " UNION ALL SELECT 1" * 999,
]
"""Analyst SQL that needs the guard's worker (long flat expressions parse recursively)."""


def test_valid_analyst_sql_runs_and_owners_stay_hidden(warehouse: PostgresWarehouse) -> None:
    for sql in GUARDED_ACCEPTED:
        _, result = warehouse.guarded_run(sql, 20000, 5, 30.0, 65536)
        assert result.rows, sql
    # the guard accepts a 4,750-term sum; PostgreSQL itself may refuse it (max_stack_depth)
    flat = "SELECT " + " + ".join(["1"] * 4750) + " AS total"
    try:
        _, result = warehouse.guarded_run(flat, 20000, 5, 30.0, 65536)
        assert result.rows == [[4750]]
    except ToolError as exc:
        assert exc.code == "SQL_ERROR" and "stack depth" in exc.body.message
    owners = "SELECT DISTINCT schema_owner FROM information_schema.schemata"
    _, result = warehouse.guarded_run(owners, 20000, 5, 30.0, 65536)
    assert result.rows == [[None]]
    with pytest.raises(ToolError) as exc:
        warehouse.guarded_run("SELECT getpgusername()", 20000, 5, 30.0, 65536)
    assert exc.value.code == "SQL_FUNCTION_NOT_ALLOWED"


def test_allowlist_is_current_for_this_server(pg: tuple[str, str]) -> None:
    """The committed allowlist is what the generator derives from this server's pg_proc."""
    from importlib import resources

    from dabench.platform.sqlguard.generate_allowlist_postgres import ALLOWLIST_FILE, build, render

    committed = (
        resources.files("dabench.platform.sqlguard").joinpath(ALLOWLIST_FILE).read_text("utf-8")
    )
    assert render(build(pg[0])) == committed


def test_backend_serves_world_tables_only(warehouse: PostgresWarehouse, world: World) -> None:
    names = [t for t, _ in warehouse.tables()]
    assert names == sorted(_tables(world))
    scope = warehouse.scope()
    assert scope.dialect == "postgres" and scope.tables == _tables(world)
    checked = check_sql(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'sales' "
        "AND table_name = 'orders' "
        "ORDER BY ordinal_position",
        10000,
        scope,
    )
    result = warehouse.run(checked.sql, 100, 5.0)
    assert [r[0] for r in result.rows][:2] == ["order_id", "customer_id"]
    # bounded like DuckDB: rows, and bytes (an oversized value never leaves the server)
    capped = warehouse.run("SELECT * FROM sales.orders", 3, 5.0)
    assert len(capped.rows) == 3 and capped.truncated_by == "rows"
    big = warehouse.run("SELECT repeat('x', 3000000) AS big, 1 AS a", 10, 5.0, 1024 * 1024)
    assert big.rows == [] and big.truncated_by == "bytes"
    assert [c["name"] for c in big.columns] == ["big", "a"]
    dup = warehouse.run("SELECT o.order_id, o.order_id FROM sales.orders o ORDER BY 1", 2, 5.0)
    assert dup.rows == [[1, 1], [2, 2]]


def test_start_up_refuses_a_role_that_can_write(pg: tuple[str, str], world: World) -> None:
    import psycopg

    admin, reader = pg
    with pytest.raises(UserInputError, match="superuser"):
        PostgresWarehouse(admin, expected_tables=_tables(world))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS writer")
        conn.execute("CREATE ROLE writer LOGIN")
        for schema in sorted({t.split(".")[0] for t in _tables(world)}):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO writer")
        conn.execute("GRANT SELECT, UPDATE ON sales.orders TO writer")
    writer = admin.replace("dabench@", "writer@", 1)
    with pytest.raises(UserInputError, match=r"may write tables \(sales.orders\)"):
        PostgresWarehouse(writer)
    with pytest.raises(UserInputError, match="not the served world"):
        PostgresWarehouse(reader, expected_tables=_tables(world), world_hash="0" * 64)
    with pytest.raises(UserInputError, match="missing or not readable"):
        PostgresWarehouse(reader, expected_tables=_tables(world) | {"sales.nope"})


WRITES = [
    "INSERT INTO sales.orders (order_id) VALUES (-1)",
    "UPDATE sales.orders SET amount = 0",
    "DELETE FROM sales.orders",
    "TRUNCATE sales.orders",
    "CREATE TABLE sales.evil (x int)",
    "DROP TABLE sales.orders",
    "ALTER TABLE sales.orders ADD COLUMN evil int",
    "COPY sales.orders FROM '/etc/passwd'",
    "COPY (SELECT 1) TO PROGRAM 'id'",
    "SET ROLE dabench",
    "ALTER ROLE dabench_reader SUPERUSER",
    "CREATE SCHEMA evil",
]
"""(A GRANT by a role that owns nothing is a no-op with a warning, not an error.)"""


def test_read_only_by_guard_and_by_role(
    warehouse: PostgresWarehouse, pg: tuple[str, str], world: World
) -> None:
    """Every write is refused by the guard; sent past the guard on the backend's own
    connection, by the read-only session and, with that lifted, by the role's privileges."""
    import psycopg

    before = _row_counts(pg[0], world)
    for sql in WRITES:
        with pytest.raises(ToolError) as refused:
            check_sql(sql, 10000, warehouse.scope())
        assert refused.value.code == "SQL_NOT_READ_ONLY", sql
    conn = warehouse._connect()  # the connection the backend runs queries on
    try:
        read_only = []
        for sql in WRITES:
            with pytest.raises(psycopg.Error) as exc:
                conn.execute(sql)
            read_only.append(type(exc.value).__name__)
        assert set(read_only) <= {"ReadOnlySqlTransaction", "InsufficientPrivilege"}, read_only
        assert read_only.count("ReadOnlySqlTransaction") >= 7
        conn.execute("SET default_transaction_read_only = off")  # what a bypass would do
        for sql in WRITES:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    finally:
        conn.close()
    assert _row_counts(pg[0], world) == before


def test_statement_timeout_is_the_platform_time_limit(warehouse: PostgresWarehouse) -> None:
    heavy = "SELECT count(*) FROM generate_series(1, 2000000000) AS a"
    checked = check_sql(heavy, 10000, warehouse.scope())
    with pytest.raises(ToolError) as exc:
        warehouse.run(checked.sql, 10, 0.3)
    assert exc.value.code == "QUERY_TIMEOUT"
    assert "0.3 s statement timeout" in exc.value.body.message
    assert warehouse.run("SELECT 1 AS one", 1, 5.0).rows == [[1]]  # the pool still works
    # a function that does not check for the cancel: the call is abandoned, not waited for
    stubborn = "SELECT length(regexp_replace(repeat('a', 100000), 'a', repeat('b', 10000), 'g'))"
    with pytest.raises(ToolError) as exc:
        warehouse.guarded_run(stubborn, 10000, 10, 0.3, 65536)
    assert exc.value.code == "QUERY_TIMEOUT"
    assert warehouse.run("SELECT 2 AS two", 1, 5.0).rows == [[2]]


def _reader_backends() -> dict[int, int]:
    """Process id -> nice value of every local backend of the read-only role."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if cmdline.startswith(f"postgres: {READER} ".encode()):
                found[int(entry)] = os.getpriority(os.PRIO_PROCESS, int(entry))
        except OSError:
            continue
    return found


def test_a_long_query_runs_its_backend_at_low_priority(
    warehouse: PostgresWarehouse, pg: tuple[str, str]
) -> None:
    """Past ``LONG_QUERY_S`` the query's backend (a local process) drops to nice 10, so
    other sessions' short queries get the server's CPU first; it is back at 0 after."""
    import psycopg

    codes: list[str] = []
    done = threading.Event()

    def long_query() -> None:
        try:
            warehouse.run("SELECT pg_sleep(600)", 1, 900.0)
        except ToolError as exc:
            codes.append(exc.code)
        finally:
            done.set()

    threading.Thread(target=long_query, daemon=True).start()
    niced: list[int] = []
    for _ in range(6000):  # a safety bound (120 s), not what is tested
        niced = [pid for pid, nice in _reader_backends().items() if nice == LONG_QUERY_NICE]
        if niced or done.is_set():
            break
        done.wait(0.02)
    assert len(niced) == 1 and not done.is_set()
    low = low_cgroup()  # where the CPU cgroup hierarchy is writable (root)
    if low is not None:
        assert cpu_cgroup(niced[0]) == low  # out of PostgreSQL's autogroup, at low weight
    with psycopg.connect(pg[0], autocommit=True) as admin:
        admin.execute("SELECT pg_cancel_backend(%s)", (niced[0],))
    assert done.wait(120) and codes == ["QUERY_TIMEOUT"]
    assert _reader_backends().get(niced[0], 0) == 0  # back at 0 (or its connection closed)
    if low is not None and niced[0] in _reader_backends():
        assert cpu_cgroup(niced[0]) != low
    assert warehouse.run("SELECT 3 AS three", 1, 30.0, low_priority=True).rows == [[3]]
    assert set(_reader_backends().values()) == {0}  # a penalized query's backend too


def test_only_a_local_backend_is_reniced() -> None:
    class Info:
        host, backend_pid = "db.example.com", os.getpid()

    class Conn:
        info = Info()

    assert local_backend_pid(Conn()) is None  # a remote server: that pid is not its backend
    Info.host = "127.0.0.1"
    assert local_backend_pid(Conn()) is None  # this process is no postgres backend


@pytest.fixture(scope="module")
def platform_pg_tight(
    world_dir: Path, auth_file: Path, pg: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """The tight profile (0.5 s timeout, no gate) serving SQL from PostgreSQL."""
    import yaml

    tmp = tmp_path_factory.mktemp("pg-tight")
    profile = tmp / "tight.yaml"
    profile.write_text(yaml.safe_dump(TIGHT_PROFILE))
    platform = start_platform(
        world_dir, str(profile), auth_file, tmp / "state", extra=["--warehouse", pg[1]]
    )
    yield platform
    stop_platform(platform)


@pytest.mark.slow
async def test_server_on_postgres_refuses_every_attempt(
    platform_pg_tight: RunningPlatform, pg: tuple[str, str], world: World
) -> None:
    before = _row_counts(pg[0], world)
    wrong = []
    async with mcp_client(platform_pg_tight) as client:
        sid = await open_session(client)
        _, info = await call(client, "platform_info")
        assert info["sql_dialect"] == "postgres"
        health = httpx.get(platform_pg_tight.base_url + "/healthz").json()
        assert health["sql_dialect"] == "postgres"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "(PostgreSQL dialect)" in (tools["sql_query"].description or "")
        for row in CORPUS:
            is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": row["sql"]})
            code = body["error"]["code"] if is_error else "ACCEPTED"
            if code != row["code"]:
                wrong.append((row["sql"], code))
        heavy = "SELECT count(*) FROM generate_series(1, 2000000000) AS a"
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": heavy})
        assert is_error and body["error"]["code"] == "QUERY_TIMEOUT", body
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT count(*) FROM sales.orders"}
        )
        assert not is_error and body["rows"] == [[before["sales.orders"]]]
    assert wrong == []
    assert _row_counts(pg[0], world) == before


@pytest.mark.slow
async def test_a3_on_postgres_keeps_search_and_enrichment(
    world_dir: Path,
    auth_file: Path,
    pg: tuple[str, str],
    world: World,
    tmp_path: Path,
) -> None:
    platform = start_platform(world_dir, "a3", auth_file, tmp_path, extra=["--warehouse", pg[1]])
    try:
        async with mcp_client(platform) as client:
            sid = await open_session(client)
            is_error, listed = await call(client, "list_tables", {"session_id": sid})
            assert not is_error
            assert sorted(t["name"] for t in listed["tables"]) == sorted(_tables(world))
            await call(client, "search", {"session_id": sid, "query": "orders"})
            is_error, body = await call(
                client,
                "sql_query",
                {"session_id": sid, "sql": "SELECT count(*) AS n FROM sales.orders"},
            )
            assert not is_error, body
            assert body["columns"] == [{"name": "n", "type": "int8"}]
            assert "sales.orders" in json.dumps(body["semantic_context"])
    finally:
        stop_platform(platform)


def test_serve_refuses_a_superuser_dsn(
    world_dir: Path, auth_file: Path, pg: tuple[str, str], tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        app,
        ["platform", "serve", "--world", str(world_dir), "--warehouse", pg[0],
         "--auth", str(auth_file), "--state-dir", str(tmp_path), "--port", "0"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "refusing to serve through a role that can write" in str(result.exception or "") + (
        result.output
    )


def test_tasks_validate_recomputes_every_truth_as_the_reader(
    world_dir: Path, pg: tuple[str, str]
) -> None:
    """`tasks validate --warehouse` over every task of every suite, as the read-only role."""
    from dabench.tasks.engines import check_warehouse, open_engine
    from dabench.tasks.loader import load_builtin_tasks
    from dabench.tasks.lock import compute_lock, gradings

    tasks = load_builtin_tasks()
    lock = compute_lock(tasks, world_dir)
    engine = open_engine(pg[1])
    try:
        report = check_warehouse(tasks, lock, engine)
    finally:
        engine.close()
    expected = sum(
        1
        for item in tasks.items
        for key, g in gradings(item)
        if g.truth_sql is not None and key in lock.truths
    )
    assert report.problems == []
    assert report.checked == expected > 100
    assert {i.suite for i in tasks.items} >= {"s1", "s2", "s3", "s5"}


@pytest.mark.slow
def test_oracle_passes_the_smoke_tasks_on_postgres(
    world_dir: Path, pg: tuple[str, str], tmp_path: Path
) -> None:
    """Profiles a0..a3 served from PostgreSQL (``target: {kind: reference, warehouse: DSN}``):
    the oracle (sending the PostgreSQL gold SQL the sql_query description asks for) passes
    every smoke task, audit checks included, and the manifest says which engine served."""
    from dabench.tasks.loader import load_builtin_tasks
    from dabench.tasks.selection import TaskSelection, select_tasks
    from dabench.validation.tasks import validate

    smoke = select_tasks(load_builtin_tasks(), TaskSelection.model_validate({"smoke": True}))
    report = validate(
        world_dir, smoke, arms=["a0", "a1", "a2", "a3"], progress=False, warehouse=pg[1],
        run_dir=tmp_path / "run",
    )  # fmt: skip
    assert report.issues == []
    per_arm: dict[str, int] = {}
    for r in report.results:
        assert r.passed, r
        per_arm[r.arm] = per_arm.get(r.arm, 0) + 1
    assert set(per_arm) == {"a0", "a1", "a2", "a3"}
    assert report.episodes == len(report.results) == sum(per_arm.values())
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {a["target"]["sql_dialect"] for a in manifest["arms"]} == {"postgres"}
