"""Superseded knowledge pages: older versions of the company's rules that were never deleted.

A real handbook keeps its history. When a rule changed, the owning team wrote the new rule on
another page (or rewrote a page and moved its review date); the old page stayed, unlinked and
unmarked except by its earlier ``reviewed`` date. Each page here states a rule that one of the
current pages of :mod:`dabench.world.knowledge` replaced, reviewed before that page. The page
``documentation-conventions`` says how a reader settles it: the page reviewed last governs,
for every period. These pages are the world's *stale documentation*: a reader who trusts the
first page a search returns, without comparing review dates, applies a retired rule.
"""

from __future__ import annotations

from datetime import date

from dabench.world.constants import ERASED_ROW_STATE, TEST_SIGNUP_SOURCE
from dabench.world.model import KnowledgePage, knowledge_page

ARCHIVE: dict[str, str] = {
    "key-accounts": "customer-tiers",
    "fiscal-year": "fiscal-calendar",
    "revenue-reporting": "revenue-policy",
    "clickstream-collector": "event-data",
    "partner-invoicing": "currency-policy",
    "erasure-requests": "customer-data-retention",
    "qa-accounts": "test-accounts",
}
"""Each superseded page and the current page that replaced it."""


def archived_pages() -> list[KnowledgePage]:
    """The superseded pages (see :data:`ARCHIVE`), sorted by id."""
    pages = [
        knowledge_page(
            "key-accounts", "Key accounts", ["customers", "sales", "definitions"],
            ["customers.customers"], date(2023, 3, 6),
            """
# Key accounts

Key accounts are our **gold and platinum customers**. Each one has a named account manager
in the sales team, a quarterly business review and priority support.

To list them, take the customers whose tier is gold or platinum:
`WHERE tier IN ('gold', 'platinum')` on `customers.customers`. Key-account revenue is the
revenue of their orders. Sales reviews show key accounts first, then everyone else.
""",
        ),
        knowledge_page(
            "fiscal-year", "Fiscal year", ["finance", "calendar"], ["finance.budget"],
            date(2022, 10, 17),
            """
# Fiscal year

The fiscal year runs from **February 1 to January 31**, so that the holiday season and its
returns fall in one year. Like most retailers, we name a fiscal year after the calendar year
in which it **ends**: FY2024 runs from 2023-02-01 to 2024-01-31.

Quarters are three months each, starting in February: Q1 = February-April, Q2 = May-July,
Q3 = August-October, Q4 = November-January. Budgets (`finance.budget`) are set per fiscal
quarter.
""",
        ),
        knowledge_page(
            "revenue-reporting", "Revenue reporting", ["finance", "policy", "revenue"],
            ["sales.orders", "sales.refunds"], date(2022, 8, 22),
            """
# Revenue reporting

Revenue is the value of **completed** orders after promotion discounts: the order amount
minus the discount, in US dollars (the order tables hold cents). Shipping is not revenue.

Refunds are not deducted from revenue. Finance books them as a separate cost line
(`sales.refunds`), reported next to revenue in the monthly pack, so a refund never changes
the revenue of the month in which the order was placed.
""",
        ),
        knowledge_page(
            "clickstream-collector", "Clickstream collector", ["marketing", "clickstream"],
            ["marketing.web_events"], date(2024, 2, 12),
            """
# Clickstream collector

The collector writes every web and app event to `marketing.web_events`. Its clock is
**UTC**: `event_ts` is the UTC time at which the event happened. Company reporting is in
local time (Pacific Standard Time, UTC-08:00, no daylight saving), so subtract eight hours
for any hour-of-day or per-day figure: `event_ts - INTERVAL 8 HOUR`.

`received_at` is when the event reached the warehouse; use `event_ts` for reporting.
""",
        ),
        knowledge_page(
            "partner-invoicing", "Partner invoicing", ["finance", "partners"],
            ["finance.invoices", "finance.partners"], date(2023, 4, 24),
            """
# Partner invoicing

Wholesale partners are invoiced by the entity of their country: partners in **Canada** by
**LSQ-01** (Larkspur Supply Canada Ltd.) in Canadian dollars, partners in the **US** by
**LSQ-02** (Larkspur Supply Co.) in US dollars. `finance.invoices.amount` is in the currency
of the invoice, so convert the Canadian partners' invoices with the month's `CAD` rate of
`finance.fx_rates` before adding them to US figures.
""",
        ),
        knowledge_page(
            "erasure-requests", "Erasure requests", ["customers", "privacy"],
            ["customers.customers"], date(2023, 1, 30),
            f"""
# Erasure requests

Customers may ask us to erase their data. The privacy team pseudonymises the account's name
and e-mail and sets `row_state = {ERASED_ROW_STATE}`; the row stays so that foreign keys hold.

An erased account is gone for reporting purposes: exclude it, **and everything it did**,
from every figure, including revenue and order totals. Filter `row_state <> {ERASED_ROW_STATE}`
in every query that touches customers or their orders.
""",
        ),
        knowledge_page(
            "qa-accounts", "QA accounts", ["customers", "data-quality"],
            ["customers.customers", "support.tickets"], date(2023, 6, 12),
            f"""
# QA accounts

The QA team tests the shop with real accounts created in the CRM
(`signup_source = '{TEST_SIGNUP_SOURCE}'`). Remove them from **every** table you report from:
orders, refunds, payments, customer counts, support tickets, survey responses and e-mail
sends. A QA account's ticket is a test of the support tools, not a customer contact.
""",
        ),
    ]  # fmt: skip
    return sorted(pages, key=lambda p: p.id)
