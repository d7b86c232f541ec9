"""Every planted trap bites: its naive and correct answers differ, recomputed from the DB."""

from __future__ import annotations

import re

import pytest

from dabench.world import World
from dabench.world.constants import TRAP_MARGIN_REL

REQUIRED_CLASSES = {
    "cents_units",
    "net_revenue",
    "fiscal_calendar",
    "freshness_cutoff",
    "tier_definition",
    "deprecated_table",
}


def test_at_least_eight_classes_including_the_reference_six(world: World) -> None:
    classes = {t.trap_class for t in world.traps}
    assert classes >= REQUIRED_CLASSES
    assert len(classes) >= 8
    assert len(world.traps) >= 25
    assert len({t.id for t in world.traps}) == len(world.traps)


def test_every_trap_recomputes_and_bites(world: World) -> None:
    con = world.connect()
    try:
        for trap in world.traps:
            correct = con.execute(trap.correct_sql).fetchone()
            naive = con.execute(trap.naive_sql).fetchone()
            assert correct is not None and naive is not None, trap.id
            assert round(float(correct[0]), 6) == trap.correct_answer, trap.id
            assert round(float(naive[0]), 6) == trap.naive_answer, trap.id
            margin = max(TRAP_MARGIN_REL, trap.tolerance_rel) * abs(trap.correct_answer)
            assert abs(trap.correct_answer - trap.naive_answer) > margin, trap.id
    finally:
        con.close()


def test_fact_locations_resolve(world: World) -> None:
    glossary = {g.id for g in world.catalog.glossary}
    for trap in world.traps:
        assert trap.fact_locations, trap.id
        for loc in trap.fact_locations:
            kind, _, ref = loc.partition(":")
            if kind == "knowledge":
                world.page(ref)
            elif kind == "glossary":
                assert ref in glossary, (trap.id, loc)
            elif kind == "catalog":
                parts = ref.split(".")
                dataset = world.dataset(".".join(parts[:2]))
                if len(parts) == 3:
                    assert parts[2] in {c.name for c in dataset.columns}, (trap.id, loc)
            else:
                pytest.fail(f"{trap.id}: unknown fact location {loc}")


def test_deciding_fact_is_written_where_it_says(world: World) -> None:
    """The knowledge page a trap points to mentions the key term of the fact."""
    key_terms = {
        "cents_units": "cents",
        "net_revenue": "refunds",
        "fiscal_calendar": "February 1",
        "freshness_cutoff": "never backfilled",
        "tier_definition": "business customer",
        "deprecated_table": "deprecated",
        "timezone_change": "UTC",
        "duplicate_events": "DISTINCT event_id",
        "test_accounts": "signup_source = 'crm'",
        "soft_deleted": "row_state",
        "currency_conversion": "Canadian dollars (CAD)",
    }
    for trap in world.traps:
        pages = [
            loc.split(":", 1)[1] for loc in trap.fact_locations if loc.startswith("knowledge:")
        ]
        assert pages, trap.id
        text = " ".join(world.page(p).body for p in pages)
        assert key_terms[trap.trap_class] in text, trap.id


def test_sql_only_reads_catalog_datasets(world: World) -> None:
    ids = {d.id for d in world.catalog.datasets}
    for trap in world.traps:
        for sql in (trap.correct_sql, trap.naive_sql):
            for ref in re.findall(r"\b(?:FROM|JOIN)\s+([a-z_]+\.[a-z_0-9]+)", sql):
                assert ref in ids, (trap.id, ref)


def test_every_cad_invoice_has_a_rate(world: World) -> None:
    from dabench.world.metrics import INVOICE_FX_JOIN

    con = world.connect()
    try:
        row = con.execute(
            "SELECT count(*) FILTER (WHERE fx.rate IS NULL), count(*) FROM finance.invoices i "
            f"{INVOICE_FX_JOIN} WHERE i.billing_entity = 'LSQ-01'"
        ).fetchone()
    finally:
        con.close()
    assert row is not None and row[0] == 0 and row[1] > 0


CONTROL_CLASSES = {"cents_units", "duplicate_events", "deprecated_table"}
"""Trap classes whose fact the data gives away (magnitudes, repeated keys, a last date)."""


def test_control_class_is_labelled(world: World) -> None:
    for trap in world.traps:
        assert trap.control == (trap.trap_class in CONTROL_CLASSES), trap.id
    assert sum(not t.control for t in world.traps) > 2 * sum(t.control for t in world.traps)


