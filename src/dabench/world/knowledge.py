"""Knowledge pages: the policies, guides and definitions analysts are expected to read.

Each page is written as ``knowledge/<id>.md``: YAML front matter (id, title, tags,
related_datasets) and a markdown body.
"""

from __future__ import annotations

import yaml

from dabench.world.constants import (
    COLLECTOR_GAP,
    COLLECTOR_SWITCH,
    COMPANY,
    CORE_CUSTOMERS_SNAPSHOT,
    CORE_ORDERS_CUTOFF,
    DAILY_SALES_CUTOFF,
    TEST_EMAIL_DOMAIN,
)
from dabench.world.model import KnowledgePage


def _page(id: str, title: str, tags: list[str], related: list[str], body: str) -> KnowledgePage:
    return KnowledgePage(
        id=id, title=title, tags=tags, related_datasets=related, body=body.strip() + "\n"
    )


def knowledge_pages() -> list[KnowledgePage]:
    """Every knowledge page of the world, sorted by id."""
    pages = [
        _page(
            "revenue-policy", "Revenue policy", ["finance", "policy", "revenue"],
            ["sales.orders", "sales.refunds", "analytics.daily_sales",
             "analytics.monthly_revenue"],
            f"""
# Revenue policy

Approved by the CFO of {COMPANY}. Whenever anyone at Larkspur says **revenue** they mean
*net revenue*:

1. Only **completed** orders count (`sales.orders.status = 'completed'`). Pending, cancelled
   and returned orders are not revenue.
2. Revenue is the order amount **minus the promotion discount minus refunds** issued on the
   order (`sales.refunds`). Shipping fees are pass-through costs and are not revenue.
3. Orders of internal test accounts are excluded (see *test-accounts*).
4. Revenue is attributed to the **order date**, and reported in **US dollars** (the order
   tables hold integer cents; see *money-and-units*).

Gross sales (the amount before discounts, over all orders) is a merchandising figure and must
never be presented as revenue. The curated query `revenue-by-month` implements this policy;
`analytics.daily_sales` and `analytics.monthly_revenue` follow it as well.
""",
        ),
        _page(
            "fiscal-calendar", "Fiscal calendar", ["finance", "calendar"],
            ["finance.budget", "analytics.monthly_revenue"],
            """
# Fiscal calendar

Larkspur's fiscal year starts on **February 1** and ends on January 31. A fiscal year is
named after the calendar year in which it **starts**:

| fiscal year | from | to |
| --- | --- | --- |
| FY2023 | 2023-02-01 | 2024-01-31 |
| FY2024 | 2024-02-01 | 2025-01-31 |
| FY2025 | 2025-02-01 | 2026-01-31 |

Fiscal quarters: Q1 = February-April, Q2 = May-July, Q3 = August-October, Q4 =
November-January. "First half" means Q1 + Q2 (February-July). Budgets in `finance.budget`
use fiscal years and quarters. When someone asks for a "year" or "quarter" in a finance
context without saying "calendar", they mean the fiscal one.
""",
        ),
        _page(
            "warehouse-guide", "Warehouse guide", ["guide", "warehouse"],
            ["sales.orders", "customers.customers", "core.orders", "core.customers",
             "staging.orders_raw", "analytics.daily_sales"],
            f"""
# Warehouse guide

The warehouse has one schema per business domain: `sales`, `customers`, `finance`,
`marketing`, `support` and `product` hold the source-of-truth tables. In addition:

- `analytics`: pre-aggregated tables for dashboards (fast paths). Check their freshness
  before using them for recent periods (see *data-freshness*).
- `staging`: raw loads, with duplicates from re-run batches. Never report from staging.
- `core`: the schema of the **previous warehouse**. It is **deprecated**. `core.orders` is
  replaced by `sales.orders` and stopped loading after {CORE_ORDERS_CUTOFF}; `core.customers`
  is replaced by `customers.customers` and is frozen as of {CORE_CUSTOMERS_SNAPSHOT}. Do not
  use either for anything after those dates.

Money columns in the operational schemas are integer cents (*money-and-units*), the revenue
definition is in *revenue-policy*, and timestamps of web events need care (*event-data*).
""",
        ),
        _page(
            "customer-tiers", "Customer tiers and key accounts", ["customers", "definitions"],
            ["customers.customers", "customers.tier_history"],
            """
# Customer tiers and key accounts

Every customer has a loyalty tier: bronze, silver, gold or platinum, reassessed once a year
on spend (`customers.tier_history` keeps the history; `customers.customers.tier` is the
current tier).

A **key account** is a customer whose current tier is **gold or platinum**. Key accounts get
a named account manager and are reported separately in every sales review. Counts of key
accounts follow the usual customer-count rules (no erased accounts, no test accounts).
""",
        ),
        _page(
            "test-accounts", "Internal test accounts", ["customers", "policy", "data-quality"],
            ["customers.customers", "sales.orders"],
            f"""
# Internal test accounts

The QA automation creates real customer accounts in production and places real orders with
them to test the checkout. These accounts have e-mail addresses at
**`{TEST_EMAIL_DOMAIN}`**.

Test accounts and **all their orders** must be excluded from every business metric: customer
counts, order counts, revenue, average order value. Filter with
`email NOT LIKE '%@{TEST_EMAIL_DOMAIN}'` (erased customers have an empty e-mail and are not
test accounts, so keep NULL e-mails when filtering orders).
""",
        ),
        _page(
            "customer-data-retention", "Customer data retention and erasure",
            ["customers", "privacy", "policy"], ["customers.customers"],
            """
# Customer data retention and erasure

When a customer asks to be forgotten, the account is **erased**: name and e-mail are blanked
and `row_state` is set to `'X'`. The row is kept (a soft delete) so that historical orders
still join. Erased accounts are **not customers any more**: exclude `row_state = 'X'` from
every customer count and customer list. Their past orders stay in revenue.
""",
        ),
        _page(
            "event-data", "Web event data", ["marketing", "clickstream", "data-quality"],
            ["marketing.web_events"],
            f"""
# Web event data

`marketing.web_events` is filled by the event collector. Two things to know:

**Duplicates.** The collector delivers events *at least once*: when an acknowledgement is
lost, the same event is stored again with the same `event_id` (and a later `received_at`).
Always count `DISTINCT event_id`.

**Time zone change.** Until the collector migration, `event_ts` was written in **UTC**. Since
{COLLECTOR_SWITCH} it is written in **company local time** (Pacific Standard Time, UTC-08:00,
no daylight saving). Nothing was collected on {COLLECTOR_GAP} (migration window). To get local
time: `CASE WHEN event_ts < TIMESTAMP '{COLLECTOR_SWITCH}' THEN event_ts - INTERVAL 8 HOUR
ELSE event_ts END`. All hour-of-day and per-day reporting is in company local time.
""",
        ),
        _page(
            "data-freshness", "Data freshness SLA", ["platform", "freshness"],
            ["analytics.daily_sales", "analytics.monthly_revenue", "core.orders"],
            f"""
# Data freshness SLA

Operational tables (`sales`, `customers`, `finance`, `marketing`, `support`, `product`) are
loaded nightly and are complete up to yesterday. Aggregates in `analytics` are rebuilt
nightly after them.

**Known incident:** the job that refreshes `analytics.daily_sales` has been failing since
{DAILY_SALES_CUTOFF}. The table holds no rows after that day. Until it is fixed, compute
anything after {DAILY_SALES_CUTOFF} from `sales.orders` (or use `analytics.monthly_revenue`,
which is current). The catalog's `last_loaded` date of each dataset shows its freshness.
""",
        ),
        _page(
            "currency-policy", "Currency policy", ["finance", "policy", "currency"],
            ["finance.invoices", "finance.fx_rates", "finance.partners"],
            """
# Currency policy

Larkspur reports in **US dollars**. The Swedish subsidiary **LSQ-NORDIC** invoices Nordic
wholesale partners in **Swedish kronor (SEK)**; `finance.invoices.amount` is in the currency
of the billing entity. Convert SEK amounts with `finance.fx_rates` (US dollars per unit), using
the rate of the month of `issued_on`, before adding invoices up. Amounts of LSQ-US are
already in dollars.
""",
        ),
        _page(
            "money-and-units", "Money and units", ["guide", "definitions"],
            ["sales.orders", "sales.order_lines", "sales.refunds", "product.products",
             "finance.payments", "marketing.campaigns", "marketing.campaign_spend"],
            """
# Money and units

To avoid rounding errors, the commerce platform stores money as **integer US cents**: every
money column of `sales`, `product`, `finance.payments` and `marketing` is in cents. Divide
by 100 to report dollars. Exceptions: `analytics.*` tables and `core.orders` hold dollars
with two decimals, `finance.invoices` holds major units of the billing currency, and
`finance.budget` holds dollars.
""",
        ),
        _page(
            "support-sla", "Support service levels", ["support", "policy"],
            ["support.tickets", "support.csat_responses"],
            """
# Support service levels

Target resolution times: urgent 4 hours, high 1 day, normal 3 days, low 5 days. A ticket is
resolved when `closed_at` is set. CSAT is the share of survey responses scoring 4 or 5 and
is reported monthly by the date of the response.
""",
        ),
    ]  # fmt: skip
    return sorted(pages, key=lambda p: p.id)


def render_page(page: KnowledgePage) -> str:
    """The markdown file of a page: YAML front matter then the body."""
    front = {
        "id": page.id,
        "title": page.title,
        "tags": list(page.tags),
        "related_datasets": list(page.related_datasets),
    }
    return (
        "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + page.body
    )


def parse_page(text: str, source: str) -> KnowledgePage:
    """Parse a knowledge page file; ``source`` names it in errors."""
    if not text.startswith("---\n"):
        raise ValueError(f"{source}: line 1: expected '---' to open the front matter")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError(f"{source}: front matter is not closed with '---'")
    front = yaml.safe_load(text[4:end])
    if not isinstance(front, dict):
        raise ValueError(f"{source}: front matter must be a mapping")
    body = text[end + 5 :].lstrip("\n")
    return KnowledgePage(body=body, **front)
