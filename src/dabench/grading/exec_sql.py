"""The exec_sql grader: run the predicted SQL on the world and compare its result with the
gold result.

The predicted SQL is the last ```` ```sql ```` block of the graded answer when there is one
(the answer is what the agent commits to), else the ``sql`` argument of the episode's last
successful ``sql_query`` tool call. It runs guarded: exactly one SELECT/WITH statement
(parsed with sqlglot), a read-only DuckDB connection without external access, a statement
timeout and a row cap.

Comparison modes (the grade records which one was used and how columns were aligned):

- ``set`` (BIRD execution accuracy): the results are equal as sets of rows (order and exact
  duplicates ignored; numbers are normalised to 12 significant digits first).
- ``multiset``: equal as bags of rows (duplicates count, order ignored).
- ``ordered``: equal as sequences of rows.

Cells compare equal when both are numbers within the task's tolerance
(``max(tolerance_abs, tolerance_rel * |gold|)``, applied per column as in Spider 2.0), or when
their normalised text is equal (dates as ISO strings, strings trimmed, case kept). Columns are
first compared by position; when that fails and the shapes differ, each gold column is
matched to a distinct predicted column with the same values (Spider 2.0: column names and
extra predicted columns are ignored) and the rows are compared again on those columns.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from dabench.grading.answer import graded_answer
from dabench.journal.records import Episode, GradeCheck
from dabench.tasks.model import ExecSqlMode
from dabench.world.warehouse import connect_warehouse

SQL_TOOL_NAMES: frozenset[str] = frozenset({"sql_query"})
"""Tool names whose ``sql`` argument is a predicted query."""
DEFAULT_ROW_CAP = 10_000
DEFAULT_TIMEOUT_S = 10.0

_SQL_BLOCK_RE = re.compile(r"```sql[ \t]*\n(?P<sql>.*?)```", re.IGNORECASE | re.DOTALL)

Cell = float | str | bool | None
Row = tuple[Cell, ...]


class SqlRefused(Exception):
    """The predicted SQL is not a single read-only query or exceeded a guard."""


@dataclass(frozen=True)
class PredictedSql:
    """The SQL an episode committed to and where it was found."""

    sql: str
    source: str
    """``answer sql block`` or ``sql_query call #<index>``."""


def predicted_sql(episode: Episode) -> PredictedSql | None:
    """The SQL to grade: the answer's last ```sql block, else the last successful sql_query."""
    blocks = _SQL_BLOCK_RE.findall(graded_answer(episode))
    if blocks:
        return PredictedSql(sql=blocks[-1].strip(), source="the answer's ```sql block")
    for call in reversed(episode.tool_calls):
        sql = call.arguments.get("sql")
        if call.name in SQL_TOOL_NAMES and not call.is_error and isinstance(sql, str):
            return PredictedSql(sql=sql, source=f"sql_query call #{call.index}")
    return None


def _check_read_only(sql: str) -> None:
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.ParseError as exc:
        raise SqlRefused(f"the SQL does not parse: {str(exc).splitlines()[0]}") from exc
    if len(statements) != 1:
        raise SqlRefused(f"expected exactly one statement, found {len(statements)}")
    if not isinstance(statements[0], exp.Query):
        raise SqlRefused(f"only SELECT/WITH queries run, not {statements[0].key.upper()}")


def _normalize(value: Any) -> Cell:
    if value is None or isinstance(value, bool | str):
        return value.strip() if isinstance(value, str) else value
    if isinstance(value, int | float | decimal.Decimal):
        # 12 significant digits absorb binary float noise so exact matching stays O(n).
        return float(f"{float(value):.12g}")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def normalize_rows(rows: Sequence[Sequence[Any]]) -> list[Row]:
    """Rows with cells normalised for comparison (numbers as float, dates as ISO text)."""
    return [tuple(_normalize(v) for v in row) for row in rows]


