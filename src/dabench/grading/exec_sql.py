"""The exec_sql grader: run the predicted SQL on the world and compare its result with the
gold result.

The predicted SQL is the last ```` ```sql ```` block of the graded answer when there is one
(the answer is what the agent commits to), else the SQL of the episode's last successful
call of a tool in the ``sql`` role (:mod:`dabench.roles`: ``sql_query`` on the reference
platform, ``query``/``execute_query``... elsewhere), read from the argument the arm's sql
binding maps the canonical ``sql`` onto. It runs guarded: exactly one SELECT/WITH statement
(parsed with sqlglot), a read-only DuckDB connection without external access, a statement
timeout and a row cap.

Comparison modes (the grade records which one was used and how columns were aligned):

- ``set`` (BIRD execution accuracy): the results are equal as sets of rows (order and exact
  duplicates ignored).
- ``multiset``: equal as bags of rows (duplicates count, order ignored).
- ``ordered``: equal as sequences of rows.

Cells keep full precision (``int`` and ``Decimal`` compare exactly as decimals, so 19-digit
ids that differ by 1 differ). A gold column whose non-NULL cells are all non-integer numbers
(``float``/``Decimal``) is *tolerant*: cells compare within
``max(tolerance_abs, tolerance_rel * |gold|)`` (per column, as in Spider 2.0). Every other
column (integers, ids, years, counts, dates as ISO text, strings trimmed, booleans) is
*exact*. A ``float`` on either side also allows binary noise of ``1e-9 * max(1, |gold|)``.
Columns are first compared by position; when that fails, gold columns are assigned to
distinct predicted columns with the same values by an exhaustive (capped) search
(:func:`align_columns`; names and extra predicted columns ignored, Spider 2.0).

One-row gold, several predicted rows (:func:`first_row_check`): when the predicted SQL has a
top-level ORDER BY, its first row alone is compared, and the grade passes only when that row
equals the gold row, the second row differs from it in the gold columns, and the final-answer
line names the gold value(s) while the final-answer section names no other returned row's.

SQL that computes nothing (no warehouse table read, or the answer selected as a literal;
:mod:`dabench.grading.sql_literals`) fails before it runs. A passing query still fails when
the final-answer section contradicts its result (:func:`statement_check`), and is uncertain
when the answer adopts later SQL that fails (``PredictedSql.adopted``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from dabench.grading.answer import commitment, focus, graded_answer
from dabench.grading.numbers import find_all_numbers
from dabench.grading.sql_literals import hard_coded, kind_values
from dabench.grading.tool_equivalents import call_roles
from dabench.interruptible import QueryTimeout, bounded
from dabench.journal.records import Episode, GradeCheck
from dabench.roles import LEGACY_ROLES, ToolRoles
from dabench.tasks.engines import sqlite_to_duckdb
from dabench.tasks.model import ExecSqlMode
from dabench.world.warehouse import connect_warehouse

DEFAULT_ROW_CAP = 10_000
DEFAULT_TIMEOUT_S = 10.0

_SQL_BLOCK_RE = re.compile(
    r"```(?:sql|postgres(?:ql)?|psql|pgsql|duckdb|sqlite3?|mysql)[ \t]*\n(?P<sql>.*?)```",
    re.IGNORECASE | re.DOTALL,
)
"""A fenced SQL block: ```` ```sql ```` or a fence named after a SQL dialect or its shell."""

Cell = int | float | decimal.Decimal | str | bool | None
Row = tuple[Cell, ...]


class SqlRefused(Exception):
    """The predicted SQL is not a single read-only query or exceeded a guard."""


@dataclass(frozen=True)
class PredictedSql:
    """The SQL an episode committed to and where it was found."""

    sql: str
    source: str
    """``the answer's ```sql block``, ``the answer's SQL (inline)`` or ``<tool> call
    #<index> (sql role)``."""
    earlier: tuple[PredictedSql, ...] = ()
    """Other successful sql-role calls with different SQL, latest first, when the SQL came
    from the calls: candidates the rules cannot rule out (the last call may be a check)."""
    adopted: tuple[PredictedSql, ...] = ()
    """SQL the answer states after its last ```sql block with words that adopt it or reject
    the block ("... so I used `SELECT ...` instead"): candidates the rules cannot rule out."""


_QUERY = r"(?:SELECT\b(?=[^;]*?\bFROM\b)|WITH\s+\w+\s+AS\s*\()"
_BARE_FENCE_RE = re.compile(rf"```[ \t]*\n(?P<sql>[ \t]*{_QUERY}.*?)```", re.I | re.S)
_INLINE_SQL_RE = re.compile(rf"`(?P<sql>[ \t]*{_QUERY}[^`]*)`", re.I)
_PROSE_SQL_RE = re.compile(rf"^(?P<sql>[ \t]*{_QUERY}.*?)(?:;|(?=\n[ \t]*\n)|\Z)", re.S | re.M)
"""SQL written in prose: lines opening with an upper-case ``SELECT ... FROM`` or ``WITH x
AS (`` (so "With the filters applied, ..." is prose, not SQL)."""


