"""The SQL guard: one read-only SELECT, allowlisted functions, warehouse tables only.

The guard (sqlglot and DuckDB's parser) is imported on first use: the platform's main
process needs only :class:`SqlScope`; its SQL workers run the guard.
"""

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports
from dabench.platform.sqlguard.scope import SqlScope

if TYPE_CHECKING:
    from dabench.platform.sqlguard.guard import CheckedSql, check_sql

__getattr__ = lazy_exports(
    __name__, {"dabench.platform.sqlguard.guard": ["CheckedSql", "check_sql"]}
)

__all__ = ["CheckedSql", "SqlScope", "check_sql"]