def _one(world: World, sql: str) -> tuple[object, ...]:
    con = world.connect()
    try:
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    assert row is not None
    return tuple(row)


def test_test_accounts_look_like_real_ones(world: World) -> None:
    """No e-mail domain or name pattern singles the test accounts out."""
    test_domains, real_domains, qa_names = _one(
        world,
        "SELECT list_sort(list_distinct(list(split_part(email, '@', 2)) FILTER "
        "(WHERE signup_source = 'crm' AND email IS NOT NULL))), "
        "list_sort(list_distinct(list(split_part(email, '@', 2)) FILTER "
        "(WHERE signup_source <> 'crm' AND email IS NOT NULL))), "
        "count(*) FILTER (WHERE regexp_matches(lower(email), 'qa|test|automation')) "
        "FROM customers.customers",
    )
    assert test_domains == real_domains
    assert qa_names == 0


def test_erased_accounts_look_like_live_ones(world: World) -> None:
    """Erased accounts keep pseudonymous names and e-mails, blank as often as live ones; the
    state codes are all common."""
    blank_erased, blank_live, states = _one(
        world,
        "SELECT avg((full_name IS NULL)::INTEGER) FILTER (WHERE row_state = 4), "
        "avg((full_name IS NULL)::INTEGER) FILTER (WHERE row_state <> 4), "
        "count(DISTINCT row_state) FROM customers.customers",
    )
    assert abs(float(blank_erased) - float(blank_live)) < 0.1  # type: ignore[arg-type]
    assert float(blank_live) > 0.05  # type: ignore[arg-type]
    assert states == 4


def test_event_hours_follow_the_documented_time_zones(world: World) -> None:
    """Before 2024-07-01 event_ts is UTC, after it company local time (UTC-8): the stored
    peak hour moves by 8 hours at the switch, the documented conversion gives one local
    profile on both sides, and no UTC timestamp reaches the switch day (the migration day
    has no events), so ``event_ts < '2024-07-01'`` tells the two clocks apart."""
    before, after, local_before, last_utc, on_gap_day = _one(
        world,
        "SELECT (SELECT hour(event_ts) FROM marketing.web_events WHERE event_ts < "
        "TIMESTAMP '2024-07-01' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1), "
        "(SELECT hour(event_ts) FROM marketing.web_events WHERE event_ts >= "
        "TIMESTAMP '2024-07-01' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1), "
        "(SELECT hour(event_ts - INTERVAL 8 HOUR) FROM marketing.web_events WHERE event_ts < "
        "TIMESTAMP '2024-07-01' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1), "
        "(SELECT max(event_ts) FROM marketing.web_events WHERE event_ts < "
        "TIMESTAMP '2024-07-01'), "
        "(SELECT count(*) FROM marketing.web_events WHERE CAST(event_ts - INTERVAL 8 HOUR "
        "AS DATE) = DATE '2024-06-30' AND event_ts < TIMESTAMP '2024-07-01')",
    )
    assert local_before == after
    assert before == (after + 8) % 24
    assert str(last_utc) < "2024-06-30 08:00:00"
    assert on_gap_day == 0


def test_invoice_amounts_do_not_give_the_currency_away(world: World) -> None:
    """The two billing entities' invoice amounts have the same distribution: a ratio near the
    CAD rate (about 1.35) let blind a0 agents infer the currency from the data."""
    mean, median = _one(
        world,
        "SELECT avg(amount) FILTER (WHERE billing_entity = 'LSQ-01') / "
        "avg(amount) FILTER (WHERE billing_entity = 'LSQ-02'), "
        "median(amount) FILTER (WHERE billing_entity = 'LSQ-01') / "
        "median(amount) FILTER (WHERE billing_entity = 'LSQ-02') FROM finance.invoices",
    )
    assert 0.85 < float(mean) < 1.15  # type: ignore[arg-type]
    assert 0.85 < float(median) < 1.15  # type: ignore[arg-type]


def test_partner_country_does_not_give_the_entity_away(world: World) -> None:
    """Both billing entities invoice partners in Canada and in the US."""
    (pairs,) = _one(
        world,
        "SELECT count(DISTINCT (billing_entity, country)) FROM finance.partners",
    )
    assert pairs == 4
