"""The handbook at realistic size: superseded pages beside the current ones, and everyday pages
that define nothing (generator 2.3.0, issue 32)."""

from __future__ import annotations

from datetime import date

import duckdb

from dabench.world import World
from dabench.world.consistency import consistency_issues
from dabench.world.knowledge import REVIEWED, knowledge_pages, parse_page, render_page, rule_pages
from dabench.world.knowledge_archive import ARCHIVE, archived_pages
from dabench.world.knowledge_bulk import bulk_pages
from dabench.world.model import KnowledgePage
from dabench.world.policies import POLICIES


def test_every_superseded_page_is_older_than_its_successor() -> None:
    current = {p.id: p for p in rule_pages()}
    archived = {p.id: p for p in archived_pages()}
    assert set(archived) == set(ARCHIVE)
    for old_id, new_id in ARCHIVE.items():
        old, new = archived[old_id], current[new_id]
        assert old.reviewed is not None and new.reviewed is not None
        assert old.reviewed < new.reviewed, (old_id, new_id)
    # the collector page was right when it was written: the switch came after it
    assert archived["clickstream-collector"].reviewed == date(2024, 2, 12)


def test_every_page_has_a_review_date_and_a_unique_id() -> None:
    pages = knowledge_pages()
    assert len({p.id for p in pages}) == len(pages)
    assert all(p.reviewed is not None for p in pages)
    assert set(REVIEWED) == {p.id for p in rule_pages()}
    # realistic size: too many pages to read within one question's tool budget
    assert len(bulk_pages()) >= 150 and len(pages) > 200


def test_the_review_date_round_trips_through_the_page_file() -> None:
    page = archived_pages()[0]
    assert parse_page(render_page(page), "x.md") == page


def test_a_stale_definition_is_history_only_when_it_is_older(world: World) -> None:
    """The consistency check exempts a conflicting page reviewed before the policy's page, and
    flags the same text when it is reviewed after it (it would then be the governing page)."""
    stale = next(p for p in world.pages if p.id == "key-accounts")
    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)

    def run(sql: str) -> list[list[object]]:
        return [list(row) for row in con.execute(sql).fetchall()]

    try:
        assert consistency_issues(POLICIES, world.catalog, list(world.pages), run) == []
        newer = KnowledgePage(**{**stale.model_dump(), "reviewed": date(2025, 6, 1)})
        pages = [newer if p.id == stale.id else p for p in world.pages]
        issues = consistency_issues(POLICIES, world.catalog, pages, run)
    finally:
        con.close()
    assert issues == [
        next(i for i in issues if i.startswith("policy 'key_accounts': knowledge:key-accounts"))
    ]


def test_everyday_pages_state_no_company_rule() -> None:
    """Dashboards, notes, reviews, runbooks and projects never define a metric: none names
    key accounts, a fiscal year's naming, or how revenue treats refunds."""
    for page in bulk_pages():
        text = f"{page.title}\n{page.body}".lower()
        assert "key account" not in text, page.id
        assert "fiscal year" not in text, page.id
        assert "row_state" not in text, page.id
