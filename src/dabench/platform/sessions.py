"""Platform sessions: the ``dps_...`` handles that ``platform_info`` hands out.

A session belongs to the identity that opened it; another identity presenting the handle
is treated as having none. Sessions live in memory for the life of the server process.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass
class PlatformSession:
    """Per-session state: who owns it, whether it searched, which context it has seen."""

    id: str
    user: str
    persona: str
    created_at: datetime
    searched: bool = False
    delivered: dict[str, str] = field(default_factory=dict)
    """Dataset id -> digest of the enrichment block already delivered in this session."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class SessionRegistry:
    """Creates and resolves sessions."""

    def __init__(self) -> None:
        self._sessions: dict[str, PlatformSession] = {}
        self._lock = threading.Lock()

    def open(self, user: str, persona: str) -> PlatformSession:
        """Open a new session for ``user``."""
        sid = f"dps_{secrets.token_hex(12)}"
        session = PlatformSession(id=sid, user=user, persona=persona, created_at=datetime.now(UTC))
        with self._lock:
            self._sessions[sid] = session
        return session

    def resolve(self, session_id: str | None, user: str) -> PlatformSession | None:
        """The session with this handle if it belongs to ``user``, else ``None``."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None or session.user != user:
            return None
        return session

    def __len__(self) -> int:
        return len(self._sessions)
