"""exec_sql: predicted SQL extraction, guarded execution on a real DuckDB file, comparison modes."""

from __future__ import annotations

import decimal
from pathlib import Path

import pytest
from tests.grading.builders import make_episode, sql_call

from dabench.grading.exec_sql import (
    SqlRefused,
    Tolerance,
    check_exec_sql,
    compare_results,
    normalize_rows,
    predicted_sql,
    run_query,
)

GOLD_SQL = "SELECT region, SUM(amount) AS total FROM sales.orders GROUP BY region"


def _gold(warehouse: Path, sql: str = GOLD_SQL) -> tuple[list[str], list[list[object]]]:
    columns, rows = run_query(warehouse, sql)
    return columns, [list(r) for r in rows]


def test_predicted_sql_precedence() -> None:
    calls = [sql_call(0, "SELECT 1"), sql_call(1, "SELECT 2", is_error=True)]
    ep = make_episode("done", tool_calls=calls)
    found = predicted_sql(ep)
    assert found is not None and found.sql == "SELECT 1" and "#0" in found.source
    ep2 = make_episode("Here:\n```sql\nSELECT 3\n```", tool_calls=calls)
    found2 = predicted_sql(ep2)
    assert found2 is not None and found2.sql == "SELECT 3" and "answer" in found2.source
    assert predicted_sql(make_episode("no sql")) is None


def test_set_semantics_ignores_order_and_duplicates(warehouse: Path) -> None:
    cols, gold = _gold(warehouse)
    sql = (
        "SELECT region, SUM(amount) AS t FROM sales.orders GROUP BY region "
        "UNION ALL SELECT 'east', 100.25 ORDER BY 1 DESC"
    )
    ep = make_episode("x", tool_calls=[sql_call(0, sql)])
    check = check_exec_sql(ep, cols, gold, warehouse=warehouse, mode="set")
    assert check.passed, check.reason
    assert "set semantics" in check.reason
    multi = check_exec_sql(ep, cols, gold, warehouse=warehouse, mode="multiset")
    assert not multi.passed and "multiset" in multi.reason


def test_ordered_semantics(warehouse: Path) -> None:
    cols, gold = _gold(warehouse, GOLD_SQL + " ORDER BY region")
    asc = make_episode("x", tool_calls=[sql_call(0, GOLD_SQL + " ORDER BY region")])
    desc = make_episode("x", tool_calls=[sql_call(0, GOLD_SQL + " ORDER BY region DESC")])
    assert check_exec_sql(asc, cols, gold, warehouse=warehouse, mode="ordered").passed
    assert not check_exec_sql(desc, cols, gold, warehouse=warehouse, mode="ordered").passed
    assert check_exec_sql(desc, cols, gold, warehouse=warehouse, mode="multiset").passed


def test_multiset_counts_duplicates(warehouse: Path) -> None:
    cols, gold = _gold(warehouse, "SELECT amount FROM sales.orders WHERE region = 'south'")
    dedup = make_episode(
        "x",
        tool_calls=[sql_call(0, "SELECT DISTINCT amount FROM sales.orders WHERE region='south'")],
    )
    assert not check_exec_sql(dedup, cols, gold, warehouse=warehouse, mode="multiset").passed
    assert check_exec_sql(dedup, cols, gold, warehouse=warehouse, mode="set").passed


def test_per_column_tolerance(warehouse: Path) -> None:
    cols, gold = _gold(warehouse)
    rounded = "SELECT region, ROUND(SUM(amount)) FROM sales.orders GROUP BY region"
    ep = make_episode("x", tool_calls=[sql_call(0, rounded)])
    assert not check_exec_sql(ep, cols, gold, warehouse=warehouse).passed
    check = check_exec_sql(ep, cols, gold, warehouse=warehouse, tolerance_abs=0.5)
    assert check.passed and "abs 0.5" in check.reason


def test_columns_matched_by_value_spider2(warehouse: Path) -> None:
    cols, gold = _gold(warehouse)
    swapped = "SELECT COUNT(*) AS n, SUM(amount) AS s, region FROM sales.orders GROUP BY region"
    ep = make_episode("x", tool_calls=[sql_call(0, swapped)])
    check = check_exec_sql(ep, cols, gold, warehouse=warehouse)
    assert check.passed, check.reason
    assert "Spider 2.0" in check.reason and check.found["alignment"] == [2, 1]


def test_wrong_result_fails_with_shape(warehouse: Path) -> None:
    cols, gold = _gold(warehouse)
    ep = make_episode(
        "x", tool_calls=[sql_call(0, "SELECT region, MAX(amount) FROM sales.orders GROUP BY 1")]
    )
    check = check_exec_sql(ep, cols, gold, warehouse=warehouse)
    assert not check.passed and "3 rows x 2 columns" in check.reason


