"""The audit log: one durable row per request to ``/mcp``, allowed or refused.

Rows are written (and committed) before the response is returned. SQLite in WAL mode
at ``<state-dir>/audit.sqlite`` by default, PostgreSQL when a DSN is configured. The admin
API reads it back with ``GET /api/v1/admin/audit/events``.

``event_kind`` is ``tool_call`` for every ``tools/call`` of a tool other than
``platform_info`` (including refused ones, and ones refused before a tool ran: protocol
errors, invalid Unicode, oversize bodies), ``session_start`` for ``platform_info`` (it opens
a session), ``protocol`` for every other MCP request (``initialize``, ``tools/list``,
unparseable bodies, unauthenticated requests...) and ``admin`` for state-changing admin API
calls (``POST /state/reset``).

Nothing a client sends can make a row unreadable: a row whose strings are not valid Unicode
text (a lone surrogate), contain NUL, or whose arguments hold a non-finite number is stored
*escaped* (``escaped: true``): every string column through :func:`escape_text` and the
arguments as one ASCII JSON text, losslessly (:func:`unescape_text`, ``json.loads``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dabench.platform.storage import Database

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(\\|u[0-9a-f]{4})")

EventKind = Literal["tool_call", "session_start", "protocol", "admin"]

UNAUTHENTICATED = "(unauthenticated)"
"""``user_id`` of a request that carried no valid key (no real user id has parentheses)."""


def escape_text(value: str) -> str:
    """Lossless safe text: ``\\`` doubled, NUL and lone surrogates as ``\\uXXXX``."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", value.replace("\\", "\\\\"))


def unescape_text(value: str) -> str:
    """The original of :func:`escape_text` (the fields of a row with ``escaped: true``)."""
    return _ESCAPE.sub(
        lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), value
    )