def run_query(
    warehouse: Path,
    sql: str,
    *,
    row_cap: int = DEFAULT_ROW_CAP,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> tuple[list[str], list[Row]]:
    """Run one read-only query on the warehouse with a timeout and a row cap."""
    _check_read_only(sql)
    con = connect_warehouse(warehouse, read_only=True)
    timer = threading.Timer(timeout_s, con.interrupt)
    try:
        timer.start()
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description or []]
        raw = cur.fetchmany(row_cap + 1)
    except duckdb.InterruptException as exc:
        raise SqlRefused(f"the SQL ran longer than the {timeout_s:g} s statement timeout") from exc
    except duckdb.Error as exc:
        raise SqlRefused(f"the SQL failed: {str(exc).splitlines()[0]}") from exc
    finally:
        timer.cancel()
        con.close()
    if len(raw) > row_cap:
        raise SqlRefused(f"the SQL returned more than the {row_cap:,}-row cap")
    return columns, normalize_rows(raw)


@dataclass(frozen=True)
class Tolerance:
    """Numeric tolerance for cells."""

    abs: float = 0.0
    rel: float = 0.0

    def cells_equal(self, pred: Cell, gold: Cell) -> bool:
        """True when the cells are equal (numbers within tolerance)."""
        if isinstance(pred, float) and isinstance(gold, float):
            return abs(pred - gold) <= max(self.abs, self.rel * abs(gold)) + 1e-9
        return pred == gold

    def rows_equal(self, pred: Row, gold: Row) -> bool:
        """True when the rows have the same width and equal cells."""
        return len(pred) == len(gold) and all(map(self.cells_equal, pred, gold))


GREEDY_LIMIT = 2000
"""Above this many rows left after exact matching, tolerant matching pairs rows in sorted
order instead of searching (linear instead of quadratic)."""


def _row_key(row: Row) -> tuple[tuple[int, str, float], ...]:
    return tuple(_sort_key(cell) for cell in row)


def _match_bags(pred: list[Row], gold: list[Row], tol: Tolerance) -> bool:
    """Bag equality: exact matches first (hashing), then tolerant matching of the rest."""
    if len(pred) != len(gold):
        return False
    left = Counter(pred)
    left.subtract(Counter(gold))
    rest_pred = [row for row, n in left.items() if n > 0 for _ in range(n)]
    rest_gold = [row for row, n in left.items() if n < 0 for _ in range(-n)]
    if not rest_pred:
        return True
    if len(rest_pred) > GREEDY_LIMIT:
        a, b = sorted(rest_pred, key=_row_key), sorted(rest_gold, key=_row_key)
        return all(map(tol.rows_equal, a, b))
    for row in rest_gold:
        for i, candidate in enumerate(rest_pred):
            if tol.rows_equal(candidate, row):
                del rest_pred[i]
                break
        else:
            return False
    return True


def results_match(pred: list[Row], gold: list[Row], mode: ExecSqlMode, tol: Tolerance) -> bool:
    """Compare two results under ``mode`` with cell tolerance ``tol``."""
    if mode == "ordered":
        return len(pred) == len(gold) and all(map(tol.rows_equal, pred, gold))
    if mode == "multiset":
        return _match_bags(pred, gold, tol)
    return _match_bags(list(dict.fromkeys(pred)), list(dict.fromkeys(gold)), tol)


def _sort_key(cell: Cell) -> tuple[int, str, float]:
    if cell is None:
        return (0, "", 0.0)
    if isinstance(cell, float):
        return (1, "", cell)
    return (2, str(cell), 0.0)


def _column(rows: list[Row], j: int) -> list[Cell]:
    return [row[j] for row in rows]


def _columns_match(pred: list[Cell], gold: list[Cell], mode: ExecSqlMode, tol: Tolerance) -> bool:
    if mode == "ordered":
        return len(pred) == len(gold) and all(map(tol.cells_equal, pred, gold))
    if mode == "set":
        pred, gold = list(dict.fromkeys(pred)), list(dict.fromkeys(gold))
    a, b = sorted(pred, key=_sort_key), sorted(gold, key=_sort_key)
    return len(a) == len(b) and all(map(tol.cells_equal, a, b))


