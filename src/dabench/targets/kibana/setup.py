"""Tool and agent set-up shared by every arm of a run that talks to one Kibana.

Two arms that define the same tool or agent id on one Kibana (URL and space) would race: both
read 404, both ``POST``, and Kibana refuses the second ("... already exists"). The run keeps
one :class:`KibanaSetup` (in :attr:`~dabench.targets.base.TargetContext.shared`); it
registers each id once per (URL, space), one registration at a time, and lets later arms
reuse it. Two arms that define one id differently would overwrite each other's definition:
that is bad input, refused before any episode runs.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from dabench.errors import HarnessError
from dabench.targets.kibana.client import KibanaClient

SHARED_KEY = "kibana.setup"
"""The key of the run's :class:`KibanaSetup` in ``TargetContext.shared``."""


class KibanaSetup:
    """Registrations made in one run, per (Kibana base URL, space)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._done: dict[tuple[str, str, str], tuple[str, str]] = {}
        """(base URL, collection, id) -> (canonical definition, arm that registered it)."""

    @classmethod
    def of(cls, shared: dict[str, Any]) -> KibanaSetup:
        """The run's registry (created by the first Kibana target that asks)."""
        setup = shared.get(SHARED_KEY)
        if not isinstance(setup, KibanaSetup):
            setup = shared[SHARED_KEY] = cls()
        return setup

    async def register(
        self,
        client: KibanaClient,
        collection: str,
        item_id: str,
        create: dict[str, Any],
        update: dict[str, Any],
        *,
        owner: str,
    ) -> str:
        """Create or update ``collection/item_id`` once per Kibana; ``created``, ``updated``
        or ``shared`` (an earlier arm of this run registered the same definition)."""
        lock = self._locks.setdefault(client.base_url, asyncio.Lock())
        key = (client.base_url, collection, item_id)
        canonical = json.dumps(create, sort_keys=True, ensure_ascii=False)
        async with lock:
            done = self._done.get(key)
            if done is not None:
                if done[0] != canonical:
                    raise HarnessError(
                        f"{owner}: {collection[:-1]} {item_id!r} on {client.label} is defined "
                        f"differently by {done[1]}; one id can have one definition per run "
                        "(give one of them another id)"
                    )
                return "shared"
            outcome = await client.put_or_create(collection, item_id, create, update)
            self._done[key] = (canonical, owner)
            return outcome
