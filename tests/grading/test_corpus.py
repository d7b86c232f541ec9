"""The grader corpus: answer texts in the styles real LLM agents use, each with the verdict a
careful human grader gives (tests/grading/corpus/*.yaml).

Any false pass fails the suite. A false fail is allowed only where the item names a
``known_false_fail`` anchor that docs/grading.md lists (and an item that names one must
still fail, so the list cannot go stale; every listed anchor must have an item). A grade
the rules leave ``uncertain`` (docs/grading.md, "Uncertain grades") is allowed only on an
item marked ``uncertain: true``, and such an item must stay uncertain.

File layout: a list of groups; a group holds the shared context of its ``cases``::

    - kind: numeric            # numeric | entity | refusal | abstain | format | exec_sql
      question: ...            # the task's text (the numeric grader reads its numbers)
      truth: 1234.5            # numeric (and format with also_numeric)
      tolerance_abs: 0         # optional
      tolerance_rel: 0.005     # optional
      naive: 123450            # optional known-wrong value
      entities / aliases / wrong_aliases     # entity
      format: {kind: bullets, n: 3}          # format
      gold: {columns, rows}                  # format: the truth rows every item is checked on
      gold_sql / mode / gold: {columns, rows} # exec_sql
      cases:
        - answer: |
            ...
          verdict: pass | fail
          known_false_fail: naive-explained   # optional, only with verdict pass
          pred: {columns, rows}               # exec_sql without SQL in the answer
          calls: [sql, ...]                   # exec_sql: successful sql_query calls, in order
          uncertain: true                     # optional: the rules must hand it to the judge
          note: why                           # optional
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from tests.grading.builders import make_episode, sql_call

from dabench.grading.entity import check_entity
from dabench.grading.exec_sql import (
    Tolerance,
    check_exec_sql,
    compare_results,
    normalize_rows,
)
from dabench.grading.format_content import check_content
from dabench.grading.formats import check_format, numeric_part
from dabench.grading.numeric import asked_currency, check_numeric
from dabench.grading.refusal import check_refusal
from dabench.journal.records import GradeCheck
from dabench.tasks.model import FormatSpec

CORPUS = Path(__file__).parent / "corpus"
DOC = Path(__file__).parents[2] / "docs" / "grading.md"
KINDS = ("numeric", "entity", "refusal", "abstain", "format", "exec_sql")


def _items() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    items = []
    for path in sorted(CORPUS.glob("*.yaml")):
        groups = yaml.safe_load(path.read_text(encoding="utf-8"))
        for g, group in enumerate(groups):
            assert group["kind"] in KINDS, f"{path.name} group {g}: kind {group['kind']!r}"
            for c, case in enumerate(group["cases"]):
                assert case["verdict"] in ("pass", "fail"), f"{path.name} {g}/{c}: verdict"
                items.append((f"{path.stem}-{g}-{c}", group, case))
    return items


ITEMS = _items()


def _documented_anchors() -> set[str]:
    return set(re.findall(r"<a id=\"kff-([a-z0-9-]+)\"></a>", DOC.read_text(encoding="utf-8")))


def _to_lock_json(value: Any) -> Any:
    """A cell as the truth lock stores it (Decimal -> float, dates -> ISO text)."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    return value