def answer_sql(answer: str) -> PredictedSql | None:
    """The SQL an answer states: its last ```sql block, else the last SQL it writes another
    way (a bare fence, inline code or lines starting with SELECT/WITH; SQL stated in prose)."""
    blocks = list(_SQL_BLOCK_RE.finditer(answer))
    if blocks:
        last = blocks[-1]
        adopted = tuple(
            PredictedSql(sql=sql, source="SQL the answer adopts after its ```sql block")
            for start, sql in _other_sql(answer)
            if start >= last.end() and _ADOPTS_RE.search(answer[last.end() : start])
        )
        return PredictedSql(last.group("sql").strip(), "the answer's ```sql block", (), adopted)
    found = _other_sql(answer)
    if not found:
        return None
    return PredictedSql(sql=max(found)[1], source="the answer's SQL (not in a ```sql block)")


_ADOPTS_RE = re.compile(
    r"\b(?:instead|rather|actually|wrong|mistake|incorrect|flawed|bug|buggy|corrected"
    r"|correction|fixed|revised|switched|replaced|so i used|i used|final query)\b",
    re.IGNORECASE,
)
"""Words between a ```sql block and later SQL that reject the block or adopt the later SQL."""


def _other_sql(answer: str) -> list[tuple[int, str]]:
    """SQL an answer states outside ```sql blocks, with its offset: bare fences and inline
    code, else lines of prose opening with SELECT/WITH."""
    found: list[tuple[int, str]] = []
    for pattern in (_BARE_FENCE_RE, _INLINE_SQL_RE):
        found.extend((m.start(), m.group("sql")) for m in pattern.finditer(answer))
    if not found:
        prose = _FENCED_ANY_RE.sub(" ", answer)
        found.extend((m.start(), m.group("sql")) for m in _PROSE_SQL_RE.finditer(prose))
    return [(start, sql.strip().rstrip(";")) for start, sql in found]


_FENCED_ANY_RE = re.compile(r"```.*?```", re.S)


def predicted_sql(episode: Episode, roles: ToolRoles | None = None) -> PredictedSql | None:
    """The SQL to grade: the SQL the answer states (:func:`answer_sql`), else the last
    successful call in the sql role (``roles``: the arm's role map; default the legacy
    reference names), with the earlier calls of different SQL as ``earlier``."""
    stated = answer_sql(graded_answer(episode))
    if stated is not None:
        return stated
    role_map = roles or LEGACY_ROLES
    calls: list[PredictedSql] = []
    for call in reversed(episode.tool_calls):
        if call.is_error or "sql" not in call_roles(call, roles):
            continue
        binding = role_map.binding_for("sql", call.name)
        sql = binding.read(call.arguments, "sql") if binding else call.arguments.get("sql")
        if isinstance(sql, str) and all(sql.strip() != c.sql.strip() for c in calls):
            calls.append(PredictedSql(sql=sql, source=f"{call.name} call #{call.index} (sql role)"))
    if not calls:
        return None
    return PredictedSql(calls[0].sql, calls[0].source, tuple(calls[1:]))


def postgres_to_duckdb(sql: str) -> str:
    """PostgreSQL SQL in DuckDB's dialect (sqlglot); unchanged when it does not parse, so the
    grader reports the parse error itself."""
    try:
        out = sqlglot.transpile(sql, read="postgres", write="duckdb")
    except sqlglot.errors.SqlglotError:
        return sql
    return out[0] if len(out) == 1 else sql


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
    """A cell for comparison: full precision kept (``int`` and ``Decimal`` exact, ``float``
    as is), booleans as the text ``TRUE``/``FALSE`` (never equal to 1/0, which Python's
    ``True == 1`` would allow), dates and times as ISO text, strings trimmed, other types as
    text."""
    if value is None:
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float | decimal.Decimal):
        return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def normalize_rows(rows: Sequence[Sequence[Any]]) -> list[Row]:
    """Rows with cells normalised for comparison (see :func:`_normalize`)."""
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

    def fetch() -> tuple[list[str], list[tuple[Any, ...]]]:
        cur = con.execute(sql)
        return [d[0] for d in cur.description or []], cur.fetchmany(row_cap + 1)

    try:
        columns, raw = bounded(fetch, con.interrupt, timeout_s)
    except QueryTimeout as exc:
        raise SqlRefused(f"the SQL ran longer than the {timeout_s:g} s statement timeout") from exc
    except duckdb.Error as exc:
        raise SqlRefused(f"the SQL failed: {str(exc).splitlines()[0]}") from exc
    finally:
        con.close()
    if len(raw) > row_cap:
        raise SqlRefused(f"the SQL returned more than the {row_cap:,}-row cap")
    return columns, normalize_rows(raw)


