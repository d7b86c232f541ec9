"""Knowledge pages: the policies, guides and definitions analysts are expected to read.

Each page is written as ``knowledge/<id>.md``: YAML front matter (id, title, tags,
related_datasets) and a markdown body.
"""

from __future__ import annotations

from datetime import date, timedelta

import yaml

from dabench.world.constants import (
    CASE_COUNT_SNAPSHOT,
    CASE_COUNT_WAREHOUSE,
    CASE_SIZE,
    COLLECTOR_GAP,
    COLLECTOR_SWITCH,
    COMPANY,
    CORE_CUSTOMERS_SNAPSHOT,
    CORE_ORDERS_CUTOFF,
    ERASED_ROW_STATE,
    SURVEY_INVERSION_FROM,
    SURVEY_INVERSION_TO,
    TEST_SIGNUP_SOURCE,
)
from dabench.world.knowledge_archive import archived_pages
from dabench.world.knowledge_bulk import bulk_pages
from dabench.world.model import KnowledgePage, knowledge_page
from dabench.world.policies import policy
from dabench.world.policy_data import scope_markdown

REVIEWED: dict[str, date] = {
    f"incident-{SURVEY_INVERSION_FROM}-survey-tool": SURVEY_INVERSION_TO + timedelta(days=4),
    f"incident-{CASE_COUNT_SNAPSHOT}-inventory-snapshot": CASE_COUNT_SNAPSHOT + timedelta(days=9),
    "currency-policy": date(2024, 8, 19),
    "customer-data-retention": date(2024, 9, 16),
    "customer-tiers": date(2025, 2, 10),
    "data-freshness": date(2024, 10, 1),
    "documentation-conventions": date(2024, 6, 3),
    "event-data": date(2024, 7, 8),
    "fiscal-calendar": date(2024, 12, 9),
    "money-and-units": date(2024, 5, 27),
    "payment-processing-fees": date(2024, 2, 9),
    "rep-commission-plan": date(2025, 1, 27),
    "revenue-policy": date(2025, 2, 3),
    "support-sla": date(2024, 3, 11),
    "test-accounts": date(2024, 11, 4),
    "warehouse-guide": date(2025, 1, 20),
}
"""When each current rule page was last reviewed: after every page it superseded
(:data:`dabench.world.knowledge_archive.ARCHIVE`)."""


def _page(id: str, title: str, tags: list[str], related: list[str], body: str) -> KnowledgePage:
    return knowledge_page(id, title, tags, related, REVIEWED[id], body)


def knowledge_pages() -> list[KnowledgePage]:
    """Every knowledge page of the world, sorted by id: the current rules
    (:func:`rule_pages`), the pages they superseded
    (:func:`~dabench.world.knowledge_archive.archived_pages`) and the handbook's everyday
    pages (:func:`~dabench.world.knowledge_bulk.bulk_pages`)."""
    pages = [*rule_pages(), *archived_pages(), *bulk_pages()]
    return sorted(pages, key=lambda p: p.id)


def rule_pages() -> list[KnowledgePage]:
    """The pages that state the company's rules as they stand, sorted by id."""
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
3. Orders of internal test accounts are excluded (see *test-accounts*). Orders of erased
   accounts stay in revenue totals (see *customer-data-retention*).
4. Revenue is attributed to the **order date**, and reported in **US dollars** (the order
   tables hold integer cents; see *money-and-units*).

Gross sales (the amount before discounts, over all orders) is a merchandising figure and must
never be presented as revenue. The curated query `revenue-by-month` implements this policy
and so does `analytics.monthly_revenue` exactly. `analytics.daily_sales` applies the same
formula but misses late-arriving orders (see *data-freshness*): never report revenue from it.

{scope_markdown(policy("revenue"))}
""",
        ),
        _page(
            "fiscal-calendar", "Fiscal calendar", ["finance", "calendar"],
            ["finance.budget", "analytics.monthly_revenue"],
            f"""
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
use fiscal years and quarters.

{scope_markdown(policy("fiscal_calendar"))}
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

- `analytics`: pre-aggregated tables for dashboards (fast paths). `monthly_revenue`,
  `product_sales_monthly` apply every policy; `customer_360` keeps erased and test accounts
  (join `customers.customers` to filter them); `daily_sales` misses late-arriving
  orders (see *data-freshness*).
