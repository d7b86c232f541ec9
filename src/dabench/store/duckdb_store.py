"""The results store in a local DuckDB file (the default store).

Three tables keyed as their records are: ``runs`` (run_id), ``episodes`` (run_id, arm,
task_id, attempt) and ``arm_stats`` (run_id, arm, dimension, value). Publishing a run replaces
its rows in one transaction, so publishing twice leaves the same rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from dabench.errors import UserInputError
from dabench.store.records import ArmStatRecord, EpisodeRecord, RunRecord, StoredRun
from dabench.world.warehouse import OFFLINE_CONFIG

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, started_at TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ, k INTEGER NOT NULL, tasks INTEGER NOT NULL,
  task_set_hash VARCHAR NOT NULL, world_hash VARCHAR NOT NULL, world_seed BIGINT NOT NULL,
  dabench_version VARCHAR NOT NULL, git_commit VARCHAR, judge_model VARCHAR,
  run_dir VARCHAR NOT NULL, manifest VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
  run_id VARCHAR NOT NULL, arm VARCHAR NOT NULL, task_id VARCHAR NOT NULL,
  attempt INTEGER NOT NULL, suite VARCHAR NOT NULL, category VARCHAR NOT NULL,
  difficulty VARCHAR NOT NULL, status VARCHAR NOT NULL, agent VARCHAR NOT NULL,
  provider VARCHAR, model VARCHAR, target VARCHAR NOT NULL, tool_calls INTEGER NOT NULL,
  tokens BIGINT, cost_usd DOUBLE, wall_ms DOUBLE NOT NULL, passed BOOLEAN, score DOUBLE,
  excluded BOOLEAN NOT NULL, started_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (run_id, arm, task_id, attempt)
);
CREATE TABLE IF NOT EXISTS arm_stats (
  run_id VARCHAR NOT NULL, arm VARCHAR NOT NULL, dimension VARCHAR NOT NULL,
  value VARCHAR NOT NULL, started_at TIMESTAMPTZ NOT NULL, agent VARCHAR, model VARCHAR,
  target VARCHAR, k INTEGER NOT NULL, n_tasks INTEGER NOT NULL, n_episodes INTEGER NOT NULL,
  n_excluded INTEGER NOT NULL, accuracy DOUBLE, accuracy_low DOUBLE, accuracy_high DOUBLE,
  pass_hat_k DOUBLE, pass_hat_k_low DOUBLE, pass_hat_k_high DOUBLE, score DOUBLE,
  tool_calls_median DOUBLE, tokens_mean DOUBLE, cost_total_usd DOUBLE,
  PRIMARY KEY (run_id, arm, dimension, value)
);
"""


def _columns(model: type[RunRecord | EpisodeRecord | ArmStatRecord]) -> list[str]:
    return list(model.model_fields)


def _values(record: RunRecord | EpisodeRecord | ArmStatRecord) -> list[Any]:
    row = record.model_dump()
    if isinstance(record, RunRecord):
        row["manifest"] = json.dumps(row["manifest"], sort_keys=True, default=str)
    return [row[c] for c in type(record).model_fields]


class DuckDBStore:
    """A results store in the DuckDB file at ``path`` (created on first publish)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self, *, create: bool) -> duckdb.DuckDBPyConnection:
        if not create and not self.path.exists():
            raise UserInputError(f"{self.path}: no results store here (dabench publish first)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(self.path), config=dict(OFFLINE_CONFIG))
        except duckdb.Error as exc:
            raise UserInputError(f"{self.path}: not a DuckDB results store ({exc})") from exc
        con.execute(SCHEMA)
        return con

    def publish(self, stored: StoredRun) -> dict[str, int]:
        """Replace the run's rows with ``stored``; rows written per table."""
        con = self._connect(create=True)
        try:
            con.execute("BEGIN TRANSACTION")
            tables: list[tuple[str, list[Any]]] = [
                ("runs", [stored.run]),
                ("episodes", list(stored.episodes)),
                ("arm_stats", list(stored.arm_stats)),
            ]
            for table, records in tables:
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [stored.run.run_id])
                if not records:
                    continue
                cols = _columns(type(records[0]))
                marks = ", ".join("?" for _ in cols)
                con.executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})",
                    [_values(r) for r in records],
                )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()
        return {"runs": 1, "episodes": len(stored.episodes), "arm_stats": len(stored.arm_stats)}

    def arm_stats(self) -> list[ArmStatRecord]:
        """Every published arm statistic, oldest run first."""
        con = self._connect(create=False)
        try:
            cols = _columns(ArmStatRecord)
            cur = con.execute(
                f"SELECT {', '.join(cols)} FROM arm_stats ORDER BY started_at, run_id, arm, "
                "dimension, value"
            )
            return [ArmStatRecord(**dict(zip(cols, row, strict=True))) for row in cur.fetchall()]
        finally:
            con.close()

    def count(self, table: str) -> int:
        """Rows in one of the store's tables."""
        if table not in ("runs", "episodes", "arm_stats"):
            raise ValueError(table)
        con = self._connect(create=False)
        try:
            row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
            return int(row[0]) if row else 0
        finally:
            con.close()
