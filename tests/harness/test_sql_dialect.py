"""``sql_dialect`` on the mcp target: recorded in the manifest, validated, and what the oracle
sends (the fast half; tests/harness/test_third_party.py runs it against server-postgres)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.targets.base import TargetContext
from dabench.targets.registry import make_target, validate_target_config
from dabench.tasks.engines import truth_sql_for
from dabench.tasks.model import Grading


def test_default_is_duckdb_and_postgres_is_recorded(tmp_path: Path) -> None:
    context = TargetContext(None, tmp_path)
    plain = make_target({"kind": "mcp", "command": ["server"]}, context)
    assert plain.sql_dialect == "duckdb" and plain.describe()["sql_dialect"] == "duckdb"
    pg = make_target({"kind": "mcp", "command": ["server"], "sql_dialect": "postgres"}, context)
    assert pg.sql_dialect == "postgres" and pg.describe()["sql_dialect"] == "postgres"


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(UserInputError, match="sql_dialect"):
        validate_target_config({"kind": "mcp", "command": ["server"], "sql_dialect": "mysql"})


def test_truth_sql_per_dialect() -> None:
    """What the oracle sends (``truth_sql_for(grading, target.sql_dialect)``): the task's own
    PostgreSQL SQL when it has one, else sqlglot's translation."""
    sql = "SELECT count(*) FROM (SELECT 1 AS x)"
    translated = Grading(kind="numeric", truth_sql=sql)
    assert truth_sql_for(translated, "duckdb") == sql
    assert (
        truth_sql_for(translated, "postgres") == "SELECT COUNT(*) FROM (SELECT 1 AS x) AS _derived0"
    )
    own = Grading(kind="numeric", truth_sql=sql, truth_sql_dialects={"postgres": "SELECT 1"})
    assert truth_sql_for(own, "postgres") == "SELECT 1"
