"""The results store in Elasticsearch: three indices with explicit, strict mappings.

``<prefix>runs`` (id: run), ``<prefix>episodes`` (id: run/arm/task/attempt) and
``<prefix>arm-stats`` (id: run/arm/dimension/value). Documents are written with the bulk API,
refused items are reported one by one, and a document id is its record's key, so publishing
a run twice overwrites the same documents. The manifest is kept as an unindexed object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dabench.elastic import bulk_write
from dabench.store.records import ArmStatRecord, EpisodeRecord, RunRecord, StoredRun

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

KEYWORD = {"type": "keyword"}
DATE = {"type": "date"}
DOUBLE = {"type": "double"}
LONG = {"type": "long"}
BOOLEAN = {"type": "boolean"}

MAPPINGS: dict[str, dict[str, Any]] = {
    "runs": {
        "run_id": KEYWORD, "name": KEYWORD, "started_at": DATE, "finished_at": DATE,
        "k": LONG, "tasks": LONG, "task_set_hash": KEYWORD, "world_hash": KEYWORD,
        "world_seed": LONG, "dabench_version": KEYWORD, "git_commit": KEYWORD,
        "judge_model": KEYWORD, "run_dir": KEYWORD,
        "manifest": {"type": "object", "enabled": False},
    },
    "episodes": {
        "run_id": KEYWORD, "arm": KEYWORD, "task_id": KEYWORD, "attempt": LONG,
        "suite": KEYWORD, "category": KEYWORD, "difficulty": KEYWORD, "status": KEYWORD,
        "agent": KEYWORD, "provider": KEYWORD, "model": KEYWORD, "target": KEYWORD,
        "tool_calls": LONG, "tokens": LONG, "cost_usd": DOUBLE, "wall_ms": DOUBLE,
        "passed": BOOLEAN, "score": DOUBLE, "excluded": BOOLEAN, "started_at": DATE,
    },
    "arm-stats": {
        "run_id": KEYWORD, "arm": KEYWORD, "dimension": KEYWORD, "value": KEYWORD,
        "started_at": DATE, "agent": KEYWORD, "model": KEYWORD, "target": KEYWORD, "k": LONG,
        "n_tasks": LONG, "n_episodes": LONG, "n_excluded": LONG, "accuracy": DOUBLE,
        "accuracy_low": DOUBLE, "accuracy_high": DOUBLE, "pass_hat_k": DOUBLE,
        "pass_hat_k_low": DOUBLE, "pass_hat_k_high": DOUBLE, "score": DOUBLE,
        "tool_calls_median": DOUBLE, "tokens_mean": DOUBLE, "cost_total_usd": DOUBLE,
    },
}  # fmt: skip
"""Field mappings per index suffix (``dynamic: strict``: an unknown field is refused)."""


def episode_id(e: EpisodeRecord) -> str:
    """The document id of an episode: its key in the run."""
    return f"{e.run_id}/{e.arm}/{e.task_id}/{e.attempt}"


def arm_stat_id(s: ArmStatRecord) -> str:
    """The document id of one arm statistic."""
    return f"{s.run_id}/{s.arm}/{s.dimension}/{s.value}"


class ElasticsearchStore:
    """A results store in the cluster behind ``client``."""

    def __init__(self, client: Elasticsearch, *, prefix: str = "dabench-results-") -> None:
        self.es = client
        self.prefix = prefix

    def index(self, name: str) -> str:
        """The full name of one of the store's indices."""
        return f"{self.prefix}{name}"

    def _ensure(self) -> None:
        for name, fields in MAPPINGS.items():
            index = self.index(name)
            if not self.es.indices.exists(index=index):
                mappings = {"dynamic": "strict", "properties": fields}
                self.es.indices.create(index=index, mappings=mappings)

    def publish(self, stored: StoredRun, *, chunk_size: int = 500) -> dict[str, int]:
        """Index the run's documents (idempotent: ids are the records' keys)."""
        self._ensure()
        run: RunRecord = stored.run
        written = {
            "runs": bulk_write(
                self.es, self.index("runs"), [(run.run_id, run.model_dump(mode="json"))],
                chunk_size=chunk_size,
            ),
            "episodes": bulk_write(
                self.es, self.index("episodes"),
                ((episode_id(e), e.model_dump(mode="json")) for e in stored.episodes),
                chunk_size=chunk_size,
            ),
            "arm_stats": bulk_write(
                self.es, self.index("arm-stats"),
                ((arm_stat_id(s), s.model_dump(mode="json")) for s in stored.arm_stats),
                chunk_size=chunk_size,
            ),
        }  # fmt: skip
        return written

    def arm_stats(self, *, limit: int = 10_000) -> list[ArmStatRecord]:
        """Published arm statistics, oldest run first (at most ``limit``)."""
        index = self.index("arm-stats")
        if not self.es.indices.exists(index=index):
            return []
        body = self.es.search(
            index=index, size=limit, query={"match_all": {}},
            sort=[{"started_at": "asc"}, {"run_id": "asc"}, {"arm": "asc"}],
        )  # fmt: skip
        hits = body["hits"]["hits"]
        return [ArmStatRecord.model_validate(h["_source"]) for h in hits]
