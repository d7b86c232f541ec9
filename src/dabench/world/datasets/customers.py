"""Customer domain: the customer base (a helper the orders draw from), customers, tiers."""

from __future__ import annotations

from datetime import date

from dabench.world.constants import (
    CUSTOMERS_PER_SCALE,
    END_DATE,
    ERASED_ROW_STATE,
    TEST_SIGNUP_SOURCE,
)
from dabench.world.datasets.spec import Col, DatasetSpec, Helper, values_sql
from dabench.world.policies import policy
from dabench.world.sqlrand import Rand

OWNER = "crm-data@larkspur.example"
FIRST = [
    "Ava", "Ben", "Chloe", "Diego", "Elena", "Farah", "Gus", "Hana", "Ivan", "Jade",
    "Kofi", "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara",
    "Uma", "Vik", "Wren", "Yara", "Zane", "Iris", "Leo", "Maya", "Noah", "Elif",
]  # fmt: skip
LAST = [
    "Adams", "Baker", "Chen", "Dubois", "Evans", "Fischer", "Garcia", "Hughes", "Ito",
    "Jensen", "Khan", "Lopez", "Moreau", "Nguyen", "Okafor", "Patel", "Quist", "Rossi",
    "Silva", "Tanaka", "Ueda", "Varga", "Walsh", "Xu", "Young", "Zimmer",
]  # fmt: skip
MAIL_DOMAINS = ["mail.example", "inbox.example", "post.example", "webmail.example"]
REGIONS = [("West", 0.3), ("South", 0.25), ("Midwest", 0.2), ("Northeast", 0.2), ("Canada", 0.05)]
TIERS = [("bronze", 0.45), ("silver", 0.30), ("gold", 0.17), ("platinum", 0.08)]
SEGMENTS = [("consumer", 0.7), ("smb", 0.22), ("enterprise", 0.08)]
TIER_ORDER = ["bronze", "silver", "gold", "platinum"]
SIGNUP_SPAN = (END_DATE - date(2021, 1, 1)).days
"""Customers without orders signed up between 2021-01-01 and the last day."""


def base_steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The customer base the order generator draws customers from."""
    n = CUSTOMERS_PER_SCALE * scale
    r = rand
    select = f"""
WITH b AS (
  SELECT i + 1 AS customer_id, {r.u("c_test", "i")} < 0.13 AS is_test,
         {r.u("c_erase", "i")} < 0.16 AS erase_draw
  FROM range({n}) t(i)
)
SELECT customer_id, is_test, (NOT is_test) AND erase_draw AS erased,
       {r.pick("c_first", "customer_id", FIRST)} AS first_name,
       {r.pick("c_last", "customer_id", LAST)} AS last_name,
       {r.pick("c_mail", "customer_id", MAIL_DOMAINS)} AS mail_domain,
       {r.weighted("c_tier", "customer_id", TIERS)} AS tier,
       {r.weighted("c_segment", "customer_id", SEGMENTS)} AS segment,
       {r.weighted("c_region", "customer_id", REGIONS)} AS region,
       (row_number() OVER (PARTITION BY is_test ORDER BY customer_id) - 1)::BIGINT AS grp_rank
FROM b"""
    return [Helper("_customer_base", select)]


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """Customers, segments and tier history (after the orders exist)."""
    r = rand
    tiers = "[" + ", ".join(f"'{t}'" for t in TIER_ORDER) + "]"
    signup = f"""
SELECT b.*,
  CASE WHEN f.first_order IS NOT NULL
       THEN f.first_order - {r.int("c_lead", "b.customer_id", 0, 120)}::INTEGER
       ELSE DATE '2021-01-01' + {r.int("c_signup", "b.customer_id", 0, SIGNUP_SPAN)}::INTEGER
  END AS signup_date
FROM _customer_base b
LEFT JOIN (SELECT customer_id, min(order_date) AS first_order FROM _orders GROUP BY 1) f
  USING (customer_id)"""
    # Nothing in a row gives a test account away but its signup source, and nothing gives an
    # erased account away but its row_state code: erasure replaces name and e-mail with a
    # generated pseudonym drawn like any name, store customers of every state may leave both
    # empty, and the other state codes are as common.
    anonymous = f"({r.u('c_anon', 'customer_id')} < 0.12)"
    source = r.weighted(
        "c_source", "customer_id", [("web", 0.55), ("store", 0.3), ("partner", 0.15)]
    )
    first = f"CASE WHEN erased THEN {r.pick('c_pfirst', 'customer_id', FIRST)} ELSE first_name END"
    last = f"CASE WHEN erased THEN {r.pick('c_plast', 'customer_id', LAST)} ELSE last_name END"
    customers_select = f"""
