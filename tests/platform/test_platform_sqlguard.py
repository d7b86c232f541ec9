"""The SQL guard: one read-only statement, no file/network/settings access."""

from __future__ import annotations

import pytest

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import check_sql

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
    ("SELECT * FROM read_csv('/etc/passwd')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT * FROM read_parquet('s3://b/x.parquet')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT * FROM read_json('x.json')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT * FROM glob('/etc/*')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT * FROM query_table('sales.orders')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT getenv('HOME')", "SQL_FORBIDDEN_FUNCTION"),
    ("SELECT current_setting('threads')", "SQL_FORBIDDEN_FUNCTION"),
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
        check_sql(sql, max_chars=2000)
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
    ],
)
def test_accepted(sql: str, tables: tuple[str, ...]) -> None:
    checked = check_sql(sql, max_chars=2000)
    assert checked.tables == tables
    assert not checked.sql.endswith(";")


def test_verdicts_are_cached_but_fresh_errors_are_raised() -> None:
    for _ in range(2):
        with pytest.raises(ToolError) as info:
            check_sql("DROP TABLE t", max_chars=2000)
        assert info.value.code == "SQL_NOT_READ_ONLY"
    assert check_sql("SELECT 1", 2000) is check_sql("SELECT 1", 2000)