- `staging`: raw loads, with duplicates from re-run batches. Never report from staging.
- `core`: the schema of the **previous warehouse**. It is **deprecated**. `core.orders` is
  replaced by `sales.orders` and stopped loading after {CORE_ORDERS_CUTOFF}; `core.customers`
  is replaced by `customers.customers` and is frozen as of {CORE_CUSTOMERS_SNAPSHOT}. Do not
  use either for anything after those dates.

{scope_markdown(policy("reporting_sources"))}

Money columns in the operational schemas are integer cents (*money-and-units*), the revenue
definition is in *revenue-policy*, and timestamps of web events need care (*event-data*).

**Data incidents.** Loads are append-only: when an incident stored wrong values that could
not be rewritten, the rows stay as they are and the incident review (tag `incident`) says
which rows are affected and how to read them. That reading applies to every figure computed
from those rows. Check the incident reviews of the tables you use.
""",
        ),
        _page(
            "customer-tiers", "Customer tiers and key accounts", ["customers", "definitions"],
            ["customers.customers", "customers.tier_history"],
            f"""
# Customer tiers and key accounts

Every customer has a loyalty tier: bronze, silver, gold or platinum, reassessed once a year
on spend (`customers.tier_history` keeps the history; `customers.customers.tier` is the
current tier).

## Key accounts

{scope_markdown(policy("key_accounts"))}

Key accounts get a named account manager and are reported separately in every sales review.
Counts of key accounts, and sales broken down by key account, follow the customer rules: no
erased accounts, no test accounts.

## Tier moves

