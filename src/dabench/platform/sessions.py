"""Platform sessions: the ``dps_...`` handles that ``platform_info`` hands out.

A session belongs to the identity that opened it; another identity presenting the handle
is treated as having none. A session opened with an episode key (:mod:`.admin.episodes`)
also belongs to that episode: only keys of the same episode may use it, and a session opened
with a static key is refused to every episode key.

Sessions are stored in the platform's state database (SQLite or PostgreSQL) beside insights
and changesets, so a handle, its search-gate state and the enrichment it has already received
survive a server restart. The most recently used
sessions are also kept in memory (:data:`CACHED_SESSIONS`); an evicted one is read back from
the database when its handle is next presented.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dabench.platform.storage import Database

HANDLE = re.compile(r"dps_[0-9a-f]{24}")
"""The shape of every handle :meth:`SessionRegistry.open` hands out."""

CACHED_SESSIONS = 4096
"""How many sessions the registry keeps in memory; the database holds all of them."""


@dataclass
class PlatformSession:
    """Per-session state: who owns it, whether it searched, which context it has seen."""

    id: str
    user: str
    persona: str
    created_at: datetime
    episode_id: str | None = None
    """The episode whose key opened the session (``None``: a static identity key)."""
    searched: bool = False
    delivered: dict[str, str] = field(default_factory=dict)
    """Dataset id -> digest of the enrichment block already delivered in this session."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    dirty: bool = field(default=False, repr=False)
    """Changed since it was last written (set by :meth:`mark_searched` / :meth:`remember`)."""

    def mark_searched(self) -> None:
        """Record that the session has searched (opens the search-first gate)."""
        with self.lock:
            if not self.searched:
                self.searched = True
                self.dirty = True

    def remember(self, dataset_id: str, digest: str) -> bool:
        """Record a delivered enrichment block; ``True`` when that exact block was seen before."""
        with self.lock:
            seen = self.delivered.get(dataset_id) == digest
            if not seen:
                self.delivered[dataset_id] = digest
                self.dirty = True
            return seen


class SessionRegistry:
    """Creates, persists and resolves sessions."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: OrderedDict[str, PlatformSession] = OrderedDict()
        self._lock = threading.Lock()
        db.executescript(
            [
                """CREATE TABLE IF NOT EXISTS platform_sessions (
                    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, persona TEXT NOT NULL,
                    created_at TEXT NOT NULL, searched INTEGER NOT NULL,
                    delivered TEXT NOT NULL)"""
            ]
        )
        self._add_episode_column()

    def _add_episode_column(self) -> None:
        if self.db.dialect == "sqlite":
            have = {str(r["name"]) for r in self.db.query("PRAGMA table_info(platform_sessions)")}
            if "episode_id" not in have:
                self.db.executescript(["ALTER TABLE platform_sessions ADD COLUMN episode_id TEXT"])
        else:
            self.db.executescript(
                ["ALTER TABLE platform_sessions ADD COLUMN IF NOT EXISTS episode_id TEXT"]
            )

    def open(self, user: str, persona: str, episode_id: str | None = None) -> PlatformSession:
        """Open (and store) a new session for ``user`` (within ``episode_id``'s episode)."""
        session = PlatformSession(
            id=f"dps_{secrets.token_hex(12)}",
            user=user,
            persona=persona,
            created_at=datetime.now(UTC),
            episode_id=episode_id,
        )
        self.db.execute(
            "INSERT INTO platform_sessions (id, user_id, persona, created_at, searched, "
            "delivered, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [session.id, user, persona, session.created_at.isoformat(), 0, "{}", episode_id],
        )
        self._cache_put(session)
        return session

    def lookup(self, session_id: str | None) -> PlatformSession | None:
        """The session with this handle, whoever owns it, else ``None``."""
        if not session_id or HANDLE.fullmatch(session_id) is None:
            return None  # never looked up: it cannot be a handle (and may not be storable text)
        with self._lock:
            session = self._cache.get(session_id)
            if session is not None:
                self._cache.move_to_end(session_id)
            else:
                session = self._load(session_id)
                if session is not None:
                    self._cache_put_locked(session)
        return session

    def resolve(
        self, session_id: str | None, user: str, episode_id: str | None = None
    ) -> PlatformSession | None:
        """The session with this handle if it belongs to ``user`` within ``episode_id``'s
        episode (``None``: opened with a static key), else ``None``."""
        session = self.lookup(session_id)
        if session is None or session.user != user or session.episode_id != episode_id:
            return None
        return session

    def save(self, session: PlatformSession) -> None:
        """Write the session's gate and delivery state if it changed."""
        with session.lock:
            if not session.dirty:
                return
            searched, delivered = session.searched, json.dumps(session.delivered, sort_keys=True)
            session.dirty = False
        self.db.execute(
            "UPDATE platform_sessions SET searched = ?, delivered = ? WHERE id = ?",
            [int(searched), delivered, session.id],
        )

    def count(self) -> int:
        """How many sessions the database holds."""
        return int(self.db.query("SELECT COUNT(*) AS n FROM platform_sessions")[0]["n"])

    def _load(self, session_id: str) -> PlatformSession | None:
        rows = self.db.query("SELECT * FROM platform_sessions WHERE id = ?", [session_id])
        if not rows:
            return None
        row = rows[0]
        return PlatformSession(
            id=str(row["id"]),
            user=str(row["user_id"]),
            persona=str(row["persona"]),
            created_at=datetime.fromisoformat(str(row["created_at"])),
            episode_id=None if row.get("episode_id") is None else str(row["episode_id"]),
            searched=bool(row["searched"]),
            delivered=dict(json.loads(str(row["delivered"]))),
        )

    def _cache_put(self, session: PlatformSession) -> None:
        with self._lock:
            self._cache_put_locked(session)

    def _cache_put_locked(self, session: PlatformSession) -> None:
        self._cache[session.id] = session
        self._cache.move_to_end(session.id)
        while len(self._cache) > CACHED_SESSIONS:
            self._cache.popitem(last=False)
