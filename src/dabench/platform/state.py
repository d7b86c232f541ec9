"""The platform's own state: memories (insights) and changesets of promoted knowledge.

Never stored in the warehouse. Lives in ``<state-dir>/state.sqlite`` (or the PostgreSQL
database given by ``--audit-dsn``). ``POST /api/v1/admin/state/reset`` clears it.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.platform.storage import Database

InsightStatus = Literal["pending", "approved", "rejected", "superseded", "forgotten"]
InsightType = Literal["fact", "definition", "caveat", "correction", "preference", "other"]
Sink = Literal["description", "knowledge_page"]

LIVE_STATUSES: tuple[str, ...] = ("pending", "approved")

VISIBLE_SQL = (
    "SELECT * FROM (SELECT * FROM insights WHERE status = 'approved' UNION ALL "
    "SELECT * FROM insights WHERE status = 'pending' AND captured_by = ?) AS v ORDER BY seq"
)
"""The insights one user may see. UNION ALL, not OR: each half is an index search, where an
OR lets SQLite prefer a scan in ``seq`` order."""


class Insight(BaseModel):
    """A captured memory. ``approved`` means promoted into knowledge (visible to everyone)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: InsightType
    content: str
    related_ids: list[str] = Field(default_factory=list)
    confidence: float
    status: InsightStatus
    captured_by: str
    """User id of the identity that captured it."""
    session_id: str | None = None
    created_at: datetime
    updated_at: datetime
    supersedes: str | None = None
    superseded_by: str | None = None
    changeset_id: str | None = None
    """The active changeset that promoted it, if any."""


class Changeset(BaseModel):
    """One promotion of an insight into a description or a knowledge page."""

    model_config = ConfigDict(extra="forbid")

    id: str
    insight_id: str
    sink: Sink
    target: str
    """Dataset id, column id (``schema.table.column``) or knowledge page id."""
    before: dict[str, Any] | None
    """The effective value before the change (``None``: the page did not exist)."""
    after: dict[str, Any]
    """``{"description": ...}`` or ``{"title": ..., "body": ..., "related_datasets": [...]}``."""
    applied_by: str
    applied_at: datetime
    rolled_back: bool = False
    rolled_back_by: str | None = None
    rolled_back_at: datetime | None = None


_WORD = re.compile(r"[a-z0-9_.]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "not",
    ]
)


