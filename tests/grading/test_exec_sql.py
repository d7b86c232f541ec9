"""exec_sql: predicted SQL extraction, guarded execution on a real DuckDB file, comparison modes."""

from __future__ import annotations

import decimal
from pathlib import Path

import duckdb
import pytest
from tests.grading.builders import make_episode, sql_call

from dabench.grading.exec_sql import (
    FIRST_ROW_RULE,
    SqlRefused,
    Tolerance,
    answer_sql,
    check_exec_sql,
    compare_results,
    is_ordered,
    normalize_rows,
    predicted_sql,
    run_query,
    statement_check,
)
from dabench.grading.sql_literals import kind_values
from dabench.journal.records import GradeCheck

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


def test_sqlite_sql_over_the_flattened_export_is_graded_on_the_world(warehouse: Path) -> None:
    """An arm over ``world export --sqlite`` names ``sales.orders`` as ``sales__orders`` and
    speaks SQLite: the grader maps the table back and translates before running it."""
    gold_sql = "SELECT strftime(day, '%Y-%m') AS month, count(*) AS n FROM sales.orders GROUP BY 1"
    cols, gold = _gold(warehouse, gold_sql)
    lite_sql = "SELECT strftime('%Y-%m', day) AS month, count(*) AS n FROM sales__orders GROUP BY 1"
    ep = make_episode("x", tool_calls=[sql_call(0, lite_sql)])
    assert not check_exec_sql(ep, cols, gold, warehouse=warehouse).passed
    as_sqlite = check_exec_sql(ep, cols, gold, warehouse=warehouse, sql_dialect="sqlite")
    assert as_sqlite.passed, as_sqlite.reason
    assert "translated from SQLite" in as_sqlite.reason


# --- one-row gold, ordered multi-row result: the first-row rule (issue 25) -------------------

TOP_AGENT_GOLD = (
    "SELECT a.full_name FROM support.tickets t JOIN support.agents a USING (agent_id) "
    "GROUP BY a.agent_id, a.full_name ORDER BY count(*) DESC, a.agent_id LIMIT 1"
)
TOP_AGENT_SQL = """SELECT a.agent_id, a.full_name, a.team, count(*) AS tickets
FROM support.tickets t
JOIN support.agents a ON a.agent_id = t.agent_id
GROUP BY 1, 2, 3
ORDER BY tickets DESC
LIMIT 5;"""
TOP_AGENT_ANSWER = f"""Counted tickets per agent_id (not per name: two different agents, \
ids 5 and 12, are both called 'Sasha Lind', so grouping by name would wrongly merge them into 44).

SQL:
{TOP_AGENT_SQL}

Result: agent 18 Riley Lind (returns team) 25 tickets; next are agent 8 Jesse Park 23 and \
agent 5 Sasha Lind 23.
FINAL ANSWER: Riley Lind (agent_id 18, 25 tickets)
"""


