"""The audit log: one durable row per tool call, allowed or refused.

Rows are written (and committed) before the tool response is returned. SQLite in WAL mode
at ``<state-dir>/audit.sqlite`` by default, PostgreSQL when a DSN is configured. The admin
API reads it back with ``GET /api/v1/admin/audit/events``.

``event_kind`` is ``tool_call`` for every call of a tool other than ``platform_info``
(including refused ones), ``session_start`` for ``platform_info`` (it opens a session),
and ``admin`` for state-changing admin API calls (``POST /state/reset``).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dabench.platform.storage import Database

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

EventKind = Literal["tool_call", "session_start", "admin"]


class AuditEvent(BaseModel):
    """One audit row. The harness reads these to count tool calls and measure efficiency."""

    model_config = ConfigDict(extra="forbid")

    id: int
    """Monotonic row id."""
    timestamp: datetime
    """UTC time the call started."""
    duration_ms: float
    session_id: str | None
    """The ``dps_...`` session handle, or ``None`` when the call carried none (refused)."""
    user_id: str
    persona: str
    tool_name: str
    parameters: dict[str, Any]
    """Arguments as received (long string values are clipped to 4000 characters)."""
    success: bool
    error_code: str | None
    request_chars: int
    """Characters of the JSON-serialised arguments."""
    response_chars: int
    """Characters of the JSON text returned to the client."""
    enrichment_applied: bool
    enrichment_tokens_full: int
    """Approximate tokens of the enrichment blocks had none been abbreviated."""
    enrichment_tokens_delivered: int
    """Approximate tokens of the enrichment actually returned."""
    event_kind: EventKind


class AuditQuery(BaseModel):
    """Filters and paging of ``GET /api/v1/admin/audit/events``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = None
    user_id: str | None = None
    tool_name: str | None = None
    success: bool | None = None
    event_kind: EventKind | None = None
    since: datetime | None = Field(default=None, description="inclusive lower bound")
    until: datetime | None = Field(default=None, description="exclusive upper bound")
    limit: int = Field(default=100, ge=1, le=10000, description="page size")
    offset: int = Field(default=0, ge=0, le=2**62, description="events to skip")

    @field_validator("since", "until", mode="before")
    @classmethod
    def _iso_only(cls, value: object) -> object:
        # pydantic would read "0.5" as a Unix time; the API promises ISO 8601 date-times.
        if isinstance(value, str) and not _ISO_DATE.match(value):
            raise ValueError("expected an ISO 8601 date-time such as 2026-11-30T10:00:00Z")
        return value


class AuditPage(BaseModel):
    """One page of audit events and the total number matching the filters."""

    model_config = ConfigDict(extra="forbid")

    events: list[AuditEvent]
    total: int


_COLUMNS = (
    "timestamp",
    "duration_ms",
    "session_id",
    "user_id",
    "persona",
    "tool_name",
    "parameters",
    "success",
    "error_code",
    "request_chars",
    "response_chars",
    "enrichment_applied",
    "enrichment_tokens_full",
    "enrichment_tokens_delivered",
    "event_kind",
)

_MAX_PARAM_CHARS = 4000


def _ts(value: datetime) -> str:
    """Fixed-width UTC ISO text, so string order equals time order."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def clip_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """Bound what is stored: long strings are cut to 4000 characters."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, str) and len(value) > _MAX_PARAM_CHARS:
            out[key] = value[:_MAX_PARAM_CHARS] + f"...[{len(value) - _MAX_PARAM_CHARS} more]"
        else:
            out[key] = value
    return out


class AuditStore:
    """Writes and reads :class:`AuditEvent` rows in a :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        pk = (
            "id INTEGER PRIMARY KEY AUTOINCREMENT"
            if db.dialect == "sqlite"
            else "id BIGSERIAL PRIMARY KEY"
        )
        db.executescript(
            [
                f"""CREATE TABLE IF NOT EXISTS audit_events (
                    {pk},
                    timestamp TEXT NOT NULL,
                    duration_ms DOUBLE PRECISION NOT NULL,
                    session_id TEXT,
                    user_id TEXT NOT NULL,
                    persona TEXT NOT NULL,
                    tool_name TEXT NOT NULL,
                    parameters TEXT NOT NULL,
                    success INTEGER NOT NULL,
                    error_code TEXT,
                    request_chars INTEGER NOT NULL,
                    response_chars INTEGER NOT NULL,
                    enrichment_applied INTEGER NOT NULL,
                    enrichment_tokens_full INTEGER NOT NULL,
                    enrichment_tokens_delivered INTEGER NOT NULL,
                    event_kind TEXT NOT NULL)""",
                "CREATE INDEX IF NOT EXISTS audit_events_session ON audit_events (session_id)",
                "CREATE INDEX IF NOT EXISTS audit_events_ts ON audit_events (timestamp)",
            ]
        )

    def record(
        self,
        *,
        timestamp: datetime,
        duration_ms: float,
        session_id: str | None,
        user_id: str,
        persona: str,
        tool_name: str,
        parameters: dict[str, Any],
        success: bool,
        error_code: str | None,
        request_chars: int,
        response_chars: int,
        enrichment_applied: bool = False,
        enrichment_tokens_full: int = 0,
        enrichment_tokens_delivered: int = 0,
        event_kind: EventKind = "tool_call",
    ) -> None:
        """Append one row and commit it."""
        values = (
            _ts(timestamp),
            round(duration_ms, 3),
            session_id,
            user_id,
            persona,
            tool_name,
            json.dumps(clip_parameters(parameters), sort_keys=True, default=str),
            int(success),
            error_code,
            request_chars,
            response_chars,
            int(enrichment_applied),
            enrichment_tokens_full,
            enrichment_tokens_delivered,
            event_kind,
        )
        placeholders = ", ".join("?" for _ in _COLUMNS)
        self.db.execute(
            f"INSERT INTO audit_events ({', '.join(_COLUMNS)}) VALUES ({placeholders})", values
        )

    def events(self, q: AuditQuery) -> AuditPage:
        """The events matching ``q``, oldest first, with the total count."""
        where: list[str] = []
        params: list[Any] = []
        for field in ("session_id", "user_id", "tool_name", "event_kind"):
            value = getattr(q, field)
            if value is not None:
                where.append(f"{field} = ?")
                params.append(value)
        if q.success is not None:
            where.append("success = ?")
            params.append(int(q.success))
        if q.since is not None:
            where.append("timestamp >= ?")
            params.append(_ts(q.since))
        if q.until is not None:
            where.append("timestamp < ?")
            params.append(_ts(q.until))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        total = self.db.query(f"SELECT COUNT(*) AS n FROM audit_events {clause}", params)[0]["n"]
        rows = self.db.query(
            f"SELECT * FROM audit_events {clause} ORDER BY id LIMIT ? OFFSET ?",
            [*params, q.limit, q.offset],
        )
        return AuditPage(events=[_to_event(r) for r in rows], total=int(total))


def _to_event(row: dict[str, Any]) -> AuditEvent:
    data = dict(row)
    data["parameters"] = json.loads(data["parameters"])
    data["success"] = bool(data["success"])
    data["enrichment_applied"] = bool(data["enrichment_applied"])
    data["timestamp"] = datetime.strptime(data["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=UTC
    )
    return AuditEvent.model_validate(data)
