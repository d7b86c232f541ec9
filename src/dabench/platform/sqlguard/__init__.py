"""The SQL guard: one read-only SELECT, allowlisted functions, warehouse tables only."""

from dabench.platform.sqlguard.guard import CheckedSql, SqlScope, check_sql

__all__ = ["CheckedSql", "SqlScope", "check_sql"]