@pytest.fixture(scope="module")
def support_wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Agents with a shared name (ids 5 and 12 are both Sasha Lind) and their tickets:
    per agent 18 has 25, 8 and 5 have 23, 12 has 21, 3 has 2 (per name Sasha Lind has 44)."""
    path = tmp_path_factory.mktemp("support") / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA support")
    con.execute("CREATE TABLE support.agents (agent_id INTEGER, full_name VARCHAR, team VARCHAR)")
    con.execute(
        """INSERT INTO support.agents VALUES (3, 'Kim Ode', 'billing'),
        (5, 'Sasha Lind', 'billing'), (8, 'Jesse Park', 'billing'),
        (12, 'Sasha Lind', 'returns'), (18, 'Riley Lind', 'returns')"""
    )
    con.execute("CREATE TABLE support.tickets (ticket_id INTEGER, agent_id INTEGER)")
    tickets = {18: 25, 8: 23, 5: 23, 12: 21, 3: 2}
    next_id = 0
    for agent, count in tickets.items():
        con.execute(
            "INSERT INTO support.tickets SELECT range + ?, ? FROM range(?)",
            [next_id, agent, count],
        )
        next_id += count
    con.close()
    return path


def _top_agent(warehouse: Path, answer: str, sql: str | None = None) -> GradeCheck:
    cols, gold = _gold(warehouse, TOP_AGENT_GOLD)
    assert gold == [["Riley Lind"]]
    if sql is not None:
        answer = answer.replace(TOP_AGENT_SQL, sql)
    ep = make_episode(answer)
    return check_exec_sql(ep, cols, gold, warehouse=warehouse, mode="set")


def test_first_row_of_an_ordered_result_passes_a_one_row_gold(support_wh: Path) -> None:
    check = _top_agent(support_wh, TOP_AGENT_ANSWER)
    assert check.passed, check.reason
    assert FIRST_ROW_RULE in check.reason and "the answer's SQL" in check.reason
    assert check.found["rule"] == FIRST_ROW_RULE and check.found["alignment"] == [1]
    assert check.found["rows"] == 5


def test_first_row_rule_needs_a_top_level_order_by(support_wh: Path) -> None:
    unordered = TOP_AGENT_SQL.replace("ORDER BY tickets DESC\nLIMIT 5;", ";")
    check = _top_agent(support_wh, TOP_AGENT_ANSWER, unordered)
    assert not check.passed and "5 rows x 4 columns" in check.reason
    inner = f"SELECT * FROM ({TOP_AGENT_SQL.rstrip(';')}) LIMIT 5"
    assert not _top_agent(support_wh, TOP_AGENT_ANSWER, inner).passed
    assert is_ordered(f"({TOP_AGENT_SQL.rstrip(';')})")
    assert is_ordered("SELECT 1 AS a UNION SELECT 2 ORDER BY a")
    assert not is_ordered(inner)


def test_first_row_rule_fails_when_the_first_row_is_wrong(support_wh: Path) -> None:
    ascending = TOP_AGENT_SQL.replace("tickets DESC", "tickets ASC")
    check = _top_agent(support_wh, TOP_AGENT_ANSWER, ascending)
    assert not check.passed and FIRST_ROW_RULE not in check.reason


def test_first_row_rule_fails_when_the_second_row_has_the_same_value(support_wh: Path) -> None:
    """Rows 1 and 2 are both Sasha Lind (ids 5 and 12): the first row alone does not say
    which row answers, so the rule is not used and the whole result is compared."""
    sql = (
        "SELECT a.agent_id, a.full_name, count(*) AS tickets FROM support.tickets t "
        "JOIN support.agents a USING (agent_id) WHERE a.full_name LIKE '%Lind' "
        "GROUP BY 1, 2 ORDER BY a.full_name DESC, a.agent_id"
    )
    ep = make_episode(f"```sql\n{sql}\n```\nFINAL ANSWER: Sasha Lind (agent 5, 23 tickets)")
    check = check_exec_sql(ep, ["full_name"], [["Sasha Lind"]], warehouse=support_wh)
    assert not check.passed and "3 rows x 3 columns" in check.reason, check.reason
    distinct = sql.replace("ORDER BY a.full_name DESC", "ORDER BY tickets DESC")
    control = make_episode(f"```sql\n{distinct}\n```\nFINAL ANSWER: Riley Lind (agent 18)")
    passed = check_exec_sql(control, ["full_name"], [["Riley Lind"]], warehouse=support_wh)
    assert passed.passed and FIRST_ROW_RULE in passed.reason, passed.reason


@pytest.mark.parametrize(
    "final",
    [
        "FINAL ANSWER: Riley Lind (25 tickets), ahead of Jesse Park (23)",
        "FINAL ANSWER: Riley Lind or Jesse Park",
        "FINAL ANSWER:\n1. Riley Lind\n2. Jesse Park\n3. Sasha Lind\n4. Sasha Lind\n5. Kim Ode",
        "FINAL ANSWER: agent 18 (25 tickets)",
        "The top agent is Riley Lind.",
    ],
    ids=["names-another-row", "two-names", "list-of-five", "gold-not-named", "no-marker"],
)
def test_first_row_rule_needs_a_final_answer_naming_only_the_gold(
    support_wh: Path, final: str
) -> None:
    answer = TOP_AGENT_ANSWER.replace("FINAL ANSWER: Riley Lind (agent_id 18, 25 tickets)", final)
    check = _top_agent(support_wh, answer)
    assert not check.passed and FIRST_ROW_RULE not in check.reason, check.reason


def test_first_row_rule_on_sql_from_the_calls(support_wh: Path) -> None:
    """No SQL in the answer: the rule reads the last sql-role call; an ordered call followed
    by a check query leaves the grade uncertain, as for any earlier passing call."""
    cols, gold = _gold(support_wh, TOP_AGENT_GOLD)
    final = "FINAL ANSWER: Riley Lind (agent_id 18, 25 tickets)"
    one = make_episode(final, tool_calls=[sql_call(0, TOP_AGENT_SQL.rstrip(";"))])
    check = check_exec_sql(one, cols, gold, warehouse=support_wh)
    assert check.passed and FIRST_ROW_RULE in check.reason and "#0" in check.reason
    calls = [
        sql_call(0, TOP_AGENT_SQL.rstrip(";")),
        sql_call(1, "SELECT count(*) FROM support.tickets"),
    ]
    two = check_exec_sql(make_episode(final, tool_calls=calls), cols, gold, warehouse=support_wh)
    assert not two.passed and two.uncertain and FIRST_ROW_RULE in two.reason


def test_sql_that_computes_nothing_fails(support_wh: Path) -> None:
    for sql in (
        "SELECT 'Riley Lind' AS full_name",
        "SELECT * FROM (VALUES ('Riley Lind')) t(full_name)",
        "SELECT 'Riley Lind' AS full_name FROM support.agents LIMIT 1",
    ):
        check = _top_agent(support_wh, f"FINAL ANSWER: Riley Lind\n\n```sql\n{sql}\n```")
        assert not check.passed and "computes nothing" in check.reason, sql
    cte = (
        "WITH n AS (SELECT agent_id, count(*) AS c FROM support.tickets GROUP BY 1) "
        "SELECT a.full_name FROM n JOIN support.agents a USING (agent_id) "
        "ORDER BY c DESC LIMIT 1"
    )
    assert _top_agent(support_wh, f"```sql\n{cte}\n```\nFINAL ANSWER: Riley Lind").passed


def test_final_answer_must_agree_with_the_query(support_wh: Path) -> None:
    block = f"```sql\n{TOP_AGENT_GOLD}\n```\n\n"
    assert _top_agent(support_wh, block + "FINAL ANSWER: Riley Lind").passed
    wrong = _top_agent(support_wh, block + "FINAL ANSWER: Jesse Park")
    assert not wrong.passed and not wrong.uncertain and "names Jesse Park" in wrong.reason
    pointer = _top_agent(support_wh, block + "FINAL ANSWER: see the query above")
    assert pointer.passed, pointer.reason
    long = block + "FINAL ANSWER: after checking reassignments by hand the agent I trust most is J."
    assert _top_agent(support_wh, long).uncertain


def test_sql_adopted_after_the_block_is_uncertain(support_wh: Path) -> None:
    adopted = "SELECT full_name FROM support.agents WHERE team = 'billing' LIMIT 1"
    answer = f"First:\n```sql\n{TOP_AGENT_GOLD}\n```\nbut that is wrong, so I used `{adopted}`."
    check = _top_agent(support_wh, answer)
    assert check.uncertain and not check.passed and "adopts other SQL" in check.reason
    checked = f"```sql\n{TOP_AGENT_GOLD}\n```\nI also ran `SELECT count(*) FROM support.agents`."
    assert _top_agent(support_wh, checked).passed


@pytest.mark.parametrize(
    ("conclusion", "passed"),
    [
        ("The agent with the most tickets is **Jesse Park**.", False),
        ("### Answer\nJesse Park has been assigned the most tickets.", False),
        ("FINAL ANSWER: Riley Lind is NOT the top agent; it's Jesse Park.", False),
        ("FINAL ANSWER: Jesse Park overtook Riley Lind this year and now leads.", False),
        ("FINAL ANSWER: Jesse Park narrowly beat Riley Lind.", False),
        ("The agent with the most tickets is **Riley Lind** (25 tickets). Want the top 5?", True),
        ("FINAL ANSWER: Jesse Park is not the top agent; it's Riley Lind.", True),
        ("FINAL ANSWER: Riley Lind, just ahead of Jesse Park.", True),
    ],
)
def test_conclusion_contradicting_the_query_fails(
    support_wh: Path, conclusion: str, passed: bool
) -> None:
    """Without a final-answer line the concluding statement is read; a negated or beaten
    gold value and another agent's name (a value of the result's kind) contradict it."""
    check = _top_agent(support_wh, f"```sql\n{TOP_AGENT_GOLD}\n```\n\n{conclusion}")
    assert check.passed is passed and not check.uncertain, check.reason


def test_kind_values_are_the_other_values_of_the_gold_column(support_wh: Path) -> None:
    assert kind_values(support_wh, [["Riley Lind"]]) == {"Kim Ode", "Sasha Lind", "Jesse Park"}
    assert kind_values(support_wh, [[3]]) == frozenset()


def test_wrong_number_beside_a_right_name() -> None:
    gold = [("Pacific Loom", 55), ("Tasman Gear", 50), ("Kestrel Outdoor Mfg", 48)]
    tol = Tolerance()

    def check(text: str) -> tuple[bool, str] | None:
        return statement_check(f"FINAL ANSWER: {text}", list(gold), "ordered", tol)

    assert check("Pacific Loom (55 days), Tasman Gear (50 days), Kestrel Outdoor Mfg (46 days)")
    assert check("Pacific Loom (55 days), Tasman Gear (50), Kestrel Outdoor Mfg (48)") is None
    assert (
        check("Pacific Loom — 55 days (about 8 weeks), Tasman Gear 50, Kestrel Outdoor Mfg 48")
        is None
    )
    ids = [(66, "Canyon Harness Switch"), (113, "Meadow Pack Trek")]
    assert (
        statement_check(
            "FINAL ANSWER: 66 Canyon Harness Switch, 113 Meadow Pack Trek", ids, "set", tol
        )
        is None
    )


def test_shared_value_with_its_count_agrees() -> None:
    gold = [(name, 12) for name in ("Tents", "Backpacks", "Water")]
    tol = Tolerance()
    assert (
        statement_check("FINAL ANSWER: All 3 categories have 12 products each.", gold, "set", tol)
        is None
    )
    contradiction = statement_check(
        "FINAL ANSWER: Every category has 12 products except Tents, which has 11.", gold, "set", tol
    )
    assert contradiction is not None and not contradiction[0]


def test_sql_fences_named_after_a_dialect() -> None:
    for fence in ("postgresql", "postgres", "psql", "pgsql", "duckdb", "sqlite", "mysql", "SQL"):
        found = answer_sql(f"```{fence}\nSELECT 1 FROM t\n```\nFINAL ANSWER: 1")
        assert found is not None and found.sql == "SELECT 1 FROM t", fence