def test_guards_refuse_writes_and_multiple_statements(warehouse: Path) -> None:
    with pytest.raises(SqlRefused, match="only SELECT"):
        run_query(warehouse, "DELETE FROM sales.orders")
    with pytest.raises(SqlRefused, match="exactly one statement"):
        run_query(warehouse, "SELECT 1; SELECT 2")
    with pytest.raises(SqlRefused, match="row cap"):
        run_query(warehouse, "SELECT * FROM range(100)", row_cap=10)
    with pytest.raises(SqlRefused, match="failed"):
        run_query(warehouse, "SELECT * FROM read_csv('/etc/passwd')")
    ep = make_episode("x", tool_calls=[sql_call(0, "DROP TABLE sales.orders")])
    check = check_exec_sql(ep, ["a"], [[1]], warehouse=warehouse)
    assert not check.passed and "not run" in check.reason


def test_statement_timeout(warehouse: Path) -> None:
    slow = "SELECT COUNT(*) FROM range(100000000) a, range(1000) b WHERE a.range * b.range = 7"
    with pytest.raises(SqlRefused, match="timeout"):
        run_query(warehouse, slow, timeout_s=0.2)


def test_no_predicted_sql(warehouse: Path) -> None:
    check = check_exec_sql(make_episode("42"), ["a"], [[1]], warehouse=warehouse)
    assert not check.passed and "no predicted SQL" in check.reason


def test_compare_results_empty_and_nulls() -> None:
    tol = Tolerance()
    assert compare_results([], [], "set", tol).passed
    assert compare_results([(None, "a")], [(None, "a")], "ordered", tol).passed
    assert not compare_results([(1.0,)], [], "set", tol).passed


def test_large_results_with_float_noise_compare_exactly_fast() -> None:
    gold = [(float(i) / 10, f"r{i % 7}") for i in range(5000)]
    noisy = [(v + 1e-13, r) for v, r in reversed(gold)]
    assert compare_results(noisy, gold, "set", Tolerance()).passed
    shifted = [(v + 0.01, r) for v, r in gold]
    assert compare_results(shifted, gold, "multiset", Tolerance(abs=0.02)).passed
    assert not compare_results(shifted, gold, "multiset", Tolerance(abs=0.001)).passed


def test_integer_id_year_and_count_columns_are_exact() -> None:
    tol = Tolerance(rel=0.005)
    ids = [(1234567890123456789,)]
    assert not compare_results([(1234567890123456788,)], ids, "set", tol).passed
    assert compare_results([(1234567890123456789,)], ids, "set", tol).passed
    assert not compare_results([(2025,)], [(2024,)], "set", tol).passed
    assert not compare_results([(903,)], [(900,)], "set", tol).passed
    assert not compare_results([(572,)], [(573,)], "set", tol).passed
    assert compare_results([(573.0,)], [(573,)], "set", tol).passed  # same value, other type
    assert compare_results([(10.04,)], [(10.0,)], "set", tol).passed  # non-integer: tolerant
    big = decimal.Decimal("12345678901234567.89")
    assert not compare_results(
        [(big + decimal.Decimal("0.01"),)], [(big,)], "set", Tolerance()
    ).passed
    assert compare_results([("2024-01-02",)], [("2024-01-02",)], "set", tol).passed
    assert not compare_results([("2024-01-03",)], [("2024-01-02",)], "set", tol).passed


def test_extra_column_and_optimal_alignment() -> None:
    tol = Tolerance()
    gold = [("a", 1), ("b", 2)]
    extra = [("a", 1, 10.0), ("b", 2, 20.0)]
    check = compare_results(extra, gold, "set", tol)
    assert check.passed and check.found["alignment"] == [0, 1]
    # Both predicted numeric columns hold {1, 2}; only the second pairs them with the right
    # labels, so a greedy first match fails and the search must go on.
    pred = [("a", 2, 1), ("b", 1, 2)]
    check = compare_results(pred, gold, "set", tol)
    assert check.passed and check.found["alignment"] == [0, 2]


def test_booleans_are_not_integers() -> None:
    tol = Tolerance()
    assert not compare_results(normalize_rows([(1,)]), normalize_rows([(True,)]), "set", tol).passed
    assert compare_results(normalize_rows([(True,)]), normalize_rows([(True,)]), "set", tol).passed


def test_postgres_sql_is_translated_for_a_postgres_arm(warehouse: Path) -> None:
    """An arm whose target speaks PostgreSQL (a platform served from PostgreSQL, or a
    third-party PostgreSQL server) is graded on what its SQL means, not on whether DuckDB
    parses PostgreSQL: the grader translates it before running it on the world's DuckDB."""
    gold_sql = "SELECT strftime(day, '%Y-%m') AS month, count(*) AS n FROM sales.orders GROUP BY 1"
    cols, gold = _gold(warehouse, gold_sql)
    pg_sql = "SELECT to_char(day, 'YYYY-MM') AS month, count(*) AS n FROM sales.orders GROUP BY 1"
    ep = make_episode("x", tool_calls=[sql_call(0, pg_sql)])
    as_duckdb = check_exec_sql(ep, cols, gold, warehouse=warehouse)
    assert not as_duckdb.passed  # DuckDB has no to_char
    as_postgres = check_exec_sql(ep, cols, gold, warehouse=warehouse, sql_dialect="postgres")
    assert as_postgres.passed, as_postgres.reason
    assert "translated from PostgreSQL" in as_postgres.reason
