"""Whether each hidden rule of a world (``rules.yaml``) is discoverable on a2 and hidden on a0.

:func:`discoverability_issues`: each hidden rule's ``statement`` appears in at least one of its
fact locations, which are all texts the a2 knowledge layer serves (descriptions, glossary,
curated queries, pages), and appears nowhere in what a0 serves (table and column names and
types), nor does any of its ``giveaway_words`` occur in a name. (The policy scope checks, the
same for every world, are in :mod:`dabench.world.policy_data`.)
"""

from __future__ import annotations

import re

from dabench.world.consistency import knowledge_texts
from dabench.world.source import OpenWorld


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def a0_text(world: OpenWorld) -> str:
    """What profile a0 serves about the warehouse: table ids, column names and types."""
    return "\n".join(
        f"{ds.id} " + " ".join(f"{c.name} {c.type}" for c in ds.columns)
        for ds in world.catalog.datasets
    )


def discoverability_issues(world: OpenWorld) -> list[str]:
    """Every hidden rule that a2 does not state or a0 gives away, one message each."""
    served = knowledge_texts(world.catalog, world.pages)
    a0 = _fold(a0_text(world))
    names = re.findall(r"[a-z0-9]+", a0)
    issues: list[str] = []
    for rule in world.rules:
        statement = _fold(rule.statement)
        unknown = [loc for loc in rule.fact_locations if loc not in served]
        if unknown:
            issues.append(f"rule {rule.id}: fact location(s) not in the knowledge: {unknown}")
        stated = [loc for loc in rule.fact_locations if statement in _fold(served.get(loc, ""))]
        if not stated:
            issues.append(
                f"rule {rule.id}: its statement {rule.statement!r} is in none of its fact "
                f"locations {rule.fact_locations} (a2 would not serve it)"
            )
        if statement in a0:
            issues.append(f"rule {rule.id}: a0 serves its statement (table or column names)")
        leaked = sorted({w for w in rule.giveaway_words if w.lower() in names})
        if leaked and not rule.control:
            issues.append(f"rule {rule.id}: a table or column name gives it away: {leaked}")
    return issues
