"""Checks of an external world's knowledge: its policies as data, and whether each hidden rule
is discoverable on a2 and hidden on a0.

- :func:`data_policy_issues`: a truth SQL in a user policy's scope (it reads one of the
  scope's tables, and its prompt and SQL match the scope's patterns) must apply the policy
  (match one of ``applied_by``), or the task is tagged ``policy-exempt:<id>`` and its prompt
  states the exemption, as for the built-in policies (:mod:`dabench.world.policies`).
- :func:`discoverability_issues`: each hidden rule's ``statement`` appears in at least one of
  its fact locations, which are all texts the a2 knowledge layer serves (descriptions,
  glossary, curated queries, pages), and appears nowhere in what a0 serves (table and column
  names and types), nor does any of its ``giveaway_words`` occur in a name.
"""

from __future__ import annotations

import re

from dabench.world.policies import EXEMPT_TAG, normalise_sql, tables_read
from dabench.world.source import DataPolicy, OpenWorld


def _in_scope(p: DataPolicy, sql: str, prompt: str) -> bool:
    if not tables_read(sql) & {t.lower() for t in p.scope.tables}:
        return False
    if p.scope.prompt and not re.search(p.scope.prompt, prompt, re.IGNORECASE):
        return False
    return not (p.scope.sql and not re.search(p.scope.sql, normalise_sql(sql)))


def data_policy_issues(
    policies: list[DataPolicy], sql: str, prompt: str, tags: list[str] | tuple[str, ...]
) -> list[str]:
    """Every user policy a truth SQL is in scope of but does not apply, one message each."""
    exempt = {t[len(EXEMPT_TAG) :] for t in tags if t.startswith(EXEMPT_TAG)}
    issues = [f"unknown policy in tag {EXEMPT_TAG}{pid}" for pid in sorted(
        exempt - {p.id for p in policies}
    )]  # fmt: skip
    norm = normalise_sql(sql)
    for p in policies:
        if p.id in exempt:
            if not re.search(p.exemption, prompt, re.IGNORECASE):
                issues.append(
                    f"exempt from policy {p.id!r} but the prompt does not say so "
                    f"(expected it to match /{p.exemption}/)"
                )
            continue
        if _in_scope(p, sql, prompt) and not any(re.search(rx, norm) for rx in p.applied_by):
            issues.append(
                f"truth SQL does not apply policy {p.id!r} ({p.title}, knowledge page "
                f"{p.page}): {p.rule}"
            )
    return issues


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def served_texts(world: OpenWorld) -> dict[str, str]:
    """Fact location -> the text the a2 knowledge layer serves for it."""
    out: dict[str, str] = {}
    for ds in world.catalog.datasets:
        out[f"catalog:{ds.id}"] = ds.description
        for col in ds.columns:
            unit = f" Unit: {col.unit}." if col.unit else ""
            out[f"catalog:{ds.id}.{col.name}"] = col.description + unit
    for g in world.catalog.glossary:
        out[f"glossary:{g.id}"] = f"{g.name}: {g.definition}"
    for q in world.catalog.curated_queries:
        out[f"query:{q.id}"] = f"{q.name}: {q.description}\n{q.sql}"
    for page in world.pages:
        out[f"knowledge:{page.id}"] = f"{page.title}\n{page.body}"
    return out


def a0_text(world: OpenWorld) -> str:
    """What profile a0 serves about the warehouse: table ids, column names and types."""
    return "\n".join(
        f"{ds.id} " + " ".join(f"{c.name} {c.type}" for c in ds.columns)
        for ds in world.catalog.datasets
    )


def discoverability_issues(world: OpenWorld) -> list[str]:
    """Every hidden rule that a2 does not state or a0 gives away, one message each."""
    served = served_texts(world)
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