FLOAT_NOISE_REL = 1e-9
"""Binary floating-point noise allowed whenever a compared number is a ``float`` (summation
order): ``1e-9 × max(1, |gold|)``."""
MAX_ALIGNMENTS = 1000
"""How many complete column assignments :func:`align_columns` tries at most."""


def _is_number(cell: Cell) -> bool:
    return isinstance(cell, int | float | decimal.Decimal) and not isinstance(cell, bool)


def _exact_decimal(cell: int | float | decimal.Decimal) -> decimal.Decimal:
    return cell if isinstance(cell, decimal.Decimal) else decimal.Decimal(cell)


def tolerant_columns(gold: list[Row]) -> tuple[bool, ...]:
    """Per gold column: True when it is a non-integer numeric column (every non-NULL cell a
    ``float`` or ``Decimal``); integers, ids, years, counts, dates and strings are exact."""
    if not gold:
        return ()
    flags = []
    for j in range(len(gold[0])):
        cells = [row[j] for row in gold if row[j] is not None]
        flags.append(bool(cells) and all(isinstance(c, float | decimal.Decimal) for c in cells))
    return tuple(flags)


@dataclass(frozen=True)
class Tolerance:
    """Numeric tolerance for the non-integer numeric columns of the gold result."""

    abs: float = 0.0
    rel: float = 0.0

    def cells_equal(self, pred: Cell, gold: Cell, tolerant: bool = True) -> bool:
        """True when the cells are equal: numbers at full precision (within tolerance when
        ``tolerant``, plus float noise when either is a ``float``), others exactly."""
        if _is_number(pred) and _is_number(gold):
            assert isinstance(pred, int | float | decimal.Decimal)
            assert isinstance(gold, int | float | decimal.Decimal)
            if pred != pred or gold != gold:  # NaN equals only NaN
                return pred != pred and gold != gold
            p, g = _exact_decimal(pred), _exact_decimal(gold)
            allowed = decimal.Decimal(0)
            if tolerant:
                allowed = max(
                    decimal.Decimal(repr(self.abs)), decimal.Decimal(repr(self.rel)) * abs(g)
                )
            if isinstance(pred, float) or isinstance(gold, float):
                allowed += decimal.Decimal(FLOAT_NOISE_REL) * max(decimal.Decimal(1), abs(g))
            return abs(p - g) <= allowed
        if isinstance(pred, bool) or isinstance(gold, bool):
            return type(pred) is type(gold) and pred == gold
        return pred == gold

    def rows_equal(self, pred: Row, gold: Row, tolerant: Sequence[bool] = ()) -> bool:
        """True when the rows have the same width and equal cells (``tolerant`` per column;
        empty: every column tolerant)."""
        if len(pred) != len(gold):
            return False
        flags = tolerant or (True,) * len(gold)
        return all(self.cells_equal(p, g, t) for p, g, t in zip(pred, gold, flags, strict=True))


GREEDY_LIMIT = 2000
"""Above this many rows left after exact matching, tolerant matching pairs rows in sorted
order instead of searching (linear instead of quadratic)."""


def _row_key(row: Row) -> tuple[tuple[int, str, Any], ...]:
    return tuple(_sort_key(cell) for cell in row)


def _match_bags(pred: list[Row], gold: list[Row], tol: Tolerance, flags: Sequence[bool]) -> bool:
    """Bag equality: exact matches first (hashing), then tolerant matching of the rest, where
    rows are only paired within the same values of the exact columns."""
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
        return all(tol.rows_equal(p, g, flags) for p, g in zip(a, b, strict=True))
    exact = [j for j, t in enumerate(flags) if not t]

    def bucket(row: Row) -> tuple[Any, ...]:
        return tuple(str(row[j]) if j < len(row) else None for j in exact)

    buckets: dict[tuple[Any, ...], list[Row]] = {}
    for row in rest_pred:
        buckets.setdefault(bucket(row), []).append(row)
    for row in rest_gold:
        candidates = buckets.get(bucket(row), [])
        for i, candidate in enumerate(candidates):
            if tol.rows_equal(candidate, row, flags):
                del candidates[i]
                break
        else:
            return False
    return True


