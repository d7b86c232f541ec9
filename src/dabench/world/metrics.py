"""The company's official metric definitions as SQL fragments.

The derived datasets (analytics.*) and the correct side of every trap use these, so the
fast-path tables agree with the facts up to their freshness cutoff by construction.
"""

from __future__ import annotations

from dabench.world.constants import (
    COLLECTOR_SWITCH,
    ERASED_ROW_STATE,
    KEY_ACCOUNT_TIERS,
    LOCAL_UTC_OFFSET_HOURS,
    NORDIC_ENTITY,
    TEST_EMAIL_DOMAIN,
)

NOT_TEST = f"coalesce(c.email, '') NOT LIKE '%@{TEST_EMAIL_DOMAIN}'"
"""Predicate on ``customers.customers c``: not an internal test account."""
IS_TEST = f"coalesce(c.email, '') LIKE '%@{TEST_EMAIL_DOMAIN}'"
"""Predicate on ``customers.customers c``: an internal test account."""
ACTIVE = f"c.row_state <> '{ERASED_ROW_STATE}'"
"""Predicate on ``customers.customers c``: not soft-deleted."""
KEY_ACCOUNT = "c.tier IN (" + ", ".join(f"'{t}'" for t in KEY_ACCOUNT_TIERS) + ")"
"""Predicate on ``customers.customers c``: a key account."""


def revenue_orders(
    *, completed_only: bool = True, net: bool = True, exclude_test: bool = True
) -> str:
    """A SELECT of ``order_id, customer_id, order_date, channel, tier, revenue_cents``.

    With the defaults this is the revenue policy: completed orders of real customers,
    order amount minus discount minus refunds, in integer cents. The switches turn one rule
    off at a time (for the naive side of a trap).
    """
    value = "o.amount - o.discount - coalesce(rf.refunded, 0)" if net else "o.amount"
    where = []
    if completed_only:
        where.append("o.status = 'completed'")
    if exclude_test:
        where.append(NOT_TEST)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    return f"""SELECT o.order_id, o.customer_id, o.order_date, o.channel, c.tier,
       c.row_state, ({value})::BIGINT AS revenue_cents
FROM sales.orders o
JOIN customers.customers c USING (customer_id)
LEFT JOIN (SELECT order_id, sum(amount) AS refunded FROM sales.refunds GROUP BY 1) rf
  USING (order_id)
{clause}"""


LOCAL_EVENT_TS = (
    f"CASE WHEN e.event_ts < TIMESTAMP '{COLLECTOR_SWITCH} 00:00:00' "
    f"THEN e.event_ts + INTERVAL ({LOCAL_UTC_OFFSET_HOURS}) HOUR ELSE e.event_ts END"
)
"""Company local time of ``marketing.web_events e`` (UTC before the collector switch)."""

UNIQUE_EVENTS = "(SELECT DISTINCT ON (event_id) * FROM marketing.web_events ORDER BY event_id)"
"""``marketing.web_events`` with redelivered duplicates removed (one row per event_id)."""

INVOICE_USD = (
    f"CASE WHEN i.billing_entity = '{NORDIC_ENTITY}' THEN i.amount * fx.rate ELSE i.amount END"
)
"""USD value of ``finance.invoices i`` joined to ``finance.fx_rates fx`` for SEK."""
INVOICE_FX_JOIN = (
    "LEFT JOIN finance.fx_rates fx ON fx.currency = 'SEK' "
    "AND fx.month = date_trunc('month', i.issued_on)"
)
"""The join that :data:`INVOICE_USD` needs."""
