"""A SQL worker reuses its cursor only after a query that read its whole result in time, and
the capped fetch stops at a short batch."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dabench.platform.warehouse.base import fetch_capped
from dabench.platform.warehouse.duckdb_backend import read_only_config
from dabench.platform.warehouse.worker import Worker


@pytest.fixture()
def worker(world_dir: Path) -> Iterator[Worker]:
    """A worker object in this process (no guard: ``max_sql_chars`` unset)."""
    w = Worker(str(world_dir / "warehouse.duckdb"), read_only_config(), io.BytesIO())
    yield w
    w.con.close()


def _ask(worker: Worker, sql: str, limit: int = 10, timeout_s: float = 30.0) -> dict[str, Any]:
    return worker.query({"sql": sql, "limit": limit, "timeout_s": timeout_s, "max_bytes": 65536})


def test_cursor_kept_after_a_whole_result_dropped_after_a_cut_or_failure(worker: Worker) -> None:
    assert _ask(worker, "SELECT 42 AS answer")["ok"]["rows"] == [[42]]
    kept = worker._cursor
    assert kept is not None
    assert _ask(worker, "SELECT 7 AS n")["ok"]["rows"] == [[7]]
    assert worker._cursor is kept  # reused, not a new client context

    cut = _ask(worker, "SELECT * FROM range(100)", limit=5)["ok"]
    assert cut["truncated_by"] == "rows" and len(cut["rows"]) == 5
    assert worker._cursor is None  # a cut result is not held until the next query

    assert "error" in _ask(worker, "SELECT * FROM no_such_table")
    assert worker._cursor is None
    assert _ask(worker, "SELECT 1 AS one")["ok"]["rows"] == [[1]]


def test_an_interrupted_query_leaves_no_interrupt_for_the_next(worker: Worker) -> None:
    slow = "SELECT count(*) FROM range(10000000000) a"
    answer = _ask(worker, slow, timeout_s=0.2)
    assert answer["error"]["code"] == "QUERY_TIMEOUT"
    assert worker._cursor is None
    for n in range(3):
        assert _ask(worker, f"SELECT {n} AS n")["ok"]["rows"] == [[n]]


def test_fetch_capped_stops_at_a_short_batch() -> None:
    rows = [[i] for i in range(20)]
    asked: list[int] = []

    def fetchmany(n: int) -> Sequence[Sequence[Any]]:
        asked.append(n)
        out = rows[: min(n, len(rows))]
        del rows[: len(out)]
        return out

    got, cut = fetch_capped(fetchmany, 100, 65536)
    assert [r[0] for r in got] == list(range(20)) and cut is None
    assert asked == [16, 16]  # the second batch (4 rows) was short: no third, empty fetch
