"""The company's official metric definitions as SQL fragments.

The derived datasets (analytics.*) and the correct side of every trap use these, so the
fast-path tables agree with the facts up to their freshness cutoff by construction.
"""

from __future__ import annotations

from dabench.world.constants import (
    COLLECTOR_SWITCH,
    ERASED_ROW_STATE,
    FOREIGN_CURRENCY,
    FOREIGN_ENTITY,
    KEY_ACCOUNT_SEGMENTS,
    KEY_ACCOUNT_TIERS,
    LOCAL_UTC_OFFSET_HOURS,
    TEST_SIGNUP_SOURCE,
)

NOT_TEST = f"c.signup_source <> '{TEST_SIGNUP_SOURCE}'"
"""Predicate on ``customers.customers c``: not an internal test account."""
IS_TEST = f"c.signup_source = '{TEST_SIGNUP_SOURCE}'"
"""Predicate on ``customers.customers c``: an internal test account."""
ACTIVE = f"c.row_state <> {ERASED_ROW_STATE}"
"""Predicate on ``customers.customers c``: not soft-deleted."""
KEY_TIER = "c.tier IN (" + ", ".join(f"'{t}'" for t in KEY_ACCOUNT_TIERS) + ")"
"""Predicate on ``customers.customers c``: tier gold or platinum (half of the key-account rule)."""
KEY_ACCOUNT = (
    f"{KEY_TIER} AND c.segment IN (" + ", ".join(f"'{s}'" for s in KEY_ACCOUNT_SEGMENTS) + ")"
)
"""Predicate on ``customers.customers c``: a key account (business customer in a top tier)."""


def revenue_orders(
    *,
    completed_only: bool = True,
    net: bool = True,
    exclude_test: bool = True,
    refunds: bool = True,
) -> str:
    """A SELECT of ``order_id, customer_id, order_date, channel, tier, revenue_cents``.

    With the defaults this is the revenue policy: completed orders of real customers,
    order amount minus discount minus refunds, in integer cents. The switches turn one rule
    off at a time (for the naive side of a trap); ``refunds=False`` keeps the discount but not
    the refunds.
    """
    value = "o.amount - o.discount" if net else "o.amount"
    if net and refunds:
        value += " - coalesce(rf.refunded, 0)"
    where = []
    if completed_only:
        where.append("o.status = 'completed'")
    if exclude_test:
        where.append(NOT_TEST)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    return f"""SELECT o.order_id, o.customer_id, o.order_date, o.channel, c.tier, c.segment,
       c.row_state, ({value})::BIGINT AS revenue_cents
FROM sales.orders o
JOIN customers.customers c USING (customer_id)
LEFT JOIN (SELECT order_id, sum(amount) AS refunded FROM sales.refunds GROUP BY 1) rf
  USING (order_id)
{clause}"""


def monthly_revenue_select(**rules: bool) -> str:
    """The SELECT of ``analytics.monthly_revenue`` (one row per calendar month).

    ``rules`` are :func:`revenue_orders` switches: the defaults give the table itself; one
    switch off gives the table an analyst would build who ignores that rule.
    """
    return f"""
WITH o AS ({revenue_orders(**rules)})
SELECT date_trunc('month', order_date)::DATE AS month, count(*)::BIGINT AS orders,
       count(DISTINCT customer_id)::BIGINT AS customers,
       (sum(revenue_cents) / 100.0)::DECIMAL(14, 2) AS revenue
FROM o GROUP BY 1"""


LOCAL_EVENT_TS = (
    f"CASE WHEN e.event_ts < TIMESTAMP '{COLLECTOR_SWITCH} 00:00:00' "
    f"THEN e.event_ts + INTERVAL ({LOCAL_UTC_OFFSET_HOURS}) HOUR ELSE e.event_ts END"
)
"""Company local time of ``marketing.web_events e`` (UTC before the collector switch)."""

UNIQUE_EVENTS = "(SELECT DISTINCT ON (event_id) * FROM marketing.web_events ORDER BY event_id)"
"""``marketing.web_events`` with redelivered duplicates removed (one row per event_id)."""

INVOICE_USD = (
    f"CASE WHEN i.billing_entity = '{FOREIGN_ENTITY}' THEN i.amount * fx.rate ELSE i.amount END"
)
"""USD value of ``finance.invoices i`` joined to ``finance.fx_rates fx`` for CAD."""
INVOICE_FX_JOIN = (
    f"LEFT JOIN finance.fx_rates fx ON fx.currency = '{FOREIGN_CURRENCY}' "
    "AND fx.month = date_trunc('month', i.issued_on)"
)
"""The join that :data:`INVOICE_USD` needs."""
