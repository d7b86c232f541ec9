"""The SQL guard: one read-only statement, allowlisted functions, warehouse tables only."""

from __future__ import annotations

import pytest

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope, check_sql
from dabench.platform.sqlguard.allowlist import load_allowlist
from dabench.platform.sqlguard.generate_allowlist import generate, render

SCOPE = SqlScope("warehouse", frozenset({"sales.orders", "crm.customers", "main.notes"}))

REFUSED: list[tuple[str, str]] = [
    ("CREATE TABLE t (i INT)", "SQL_NOT_READ_ONLY"),
    ("DROP TABLE sales.orders", "SQL_NOT_READ_ONLY"),
    ("INSERT INTO t VALUES (1)", "SQL_NOT_READ_ONLY"),
    ("UPDATE t SET i = 1", "SQL_NOT_READ_ONLY"),
    ("DELETE FROM t", "SQL_NOT_READ_ONLY"),
    ("ALTER TABLE t ADD COLUMN j INT", "SQL_NOT_READ_ONLY"),
    ("COPY t TO '/tmp/x.csv'", "SQL_NOT_READ_ONLY"),
    ("ATTACH '/tmp/x.duckdb' AS x", "SQL_NOT_READ_ONLY"),
    ("INSTALL httpfs", "SQL_NOT_READ_ONLY"),
    ("LOAD httpfs", "SQL_NOT_READ_ONLY"),
    ("PRAGMA database_list", "SQL_NOT_READ_ONLY"),
    ("SET threads = 1", "SQL_NOT_READ_ONLY"),
    ("CALL pragma_version()", "SQL_NOT_READ_ONLY"),
    ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "SQL_NOT_READ_ONLY"),
    ("SELECT 1; SELECT 2", "SQL_MULTIPLE_STATEMENTS"),
    ("SELECT 1; DROP TABLE t", "SQL_MULTIPLE_STATEMENTS"),
    ("SELECT * FROM read_csv('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM read_parquet('s3://b/x.parquet')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM read_json('x.json')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM glob('/etc/*')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM query_table('sales.orders')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT getenv('HOME')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("SELECT current_setting('threads')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("SELECT GeTeNv('HOME')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("SELECT system.main.upper('a')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("SELECT list_transform([1], x -> getvariable('v'))", "SQL_FUNCTION_NOT_ALLOWED"),
    ("SELECT list_aggr([1], 'sum')", "SQL_FUNCTION_NOT_ALLOWED"),
    (
        "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
        "SQL_TABLE_FUNCTION_NOT_ALLOWED",
    ),
    ("SELECT * FROM query('SELECT 1')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM duckdb_databases()", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM pg_catalog.pg_settings", "SQL_TABLE_NOT_ALLOWED"),
    ("SELECT * FROM pg_settings", "SQL_TABLE_NOT_ALLOWED"),
    ("SELECT * FROM duckdb_tables", "SQL_TABLE_NOT_ALLOWED"),
    ("SELECT * FROM information_schema.character_sets", "SQL_TABLE_NOT_ALLOWED"),
    ("SELECT * FROM system.information_schema.tables", "SQL_TABLE_NOT_ALLOWED"),
    ("SELECT * FROM sales.ordrs", "TABLE_NOT_FOUND"),
    (
        "SELECT * FROM (WITH pg_settings AS (SELECT 1) FROM pg_settings), pg_settings",
        "SQL_TABLE_NOT_ALLOWED",
    ),
    ("WITH pg_settings AS (FROM pg_settings) FROM pg_settings", "SQL_TABLE_NOT_ALLOWED"),
    ("FROM (DESCRIBE sales.orders)", "SQL_TABLE_NOT_ALLOWED"),
    ("SUMMARIZE sales.orders", "SQL_NOT_READ_ONLY"),
    ("SELECT * FROM 'warehouse.duckdb'", "SQL_FILE_ACCESS"),
    ('SELECT * FROM "warehouse.duckdb"', "SQL_FILE_ACCESS"),
    ("SELECT * FROM '/etc/passwd'", "SQL_FILE_ACCESS"),
    ("SELECT * FROM 'data.csv'", "SQL_FILE_ACCESS"),
    ("", "SQL_EMPTY"),
    (" ; ", "SQL_EMPTY"),
    ("SELEC 1 FROM", "SQL_PARSE_ERROR"),
    ("SELECT 1\x00", "SQL_PARSE_ERROR"),
    ("SELECT '" + "x" * 3000 + "'", "SQL_TOO_LONG"),
    ("SELECT " + "(" * 600 + "1" + ")" * 600, "SQL_PARSE_ERROR"),
]


@pytest.mark.parametrize(("sql", "code"), REFUSED)
def test_refused(sql: str, code: str) -> None:
    with pytest.raises(ToolError) as info:
        check_sql(sql, 2000, SCOPE)
    assert info.value.code == code
    assert info.value.body.message


@pytest.mark.parametrize(
    ("sql", "tables"),
    [
        ("SELECT 1", ()),
        ("select count(*) from sales.orders;", ("sales.orders",)),
        (
            "WITH a AS (SELECT * FROM sales.orders) SELECT * FROM a JOIN crm.customers c ON true",
            ("crm.customers", "sales.orders"),
        ),
        ("SELECT 1 UNION ALL SELECT 2", ()),
        ("(SELECT 1)", ()),
        ("FROM sales.orders", ("sales.orders",)),
        ("SELECT * FROM sales.orders, range(3)", ("sales.orders",)),
        ("SELECT 1 /* ; DROP TABLE t */", ()),
        ("SELECT 'ünïcødé ☃' AS s", ()),
        ("SELECT * FROM notes", ("main.notes",)),
        ("SELECT list_sum([1, 2]), sum(i) OVER (), count(*) FROM range(3) t(i)", ()),
        ("WITH RECURSIVE r AS (SELECT 1 i UNION ALL SELECT i + 1 FROM r WHERE i < 3) FROM r", ()),
        ("SELECT u FROM unnest([1, 2]) t(u), generate_series(1, 2)", ()),
        ("WITH a AS (FROM sales.orders), b AS (FROM a) FROM b", ("sales.orders",)),
    ],
)
def test_accepted(sql: str, tables: tuple[str, ...]) -> None:
    checked = check_sql(sql, 2000, SCOPE)
    assert checked.tables == tables
    assert not checked.sql.endswith(";")


def test_verdicts_are_cached_but_fresh_errors_are_raised() -> None:
    for _ in range(2):
        with pytest.raises(ToolError) as info:
            check_sql("DROP TABLE t", 2000, SCOPE)
        assert info.value.code == "SQL_NOT_READ_ONLY"
    assert check_sql("SELECT 1", 2000, SCOPE) is check_sql("SELECT 1", 2000, SCOPE)


def test_information_schema_is_restricted_to_the_warehouse() -> None:
    checked = check_sql("SELECT table_name FROM information_schema.tables t", 2000, SCOPE)
    assert "table_catalog = 'warehouse'" in checked.sql
    assert "table_schema IN ('crm', 'main', 'sales')" in checked.sql
    assert checked.sql.endswith("AS t")


def test_committed_allowlist_matches_the_generator() -> None:
    from dabench.platform.sqlguard.generate_allowlist import allowlist_path

    assert allowlist_path().read_text(encoding="utf-8") == render(generate())
    allow = load_allowlist()
    assert {"sum", "count_star", "row_number", "list_sum", "+"} <= allow.functions
    assert not {"getenv", "query", "list_aggr", "current_setting"} & allow.functions
    assert allow.table_functions == {"range", "generate_series", "unnest"}
