"""The planted knowledge traps: a question, its correct SQL and the naive SQL.

The naive SQL is the correct SQL with exactly the trap's deciding fact left out (what a
careful analyst computes from table and column names alone); every other rule of the
company is applied on both sides so that each trap isolates one fact. Both are evaluated at
build time and the build fails when they do not differ by more than
:data:`~dabench.world.constants.TRAP_MARGIN_REL`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb

from dabench.errors import DabenchError
from dabench.world import constants
from dabench.world.constants import CORE_CUSTOMERS_SNAPSHOT, CORE_ORDERS_CUTOFF
from dabench.world.metrics import (
    ACTIVE,
    INVOICE_FX_JOIN,
    INVOICE_USD,
    KEY_ACCOUNT,
    KEY_TIER,
    LOCAL_EVENT_TS,
    NOT_TEST,
    revenue_orders,
)
from dabench.world.model import Trap


class TrapInvariantError(DabenchError):
    """A trap whose naive and correct answers are too close to tell apart.

    The CLI reports it as one ``error:`` line naming the trap (exit code 2).
    """


@dataclass(frozen=True)
class TrapSpec:
    """A trap before its answers are computed."""

    id: str
    trap_class: str
    question: str
    deciding_fact: str
    fact_locations: tuple[str, ...]
    correct_sql: str
    naive_sql: str
    tolerance_rel: float = 0.01
    control: bool = False


def _between(column: str, lo: str, hi: str) -> str:
    return f"{column} BETWEEN DATE '{lo}' AND DATE '{hi}'"


def _revenue(lo: str, hi: str, extra: str = "", **rules: bool) -> str:
    cond = _between("order_date", lo, hi) + (f" AND {extra}" if extra else "")
    return f"SELECT sum(revenue_cents) / 100.0 FROM ({revenue_orders(**rules)}) r WHERE {cond}"


def _orders(lo: str, hi: str, extra: str = "", table: str = "sales.orders") -> str:
    cond = _between("o.order_date", lo, hi) + (f" AND {extra}" if extra else "")
    return (
        f"SELECT count(*) FROM {table} o JOIN customers.customers c USING (customer_id) "
        f"WHERE {NOT_TEST} AND {cond}"
    )


def _customers(extra: str = "", *, active: bool = True, real: bool = True) -> str:
    conds = [x for x in (ACTIVE if active else "", NOT_TEST if real else "", extra) if x]
    return "SELECT count(*) FROM customers.customers c WHERE " + " AND ".join(conds)


def _events(where_local: str, *, dedupe: bool = True, local: bool = True) -> str:
    counted = "count(DISTINCT event_id)" if dedupe else "count(*)"
    ts = LOCAL_EVENT_TS if local else "e.event_ts"
    return (
        f"SELECT {counted} FROM (SELECT e.*, {ts} AS ts FROM marketing.web_events e) x "
        f"WHERE {where_local}"
    )


def _peak_hour(year: int, *, local: bool) -> str:
    ts = LOCAL_EVENT_TS if local else "e.event_ts"
    return (
        f"SELECT h FROM (SELECT hour({ts}) AS h, count(DISTINCT event_id) AS n "
        f"FROM marketing.web_events e WHERE year({ts}) = {year} GROUP BY 1) "
        "ORDER BY n DESC, h LIMIT 1"
    )


def _invoices(cond: str, agg: str = "sum", *, convert: bool = True) -> str:
    value = INVOICE_USD if convert else "i.amount"
    return f"SELECT {agg}({value}) FROM finance.invoices i {INVOICE_FX_JOIN} WHERE {cond}"


_CENTS = "Money columns in the sales, product and payment tables are integer US cents."
_NET = "Revenue is net of discounts and refunds and counts completed orders only (revenue policy)."
_FISCAL = "The fiscal year starts on February 1; FY2024 = 2024-02-01..2025-01-31."
_FRESH = (
    "analytics.daily_sales is loaded nightly and never backfilled: orders that arrive after "
    "the load (about one in four) are missing from it."
)
_KEY = "A key account is a business customer (smb or enterprise) in tier gold or platinum."
_DEPRECATED = (
    f"The core schema is deprecated; core.orders stopped loading after {CORE_ORDERS_CUTOFF}."
)
_TZ = "web_events.event_ts is UTC before 2024-07-01 and company local time (UTC-8) after."
_DUP = "web_events is delivered at least once; count distinct event_id."
_TEST = "Customers with signup_source 'crm' are internal test accounts."
_SOFT = "customers.row_state = 4 marks an erased (soft-deleted) customer."
_FX = "LSQ-01 invoices are in CAD and must be converted with finance.fx_rates."

_LOC_CENTS = ("glossary:money-units", "knowledge:money-and-units")
_LOC_NET = ("knowledge:revenue-policy", "glossary:revenue")
_LOC_FISCAL = ("knowledge:fiscal-calendar", "glossary:fiscal-year", "glossary:fiscal-quarter")
_LOC_FRESH = ("catalog:analytics.daily_sales", "knowledge:data-freshness")
_LOC_KEY = ("glossary:key-account", "knowledge:customer-tiers",
            "catalog:customers.customers.tier")  # fmt: skip
_LOC_TZ = ("catalog:marketing.web_events.event_ts", "knowledge:event-data",
           "glossary:company-local-time")  # fmt: skip
_LOC_DUP = ("catalog:marketing.web_events", "knowledge:event-data", "glossary:unique-event")
_LOC_TEST = ("knowledge:test-accounts", "glossary:test-account",
             "catalog:customers.customers.signup_source")  # fmt: skip
_LOC_SOFT = ("catalog:customers.customers.row_state", "knowledge:customer-data-retention",
             "glossary:active-customer")  # fmt: skip
_LOC_FX = ("catalog:finance.invoices.amount", "knowledge:currency-policy",
           "glossary:reporting-currency")  # fmt: skip

_AOV_2024 = (
    "FROM sales.orders o JOIN customers.customers c USING (customer_id) "
    f"WHERE o.status = 'completed' AND {NOT_TEST} AND year(o.order_date) = 2024"
)
_REFUNDS_2025 = (
    "FROM sales.refunds f JOIN sales.orders o USING (order_id) "
    f"JOIN customers.customers c USING (customer_id) WHERE {NOT_TEST} "
    "AND year(f.refunded_on) = 2025"
)

TRAP_SPECS: list[TrapSpec] = [
    TrapSpec(
        "cents_units.avg_list_price", "cents_units",
        "What is the average list price of Larkspur's products, in US dollars?",
        _CENTS, ("catalog:product.products.list_price", *_LOC_CENTS),
        "SELECT avg(list_price) / 100.0 FROM product.products",
        "SELECT avg(list_price) FROM product.products",
        control=True,
    ),
    TrapSpec(
        "cents_units.avg_order_value_2024", "cents_units",
        "What was the average order value (order amount before discounts) of completed orders "
        "placed in 2024, in US dollars?",
        _CENTS, ("catalog:sales.orders.amount", *_LOC_CENTS),
        f"SELECT avg(o.amount) / 100.0 {_AOV_2024}",
        f"SELECT avg(o.amount) {_AOV_2024}",
        control=True,
    ),
    TrapSpec(
        "cents_units.refunds_2025", "cents_units",
        "How much money was refunded to customers in 2025 (by refund date), in US dollars?",
        _CENTS, ("catalog:sales.refunds.amount", *_LOC_CENTS),
        f"SELECT sum(f.amount) / 100.0 {_REFUNDS_2025}",
        f"SELECT sum(f.amount) {_REFUNDS_2025}",
        control=True,
    ),
    TrapSpec(
        "net_revenue.partner_revenue_2024", "net_revenue",
        "What was revenue from the partner sales channel in calendar year 2024, in US dollars?",
        _NET, _LOC_NET,
        _revenue("2024-01-01", "2024-12-31", "channel = 'partner'"),
        _revenue("2024-01-01", "2024-12-31", "channel = 'partner'", refunds=False),
    ),
    TrapSpec(
        "net_revenue.web_revenue_2025h1", "net_revenue",
        "What was revenue from the web channel from January to June 2025, in US dollars?",
        _NET, _LOC_NET,
        _revenue("2025-01-01", "2025-06-30", "channel = 'web'"),
        _revenue("2025-01-01", "2025-06-30", "channel = 'web'", refunds=False),
    ),
    TrapSpec(
        "net_revenue.store_revenue_2023", "net_revenue",
        "What revenue did the retail stores generate in 2023, in US dollars?",
        _NET, _LOC_NET,
        _revenue("2023-01-01", "2023-12-31", "channel = 'store'"),
        _revenue("2023-01-01", "2023-12-31", "channel = 'store'", refunds=False),
    ),
    TrapSpec(
        "fiscal_calendar.orders_fq1_2025", "fiscal_calendar",
        "How many completed orders were placed in the first quarter of fiscal year 2025?",
        _FISCAL, _LOC_FISCAL,
        _orders("2025-02-01", "2025-04-30", "o.status = 'completed'"),
        _orders("2025-01-01", "2025-03-31", "o.status = 'completed'"),
        0.0,
    ),
    TrapSpec(
        "fiscal_calendar.revenue_fq1_2024", "fiscal_calendar",
        "What was revenue in the first quarter of fiscal year 2024, in US dollars?",
        _FISCAL, _LOC_FISCAL,
        _revenue("2024-02-01", "2024-04-30"),
        _revenue("2024-01-01", "2024-03-31"),
    ),
    TrapSpec(
        "fiscal_calendar.revenue_fy2023_h1", "fiscal_calendar",
        "What was revenue in the first half of fiscal year 2023, in US dollars?",
        _FISCAL, _LOC_FISCAL,
        _revenue("2023-02-01", "2023-07-31"),
        _revenue("2023-01-01", "2023-06-30"),
    ),
    TrapSpec(
        "freshness_cutoff.store_revenue_2025", "freshness_cutoff",
        "What revenue did the retail stores generate in 2025, in US dollars?",
        _FRESH, _LOC_FRESH,
        _revenue("2025-01-01", "2025-12-31", "channel = 'store'"),
        "SELECT sum(revenue) FROM analytics.daily_sales WHERE channel = 'store' "
        "AND sales_date BETWEEN DATE '2025-01-01' AND DATE '2025-12-31'",
    ),
    TrapSpec(
        "freshness_cutoff.web_orders_2025h2", "freshness_cutoff",
        "How many completed orders were placed in the web shop from July to December 2025?",
        _FRESH, _LOC_FRESH,
        _orders("2025-07-01", "2025-12-31", "o.status = 'completed' AND o.channel = 'web'"),
        "SELECT sum(orders) FROM analytics.daily_sales WHERE channel = 'web' "
        "AND sales_date BETWEEN DATE '2025-07-01' AND DATE '2025-12-31'",
        0.0,
    ),
    TrapSpec(
        "freshness_cutoff.web_revenue_2025", "freshness_cutoff",
        "What was revenue from the web channel in 2025, in US dollars?",
        _FRESH, _LOC_FRESH,
        _revenue("2025-01-01", "2025-12-31", "channel = 'web'"),
        "SELECT sum(revenue) FROM analytics.daily_sales WHERE channel = 'web' "
        "AND sales_date BETWEEN DATE '2025-01-01' AND DATE '2025-12-31'",
    ),
    TrapSpec(
        "tier_definition.key_accounts", "tier_definition",
        "How many key accounts does Larkspur have?",
        _KEY, _LOC_KEY,
        _customers(KEY_ACCOUNT),
        _customers(KEY_TIER),
        0.0,
    ),
    TrapSpec(
        "tier_definition.key_account_revenue_2025", "tier_definition",
        "How much revenue came from key accounts in 2025, in US dollars?",
        _KEY, _LOC_KEY,
        _revenue("2025-01-01", "2025-12-31", f"{KEY_ACCOUNT} AND {ACTIVE}".replace("c.", "")),
        _revenue("2025-01-01", "2025-12-31", f"{KEY_TIER} AND {ACTIVE}".replace("c.", "")),
    ),
    TrapSpec(
        "deprecated_table.orders_2025", "deprecated_table",
        "How many completed orders were placed in 2025?",
        _DEPRECATED, ("catalog:core.orders", "knowledge:warehouse-guide"),
        _orders("2025-01-01", "2025-12-31", "o.status = 'completed'"),
        _orders("2025-01-01", "2025-12-31", "o.status_code = 'C'", table="core.orders"),
        0.0,
        control=True,
    ),
    TrapSpec(
        "deprecated_table.customers", "deprecated_table",
        "How many customers does Larkspur have?",
        f"core.customers is deprecated and frozen as of {CORE_CUSTOMERS_SNAPSHOT}; "
        "use customers.customers.",
        ("catalog:core.customers", "knowledge:warehouse-guide"),
        _customers(),
        f"SELECT count(*) FROM core.customers c WHERE {NOT_TEST} AND {ACTIVE}",
        0.0,
        control=True,
    ),
    TrapSpec(
        "timezone_change.peak_hour_2023", "timezone_change",
        "In 2023, during which hour of the day (0-23, company local time) were the most web "
        "events recorded?",
        _TZ, _LOC_TZ,
        _peak_hour(2023, local=True),
        _peak_hour(2023, local=False),
        0.0,
    ),
    TrapSpec(
        "timezone_change.evening_events_2024h1", "timezone_change",
        "How many web events happened in the evening (18:00 to 22:59 company local time) "
        "from January to June 2024?",
        _TZ, _LOC_TZ,
        _events("ts >= TIMESTAMP '2024-01-01' AND ts < TIMESTAMP '2024-07-01' "
                "AND hour(ts) BETWEEN 18 AND 22"),
        _events("ts >= TIMESTAMP '2024-01-01' AND ts < TIMESTAMP '2024-07-01' "
                "AND hour(ts) BETWEEN 18 AND 22", local=False),
        0.0,
    ),
    TrapSpec(
        "timezone_change.morning_events_2023", "timezone_change",
        "How many web events happened before 09:00 company local time in 2023?",
        _TZ, _LOC_TZ,
        _events("year(ts) = 2023 AND hour(ts) < 9"),
        _events("year(ts) = 2023 AND hour(ts) < 9", local=False),
        0.0,
    ),
    TrapSpec(
        "duplicate_events.add_to_cart_2025", "duplicate_events",
        "How many add-to-cart events were recorded in 2025?",
        _DUP, _LOC_DUP,
        _events("event_type = 'add_to_cart' AND year(ts) = 2025"),
        _events("event_type = 'add_to_cart' AND year(ts) = 2025", dedupe=False),
        0.0,
        control=True,
    ),
    TrapSpec(
        "duplicate_events.page_views_2025q3", "duplicate_events",
        "How many page views were recorded from July to September 2025?",
        _DUP, _LOC_DUP,
        _events("event_type = 'page_view' AND ts >= TIMESTAMP '2025-07-01' "
                "AND ts < TIMESTAMP '2025-10-01'"),
        _events("event_type = 'page_view' AND ts >= TIMESTAMP '2025-07-01' "
                "AND ts < TIMESTAMP '2025-10-01'", dedupe=False),
        0.0,
        control=True,
    ),
    TrapSpec(
        "duplicate_events.checkouts_2024h2", "duplicate_events",
        "How many checkout events were recorded from July to December 2024?",
        _DUP, _LOC_DUP,
        _events("event_type = 'checkout' AND ts >= TIMESTAMP '2024-07-01' "
                "AND ts < TIMESTAMP '2025-01-01'"),
        _events("event_type = 'checkout' AND ts >= TIMESTAMP '2024-07-01' "
                "AND ts < TIMESTAMP '2025-01-01'", dedupe=False),
        0.0,
        control=True,
    ),
    TrapSpec(
        "test_accounts.orders_2024", "test_accounts",
        "How many orders (of any status) were placed in 2024?",
        _TEST, _LOC_TEST,
        _orders("2024-01-01", "2024-12-31"),
        "SELECT count(*) FROM sales.orders WHERE year(order_date) = 2024",
        0.0,
    ),
    TrapSpec(
        "test_accounts.customers", "test_accounts",
        "How many customers does Larkspur have?",
        _TEST, _LOC_TEST,
        _customers(),
        _customers(real=False),
        0.0,
    ),
    TrapSpec(
        "soft_deleted.customers", "soft_deleted",
        "How many customers does Larkspur have?",
        _SOFT, _LOC_SOFT,
        _customers(),
        _customers(active=False),
        0.0,
    ),
    TrapSpec(
        "soft_deleted.west_customers", "soft_deleted",
        "How many customers are in the West region?",
        _SOFT, _LOC_SOFT,
        _customers("c.region = 'West'"),
        _customers("c.region = 'West'", active=False),
        0.0,
    ),
    TrapSpec(
        "currency_conversion.invoiced_2025", "currency_conversion",
        "What was the total amount invoiced to wholesale partners in 2025, in US dollars?",
        _FX, _LOC_FX,
        _invoices("year(i.issued_on) = 2025"),
        _invoices("year(i.issued_on) = 2025", convert=False),
    ),
    TrapSpec(
        "currency_conversion.unpaid", "currency_conversion",
        "What is the total amount of unpaid wholesale invoices, in US dollars?",
        _FX, _LOC_FX,
        _invoices("i.paid_on IS NULL"),
        _invoices("i.paid_on IS NULL", convert=False),
    ),
    TrapSpec(
        "currency_conversion.avg_invoice_2024", "currency_conversion",
        "What was the average wholesale invoice amount in 2024, in US dollars?",
        _FX, _LOC_FX,
        _invoices("year(i.issued_on) = 2024", "avg"),
        _invoices("year(i.issued_on) = 2024", "avg", convert=False),
    ),
]  # fmt: skip
"""Every trap of the world, grouped by class."""


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> float:
    """The first cell of ``sql`` as a float (NULL is an error)."""
    row = con.execute(sql).fetchone()
    if row is None or row[0] is None:
        raise TrapInvariantError(f"query returned no value: {sql}")
    return float(row[0])


def evaluate_traps(con: duckdb.DuckDBPyConnection) -> list[Trap]:
    """Compute both answers of every trap and assert the invariant (naming the failed trap)."""
    traps = []
    for spec in TRAP_SPECS:
        correct = scalar(con, spec.correct_sql)
        naive = scalar(con, spec.naive_sql)
        margin = max(constants.TRAP_MARGIN_REL, spec.tolerance_rel) * abs(correct)
        if not math.isfinite(correct) or abs(correct - naive) <= margin:
            raise TrapInvariantError(
                f"trap {spec.id} does not bite: correct={correct!r} naive={naive!r} "
                f"(need a difference above {margin:.4g})"
            )
        traps.append(
            Trap(
                id=spec.id,
                trap_class=spec.trap_class,
                question=spec.question,
                deciding_fact=spec.deciding_fact,
                fact_locations=list(spec.fact_locations),
                correct_sql=spec.correct_sql,
                naive_sql=spec.naive_sql,
                correct_answer=round(correct, 6),
                naive_answer=round(naive, 6),
                tolerance_rel=spec.tolerance_rel,
                control=spec.control,
            )
        )
    return traps