@pytest.fixture(scope="module")
def corpus_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real DuckDB warehouse for the exec_sql items (big ids, years, counts, decimals)."""
    path = tmp_path_factory.mktemp("corpus") / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute("CREATE TABLE sales.customers (id BIGINT, name VARCHAR, tier VARCHAR, signup DATE)")
    con.execute(
        """INSERT INTO sales.customers VALUES
        (9007199254740993001, 'Acme', 'gold', DATE '2023-02-01'),
        (9007199254740993002, 'Globex', 'silver', DATE '2023-06-15'),
        (9007199254740993003, 'Initech', 'gold', DATE '2024-01-20'),
        (900, 'Umbrella', 'bronze', DATE '2024-07-04'),
        (903, 'Hooli', 'bronze', DATE '2024-11-30')"""
    )
    con.execute(
        "CREATE TABLE sales.orders (id INTEGER, customer_id BIGINT, region VARCHAR, "
        "amount DECIMAL(12,2), fiscal_year INTEGER, day DATE, status VARCHAR)"
    )
    con.execute(
        """INSERT INTO sales.orders
        SELECT i,
            [9007199254740993001, 9007199254740993002, 9007199254740993003, 900, 903][i % 5 + 1],
            ['north', 'south', 'east', 'west'][i % 4 + 1],
            CAST((i * 37 % 1000) + (i % 100) / 100 AS DECIMAL(12,2)),
            2023 + i % 3,
            DATE '2023-01-01' + CAST(i % 700 AS INTEGER),
            CASE WHEN i % 11 = 0 THEN 'cancelled' ELSE 'delivered' END
        FROM range(1, 1146) AS t(i)"""
    )
    con.close()
    return path


def _grade(group: dict[str, Any], case: dict[str, Any], warehouse: Path) -> GradeCheck:
    kind = group["kind"]
    answer = case.get("answer", "")
    tol_abs = float(group.get("tolerance_abs", 0.0))
    if kind == "numeric":
        return check_numeric(
            answer,
            float(group["truth"]),
            tolerance_abs=tol_abs,
            tolerance_rel=float(group.get("tolerance_rel", 0.005)),
            naive=group.get("naive"),
            currency=asked_currency(group.get("question", "")),
            question=group.get("question"),  # as the episode grader passes the task's text
        )
    if kind == "entity":
        return check_entity(
            answer,
            group["entities"],
            aliases=group.get("aliases", []),
            wrong_aliases=group.get("wrong_aliases", []),
        )
    if kind in ("refusal", "abstain"):
        return check_refusal(answer, kind, question=group.get("question"))
    if kind == "format":
        spec = FormatSpec.model_validate(group["format"])
        check = check_format(answer, spec, question=group.get("question"))
        gold = group.get("gold", {"columns": [], "rows": []})
        content = check_content(
            answer,
            spec,
            gold["columns"],
            gold["rows"],
            question=group.get("question"),
            tolerance_rel=group.get("tolerance_rel", 0.005),
        )
        if check.passed and content is not None:
            return content
        if check.passed and "truth" in group:
            return check_numeric(
                numeric_part(answer, spec),
                float(group["truth"]),
                tolerance_rel=group.get("tolerance_rel", 0.005),
                currency=asked_currency(group.get("question", "")),
                question=group.get("question"),
            )
        return check
    mode = group.get("mode", "set")
    tol_rel = float(group.get("tolerance_rel", 0.0))
    if "gold_sql" in group:
        con = duckdb.connect(str(warehouse), read_only=True)
        cur = con.execute(group["gold_sql"])
        columns = [d[0] for d in cur.description or []]
        gold = [[_to_lock_json(v) for v in row] for row in cur.fetchall()]
        con.close()
    else:
        columns, gold = group["gold"]["columns"], group["gold"]["rows"]
    if "pred" in case:
        pred = case["pred"]
        return compare_results(
            normalize_rows(pred["rows"]),
            normalize_rows(gold),
            mode,
            Tolerance(tol_abs, tol_rel),
            gold_columns=columns,
            pred_columns=pred["columns"],
        )
    calls = [sql_call(i, sql) for i, sql in enumerate(case.get("calls", []))]
    episode = make_episode(answer, tool_calls=calls)
    return check_exec_sql(
        episode,
        columns,
        gold,
        warehouse=warehouse,
        mode=mode,
        tolerance_abs=tol_abs,
        tolerance_rel=tol_rel,
    )


@pytest.mark.parametrize(
    ("group", "case"), [(g, c) for _, g, c in ITEMS], ids=[i for i, *_ in ITEMS]
)
def test_corpus_item(group: dict[str, Any], case: dict[str, Any], corpus_warehouse: Path) -> None:
    check = _grade(group, case, corpus_warehouse)
    human = case["verdict"] == "pass"
    if case.get("uncertain"):
        assert check.uncertain, f"marked uncertain but the rules settled it: {check.reason}"
        assert not check.passed, "an uncertain grade never passes"
        return
    assert not check.uncertain, f"UNCERTAIN on an item not marked so: {check.reason}"
    known = case.get("known_false_fail")
    if known:
        assert human, "known_false_fail only makes sense on an item a human passes"
        assert known in _documented_anchors(), f"docs/grading.md lists no anchor {known!r}"
        assert not check.passed, f"listed as a known false fail but now passes: {check.reason}"
        return
    if human:
        assert check.passed, f"FALSE FAIL: {check.reason}"
    else:
        assert not check.passed, f"FALSE PASS: {check.reason}"


def test_every_documented_false_fail_has_an_item() -> None:
    used = {c["known_false_fail"] for _, _, c in ITEMS if c.get("known_false_fail")}
    assert _documented_anchors() - used == set(), "anchors in docs/grading.md without an item"


def test_corpus_size_and_coverage() -> None:
    per_kind = Counter(g["kind"] for _, g, _ in ITEMS)
    print("grader corpus:", dict(per_kind), "total", len(ITEMS))
    assert len(ITEMS) >= 300
    assert all(per_kind[k] >= 20 for k in ("numeric", "entity", "format", "exec_sql"))
    assert per_kind["refusal"] + per_kind["abstain"] >= 40
    verdicts = Counter(c["verdict"] for _, _, c in ITEMS)
    assert verdicts["pass"] >= 100 and verdicts["fail"] >= 100