def results_match(
    pred: list[Row],
    gold: list[Row],
    mode: ExecSqlMode,
    tol: Tolerance,
    flags: Sequence[bool] | None = None,
) -> bool:
    """Compare two results under ``mode`` with cell tolerance ``tol`` on the columns
    ``flags`` marks tolerant (default: :func:`tolerant_columns` of ``gold``)."""
    flags = tolerant_columns(gold) if flags is None else flags
    if mode == "ordered":
        return len(pred) == len(gold) and all(
            tol.rows_equal(p, g, flags) for p, g in zip(pred, gold, strict=False)
        )
    if mode == "multiset":
        return _match_bags(pred, gold, tol, flags)
    return _match_bags(list(dict.fromkeys(pred)), list(dict.fromkeys(gold)), tol, flags)


def _sort_key(cell: Cell) -> tuple[int, str, Any]:
    if cell is None:
        return (0, "", 0)
    if _is_number(cell):
        return (1, "", cell)
    return (2, str(cell), 0)


def _column(rows: list[Row], j: int) -> list[Cell]:
    return [row[j] for row in rows]


def _columns_match(
    pred: list[Cell], gold: list[Cell], mode: ExecSqlMode, tol: Tolerance, tolerant: bool
) -> bool:
    if mode == "ordered":
        return len(pred) == len(gold) and all(
            tol.cells_equal(p, g, tolerant) for p, g in zip(pred, gold, strict=True)
        )
    if mode == "set":
        pred, gold = list(dict.fromkeys(pred)), list(dict.fromkeys(gold))
    a, b = sorted(pred, key=_sort_key), sorted(gold, key=_sort_key)
    if len(a) != len(b):
        return False
    return all(tol.cells_equal(p, g, tolerant) for p, g in zip(a, b, strict=True))


def align_columns(
    pred: list[Row], gold: list[Row], mode: ExecSqlMode, tol: Tolerance
) -> list[int] | None:
    """For each gold column, a distinct predicted column such that the projected rows equal
    the gold rows (Spider 2.0: names and extra predicted columns ignored), or ``None``.

    Candidates are the predicted columns whose values match the gold column's; complete
    assignments are searched exhaustively (backtracking, the same-position column first),
    at most :data:`MAX_ALIGNMENTS` of them, and the first whose projected rows match wins.
    """
    if not pred or not gold:
        return None
    width_p, width_g = len(pred[0]), len(gold[0])
    if width_p < width_g:
        return None
    flags = tolerant_columns(gold)
    candidates: list[list[int]] = []
    for j in range(width_g):
        gold_col = _column(gold, j)
        order = ([j] if j < width_p else []) + [i for i in range(width_p) if i != j]
        found = [
            i for i in order if _columns_match(_column(pred, i), gold_col, mode, tol, flags[j])
        ]
        if not found:
            return None
        candidates.append(found)
    tried = 0
    mapping: list[int] = []

    def search(j: int) -> list[int] | None:
        nonlocal tried
        if j == width_g:
            tried += 1
            projected = [tuple(row[i] for i in mapping) for row in pred]
            return list(mapping) if results_match(projected, gold, mode, tol, flags) else None
        for i in candidates[j]:
            if i in mapping or tried >= MAX_ALIGNMENTS:
                continue
            mapping.append(i)
            result = search(j + 1)
            mapping.pop()
            if result is not None:
                return result
        return None

    return search(0)


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
    if mapping is not None:
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


FIRST_ROW_RULE = "first row of an ordered result"
"""Words the reason of a grade passed by :func:`first_row_check` carries."""


