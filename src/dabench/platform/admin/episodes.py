"""Episode keys: identity keys minted for one episode and revoked at its end.

The harness opens an episode through the admin API (``POST /api/v1/admin/episodes``) and
receives one key per identity it names; each key acts as that identity (same user, same
persona: memories and ownership are the identity's) but is *bound to the episode*: every row
its calls write carries the episode's id, a session it opens belongs to the episode, and a
session of another episode (or one opened with a static key) is refused to it. ``DELETE
/api/v1/admin/episodes/{id}`` revokes every key of the episode; the next request with one is
unauthenticated.

Keys live in the platform's memory only (as SHA-256 digests; the key itself is returned once,
to the admin who minted it): nothing an agent could read from disk holds them, and a
restarted platform knows none.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass, field

from dabench.platform.admin.auth import Identity

MAX_OPEN_EPISODES = 100_000
"""Open episodes one platform holds at most (a harness revokes each at its end)."""


class EpisodeIdentity(Identity):
    """An identity key minted for one episode."""

    episode_id: str


def episode_of(identity: Identity | None) -> str | None:
    """The episode a caller's key is bound to (``None`` for a static key or no caller)."""
    return identity.episode_id if isinstance(identity, EpisodeIdentity) else None


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Episode:
    label: str
    digests: list[str] = field(default_factory=list)


class EpisodeKeys:
    """The open episodes and their keys (thread-safe, in memory only)."""

    def __init__(self) -> None:
        self._episodes: dict[str, _Episode] = {}
        self._keys: dict[str, EpisodeIdentity] = {}
        self._lock = threading.Lock()

    def open(self, label: str) -> str:
        """Open an episode; its id (``epi_...``)."""
        episode_id = "epi_" + secrets.token_hex(12)
        with self._lock:
            if len(self._episodes) >= MAX_OPEN_EPISODES:
                raise OverflowError(
                    f"{MAX_OPEN_EPISODES} episodes are open; close (DELETE) finished ones"
                )
            self._episodes[episode_id] = _Episode(label)
        return episode_id

    def mint(self, episode_id: str, identity: Identity) -> str | None:
        """A new key acting as ``identity`` within the episode (``None``: no such open
        episode)."""
        key = "epk_" + secrets.token_urlsafe(32)
        # every field is a validated identity's or minted here: nothing to validate again
        minted = EpisodeIdentity.model_construct(
            key=key, user=identity.user, persona=identity.persona, episode_id=episode_id
        )
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is None:
                return None
            digest = _digest(key)
            episode.digests.append(digest)
            self._keys[digest] = minted
        return key

    def identify(self, key: str) -> EpisodeIdentity | None:
        """The episode identity holding ``key``, else ``None`` (revoked or never minted)."""
        if not key.startswith("epk_"):
            return None
        with self._lock:
            return self._keys.get(_digest(key))

    def label(self, episode_id: str) -> str | None:
        """The label of an open episode, else ``None``."""
        with self._lock:
            episode = self._episodes.get(episode_id)
            return episode.label if episode is not None else None

    def close(self, episode_id: str) -> int | None:
        """Revoke every key of the episode and forget it; how many keys (``None``: no such
        open episode)."""
        with self._lock:
            episode = self._episodes.pop(episode_id, None)
            if episode is None:
                return None
            for digest in episode.digests:
                self._keys.pop(digest, None)
            return len(episode.digests)

    def open_count(self) -> int:
        """How many episodes are open."""
        with self._lock:
            return len(self._episodes)
