"""Near-duplicates and fast paths: analytics aggregates, staging copies, the old core schema."""

from __future__ import annotations

from dabench.world.constants import (
    CORE_CUSTOMERS_SNAPSHOT,
    CORE_ORDERS_CUTOFF,
    LATE_ORDER_SHARE,
)
from dabench.world.datasets.spec import Col, DatasetSpec, Helper
from dabench.world.metrics import NOT_TEST, monthly_revenue_select, revenue_orders
from dabench.world.sqlrand import Rand

OWNER_BI = "bi-team@larkspur.example"
OWNER_PLATFORM = "data-platform@larkspur.example"
REVENUE_DOC = (
    "Revenue per the revenue policy in US dollars (net of discounts and refunds, "
    "completed orders of real customers)."
)

_REV = ("revenue",)


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The derived datasets, built last from the facts."""
    r = rand
    rev = revenue_orders()
    daily_select = f"""
WITH o AS ({rev}),
u AS (SELECT order_id, sum(quantity)::BIGINT AS units FROM sales.order_lines GROUP BY 1)
SELECT o.order_date AS sales_date, o.channel, count(*)::BIGINT AS orders,
       sum(u.units)::BIGINT AS units,
       (sum(o.revenue_cents) / 100.0)::DECIMAL(14, 2) AS revenue
FROM o JOIN u USING (order_id)
WHERE {late_order("o.order_id", r)} >= {LATE_ORDER_SHARE}
GROUP BY 1, 2"""
    monthly_select = monthly_revenue_select()
    c360_select = f"""
WITH o AS ({revenue_orders(exclude_test=False)}),
agg AS (SELECT customer_id, count(*)::BIGINT AS lifetime_orders,
               (sum(revenue_cents) / 100.0)::DECIMAL(14, 2) AS lifetime_revenue,
               min(order_date) AS first_order_date, max(order_date) AS last_order_date
        FROM o GROUP BY 1),
tk AS (SELECT customer_id, count(*)::BIGINT AS tickets FROM support.tickets GROUP BY 1)
SELECT c.customer_id, c.segment, c.region, c.tier, c.signup_date,
       coalesce(agg.lifetime_orders, 0)::BIGINT AS lifetime_orders,
       coalesce(agg.lifetime_revenue, 0)::DECIMAL(14, 2) AS lifetime_revenue,
       agg.first_order_date, agg.last_order_date,
       coalesce(tk.tickets, 0)::BIGINT AS tickets
FROM customers.customers c
LEFT JOIN agg USING (customer_id) LEFT JOIN tk USING (customer_id)"""
    product_monthly_select = f"""
SELECT date_trunc('month', o.order_date)::DATE AS month, l.product_id,
       sum(l.quantity)::BIGINT AS units,
       (sum(l.quantity * l.unit_price) / 100.0)::DECIMAL(14, 2) AS sales
FROM sales.order_lines l JOIN sales.orders o USING (order_id)
JOIN customers.customers c USING (customer_id)
WHERE o.status = 'completed' AND {NOT_TEST}
GROUP BY 1, 2"""
    orders_raw_select = f"""