SELECT customer_id,
  CASE WHEN {anonymous} THEN NULL ELSE ({first}) || ' ' || ({last}) END AS full_name,
  CASE WHEN {anonymous} THEN NULL
       ELSE lower({first}) || '.' || lower({last}) || customer_id || '@' || mail_domain
  END AS email,
  signup_date, segment, region, tier,
  CASE WHEN is_test THEN '{TEST_SIGNUP_SOURCE}' ELSE {source} END AS signup_source,
  (CASE WHEN erased THEN {ERASED_ROW_STATE}
        ELSE {r.weighted("c_state", "customer_id", [("1", 0.7), ("2", 0.2), ("3", 0.1)])}::INTEGER
   END)::INTEGER AS row_state
FROM _customer_signup"""
    # Tier history: about a third of customers were upgraded one tier at some point.
    upgraded = (
        f"(tier <> 'bronze' AND {r.u('c_upg', 'customer_id')} < 0.35 "
        f"AND signup_date < DATE '{END_DATE}' - 30)"
    )
    change = (
        f"(signup_date + 1 + ({r.h('c_upg_day', 'customer_id')} "
        f"% (DATE '{END_DATE}' - signup_date - 1))::INTEGER)"
    )
    history_select = f"""
SELECT customer_id, {tiers}[list_position({tiers}, tier) - 1] AS tier,
       signup_date AS valid_from, {change} AS valid_to
FROM _customer_signup WHERE {upgraded}
UNION ALL
SELECT customer_id, tier, CASE WHEN {upgraded} THEN {change} ELSE signup_date END AS valid_from,
       NULL::DATE AS valid_to
FROM _customer_signup"""
    segments = [
        ("consumer", "Consumer", "Individuals buying for themselves on the web or in stores."),
        ("smb", "Small business", "Guides, clubs and outfitters with fewer than 50 staff."),
        ("enterprise", "Enterprise", "Large organisations buying under a framework contract."),
    ]
    return [
        Helper("_customer_signup", signup),
        DatasetSpec(
            id="customers.customers",
            domain="customers",
            kind="dimension",
            title="Customers",
            description="One row per customer account ever created, with the current tier. "
            "Rows are never physically removed: an account erased on request keeps its row "
            "with row_state 4 and must be left out of every customer count and every "
            "breakdown by a customer attribute. Internal QA test accounts (signup_source "
            "'crm') live here too and are excluded from every metric; see the knowledge pages "
            "test-accounts and customer-data-retention.",
            owner=OWNER,
            columns={
                "customer_id": Col("Customer identifier."),
                "full_name": Col(
                    "First and last name; empty when the customer gave none (store "
                    "customers); a generated pseudonym once the account is erased."
                ),
                "email": Col(
                    "Login e-mail address; empty for store customers who gave none; a "
                    "generated pseudonym address once the account is erased."
                ),
                "signup_date": Col("Date the account was created."),
                "segment": Col("Customer segment (customers.segments)."),
                "region": Col("Sales region of the billing address."),
                "tier": Col(
                    "Current loyalty tier: bronze, silver, gold or platinum. "
                    + policy("key_accounts").rule,
                    glossary=("customer-tier", "key-account"),
                ),
                "signup_source": Col(
                    "Where the account was created: web, store, partner or crm. Accounts "
                    "created by hand in the CRM ('crm') are internal QA test accounts and are "
                    "excluded from every metric (knowledge page test-accounts).",
                    glossary=("test-account",),
                ),
                "row_state": Col(
                    "Soft-delete marker: 4 = the account was erased on the customer's request "
                    "and is excluded from customer counts and breakdowns (its past orders stay "
                    "in revenue). Live codes: 1 active, 2 inactive, 3 on credit hold.",
                    glossary=("active-customer",),
                ),
            },
            select=customers_select,
            order_by="customer_id",
            tags=("crm", "pii"),
            glossary=("active-customer", "key-account", "test-account"),
            upstream=("staging.customers_raw",),
            transform="de-duplicated and typed from the CRM export",
        ),
        DatasetSpec(
            id="customers.segments",
            domain="customers",
            kind="reference",
            title="Customer segments",
            description="The customer segments used in customers.customers.segment.",
            owner=OWNER,
            columns={
                "segment": Col("Segment code."),
                "name": Col("Display name."),
                "description": Col("Who belongs to the segment."),
            },
            select=values_sql(["segment", "name", "description"], segments),
            order_by="segment",
            tags=("crm", "reference"),
        ),
        DatasetSpec(
            id="customers.tier_history",
            domain="customers",
            kind="fact",
            title="Customer tier history",
            description="Every tier a customer has held, with validity dates (valid_to is "
            "empty for the current tier).",
            owner=OWNER,
            columns={
                "customer_id": Col("Customer (customers.customers)."),
                "tier": Col("Tier held during the interval.", glossary=("customer-tier",)),
                "valid_from": Col("First day the tier applied."),
                "valid_to": Col("Day the next tier started; empty while current."),
            },
            select=history_select,
            order_by="customer_id, valid_from",
            tags=("crm", "loyalty"),
            glossary=("customer-tier",),
            upstream=("customers.customers",),
            transform="slowly changing dimension of the tier column",
        ),
    ]