def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens of ``text`` (length >= 2, minus a few stop words)."""
    return frozenset(
        w.strip(".") for w in _WORD.findall(text.lower()) if len(w) >= 2 and w not in _STOP
    )


def similarity(a: str, b: str) -> float:
    """Token-set Jaccard similarity of two texts, in [0, 1]."""
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def new_id(prefix: str) -> str:
    """A random id with a readable prefix (``ins_``, ``chg_``)."""
    return f"{prefix}_{secrets.token_hex(6)}"


class StateStore:
    """CRUD over insights and changesets, plus a version counter for caches."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._version = 0
        self._vlock = threading.Lock()
        db.executescript(
            [
                """CREATE TABLE IF NOT EXISTS insights (
                    id TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL,
                    related_ids TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL,
                    status TEXT NOT NULL, captured_by TEXT NOT NULL, session_id TEXT,
                    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, supersedes TEXT,
                    superseded_by TEXT, changeset_id TEXT, seq INTEGER NOT NULL)""",
                """CREATE TABLE IF NOT EXISTS changesets (
                    id TEXT PRIMARY KEY, insight_id TEXT NOT NULL, sink TEXT NOT NULL,
                    target TEXT NOT NULL, before_value TEXT, after_value TEXT NOT NULL,
                    applied_by TEXT NOT NULL, applied_at TEXT NOT NULL,
                    rolled_back INTEGER NOT NULL, rolled_back_by TEXT, rolled_back_at TEXT,
                    seq INTEGER NOT NULL)""",
                # memory lookups by visibility (status) and owner, never a scan of everyone's
                "CREATE INDEX IF NOT EXISTS insights_visibility ON insights (status, captured_by)",
                "CREATE INDEX IF NOT EXISTS insights_owner ON insights (captured_by, status)",
                "CREATE INDEX IF NOT EXISTS insights_seq ON insights (seq)",
                "CREATE INDEX IF NOT EXISTS changesets_seq ON changesets (seq)",
            ]
        )

    @property
    def version(self) -> int:
        """Incremented on every change; caches of derived views key on it."""
        return self._version

    def _bump(self) -> None:
        with self._vlock:
            self._version += 1

    def _next_seq(self, table: str) -> int:
        rows = self.db.query(f"SELECT COALESCE(MAX(seq), 0) AS m FROM {table}")
        return int(rows[0]["m"]) + 1

    # insights ---------------------------------------------------------------------------

    def add_insight(self, insight: Insight) -> None:
        """Insert a new insight."""
        self.db.execute(
            "INSERT INTO insights (id, type, content, related_ids, confidence, status, "
            "captured_by, session_id, created_at, updated_at, supersedes, superseded_by, "
            "changeset_id, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                insight.id,
                insight.type,
                insight.content,
                json.dumps(insight.related_ids),
                insight.confidence,
                insight.status,
                insight.captured_by,
                insight.session_id,
                _iso(insight.created_at),
                _iso(insight.updated_at),
                insight.supersedes,
                insight.superseded_by,
                insight.changeset_id,
                self._next_seq("insights"),
            ),
        )
        self._bump()

    def update_insight(self, insight_id: str, **fields: Any) -> None:
        """Update some fields of an insight (``updated_at`` is set automatically)."""
        fields["updated_at"] = _now()
        cols, vals = [], []
        for key, value in fields.items():
            cols.append(f"{key} = ?")
            if key == "related_ids":
                value = json.dumps(value)
            elif isinstance(value, datetime):
                value = _iso(value)
            vals.append(value)
        self.db.execute(f"UPDATE insights SET {', '.join(cols)} WHERE id = ?", (*vals, insight_id))
        self._bump()

    def get_insight(self, insight_id: str) -> Insight | None:
        """One insight by id."""
        rows = self.db.query("SELECT * FROM insights WHERE id = ?", (insight_id,))
        return _insight(rows[0]) if rows else None

    def insights(
        self, *, status: str | None = None, captured_by: str | None = None
    ) -> list[Insight]:
        """Insights in capture order, optionally filtered."""
        where, params = [], []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if captured_by is not None:
            where.append("captured_by = ?")
            params.append(captured_by)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return [
            _insight(r)
            for r in self.db.query(f"SELECT * FROM insights {clause} ORDER BY seq", params)
        ]

    def visible_insights(self, user: str) -> list[Insight]:
        """Live insights ``user`` may see: their own pending, everyone's approved (in capture
        order). An indexed lookup: other users' pending insights are never read."""
        rows = self.db.query(VISIBLE_SQL, (user,))
        return [_insight(r) for r in rows]

    def visible_insight(self, insight_id: str, user: str) -> Insight | None:
        """One insight by id if ``user`` may see it (see :meth:`visible_insights`)."""
        found = self.get_insight(insight_id)
        if found is None or found.status not in LIVE_STATUSES:
            return None
        return found if found.status == "approved" or found.captured_by == user else None

    # changesets -------------------------------------------------------------------------

    def add_changeset(self, cs: Changeset) -> None:
        """Insert a changeset."""
        self.db.execute(
            "INSERT INTO changesets (id, insight_id, sink, target, before_value, after_value, "
            "applied_by, applied_at, rolled_back, rolled_back_by, rolled_back_at, seq) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                cs.id,
                cs.insight_id,
                cs.sink,
                cs.target,
                None if cs.before is None else json.dumps(cs.before),
                json.dumps(cs.after),
                cs.applied_by,
                _iso(cs.applied_at),
                int(cs.rolled_back),
                cs.rolled_back_by,
                _iso(cs.rolled_back_at),
                self._next_seq("changesets"),
            ),
        )
        self._bump()

    def mark_rolled_back(self, changeset_id: str, by: str) -> None:
        """Flag a changeset as rolled back."""
        self.db.execute(
            "UPDATE changesets SET rolled_back = 1, rolled_back_by = ?, rolled_back_at = ? "
            "WHERE id = ?",
            (by, _iso(_now()), changeset_id),
        )
        self._bump()

    def get_changeset(self, changeset_id: str) -> Changeset | None:
        """One changeset by id."""
        rows = self.db.query("SELECT * FROM changesets WHERE id = ?", (changeset_id,))
        return _changeset(rows[0]) if rows else None

    def changesets(
        self, *, insight_id: str | None = None, active_only: bool = False
    ) -> list[Changeset]:
        """Changesets in application order."""
        where, params = [], []
        if insight_id is not None:
            where.append("insight_id = ?")
            params.append(insight_id)
        if active_only:
            where.append("rolled_back = 0")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return [
            _changeset(r)
            for r in self.db.query(f"SELECT * FROM changesets {clause} ORDER BY seq", params)
        ]

    def reset(self) -> None:
        """Delete every insight and changeset."""
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM insights")
            tx.execute("DELETE FROM changesets")
        self._bump()


def _parse_ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _insight(row: dict[str, Any]) -> Insight:
    data = {k: v for k, v in row.items() if k != "seq"}
    data["related_ids"] = json.loads(data["related_ids"])
    return Insight.model_validate(data)


def _changeset(row: dict[str, Any]) -> Changeset:
    return Changeset(
        id=row["id"],
        insight_id=row["insight_id"],
        sink=row["sink"],
        target=row["target"],
        before=None if row["before_value"] is None else json.loads(row["before_value"]),
        after=json.loads(row["after_value"]),
        applied_by=row["applied_by"],
        applied_at=datetime.fromisoformat(row["applied_at"]),
        rolled_back=bool(row["rolled_back"]),
        rolled_back_by=row["rolled_back_by"],
        rolled_back_at=_parse_ts(row["rolled_back_at"]),
    )