WITH b AS (
  SELECT o.*, ((o.order_date - DATE '2023-01-01') // 7 + 1)::INTEGER AS load_batch
  FROM sales.orders o
)
SELECT order_id, customer_id, order_date, channel, store_id, sales_rep_id, promo_code,
       status, amount, discount, shipping, load_batch,
       (order_date + 1 + INTERVAL 2 HOUR)::TIMESTAMP AS loaded_at
FROM b
UNION ALL
SELECT order_id, customer_id, order_date, channel, store_id, sales_rep_id, promo_code,
       status, amount, discount, shipping, load_batch + 1,
       (order_date + 8 + INTERVAL 2 HOUR)::TIMESTAMP AS loaded_at
FROM b WHERE {r.u("stg_dup", "order_id")} < 0.05"""
    customers_raw_select = """
SELECT customer_id, full_name, email, signup_date, segment, region, tier, signup_source,
       row_state, (signup_date + 1)::TIMESTAMP AS loaded_at
FROM customers.customers"""
    core_orders_select = f"""
SELECT order_id, customer_id, order_date, channel,
       CASE status WHEN 'completed' THEN 'C' WHEN 'cancelled' THEN 'X'
                   WHEN 'returned' THEN 'R' ELSE 'P' END AS status_code,
       ((amount - discount) / 100.0)::DECIMAL(14, 2) AS order_total
FROM sales.orders WHERE order_date <= DATE '{CORE_ORDERS_CUTOFF}'"""
    core_customers_select = f"""
SELECT c.customer_id, c.full_name, c.email, c.signup_date, c.region, h.tier, c.signup_source,
       c.row_state
FROM customers.customers c
JOIN customers.tier_history h
  ON h.customer_id = c.customer_id AND h.valid_from <= DATE '{CORE_CUSTOMERS_SNAPSHOT}'
 AND (h.valid_to IS NULL OR h.valid_to > DATE '{CORE_CUSTOMERS_SNAPSHOT}')
WHERE c.signup_date <= DATE '{CORE_CUSTOMERS_SNAPSHOT}'"""
    money_cents = Col(
        "in US cents (integer), as loaded.", "USD cents", ("money",), ("money-units",)
    )
    return [
        DatasetSpec(
            id="analytics.daily_sales",
            domain="sales",
            kind="aggregate",
            title="Daily sales",
            description="Pre-aggregated daily revenue, orders and units per channel, loaded "
            "nightly from the orders that had reached the warehouse by then. It is never "
            "backfilled: about one order in four arrives later (store tills, partner orders "
            "keyed in by reps, web orders held by fraud review) and is missing here, so every "
            "figure undercounts (see data-freshness). Use sales.orders for exact figures.",
            owner=OWNER_BI,
            columns={
                "sales_date": Col("Order date."),
                "channel": Col("Sales channel."),
                "orders": Col(
                    "Completed orders of real customers that had arrived by the nightly load.",
                    "count",
                ),
                "units": Col("Units on those orders.", "units"),
                "revenue": Col(
                    "Revenue of those orders per the revenue policy, in US dollars (late "
                    "orders missing).",
                    "USD",
                    _REV,
                    ("revenue",),
                ),
            },
            select=daily_select,
            order_by="sales_date, channel",
            tags=("fast-path", "sales", "revenue"),
            glossary=("revenue",),
            upstream=("sales.orders", "sales.order_lines", "sales.refunds", "customers.customers"),
            transform="nightly aggregation of the orders loaded so far (never backfilled)",
        ),
        DatasetSpec(
            id="analytics.monthly_revenue",
            domain="sales",
            kind="aggregate",
            title="Monthly revenue",
            description="Revenue, completed orders and ordering customers per calendar month, "
            "per the revenue policy. Calendar months: add them up by fiscal calendar when "
            "fiscal periods are asked for.",
            owner=OWNER_BI,
            columns={
                "month": Col("First day of the calendar month."),
                "orders": Col("Completed orders of real customers.", "count"),
                "customers": Col("Distinct customers with a completed order.", "count"),
                "revenue": Col(REVENUE_DOC, "USD", _REV, ("revenue",)),
            },
            select=monthly_select,
            order_by="month",
            tags=("fast-path", "sales", "revenue", "finance"),
            glossary=("revenue", "fiscal-year"),
            upstream=("sales.orders", "sales.refunds", "customers.customers"),
            transform="monthly aggregation",
        ),
        DatasetSpec(
            id="analytics.customer_360",
            domain="customers",
            kind="aggregate",
            title="Customer 360",
            description="One row per customer account ever created, with lifetime order "
            "and revenue figures and support contacts. Neither erased accounts nor internal "
            "test accounts are filtered out here, and the lifetime figures include test "
            "accounts' orders: join customers.customers and apply the customer rules "
            "(knowledge pages test-accounts, customer-data-retention).",
            owner=OWNER_BI,
            columns={
                "customer_id": Col("Customer."),
                "segment": Col("Customer segment."),
                "region": Col("Sales region."),
                "tier": Col("Current tier.", glossary=("customer-tier",)),
                "signup_date": Col("Account creation date."),
                "lifetime_orders": Col("Completed orders.", "count"),
                "lifetime_revenue": Col(
                    "Net of discounts and refunds on completed orders, in US dollars.",
                    "USD",
                    _REV,
                    ("revenue",),
                ),
                "first_order_date": Col("First completed order."),
                "last_order_date": Col("Latest completed order."),
                "tickets": Col("Support tickets opened.", "count"),
            },
            select=c360_select,
            order_by="customer_id",
            tags=("fast-path", "crm"),
            upstream=("customers.customers", "sales.orders", "support.tickets"),
            transform="nightly customer rollup",
        ),
        DatasetSpec(
            id="analytics.product_sales_monthly",
            domain="product",
            kind="aggregate",
            title="Monthly product sales",
            description="Units and line sales per product and calendar month on completed "
            "orders of real customers (internal test accounts excluded). Sales are at list "
            "price before order discounts and refunds (not revenue).",
            owner=OWNER_BI,
            columns={
                "month": Col("First day of the calendar month."),
                "product_id": Col("Product."),
                "units": Col("Units sold.", "units"),
                "sales": Col(
                    "Line sales at list price in US dollars.", "USD", ("money",), ("gross-sales",)
                ),
            },
            select=product_monthly_select,
            order_by="month, product_id",
            tags=("fast-path", "merchandising"),
            glossary=("gross-sales",),
            upstream=("sales.order_lines", "sales.orders", "customers.customers"),
            transform="monthly aggregation",
        ),
        DatasetSpec(
            id="staging.orders_raw",
            domain="sales",
            kind="staging",
            title="Orders (raw loads)",
            description="Orders as loaded from the commerce platform, one row per load: a "
            "re-run batch loads some orders twice. Feeds sales.orders; not for reporting.",
            owner=OWNER_PLATFORM,
            columns={
                "order_id": Col("Order identifier."),
                "customer_id": Col("Customer."),
                "order_date": Col("Order day."),
                "channel": Col("Sales channel."),
                "store_id": Col("Store."),
                "sales_rep_id": Col("Rep."),
                "promo_code": Col("Promotion."),
                "status": Col("Order status at load time."),
                "amount": Col("Order amount " + money_cents.description, *_rest(money_cents)),
                "discount": Col("Discount " + money_cents.description, *_rest(money_cents)),
                "shipping": Col("Shipping " + money_cents.description, *_rest(money_cents)),
                "load_batch": Col("Weekly load batch number."),
                "loaded_at": Col("When the row was loaded."),
            },
            select=orders_raw_select,
            order_by="order_id, load_batch",
            tags=("staging", "orders"),
            transform="raw extract",
        ),
        DatasetSpec(
            id="staging.customers_raw",
            domain="customers",
            kind="staging",
            title="Customers (raw loads)",
            description="Customer accounts as loaded from the CRM. Feeds customers.customers.",
            owner=OWNER_PLATFORM,
            columns={
                "customer_id": Col("Customer identifier."),
                "full_name": Col("Name."),
                "email": Col("E-mail."),
                "signup_date": Col("Account creation date."),
                "segment": Col("Segment."),
                "region": Col("Region."),
                "tier": Col("Tier."),
                "signup_source": Col("Where the account was created."),
                "row_state": Col("Record state code from the CRM."),
                "loaded_at": Col("When the row was loaded."),
            },
            select=customers_raw_select,
            order_by="customer_id",
            tags=("staging", "crm"),
            transform="raw extract",
        ),
        DatasetSpec(
            id="core.orders",
            domain="sales",
            kind="legacy",
            title="Orders (old warehouse)",
            description="Orders table of the previous warehouse. Deprecated: replaced by "
            f"sales.orders and no longer loaded after {CORE_ORDERS_CUTOFF}.",
            owner=OWNER_PLATFORM,
            columns={
                "order_id": Col("Order identifier."),
                "customer_id": Col("Customer."),
                "order_date": Col("Order day."),
                "channel": Col("Sales channel."),
                "status_code": Col("C completed, X cancelled, R returned, P pending."),
                "order_total": Col("Order amount after discount in US dollars.", "USD", ("money",)),
            },
            select=core_orders_select,
            order_by="order_id",
            tags=("orders",),
            upstream=("sales.orders",),
            transform="nightly copy (stopped)",
            deprecated=True,
            replaced_by="sales.orders",
            freshness_sql="SELECT max(order_date) FROM core.orders",
        ),
        DatasetSpec(
            id="core.customers",
            domain="customers",
            kind="legacy",
            title="Customers (old warehouse)",
            description="Customer table of the previous warehouse. Deprecated: replaced by "
            f"customers.customers; frozen as of {CORE_CUSTOMERS_SNAPSHOT}.",
            owner=OWNER_PLATFORM,
            columns={
                "customer_id": Col("Customer identifier."),
                "full_name": Col("Name."),
                "email": Col("E-mail."),
                "signup_date": Col("Account creation date."),
                "region": Col("Region."),
                "tier": Col("Tier at the time of the snapshot."),
                "signup_source": Col("Where the account was created."),
                "row_state": Col("Record state code at the time of the snapshot."),
            },
            select=core_customers_select,
            order_by="customer_id",
            tags=("crm",),
            upstream=("customers.customers", "customers.tier_history"),
            transform="snapshot (frozen)",
            deprecated=True,
            replaced_by="customers.customers",
            freshness_sql=f"SELECT DATE '{CORE_CUSTOMERS_SNAPSHOT}'",
        ),
    ]


def _rest(col: Col) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    return col.unit, col.tags, col.glossary


def late_order(order_id: str, rand: Rand) -> str:
    """A uniform draw per order; below :data:`LATE_ORDER_SHARE` the order arrived after the
    nightly load of its day (so ``analytics.daily_sales`` misses it)."""
    return rand.u("o_late", order_id)
