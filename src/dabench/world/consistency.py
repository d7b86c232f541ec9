"""The knowledge layer agrees with the policies' executable form.

Every text a policy names must say what the world's policies (``policies.yaml``,
:mod:`dabench.world.policy_data`) say, and every curated query it names must compute what its
SQL form computes. :func:`consistency_issues` checks any world, built or external, on the texts
as the a2 platform serves them (:func:`knowledge_texts`; ``dabench tasks validate`` runs it):

1. the policy's knowledge page exists and states its rule verbatim (whitespace folded; the
   built-in pages render rule and scope with :func:`~dabench.world.policy_data.scope_markdown`);
2. every location in :attr:`DataPolicy.states` exists and states :attr:`DataPolicy.rule` verbatim;
3. every curated query in :attr:`DataPolicy.queries` exists and its SQL applies the policy (the
   same syntactic check as a truth SQL), and for a definition with :attr:`DataPolicy.members_sql`
   its first column is exactly the defined set, computed on the warehouse (any engine: the
   caller runs the DuckDB SQL in the warehouse's dialect);
4. no knowledge text defines :attr:`DataPolicy.term` otherwise: a text that names the term and one
   of its defining words must state the rule. A knowledge page reviewed before the policy's
   page is exempt: it is history, superseded by the later page (the handbook's convention,
   knowledge page ``documentation-conventions``: the page reviewed last governs).

The built-in generator builds those texts from the policies (by construction); the check
catches a text written by hand that drifts, like the old "gold and platinum customers are key
accounts". Checks 2-4 apply only to what a policy declares (``states``, ``queries``,
``members_sql``, ``term``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dabench.world.model import Catalog, KnowledgePage
from dabench.world.policy_data import DataPolicy, applies


def _flat(text: str) -> str:
    return " ".join(text.split())


def knowledge_texts(catalog: Catalog, pages: list[KnowledgePage]) -> dict[str, str]:
    """Every knowledge-layer text by location, as the a2 platform serves it
    (``catalog:<dataset>[.<column>]`` with a column's unit, ``glossary:<id>`` with the term's
    name, ``query:<id>`` with the curated query's name, description and SQL, ``knowledge:<id>``
    with the page's title)."""
    texts: dict[str, str] = {}
    for ds in catalog.datasets:
        texts[f"catalog:{ds.id}"] = ds.description
        for col in ds.columns:
            unit = f" Unit: {col.unit}." if col.unit else ""
            texts[f"catalog:{ds.id}.{col.name}"] = col.description + unit
    texts.update({f"glossary:{g.id}": f"{g.name}: {g.definition}" for g in catalog.glossary})
    texts.update(
        {f"query:{q.id}": f"{q.name}: {q.description}\n{q.sql}" for q in catalog.curated_queries}
    )
    texts.update({f"knowledge:{p.id}": f"{p.title}\n{p.body}" for p in pages})
    return texts


RunSql = Callable[[str], list[list[Any]]]
"""Runs one DuckDB-dialect SELECT on the warehouse (translated to its engine) and returns
its rows."""


def _first_column(run: RunSql, sql: str) -> set[object]:
    return {row[0] for row in run(sql)}


def _superseded(p: DataPolicy, pages: list[KnowledgePage]) -> set[str]:
    """The locations of the knowledge pages reviewed before ``p``'s page."""
    current = next((pg.reviewed for pg in pages if pg.id == p.page), None)
    if current is None:
        return set()
    return {
        f"knowledge:{pg.id}"
        for pg in pages
        if pg.id != p.page and pg.reviewed is not None and pg.reviewed < current
    }


def _policy_issues(
    p: DataPolicy,
    texts: dict[str, str],
    catalog: Catalog,
    run: RunSql | None,
    superseded: set[str],
) -> list[str]:
    issues: list[str] = []
    rule = _flat(p.rule)
    page = texts.get(f"knowledge:{p.page}")
    if page is None:
        issues.append(f"policy {p.id!r}: knowledge page {p.page!r} does not exist")
    elif rule not in _flat(page):
        issues.append(
            f"policy {p.id!r}: knowledge page {p.page!r} does not state its rule ({p.rule!r})"
        )
    for where in p.states:
        text = texts.get(where)
        if text is None:
            issues.append(f"policy {p.id!r}: {where} does not exist")
        elif rule not in _flat(text):
            issues.append(f"policy {p.id!r}: {where} does not state the rule ({text!r})")
    queries = {q.id: q for q in catalog.curated_queries}
    members = _first_column(run, p.members_sql) if p.members_sql and run else None
    for qid in p.queries:
        query = queries.get(qid)
        if query is None:
            issues.append(f"policy {p.id!r}: curated query {qid!r} does not exist")
            continue
        if not applies(p, query.sql):
            issues.append(f"policy {p.id!r}: curated query {qid!r} does not apply it")
        elif members is not None and run is not None:
            got = _first_column(run, query.sql)
            if got != members:
                issues.append(
                    f"policy {p.id!r}: curated query {qid!r} returns {len(got)} rows where the "
                    f"rule gives {len(members)} ({len(got - members)} extra, "
                    f"{len(members - got)} missing)"
                )
    if p.term and p.defining:
        for where, text in sorted(texts.items()):
            if where in superseded:
                continue
            flat = _flat(text)
            if (
                re.search(p.term, flat, re.IGNORECASE)
                and re.search(p.defining, flat, re.IGNORECASE)
                and rule not in flat
            ):
                issues.append(
                    f"policy {p.id!r}: {where} defines {p.title.lower()} without the rule "
                    f"({text!r})"
                )
    return issues


def consistency_issues(
    policies: list[DataPolicy] | tuple[DataPolicy, ...],
    catalog: Catalog,
    pages: list[KnowledgePage],
    run: RunSql | None,
) -> list[str]:
    """Every disagreement between the knowledge layer and the policies, one message each
    (``run``: queries the warehouse, for ``members_sql``; ``None`` skips that check)."""
    texts = knowledge_texts(catalog, pages)
    return [
        issue
        for p in policies
        for issue in _policy_issues(p, texts, catalog, run, _superseded(p, pages))
    ]
