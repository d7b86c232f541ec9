"""Predicted SQL that computes nothing: it reads no warehouse table, or it selects the
answer itself as a literal (``SELECT 'Riley Lind' AS full_name``). exec_sql fails both
before running them (docs/grading.md, exec_sql, "Hard-coded results").

Also the values of a result's kind (:func:`kind_values`): the other agent names, category
names... a conclusion may name instead of the result's."""

from __future__ import annotations

import decimal
import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

from dabench.world.warehouse import connect_warehouse


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


_ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")
KIND_VALUES_CAP = 5000
"""How many distinct values of one warehouse column :func:`kind_values` reads at most."""


def kind_values(warehouse: Path, gold: Sequence[Sequence[object]]) -> frozenset[str]:
    """The values of the result's kind that it does not hold: for each gold column of
    strings (not ISO dates), the distinct values of every warehouse text column that holds
    all of that column's gold strings (``Jesse Park`` for a gold ``Riley Lind`` of
    ``support.agents.full_name``), the gold strings left out; empty when none."""
    columns = [
        tuple(sorted({str(row[j]) for row in gold}))
        for j in range(len(gold[0]) if gold else 0)
        if all(isinstance(row[j], str) and not _ISO_DATE_RE.match(str(row[j])) for row in gold)
    ]
    out: set[str] = set()
    for strings in columns:
        out |= _column_values(str(warehouse), strings) - set(strings)
    return frozenset(v for v in out if v.strip())


@functools.lru_cache(maxsize=256)
def _column_values(warehouse: str, strings: tuple[str, ...]) -> frozenset[str]:
    """The distinct values of every text column of ``warehouse`` holding all ``strings``."""
    found: set[str] = set()
    try:
        con = connect_warehouse(Path(warehouse), read_only=True)
    except duckdb.Error:
        return frozenset()
    try:
        tables = con.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns "
            "WHERE data_type = 'VARCHAR' AND table_schema NOT IN ('information_schema', "
            "'pg_catalog')"
        ).fetchall()
        marks = ", ".join("?" for _ in strings)
        for schema, table, column in tables:
            name = f'"{schema}"."{table}"'
            col = f'"{column}"'
            try:
                held = con.execute(
                    f"SELECT count(DISTINCT {col}) FROM {name} WHERE {col} IN ({marks})",
                    list(strings),
                ).fetchone()
                if held is None or held[0] < len(strings):
                    continue
                rows = con.execute(
                    f"SELECT DISTINCT {col} FROM {name} WHERE {col} IS NOT NULL "
                    f"LIMIT {KIND_VALUES_CAP}"
                ).fetchall()
            except duckdb.Error:
                continue
            found |= {str(r[0]) for r in rows}
    finally:
        con.close()
    return frozenset(found)
