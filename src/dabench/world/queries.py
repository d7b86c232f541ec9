"""Curated queries: named, reviewed SQL for the questions people ask most."""

from __future__ import annotations

from dabench.world.constants import SURVEY_INVERSION_FROM, SURVEY_INVERSION_TO
from dabench.world.metrics import (
    ACTIVE,
    INVOICE_FX_JOIN,
    INVOICE_USD,
    KEY_ACCOUNT,
    LOCAL_EVENT_TS,
    NOT_TEST,
    UNIQUE_EVENTS,
    revenue_orders,
)
from dabench.world.model import CuratedQuery
from dabench.world.policies import policy


def curated_queries() -> list[CuratedQuery]:
    """Every curated query of the world."""
    rev = revenue_orders()
    return [
        CuratedQuery(
            id="revenue-by-month",
            name="Revenue by calendar month",
            description="Revenue per the revenue policy, by calendar month, in US dollars.",
            sql=f"SELECT date_trunc('month', order_date) AS month, "
            f"sum(revenue_cents) / 100.0 AS revenue\nFROM ({rev}) r GROUP BY 1 ORDER BY 1",
            datasets=["sales.orders", "sales.refunds", "customers.customers"],
        ),
        CuratedQuery(
            id="revenue-by-fiscal-quarter",
            name="Revenue by fiscal quarter",
            description="Revenue per fiscal year and quarter (fiscal year starts February 1, "
            "named after the calendar year in which it starts).",
            sql="SELECT year(order_date - INTERVAL 1 MONTH) AS fiscal_year,\n"
            "       (month(order_date - INTERVAL 1 MONTH) - 1) // 3 + 1 AS fiscal_quarter,\n"
            f"       sum(revenue_cents) / 100.0 AS revenue\nFROM ({rev}) r "
            "GROUP BY 1, 2 ORDER BY 1, 2",
            datasets=["sales.orders", "sales.refunds", "customers.customers"],
        ),
        CuratedQuery(
            id="daily-sales-fast-path",
            name="Daily sales from the aggregate",
            description="Daily revenue and orders from analytics.daily_sales. A quick trend "
            "only: the table misses the orders that arrived after each nightly load (about one "
            "in four); use revenue-by-month or sales.orders for exact figures.",
            sql="SELECT sales_date, sum(orders) AS orders, sum(revenue) AS revenue\n"
            "FROM analytics.daily_sales GROUP BY 1 ORDER BY 1",
            datasets=["analytics.daily_sales"],
        ),
        CuratedQuery(
            id="customer-count",
            name="Customer count",
            description="Number of customers: not erased, not internal test accounts.",
            sql=f"SELECT count(*) AS customers FROM customers.customers c\n"
            f"WHERE {ACTIVE} AND {NOT_TEST}",
            datasets=["customers.customers"],
        ),
        CuratedQuery(
            id="key-accounts",
            name="Key accounts",
            description="The current key accounts. " + policy("key_accounts").rule,
            sql=f"SELECT customer_id, full_name, tier, region FROM customers.customers c\n"
            f"WHERE {KEY_ACCOUNT} AND {ACTIVE} AND {NOT_TEST} ORDER BY customer_id",
            datasets=["customers.customers"],
        ),
        CuratedQuery(
            id="average-order-value",
            name="Average order value by channel",
            description="Average net order value in US dollars of completed orders, by channel.",
            sql=f"SELECT channel, avg(revenue_cents) / 100.0 AS aov\nFROM ({rev}) r "
            "GROUP BY 1 ORDER BY 1",
            datasets=["sales.orders", "sales.refunds"],
        ),
        CuratedQuery(
            id="unique-events-per-day",
            name="Unique web events per local day",
            description="Web events de-duplicated by event_id, per company-local day and type.",
            sql=f"SELECT CAST({LOCAL_EVENT_TS} AS DATE) AS day, event_type, count(*) AS events\n"
            f"FROM {UNIQUE_EVENTS} e GROUP BY 1, 2 ORDER BY 1, 2",
            datasets=["marketing.web_events"],
        ),
        CuratedQuery(
            id="invoices-in-usd",
            name="Wholesale invoices in US dollars",
            description="Invoice amounts converted to USD with the month-average rate.",
            sql=f"SELECT i.invoice_id, i.issued_on, {INVOICE_USD} AS amount_usd\n"
            f"FROM finance.invoices i {INVOICE_FX_JOIN} ORDER BY i.invoice_id",
            datasets=["finance.invoices", "finance.fx_rates"],
        ),
        CuratedQuery(
            id="ticket-resolution-hours",
            name="Median ticket resolution time",
            description="Median hours from opening to closing, per priority, closed tickets.",
            sql="SELECT priority, median(epoch(closed_at - opened_at) / 3600) AS hours\n"
            "FROM support.tickets WHERE closed_at IS NOT NULL GROUP BY 1 ORDER BY 1",
            datasets=["support.tickets"],
        ),
        CuratedQuery(
            id="csat-by-month",
            name="CSAT by month",
            description="Share of survey responses scoring 4 or 5, per month.",
            sql="SELECT date_trunc('month', responded_on) AS month,\n"
            "       avg(CASE WHEN (CASE WHEN responded_on BETWEEN\n"
            f"                 DATE '{SURVEY_INVERSION_FROM}' AND DATE '{SURVEY_INVERSION_TO}'\n"
            "                 THEN 6 - score ELSE score END) >= 4 THEN 1.0 ELSE 0.0 END) AS csat\n"
            "FROM support.csat_responses GROUP BY 1 ORDER BY 1",
            datasets=["support.csat_responses"],
        ),
        CuratedQuery(
            id="top-products-by-units",
            name="Top products by units",
            description="The 10 products with the most units sold on completed orders.",
            sql="SELECT p.product_id, p.name, sum(s.units) AS units\n"
            "FROM analytics.product_sales_monthly s JOIN product.products p USING (product_id)\n"
            "GROUP BY 1, 2 ORDER BY units DESC, p.product_id LIMIT 10",
            datasets=["analytics.product_sales_monthly", "product.products"],
        ),
    ]