def is_ordered(sql: str) -> bool:
    """True when ``sql`` (DuckDB dialect) has a top-level ORDER BY (a parenthesised query
    counts; an ORDER BY inside a subquery or CTE does not)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return False
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


_DECIMALS_RE = re.compile(r"[.](\d{2,})(?!\d)")


def _rounded_to(written: str, value: float, cell: Cell) -> bool:
    """True when ``value``, written with two or more decimals, is ``cell`` rounded to them
    (``35.333333`` for 35.3333333...; a rendered non-integer cell, not a rounded-off guess)."""
    found = _DECIMALS_RE.search(written)
    if found is None or not isinstance(cell, float | decimal.Decimal):
        return False
    half = decimal.Decimal(5) * decimal.Decimal(10) ** -(len(found.group(1)) + 1)
    return abs(decimal.Decimal(repr(value)) - _exact_decimal(cell)) <= half


def value_span(text: str, cell: Cell, tol: Tolerance, tolerant: bool) -> tuple[int, int] | None:
    """Where ``text`` first mentions ``cell`` (start, end): a number among its numbers
    (within ``tol`` when ``tolerant``, or rounded to the two or more decimals written), other
    values as whole words, case ignored; ``None`` when it does not (NULL is never
    mentioned)."""
    if cell is None:
        return None
    if _is_number(cell):
        return next(
            (
                (m.start, m.end or m.start + len(m.text))
                for m in find_all_numbers(text)
                if not m.ambiguous
                and (tol.cells_equal(m.value, cell, tolerant) or _rounded_to(m.text, m.value, cell))
            ),
            None,
        )
    if not str(cell):
        return None
    found = re.search(rf"(?<!\w){re.escape(str(cell))}(?!\w)", text, re.IGNORECASE)
    return found.span() if found else None


def value_position(text: str, cell: Cell, tol: Tolerance, tolerant: bool) -> int | None:
    """Where ``text`` first mentions ``cell`` (:func:`value_span`)."""
    span = value_span(text, cell, tol, tolerant)
    return span[0] if span else None


def names_value(text: str, cell: Cell, tol: Tolerance, tolerant: bool) -> bool:
    """True when ``text`` mentions ``cell`` (:func:`value_position`)."""
    return value_position(text, cell, tol, tolerant) is not None


def first_row_check(
    pred: list[Row],
    gold: list[Row],
    tol: Tolerance,
    answer: str,
) -> tuple[list[int], str] | None:
    """The first-row rule for a one-row gold and an ordered predicted result of several
    rows (the caller checks those): the column mapping and the words for the reason when
    (a) the first row equals the gold row (columns aligned as in :func:`align_columns`),
    (b) the second row differs from it in the aligned columns (else a tie or a duplicate
    could have put either first), and (c) the answer has a final-answer line that names
    every gold value, and its final-answer section names no aligned value of another
    returned row that differs from the gold's (a list of candidates is a hedge); else
    ``None``."""
    if len(gold) != 1 or len(pred) < 2:
        return None
    where = focus(answer)
    if not where.marked:
        return None
    mapping = align_columns(pred[:1], gold, "set", tol)
    if mapping is None:
        return None
    flags = tolerant_columns(gold)
    second = tuple(pred[1][i] for i in mapping)
    if tol.rows_equal(second, gold[0], flags):
        return None
    if not all(names_value(where.line, g, tol, t) for g, t in zip(gold[0], flags, strict=True)):
        return None
    for row in pred[1:]:
        for j, i in enumerate(mapping):
            other = row[i]
            if not tol.cells_equal(other, gold[0][j], flags[j]) and names_value(
                where.section, other, tol, flags[j]
            ):
                return None
    named = ", ".join(str(g) for g in gold[0])
    return mapping, (
        f"{FIRST_ROW_RULE}: the query has a top-level ORDER BY and returns {len(pred)} rows "
        f"for a one-row gold; its first row equals the gold row, the second differs, and the "
        f"final-answer line names {named} and no other returned row"
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
    roles: ToolRoles | None = None,
    sql_dialect: str = "duckdb",
) -> GradeCheck:
    """Execute the episode's predicted SQL and compare it with the gold result (``roles``:
    the arm's role map, which says where a sql-role call carries its SQL; ``sql_dialect``:
    the dialect the arm's target speaks: PostgreSQL and SQLite SQL are translated to DuckDB's,
    since the grader runs it on the world's own warehouse)."""
    predicted = predicted_sql(episode, roles)
    answer = graded_answer(episode)
    if predicted is None:
        return GradeCheck(
            name="exec_sql",
            passed=False,
            reason=(
                "no predicted SQL: no ```sql block in the answer and no successful call "
                "of a tool in the sql role"
            ),
            expected={"mode": mode, "rows": len(gold_rows)},
        )

    def grade(sql: PredictedSql) -> GradeCheck:
        return _grade_one(
            sql, answer, gold_columns, gold_rows, warehouse, mode, tolerance_abs,
            tolerance_rel, row_cap, timeout_s, sql_dialect,
        )  # fmt: skip

    check = grade(predicted)
    if check.passed:
        tol = Tolerance(tolerance_abs, tolerance_rel)
        gold = normalize_rows(gold_rows)
        others = kind_values(warehouse, gold) if len(gold) <= STATEMENT_ROWS else frozenset()
        return _settle_pass(check, predicted, answer, gold, mode, tol, grade, others)
    for other in predicted.earlier:
        alternative = grade(other)
        if alternative.passed:
            check.uncertain = True
            check.reason = (
                f"uncertain: the answer states no SQL and the episode ran several queries; "
                f"the last one fails ({check.reason}) but an earlier one passes "
                f"({alternative.reason}); the rules cannot tell which one answers"
            )
            break
    return check


_CODE_RE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_POINTER_RE = re.compile(r"\b(?:query|sql|above|below|results?|output)\b", re.I)
STATEMENT_ROWS = 20
"""Gold results up to this many rows are compared with the final-answer section."""