A **tier move** is a change from one tier to another (a row of `customers.tier_history` that
is not the customer's first interval). The first interval, which starts at signup, is not a
move.
""",
        ),
        _page(
            "test-accounts", "Internal test accounts", ["customers", "policy", "data-quality"],
            ["customers.customers", "sales.orders"],
            f"""
# Internal test accounts

The QA team creates customer accounts by hand in the CRM and places real orders with them to
test the checkout. They look like any other account (ordinary names and e-mail addresses);
the only mark is **`customers.customers.signup_source = '{TEST_SIGNUP_SOURCE}'`**: real
customers sign up on the web, in a store or through a partner, never in the CRM.

Test accounts and **all their orders** must be excluded: filter with
`signup_source <> '{TEST_SIGNUP_SOURCE}'` (join `customers.customers` to reach it from orders,
order lines, refunds and payments). `analytics.monthly_revenue`, `analytics.daily_sales` and
`analytics.product_sales_monthly` already exclude them; `analytics.customer_360` does not (it
keeps every account, and its lifetime figures include test accounts' orders).

{scope_markdown(policy("test_accounts"))}
""",
        ),
        _page(
            "customer-data-retention", "Customer data retention and erasure",
            ["customers", "privacy", "policy"], ["customers.customers"],
            f"""
# Customer data retention and erasure

When a customer asks to be forgotten, the account is **erased**: name and e-mail are
replaced by a generated pseudonym (so nothing in them shows the erasure) and `row_state` is
set to **{ERASED_ROW_STATE}**. The other codes are 1 = active, 2 = inactive, 3 = on credit
hold; all three are customers. The row is kept (a soft delete) so that historical orders
still join. Erased accounts are **not customers any more**: filter
`row_state <> {ERASED_ROW_STATE}` in every customer count, customer list and breakdown by a
customer attribute.

{scope_markdown(policy("erased_accounts"))}
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

{scope_markdown(policy("unique_events"))}

**Time zone change.** Until the collector migration, `event_ts` was written in **UTC**. Since
{COLLECTOR_SWITCH} it is written in **company local time** (Pacific Standard Time, UTC-08:00,
no daylight saving). Nothing was collected on {COLLECTOR_GAP} (migration window). To get local
time: `CASE WHEN event_ts < TIMESTAMP '{COLLECTOR_SWITCH}' THEN event_ts - INTERVAL 8 HOUR
ELSE event_ts END`. All hour-of-day and per-day reporting is in company local time.

{scope_markdown(policy("company_local_time"))}
""",
        ),
        _page(
            "data-freshness", "Data freshness SLA", ["platform", "freshness"],
            ["analytics.daily_sales", "analytics.monthly_revenue", "core.orders"],
            """
# Data freshness SLA

Operational tables (`sales`, `customers`, `finance`, `marketing`, `support`, `product`) are
loaded nightly and are complete up to yesterday: orders that arrive late are added to
`sales.orders` under their order date.

**Known limitation of `analytics.daily_sales`:** it is appended once a night from the orders
that had reached the warehouse by then and is **never backfilled**. About one order in four
arrives after that load (store tills that sync late, partner orders keyed in by reps, web
orders held by fraud review), so every day, channel and period in `daily_sales` undercounts
orders, units and revenue. Nothing in the table marks the gap. Use it for rough trends only;
compute figures from `sales.orders` or `analytics.monthly_revenue`, which are complete.
""",
        ),
        _page(
            "currency-policy", "Currency policy", ["finance", "policy", "currency"],
            ["finance.invoices", "finance.fx_rates", "finance.partners"],
            f"""
# Currency policy

Larkspur reports in **US dollars**. Two legal entities invoice wholesale partners:
**LSQ-01** (Larkspur Supply Canada Ltd., partners supplied from the Vancouver warehouse)
bills in **Canadian dollars (CAD)** and **LSQ-02** (Larkspur Supply Co., partners supplied
from the US warehouses) bills in US dollars. The entity follows the supplying warehouse, not
the partner's country: both invoice partners in Canada and in the US.
`finance.invoices.amount` is in the currency of the billing entity. Convert LSQ-01 amounts
with the `CAD` rate of `finance.fx_rates` (US dollars per unit) for the month of `issued_on`
before adding invoices up.

{scope_markdown(policy("currency"))}
""",
        ),
        _page(
            "money-and-units", "Money and units", ["guide", "definitions"],
            ["sales.orders", "sales.order_lines", "sales.refunds", "product.products",
             "finance.payments", "marketing.campaigns", "marketing.campaign_spend"],
            f"""
# Money and units

To avoid rounding errors, the commerce platform stores money as **integer US cents**: every
money column of `sales`, `product`, `finance.payments` and `marketing` is in cents. Divide
by 100 to report dollars.

{scope_markdown(policy("money_units"))}
""",
        ),
        _page(
            "payment-processing-fees", "Payment processing fees", ["finance", "payments", "costs"],
            ["finance.payments"],
            """
# Payment processing fees

Finance pays the payment processors a fee on every **live** payment they capture.
`finance.payments` has one row per captured payment; `paid_at` is the capture time (company
local time). A fee is booked on the day its payment was captured, not on the order date.
A fee is a percentage of the payment's amount plus a fixed amount per payment:

| method | captured until 2024-01-31 | captured from 2024-02-01 |
| --- | --- | --- |
| `card` | 2.9 % + $0.30 | 2.2 % + $0.30; a payment of $2,500.00 or more: 1.8 % + $0.30 |
| `paypal` | 3.49 % + $0.49 | 3.49 % + $0.49 |
| `gift_card` | no fee (our own gift cards) | no fee |
| `invoice` | no fee (partners pay by bank transfer) | no fee |

The card contract was renewed for FY2024: a payment takes the schedule in force on the day it
was captured. The large-payment rate applies to the whole payment, not only to the part above
$2,500.00.

- **Card gateway.** The card gateway also charges **$49.00 for every calendar month** in
  which at least one live card payment was captured (under both contracts).
- **The fee follows the payment.** It is owed whatever later happens to the order or to the
  customer's account: processors do not give fees back when an order is returned, a payment
  is refunded or an account is erased.
- **Test accounts.** Payments of internal test accounts (*test-accounts*) go through the
  processors' test mode: they are not live, carry no fee and do not count for the gateway.
- **Statements.** Fees accumulate in fractions of a cent; a statement rounds its total to the
  cent.

Processing fees are a cost. They are not deducted from revenue (*revenue-policy*).
""",
        ),
        _page(
            "rep-commission-plan", "Sales rep commission plan",
            ["sales", "compensation", "policy"],
            ["sales.commission_rules", "sales.orders", "sales.order_lines", "sales.sales_reps",
             "customers.tier_history"],
            """
# Sales rep commission plan

Field sales reps earn a commission on the partner orders they place
(`sales.orders.sales_rep_id`). Commission is earned **line by line**, under the rules of
`sales.commission_rules`.

**Which orders.** Only **completed** orders earn commission. The commission of a returned
order is clawed back in full, so returned, cancelled and pending orders earn nothing. A
refund on a completed order (a price match, a damaged item) does not change its commission.
Orders of internal test accounts (*test-accounts*) earn none. Orders of erased accounts
(*customer-data-retention*) keep their commission: the rep made the sale.

**Commission base.** A line's base is its amount (`quantity * unit_price`) less its share of
the order's promotion discount, the discount being shared among the order's lines in
proportion to their amounts: base = line amount × (order amount − discount) / order amount.
Shipping earns no commission. Amounts are in cents (*money-and-units*).

**Plan year.** A line is paid under the plan of the fiscal year (*fiscal-calendar*) in which
its order was placed (`order_date`); `plan_year` names that fiscal year.

**Matching.** A rule of the plan year matches a line when every condition the rule sets
holds; an empty condition matches anything:

- `rep_region`: the rep's territory (`sales.sales_reps.region`);
- `department`: the department of the line's product (`product.categories.department`);
- `customer_tier`: the ordering customer's tier on the order date (`customers.tier_history`);
- `min_tenure_years`: the rep has completed at least that many full years of service on the
  order date (a rep hired on 2019-03-15 completes 5 years on 2024-03-15);
- `promo`: true when the order used a promotion code, false when it did not.

**Which rule pays.** Rates never add up: exactly one rule pays each line. When several rules
match, the **most specific** pays, that is the rule that sets the most conditions; between
equally specific rules, the lower `rule_id` pays. Every plan has a rule with no condition,
so every line has a rule. The line earns base × `rate_bp` / 10,000.

**Quarterly kicker.** When a rep's commission base over one fiscal quarter (the lines that
earn commission, by order date) reaches **$5,000.00**, every one of that rep's lines of that
quarter earns **100 basis points more** than its rule's rate.

**Rounding.** Commission accrues in fractions of a cent; a statement rounds its total to the
cent.

Commission is a selling cost: it is not deducted from revenue (*revenue-policy*).
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
        _page(
            f"incident-{SURVEY_INVERSION_FROM}-survey-tool",
            f"Incident review: survey tool ({SURVEY_INVERSION_FROM})", ["incident"],
            ["support.csat_responses"],
            f"""
# Incident review: survey tool, {SURVEY_INVERSION_FROM}

**What happened.** A release of the survey tool on {SURVEY_INVERSION_FROM} reversed the answer
buttons of the one-question survey sent when a ticket closes: the button stored as 1 showed
"very happy" and the one stored as 5 "very unhappy". Customers answered what they saw. The
fix shipped on {SURVEY_INVERSION_TO + timedelta(days=1)}.

**Why.** A right-to-left layout change in the survey template also reversed the order of the
values.

**What we did.** The survey export is append-only, so the stored answers were **not**
rewritten. For every answer recorded from {SURVEY_INVERSION_FROM} through
{SURVEY_INVERSION_TO} (`responded_on`), the customer's real score is **6 minus the stored
score**; use that in every figure. Tables affected: `support.csat_responses`.
""",
        ),
        _page(
            f"incident-{CASE_COUNT_SNAPSHOT}-inventory-snapshot",
            f"Incident review: inventory snapshot ({CASE_COUNT_SNAPSHOT})", ["incident"],
            ["product.inventory_snapshots"],
            f"""
# Incident review: inventory snapshot, {CASE_COUNT_SNAPSHOT}

**What happened.** The month-end snapshot of {CASE_COUNT_SNAPSHOT} from Reno DC
(`warehouse_id = {CASE_COUNT_WAREHOUSE}`) was taken with the scanners in case mode: `on_hand`
and `on_order` hold the number of **full cases of {CASE_SIZE} units**, not units. The other
warehouses and every other snapshot are in units.

**Why.** A firmware update reset the scanners' counting mode.

**What we did.** Snapshots are never retaken, so the rows were not corrected. The true units
of that warehouse's rows of that date are the stored figures **times {CASE_SIZE}** (units of
opened cases were not counted and are lost); use them in every figure. Tables affected:
`product.inventory_snapshots`.
""",
        ),
        _page(
            "documentation-conventions", "How to read this handbook",
            ["guide", "handbook", "conventions"],
            ["sales.orders", "customers.customers", "finance.invoices", "marketing.web_events"],
            """
# How to read this handbook

Pages are never deleted. When a rule changes, the team that owns it writes the new rule,
often on a new page, and sets that page's `reviewed` date; the older page stays for history
and is not edited or marked. So the handbook holds outdated definitions next to current
ones, and two pages on the same subject can conflict.

**When two pages disagree, the page reviewed most recently governs**, for every period,
including years before the change: figures are restated under the current definitions.

Team pages, dashboards, meeting notes, incident reviews, runbooks and project pages describe
their owners' work; they define no company metric. Company definitions are the policy and
definition pages and the glossary.
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
    if page.reviewed is not None:
        front["reviewed"] = page.reviewed.isoformat()
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
