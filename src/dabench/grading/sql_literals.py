"""Predicted SQL that computes nothing: it reads no warehouse table, or it selects the
answer itself as a literal (``SELECT 'Riley Lind' AS full_name``). exec_sql fails both
before running them (docs/grading.md, exec_sql, "Hard-coded results")."""

from __future__ import annotations

import decimal
from collections.abc import Iterable

import sqlglot
from sqlglot import exp


def _reads_a_table(tree: exp.Query) -> bool:
    """True when the query reads a table by name that is not one of its own CTEs (table
    functions such as ``range()`` and ``VALUES`` lists are not tables)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return any(
        isinstance(table.this, exp.Identifier)
        and (bool(table.db) or table.name.lower() not in ctes)
        for table in tree.find_all(exp.Table)
    )


def _same(literal: exp.Literal, cell: object) -> bool:
    if literal.is_string:
        return isinstance(cell, str) and literal.this.strip() == cell.strip()
    if isinstance(cell, bool) or not isinstance(cell, int | float | decimal.Decimal):
        return False
    try:
        return decimal.Decimal(literal.this) == decimal.Decimal(repr(cell))
    except decimal.InvalidOperation:
        return False


def hard_coded(sql: str, gold_cells: Iterable[object]) -> str | None:
    """Why ``sql`` (DuckDB dialect) computes nothing, or ``None``: it reads no warehouse
    table, or a projection of its outermost SELECT is a literal equal to a gold cell."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return None  # run_query reports the parse error
    if not isinstance(tree, exp.Query):
        return None
    if not _reads_a_table(tree):
        return "it reads no warehouse table (literal values only): it computes nothing"
    cells = list(gold_cells)
    for projection in tree.selects:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(node, exp.Literal) and any(_same(node, cell) for cell in cells):
            return f"it selects the answer as a literal ({node.sql()}): it computes nothing"
    return None