def _key_cells(row: Row) -> list[tuple[int, Cell]]:
    """The cells that identify a row in prose: its strings that are not ISO dates, else
    every non-NULL cell."""
    strings: list[tuple[int, Cell]] = [
        (j, c) for j, c in enumerate(row) if isinstance(c, str) and not _ISO_DATE_RE.match(c)
    ]
    return strings or [(j, c) for j, c in enumerate(row) if c is not None]


_ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _statement(answer: str) -> tuple[str, bool]:
    """The statement a passing query's answer concludes with, code removed, and whether it
    is marked: the final-answer section, else the paragraph of the concluding statement
    (:func:`~dabench.grading.answer.commitment`), else the last paragraph with words."""
    where = focus(answer)
    if where.marked:
        text = where.section
    else:
        said = commitment(answer)
        text = "\n".join((*said.preceding, said.sentence, *said.following))
        if not said.sentence:
            paragraphs = re.split(r"\n[ \t]*\n", _CODE_RE.sub(" ", answer))
            text = next((p for p in reversed(paragraphs) if re.search(r"\w", p)), "")
    prose = _LIST_MARKER_RE.sub("", _CODE_RE.sub(" ", text)).strip()
    return prose, where.marked


_LIST_MARKER_RE = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+", re.M)
_NEGATED_AFTER_RE = re.compile(
    r"^[\s*_]*(?:(?:is|was|are|were|does|did|has|had)(?:\s+not\b|n['’]t\b)|(?:not|never"
    r"|no\s+longer)\b)",
    re.I,
)
_NEGATED_BEFORE_RE = re.compile(r"\b(?:not|never|no\s+longer|isn['’]t|wasn['’]t)[\s*_]*$", re.I)
_BEATEN_BEFORE_RE = re.compile(
    r"\b(?:overt(?:ook|akes?|aken)|beat(?:s|en)?|outs(?:old|ells?|cored)|outperform(?:s|ed)?"
    r"|outrank(?:s|ed)?|surpass(?:es|ed)?|edged(?:\s+out)?|dethroned|unseated|displaced"
    r"|ahead\s+of|more\s+than|higher\s+than|larger\s+than)[\s*_]+(?:the\s+)?$",
    re.I,
)
_BEATEN_AFTER_RE = re.compile(
    r"^[\s*_]*(?:lost\s+to|trail(?:s|ed)|fell\s+behind|came\s+second|(?:is|was)\s+second)\b",
    re.I,
)
_SENTENCE_STOP_RE = re.compile(r"[.;!?](?=\s|$)|\n")
_ATTACHED_RE = re.compile(r"[ \t#:*_|]*\Z")
"""Text between a number and a name that makes the number that name's (``66 Canyon``,
``| 903 | Hooli``)."""


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    row: int | None
    """The gold row the mention names, ``None`` for another value of the result's kind."""


def _mentions(prose: str, gold: list[Row], others: frozenset[str]) -> list[_Mention]:
    """Whole-word mentions (case ignored) of the gold rows' key strings and of ``others``
    (values of the result's kind that the result does not hold), in text order; a gold
    mention that is negated ("X is not ...", "not X") is left out."""
    found: list[_Mention] = []
    keys = [
        (str(c), r) for r, row in enumerate(gold) for _, c in _key_cells(row) if isinstance(c, str)
    ]
    for word, row in [*keys, *((o, None) for o in others)]:
        for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", prose, re.I):
            negated = _NEGATED_AFTER_RE.match(prose[m.end() :]) or _NEGATED_BEFORE_RE.search(
                prose[: m.start()]
            )
            if row is None or not negated:
                found.append(_Mention(m.start(), m.end(), row))
    return sorted(found, key=lambda m: (m.start, -m.end))


def _beaten(prose: str, mentions: list[_Mention]) -> bool:
    """True when the one gold row is named only as beaten ("B overtook A", "A lost to B")."""
    gold = [m for m in mentions if m.row is not None]
    return bool(gold) and all(
        _BEATEN_BEFORE_RE.search(prose[: m.start]) or _BEATEN_AFTER_RE.match(prose[m.end :])
        for m in gold
    )


def _attached(prose: str, mention: _Mention, following: _Mention | None) -> list[Any]:
    """The numbers a mention carries: the one just before it (``66 Canyon ...``) and those
    after it to its sentence's end or the next mention, except one just before that."""
    stop = _SENTENCE_STOP_RE.search(prose, mention.end)
    end = min(stop.start() if stop else len(prose), following.start if following else len(prose))
    out = []
    for n in find_all_numbers(prose):
        if n.ambiguous:
            continue
        before = n.end <= mention.start and _ATTACHED_RE.match(prose[n.end : mention.start])
        after = mention.end <= n.start < end and not (
            following and _ATTACHED_RE.match(prose[n.end : following.start])
        )
        if before or after:
            out.append(n)
    return out


