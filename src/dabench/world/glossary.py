"""The business glossary: agreed definitions of the terms used in questions."""

from __future__ import annotations

from dabench.world.model import GlossaryTerm
from dabench.world.policies import policy

GLOSSARY: list[GlossaryTerm] = [
    GlossaryTerm(
        id="revenue",
        name="Revenue",
        definition="Net revenue: the order amount minus the promotion discount minus refunds, "
        "over completed orders only, excluding orders of internal test accounts. Shipping "
        "fees are not revenue. Attributed to the order date. Reported in US dollars.",
        synonyms=["net revenue", "sales revenue", "net sales"],
        related_datasets=[
            "sales.orders",
            "sales.refunds",
            "analytics.daily_sales",
            "analytics.monthly_revenue",
        ],
    ),
    GlossaryTerm(
        id="gross-sales",
        name="Gross sales",
        definition="The order amount before discounts and refunds, over all orders. Not "
        "revenue; used only for merchandising.",
        synonyms=["gross", "order amount"],
        related_datasets=["sales.orders", "analytics.product_sales_monthly"],
    ),
    GlossaryTerm(
        id="completed-order",
        name="Completed order",
        definition="An order with status 'completed'. Pending, cancelled and returned orders "
        "are not completed.",
        synonyms=["fulfilled order"],
        related_datasets=["sales.orders"],
    ),
    GlossaryTerm(
        id="refund",
        name="Refund",
        definition="Money paid back on an order: the full amount of a returned order or a "
        "partial goodwill refund on a completed order. Refunds reduce revenue.",
        related_datasets=["sales.refunds"],
    ),
    GlossaryTerm(
        id="money-units",
        name="Money units",
        definition="Money columns in the sales, finance (payments) and marketing schemas are "
        "integer US cents: divide by 100 for dollars. Aggregates in the analytics schema "
        "and finance.invoices are in major currency units.",
        synonyms=["cents", "amount units"],
        related_datasets=[
            "sales.orders",
            "sales.order_lines",
            "sales.refunds",
            "product.products",
            "finance.payments",
        ],
    ),
    GlossaryTerm(
        id="fiscal-year",
        name="Fiscal year",
        definition="Larkspur's fiscal year runs from February 1 to January 31 and is named "
        "after the calendar year in which it starts: FY2024 = 2024-02-01 to 2025-01-31.",
        synonyms=["FY", "financial year"],
        related_datasets=["finance.budget", "analytics.monthly_revenue"],
    ),
    GlossaryTerm(
        id="fiscal-quarter",
        name="Fiscal quarter",
        definition="Three-month periods of the fiscal year: Q1 = Feb-Apr, Q2 = May-Jul, "
        "Q3 = Aug-Oct, Q4 = Nov-Jan (the January of the following calendar year).",
        synonyms=["FQ", "quarter"],
        related_datasets=["finance.budget"],
    ),
    GlossaryTerm(
        id="customer-tier",
        name="Customer tier",
        definition="Loyalty tier of a customer: bronze, silver, gold or platinum, "
        "reassessed yearly on spend.",
        synonyms=["tier", "loyalty tier"],
        related_datasets=["customers.customers", "customers.tier_history"],
    ),
    GlossaryTerm(
        id="key-account",
        name="Key account",
        definition=policy("key_accounts").rule + " Key accounts get a named account manager.",
        synonyms=["key customer", "strategic account"],
        related_datasets=["customers.customers"],
    ),
    GlossaryTerm(
        id="active-customer",
        name="Customer count",
        definition="Customer counts include every account that is not erased (row_state 4 "
        "marks an erased, soft-deleted account; states 1, 2 and 3 are customers) and is not "
        "an internal test account. The same exclusion applies to every breakdown by a "
        "customer attribute (tier, segment, region, key accounts).",
        synonyms=["number of customers", "customer base"],
        related_datasets=["customers.customers"],
    ),
    GlossaryTerm(
        id="test-account",
        name="Test account",
        definition="An internal QA account: customers.customers.signup_source = 'crm' "
        "(accounts created by hand in the CRM). Test accounts and their orders, order lines, "
        "refunds and payments are excluded from every sales, finance and customer metric. "
        "The rule does not apply to support tickets, survey responses, e-mail sends or web "
        "events.",
        synonyms=["QA account", "internal account"],
        related_datasets=["customers.customers", "sales.orders"],
    ),
    GlossaryTerm(
        id="billing-entity",
        name="Billing entity",
        definition="The Larkspur legal entity that issues an invoice: LSQ-02 (Larkspur "
        "Supply Co., bills in USD) or LSQ-01 (Larkspur Supply Canada Ltd., bills in CAD).",
        related_datasets=["finance.invoices", "finance.partners"],
    ),
    GlossaryTerm(
        id="reporting-currency",
        name="Reporting currency",
        definition="All reporting is in US dollars. Amounts in another currency are converted "
        "with the month-average rate in finance.fx_rates for the month of the transaction.",
        synonyms=["USD conversion", "FX conversion"],
        related_datasets=["finance.fx_rates", "finance.invoices"],
    ),
    GlossaryTerm(
        id="unique-event",
        name="Unique event",
        definition="A web event counted once per event_id; the collector may deliver the same "
        "event more than once.",
        synonyms=["event count"],
        related_datasets=["marketing.web_events"],
    ),
    GlossaryTerm(
        id="company-local-time",
        name="Company local time",
        definition="Reporting time zone: Pacific Standard Time, UTC-08:00 all year (no "
        "daylight saving). Hours of day and dates in reports are in company local time.",
        synonyms=["local time", "business time"],
        related_datasets=["marketing.web_events"],
    ),
    GlossaryTerm(
        id="resolution-time",
        name="Resolution time",
        definition="Hours from opened_at to closed_at of a closed support ticket.",
        synonyms=["time to resolve"],
        related_datasets=["support.tickets"],
    ),
    GlossaryTerm(
        id="csat",
        name="CSAT",
        definition="Customer satisfaction: share of survey responses scoring 4 or 5.",
        synonyms=["customer satisfaction"],
        related_datasets=["support.csat_responses"],
    ),
]
"""Every glossary term of the world."""
