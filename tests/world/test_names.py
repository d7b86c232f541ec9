"""No trap fact leaks into a table or column name."""

from __future__ import annotations

import re

from dabench.world import World

FORBIDDEN = {
    "cent", "cents", "net", "gross", "fiscal", "fy", "utc", "tz", "timezone", "local",
    "test", "qa", "deleted", "delete", "erased", "active", "eur", "sek", "usd", "currency_usd",
    "dedup", "duplicate", "unique", "key", "deprecated", "legacy", "old", "stale", "cutoff",
}  # fmt: skip


def _words(name: str) -> set[str]:
    return set(re.split(r"[._]", name.lower()))


def test_no_trap_words_in_names(world: World) -> None:
    leaks = []
    for d in world.catalog.datasets:
        for name in (d.id, *(c.name for c in d.columns)):
            hit = _words(name) & FORBIDDEN
            if hit:
                leaks.append((d.id, name, sorted(hit)))
    assert leaks == []


def test_scanner_would_catch_a_leak() -> None:
    assert _words("sales.amount_cents") & FORBIDDEN
    assert _words("is_test_account") & FORBIDDEN