def _wrong_number(
    prose: str, mentions: list[_Mention], gold: list[Row], tol: Tolerance, flags: Sequence[bool]
) -> str | None:
    """A gold row named with a number the result holds in none of its rows' numeric cells
    while one of the row's values is missing ("Globex (114,191.00)", "west, which has 4";
    two rows' counts swapped too), or ``None``."""
    keys = Counter(tuple(str(c) for _, c in _key_cells(row)) for row in gold)
    for mention in mentions:
        if mention.row is None or keys[tuple(str(c) for _, c in _key_cells(gold[mention.row]))] > 1:
            continue  # rows sharing their key strings ("LSQ-01" per year) are not told apart
        row = gold[mention.row]
        cells = [(c, flags[j]) for j, c in enumerate(row) if _is_number(c)]
        following = next((m for m in mentions if m.start >= mention.end), None)
        numbers = _attached(prose, mention, following)
        if not cells or not numbers:
            continue

        def said(n: Any, cell: Cell, flag: bool) -> bool:
            # "(114,666.88)" after a name is an aside, not an accounting negative
            value = abs(n.value) if "-" not in n.text else n.value
            return tol.cells_equal(value, cell, flag) or _rounded_to(n.text, value, cell)

        missing = [c for c, f in cells if not any(said(n, c, f) for n in numbers)]
        stray = [n.text for n in numbers if not any(said(n, c, f) for c, f in cells)]
        if missing and stray:
            name = prose[mention.start : mention.end]
            return f"the final answer gives {name} {stray[0]}; the query's result has {missing[0]}"
    return None


def _shared_value(prose: str, gold: list[Row], tol: Tolerance, flags: Sequence[bool]) -> bool:
    """True when the statement gives a value every gold row shares with the row count or
    ``all``/``every``/``each`` ("All 10 categories have exactly 12 products each.")."""
    if len(gold) < 2:
        return False
    counted = names_value(prose, len(gold), tol, False) or re.search(
        r"\b(?:all|every|each)\b", prose, re.I
    )
    shared = [
        gold[0][j]
        for j in range(len(gold[0]))
        if _is_number(gold[0][j]) and all(tol.cells_equal(r[j], gold[0][j], flags[j]) for r in gold)
    ]
    return bool(counted) and any(names_value(prose, v, tol, False) for v in shared)


def statement_check(
    answer: str,
    gold: list[Row],
    mode: ExecSqlMode,
    tol: Tolerance,
    others: frozenset[str] = frozenset(),
) -> tuple[bool, str] | None:
    """Whether the answer's conclusion contradicts a passing query's result (the gold
    rows): ``(uncertain, reason)`` when it does or may, ``None`` when it agrees or states
    nothing to compare. The conclusion is the final-answer section, else the concluding
    statement (:func:`_statement`); code is removed; gold of at most
    :data:`STATEMENT_ROWS` rows. ``others``: values of the result's kind it does not hold
    (:func:`~dabench.grading.sql_literals.kind_values`). A negated gold mention ("X is
    NOT ...") does not name its row. Fails:

    - a one-row gold named only as beaten ("B overtook A", "B narrowly beat A");
    - no gold row named and another value of the kind named ("... is Jesse Park");
    - a gold row missing and another value named ("A, B and Coral Polymers");
    - ``ordered``: the named rows in another order than the result's;
    - a gold row named with a number that is none of its values while one of its values is
      missing (:func:`_wrong_number`).

    No row named and none of these (with a final-answer line): the result's shared value
    with the row count or ``all``/``every`` agrees; a pointer to the query agrees; a short
    statement (at most eight words) of a string answer fails; anything else is uncertain.
    """
    prose, marked = _statement(answer)
    if len(gold) > STATEMENT_ROWS or not re.search(r"\w", prose):
        return None
    flags = tolerant_columns(gold)
    mentions = _mentions(prose, gold, others)
    positions = [_row_position(prose, r, row, mentions, tol, flags) for r, row in enumerate(gold)]
    named = [p for p in positions if p is not None]
    strays = [prose[m.start : m.end] for m in mentions if m.row is None]
    if len(gold) == 1 and named and _beaten(prose, mentions):
        return False, f"the final answer has {_key_cells(gold[0])[0][1]} beaten by another"
    if strays and len(named) < len(gold):
        missing = f"; {len(gold) - len(named)} of its {len(gold)} rows are missing" if named else ""
        return False, f"the final answer names {strays[0]}, not in the query's result{missing}"
    if not named:
        return _names_nothing(prose, marked, gold, tol, flags)
    if mode == "ordered" and named != sorted(named):
        return False, "the final answer lists the result's rows in another order than the query"
    wrong = _wrong_number(prose, mentions, gold, tol, flags)
    return (False, wrong) if wrong else None