def _clean(value: Any) -> bool:
    """Whether ``value`` serialises to strict JSON in valid UTF-8 without NUL."""
    if isinstance(value, str):
        return _UNSAFE.search(value) is None
    if isinstance(value, float):
        return math.isfinite(value)
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, list):
        return all(_clean(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _clean(k) and _clean(v) for k, v in value.items())
    return False


def _texts_unsafe(texts: Iterable[Any]) -> bool:
    """``not all(_clean(t) for t in texts)``, with one search over the strings joined (the
    pattern matches single characters, so joining finds nothing the parts do not hold)."""
    values = list(texts)
    strings = [t for t in values if isinstance(t, str)]
    if len(strings) < len(values) and not all(_clean(t) for t in values if not isinstance(t, str)):
        return True
    return _UNSAFE.search("".join(strings)) is not None


class AuditEvent(BaseModel):
    """One audit row. The harness reads these to count tool calls and measure efficiency."""

    model_config = ConfigDict(extra="forbid")

    id: int
    """Monotonic row id."""
    timestamp: datetime
    """UTC time the request started."""
    duration_ms: float
    session_id: str | None
    """The caller's own ``dps_...`` session the call ran in, else ``None``."""
    presented_session_id: str | None = None
    """A handle the call presented that is not a session of the caller (unknown, another
    identity's, malformed), else ``None``. Such a call is never counted in that session."""
    user_id: str
    """The caller's user (from the API key), ``(unauthenticated)`` without a valid key."""
    persona: str
    episode_id: str | None = None
    """The episode the caller's key was minted for (``POST /api/v1/admin/episodes``), else
    ``None`` (a static key). Every call of an episode's keys, in any session, carries it."""
    tool_name: str
    """The tool called; for a ``protocol`` row the JSON-RPC method (or ``(unparseable)``)."""
    parameters: dict[str, Any]
    """Arguments as received minus ``session_id`` (long strings clipped to 4000 characters);
    ``{"escaped_json": text}`` when ``escaped``."""
    success: bool
    error_code: str | None
    request_chars: int
    """Characters of the JSON-serialised arguments (bytes of the body for a protocol row)."""
    response_chars: int
    """Characters of the JSON text returned to the client."""
    enrichment_applied: bool
    enrichment_tokens_full: int
    """Approximate tokens of the enrichment blocks had none been abbreviated."""
    enrichment_tokens_delivered: int
    """Approximate tokens of the enrichment actually returned."""
    event_kind: EventKind
    queue_ms: float | None = None
    """For ``sql_query``: how long the query waited for a slot (its identity's and session's
    share of the warehouse), included in ``duration_ms``; its timeout counts only after it.
    ``None`` for other tools and for queries refused before they queued."""
    escaped: bool = False
    """The call carried text that is not valid Unicode, NUL or a non-finite number (or huge
    arguments): the string fields hold :func:`escape_text` of the original and ``parameters``
    is ``{"escaped_json": <the arguments as ASCII JSON, cut at 64 000 characters>}``."""


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


FilterText = Annotated[str, Field(max_length=1000, pattern="^[^\\x00]*$")]
"""A text filter of an admin query: at most 1000 characters, no NUL."""


class AuditQuery(BaseModel):
    """Filters and paging of ``GET /api/v1/admin/audit/events``."""

    model_config = ConfigDict(extra="forbid")

    session_id: FilterText | None = None
    presented_session_id: FilterText | None = None
    episode_id: FilterText | None = None
    user_id: FilterText | None = None
    tool_name: FilterText | None = None
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

    @field_validator("since", "until")
    @classmethod
    def _in_utc_range(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        try:
            return _utc(value)
        except OverflowError:
            raise ValueError(
                "outside the representable range (0001-01-01T00:00:00Z..9999-12-31T23:59:59Z)"
            ) from None


class AuditPage(BaseModel):
    """One page of audit events and the total number matching the filters."""

    model_config = ConfigDict(extra="forbid")

    events: list[AuditEvent]
    total: int


_COLUMNS = (
    "timestamp",
    "duration_ms",
    "session_id",
    "presented_session_id",
    "user_id",
    "persona",
    "episode_id",
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
    "escaped",
    "queue_ms",
)
_TEXT_COLUMNS = ("session_id", "presented_session_id", "user_id", "persona", "episode_id",
                 "tool_name", "error_code")  # fmt: skip

_INSERT = (
    f"INSERT INTO audit_events ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
_TS_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
"""What :func:`_ts` writes."""

_MAX_PARAM_CHARS = 4000
_MAX_STORED_JSON = 64000
_ADDED_COLUMNS = {
    "presented_session_id": "TEXT",
    "escaped": "INTEGER NOT NULL DEFAULT 0",
    "episode_id": "TEXT",
    "queue_ms": "DOUBLE PRECISION",
}
"""Columns newer than the first schema: added to an older table on start-up."""


def _ts(value: datetime) -> str:
    """Fixed-width UTC ISO text (years 0001..9999), so string order equals time order."""
    v = _utc(value)
    return (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        f".{v.microsecond:06d}Z"
    )


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_PARAM_CHARS:
        return value[:_MAX_PARAM_CHARS] + f"...[{len(value) - _MAX_PARAM_CHARS} more]"
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value]
    return value


def clip_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """Bound what is stored: strings (at any depth) are cut to 4000 characters."""
    return {k: _clip(v) for k, v in params.items()}


def _escaped_parameters(params: dict[str, Any]) -> str:
    text = json.dumps(params, sort_keys=True, ensure_ascii=True, default=repr)
    if len(text) > _MAX_STORED_JSON:
        text = text[:_MAX_STORED_JSON] + f"...[{len(text) - _MAX_STORED_JSON} more]"
    return json.dumps({"escaped_json": text})


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
        self._add_columns()
        self.db.executescript(
            ["CREATE INDEX IF NOT EXISTS audit_events_episode ON audit_events (episode_id)"]
        )

    def _add_columns(self) -> None:
        if self.db.dialect == "sqlite":
            have = {str(r["name"]) for r in self.db.query("PRAGMA table_info(audit_events)")}
            missing = [c for c in _ADDED_COLUMNS if c not in have]
            self.db.executescript(
                [f"ALTER TABLE audit_events ADD COLUMN {c} {_ADDED_COLUMNS[c]}" for c in missing]
            )
        else:
            self.db.executescript(
                [
                    f"ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS {c} {kind}"
                    for c, kind in _ADDED_COLUMNS.items()
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
        presented_session_id: str | None = None,
        episode_id: str | None = None,
        queue_ms: float | None = None,
    ) -> None:
        """Append one row and commit it (escaped when its text is not storable as is)."""
        texts: dict[str, str | None] = {
            "session_id": session_id,
            "presented_session_id": presented_session_id,
            "user_id": user_id,
            "persona": persona,
            "episode_id": episode_id,
            "tool_name": tool_name,
            "error_code": error_code,
        }
        clipped = clip_parameters(parameters)
        # one search over the texts joined (the pattern matches single characters only)
        escaped = not _clean(clipped) or _texts_unsafe(texts.values())
        params_text = ""
        if not escaped:
            params_text = json.dumps(clipped, sort_keys=True, ensure_ascii=False, allow_nan=False)
            escaped = len(params_text) > _MAX_STORED_JSON
        if escaped:
            params_text = _escaped_parameters(clipped)
            texts = {k: None if v is None else escape_text(v) for k, v in texts.items()}
        values = (
            _ts(timestamp),
            round(duration_ms, 3),
            texts["session_id"],
            texts["presented_session_id"],
            texts["user_id"],
            texts["persona"],
            texts["episode_id"],
            texts["tool_name"],
            params_text,
            int(success),
            texts["error_code"],
            request_chars,
            response_chars,
            int(enrichment_applied),
            enrichment_tokens_full,
            enrichment_tokens_delivered,
            event_kind,
            int(escaped),
            None if queue_ms is None else round(queue_ms, 3),
        )
        self.db.execute(_INSERT, values)

    def events(self, q: AuditQuery) -> AuditPage:
        """The events matching ``q``, oldest first, with the total count."""
        where: list[str] = []
        params: list[Any] = []
        fields = ("session_id", "presented_session_id", "episode_id", "user_id", "tool_name",
                  "event_kind")  # fmt: skip
        for field in fields:
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
        rows = self.db.query(
            f"SELECT * FROM audit_events {clause} ORDER BY id LIMIT ? OFFSET ?",
            [*params, q.limit, q.offset],
        )
        if len(rows) < q.limit and (rows or q.offset == 0):  # the last page: the count
            # follows from it (no second query, and no row written between the two counted)
            total = q.offset + len(rows)
        else:
            counted = self.db.query(f"SELECT COUNT(*) AS n FROM audit_events {clause}", params)
            total = counted[0]["n"]
        return AuditPage(events=[_to_event(r) for r in rows], total=int(total))


def _to_event(row: dict[str, Any]) -> AuditEvent:
    """A stored row as an event. A row that is somehow not clean (written by an older
    version, or by hand) is escaped on the way out rather than breaking the page."""
    data = dict(row)
    raw = str(data["parameters"])
    escaped = bool(data.get("escaped") or 0)
    try:
        params: Any = json.loads(raw)
    except ValueError:
        params = None
    texts_clean = not _texts_unsafe(data.get(c) for c in _TEXT_COLUMNS)
    if not (isinstance(params, dict) and _clean(params) and texts_clean):
        for c in _TEXT_COLUMNS:
            value = data.get(c)
            if isinstance(value, str) and not (escaped and _clean(value)):
                data[c] = escape_text(value)
        if not isinstance(params, dict):
            params = {"escaped_json": escape_text(raw)}
        elif not (escaped and _clean(params)):
            params = json.loads(_escaped_parameters(params))
        escaped = True
    data["parameters"] = params
    data["escaped"] = escaped
    data["success"] = bool(data["success"])
    data["enrichment_applied"] = bool(data["enrichment_applied"])
    data["timestamp"] = _parse_ts(data["timestamp"])
    return AuditEvent.model_validate(data)


def _parse_ts(text: str) -> datetime:
    """The datetime of a stored :func:`_ts` text (``ValueError`` for any other text)."""
    if _TS_TEXT.fullmatch(text):  # fromisoformat is ~20x cheaper than strptime
        return datetime.fromisoformat(text)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
