"""One episode's view of the reference platform: identity keys minted for the episode alone.

:meth:`ReferenceTarget.begin_episode` opens an episode on the platform (admin API) and
returns a :class:`ReferenceEpisode`. Its sessions authenticate with keys minted for this
episode (one per identity, the first at the start, others when a protocol step first acts
as them); every call made with them, in any session, carries the episode's id in the audit
log, so the audit check and a command agent's budget count them all. :meth:`end_episode`
revokes the keys. A session of another episode is refused to them
(``SESSION_OF_ANOTHER_EPISODE``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from dabench.errors import HarnessError
from dabench.journal.records import AuditCheck
from dabench.providers.base import ToolSpec
from dabench.targets.base import DelegatingTarget, TargetContext, ToolConnection

if TYPE_CHECKING:
    from dabench.targets.reference import ReferenceSession, ReferenceTarget

EPISODES = "/api/v1/admin/episodes"


class ReferenceEpisode(DelegatingTarget):
    """The reference target as one episode sees it (keys bound to ``episode_id``)."""

    inner: ReferenceTarget

    def __init__(self, inner: ReferenceTarget, episode_id: str, keys: dict[str, str]) -> None:
        super().__init__(inner)
        self.episode_id = episode_id
        self._episode = episode_id
        self.keys = dict(keys)
        """Identity -> this episode's key (minted so far)."""
        self.context: TargetContext = inner.context
        self._conns: dict[str, ToolConnection] = {}
        self._lock = asyncio.Lock()
        self.closed = False

    @property
    def base_url(self) -> str:
        """The platform's base URL."""
        return self.inner.base_url

    def known_tools(self, identity: str = "default") -> list[ToolSpec] | None:
        """The tools an earlier session of ``identity`` showed."""
        return self.inner.known_tools(identity)

    async def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The platform's admin API (protocols verify state through it)."""
        return await self.inner.admin(method, path, body)

    async def key(self, identity: str) -> str:
        """This episode's key for ``identity`` (minted on first use)."""
        async with self._lock:
            if self.closed:
                raise HarnessError(f"{self.label}: episode {self._episode} is closed")
            key = self.keys.get(identity)
            if key is None:
                key = await self.inner.mint_key(self._episode, identity)
                self.keys[identity] = key
            return key

    async def connection(self, identity: str) -> ToolConnection:
        """The MCP connection authenticated with this episode's key for ``identity``."""
        key = await self.key(identity)
        async with self._lock:
            conn = self._conns.get(identity)
            if conn is None:
                conn = await self.inner.keyed_connection(identity, key)
                self._conns[identity] = conn
            return conn

    async def open_session(self, identity: str = "default") -> ReferenceSession:
        """A fresh ``dps_...`` session opened with this episode's key."""
        return await self.inner.open_session_on(await self.connection(identity), identity)

    async def end_episode(self, sessions: list[str]) -> None:
        """Revoke the episode's keys and close its connections (idempotent)."""
        async with self._lock:
            if self.closed:
                return
            self.closed = True
            conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.close()
        await self.inner.close_episode(self._episode)

    async def read_audit(
        self, sessions: list[str], expected_calls: int, episode: str | None = None
    ) -> AuditCheck:
        """Every audit row of this episode's keys against the harness's count."""
        return await self.inner.read_audit(sessions, expected_calls, episode or self._episode)