def _row_position(
    text: str,
    index: int,
    row: Row,
    mentions: list[_Mention],
    tol: Tolerance,
    flags: Sequence[bool],
) -> int | None:
    """Where the statement first names the gold row ``index``: its first mention that is not
    negated (a row with key strings), else the first of its values."""
    if any(isinstance(c, str) for _, c in _key_cells(row)):
        return next((m.start for m in mentions if m.row == index), None)
    found = [value_position(text, c, tol, flags[j]) for j, c in _key_cells(row)]
    return min((p for p in found if p is not None), default=None)


def _names_nothing(
    prose: str, marked: bool, gold: list[Row], tol: Tolerance, flags: Sequence[bool]
) -> tuple[bool, str] | None:
    """A conclusion that names no gold row: see :func:`statement_check`."""
    if not marked or _POINTER_RE.search(prose) or _shared_value(prose, gold, tol, flags):
        return None
    stated = f"the final answer states {prose[:80]!r}, which names no row of the query's result"
    strings = any(isinstance(c, str) for _, c in _key_cells(gold[0]))
    if strings and len(prose.split()) <= 8:
        return False, stated
    return True, f"uncertain: {stated}; the rules cannot tell whether it contradicts it"


def _settle_pass(
    check: GradeCheck,
    predicted: PredictedSql,
    answer: str,
    gold: list[Row],
    mode: ExecSqlMode,
    tol: Tolerance,
    grade: Callable[[PredictedSql], GradeCheck],
    others: frozenset[str] = frozenset(),
) -> GradeCheck:
    """A passing query's grade, unless the final-answer section contradicts its result
    (:func:`statement_check`) or the answer adopts later SQL that fails (uncertain)."""
    statement = statement_check(answer, gold, mode, tol, others)
    if statement is not None:
        uncertain, words = statement
        check.passed, check.uncertain = False, uncertain
        check.reason = f"{words} ({check.reason})"
        return check
    for other in predicted.adopted:
        alternative = grade(other)
        if not alternative.passed:
            check.passed, check.uncertain = False, True
            check.reason = (
                f"uncertain: the answer's ```sql block passes ({check.reason}) but the answer "
                f"then adopts other SQL, which fails ({alternative.reason}); the rules cannot "
                f"tell which one it commits to"
            )
            break
    return check


def _grade_one(
    predicted: PredictedSql,
    answer: str,
    gold_columns: Sequence[str],
    gold_rows: Sequence[Sequence[Any]],
    warehouse: Path,
    mode: ExecSqlMode,
    tolerance_abs: float,
    tolerance_rel: float,
    row_cap: int,
    timeout_s: float,
    sql_dialect: str,
) -> GradeCheck:
    if sql_dialect == "postgres":
        predicted = PredictedSql(
            sql=postgres_to_duckdb(predicted.sql),
            source=f"{predicted.source}, translated from PostgreSQL",
        )
    elif sql_dialect == "sqlite":
        predicted = PredictedSql(
            sql=sqlite_to_duckdb(predicted.sql),
            source=f"{predicted.source}, translated from SQLite",
        )
    try:
        literal = hard_coded(predicted.sql, (cell for row in gold_rows for cell in row))
        if literal is not None:
            raise SqlRefused(literal)
        columns, rows = run_query(warehouse, predicted.sql, row_cap=row_cap, timeout_s=timeout_s)
    except SqlRefused as exc:
        return GradeCheck(
            name="exec_sql",
            passed=False,
            reason=f"the predicted SQL from {predicted.source} was not run: {exc}",
            expected={"mode": mode, "rows": len(gold_rows)},
            found=predicted.sql,
        )
    gold = normalize_rows(gold_rows)
    tol = Tolerance(tolerance_abs, tolerance_rel)
    check = compare_results(rows, gold, mode, tol, gold_columns=gold_columns, pred_columns=columns)
    if not check.passed and len(gold) == 1 and len(rows) > 1 and is_ordered(predicted.sql):
        first = first_row_check(rows, gold, tol, answer)
        if first is not None:
            mapping, words = first
            check = GradeCheck(
                name="exec_sql",
                passed=True,
                reason=f"{words} (the whole result: {check.reason})",
                expected=check.expected,
                found={
                    "rows": len(rows),
                    "columns": list(columns),
                    "alignment": mapping,
                    "rule": FIRST_ROW_RULE,
                },
            )
    check.reason = f"{predicted.source}: {check.reason}"
    return check