def align_columns(
    pred: list[Row], gold: list[Row], mode: ExecSqlMode, tol: Tolerance
) -> list[int] | None:
    """For each gold column, a distinct predicted column with the same values (Spider 2.0
    style), or ``None`` when some gold column has no match."""
    if not pred or not gold:
        return None
    width_p, width_g = len(pred[0]), len(gold[0])
    used: set[int] = set()
    mapping: list[int] = []
    for j in range(width_g):
        gold_col = _column(gold, j)
        for i in range(width_p):
            if i not in used and _columns_match(_column(pred, i), gold_col, mode, tol):
                used.add(i)
                mapping.append(i)
                break
        else:
            return None
    return mapping


_MODE_WORDS = {
    "set": "set semantics (BIRD: duplicates and order ignored)",
    "multiset": "multiset semantics (duplicates count, order ignored)",
    "ordered": "ordered semantics (row order and duplicates count)",
}


def compare_results(
    pred: list[Row],
    gold: list[Row],
    mode: ExecSqlMode,
    tol: Tolerance,
    *,
    gold_columns: Sequence[str] = (),
    pred_columns: Sequence[str] = (),
) -> GradeCheck:
    """Compare a predicted with a gold result and say why they match or not."""
    how = f"{_MODE_WORDS[mode]}, numeric tolerance abs {tol.abs:g} / rel {tol.rel:g}"
    expected = {"mode": mode, "rows": len(gold), "columns": list(gold_columns)}
    if results_match(pred, gold, mode, tol):
        return GradeCheck(
            name="exec_sql",
            passed=True,
            reason=f"the predicted result equals the gold result under {how}; columns by position",
            expected=expected,
            found={"rows": len(pred), "columns": list(pred_columns), "alignment": "position"},
        )
    mapping = align_columns(pred, gold, mode, tol)
    if mapping is not None and mapping != list(range(len(mapping))):
        projected = [tuple(row[i] for i in mapping) for row in pred]
        if results_match(projected, gold, mode, tol):
            names = [pred_columns[i] if i < len(pred_columns) else str(i) for i in mapping]
            return GradeCheck(
                name="exec_sql",
                passed=True,
                reason=(
                    f"the predicted result equals the gold result under {how}; columns matched "
                    f"by values (Spider 2.0): predicted {', '.join(names)}"
                ),
                expected=expected,
                found={"rows": len(pred), "columns": list(pred_columns), "alignment": mapping},
            )
    width_p = len(pred[0]) if pred else len(pred_columns)
    width_g = len(gold[0]) if gold else len(gold_columns)
    detail = f"{len(pred)} rows x {width_p} columns vs gold {len(gold)} rows x {width_g} columns"
    return GradeCheck(
        name="exec_sql",
        passed=False,
        reason=f"the predicted result differs from the gold result under {how} ({detail})",
        expected=expected,
        found={"rows": len(pred), "columns": list(pred_columns), "sample": pred[:3]},
    )


def check_exec_sql(
    episode: Episode,
    gold_columns: Sequence[str],
    gold_rows: Sequence[Sequence[Any]],
    *,
    warehouse: Path,
    mode: ExecSqlMode = "set",
    tolerance_abs: float = 0.0,
    tolerance_rel: float = 0.0,
    row_cap: int = DEFAULT_ROW_CAP,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> GradeCheck:
    """Execute the episode's predicted SQL and compare it with the gold result."""
    predicted = predicted_sql(episode)
    if predicted is None:
        return GradeCheck(
            name="exec_sql",
            passed=False,
            reason="no predicted SQL: no ```sql block in the answer and no successful sql_query",
            expected={"mode": mode, "rows": len(gold_rows)},
        )
    try:
        columns, rows = run_query(warehouse, predicted.sql, row_cap=row_cap, timeout_s=timeout_s)
    except SqlRefused as exc:
        return GradeCheck(
            name="exec_sql",
            passed=False,
            reason=f"the predicted SQL from {predicted.source} was not run: {exc}",
            expected={"mode": mode, "rows": len(gold_rows)},
            found=predicted.sql,
        )
    check = compare_results(
        rows,
        normalize_rows(gold_rows),
        mode,
        Tolerance(tolerance_abs, tolerance_rel),
        gold_columns=gold_columns,
        pred_columns=columns,
    )
    check.reason = f"{predicted.source}: {check.reason}"
    return check
