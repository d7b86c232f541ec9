"""Finance domain: wholesale partners and invoices, FX rates, payments and the budget."""

from __future__ import annotations

from dabench.world.constants import (
    END_DATE,
    FOREIGN_CURRENCY,
    FOREIGN_ENTITY,
    INVOICES_PER_SCALE,
    START_DATE,
)
from dabench.world.datasets.calendar import days_helper, quantile_days
from dabench.world.datasets.spec import Col, DatasetSpec, Helper
from dabench.world.sqlrand import Rand

OWNER = "finance-data@larkspur.example"
N_PARTNERS = 40
PARTNER_WORDS = [
    "Summit", "Basecamp", "Fjord", "Pine", "Lakeland", "Tundra", "Cedar", "Ridgeline",
    "Harbor", "Northstar",
]  # fmt: skip
PARTNER_KINDS = ["Outfitters", "Mountain Sports", "Adventure Co.", "Trading", "Supply Co-op"]
CURRENCIES = [
    (FOREIGN_CURRENCY, 0.74, 0.015), ("SEK", 0.094, 0.008), ("EUR", 1.08, 0.04),
    ("GBP", 1.27, 0.04),
]  # fmt: skip
"""Currency, mean US dollars per unit, amplitude of the yearly wave."""
DEPARTMENTS = ["sales", "marketing", "support", "product"]


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The finance datasets; invoices and payments scale linearly."""
    r = rand
    n_months = (END_DATE.year - START_DATE.year) * 12 + END_DATE.month
    n_invoices = INVOICES_PER_SCALE * scale
    partners_select = f"""
SELECT (i + 1)::INTEGER AS partner_id,
       {r.pick("pt_word", "i", PARTNER_WORDS)} || ' ' || {r.pick("pt_kind", "i", PARTNER_KINDS)}
         AS name,
       {r.pick("pt_country", "i", ["Canada", "United States", "United States"])} AS country,
       CASE WHEN i % 2 = 0 THEN '{FOREIGN_ENTITY}' ELSE 'LSQ-02' END AS billing_entity,
       DATE '2018-01-01' + {r.int("pt_since", "i", 0, 1800)}::INTEGER AS partner_since
FROM range({N_PARTNERS}) t(i)"""
    rates = " UNION ALL ".join(
        f"SELECT '{code}' AS currency, {mean!r} AS mean, {amp!r} AS amp"
        for code, mean, amp in CURRENCIES
    )
    fx_select = f"""
WITH m AS (SELECT m, (DATE '{START_DATE}' + to_months(m::INTEGER))::DATE AS month
           FROM range({n_months}) t(m)), c AS ({rates})
SELECT m.month, c.currency,
       round(c.mean + c.amp * (abs((m.m + 4 * length(c.currency)) % 12 - 6) / 3.0 - 1)
             + c.amp * 0.3 * ({r.u("fx", "m.m * 10 + length(c.currency)")} - 0.5), 6)
         ::DECIMAL(12, 6) AS rate
FROM m CROSS JOIN c"""
    # Amounts are drawn per entity on one quantile grid (rank of a uniform draw within the
    # entity), so LSQ-02 (USD) and LSQ-01 (CAD) invoices have the same distribution: no mean,
    # median or scale of the amounts gives the billing currency away.
    invoices_select = f"""
WITH q AS ({quantile_days("_invoice_days", str(n_invoices))}),
d AS (
  SELECT q.i, q.day, p.partner_id, p.billing_entity, {r.u("inv_amt", "q.i")} AS draw
  FROM q JOIN finance.partners p ON p.partner_id = {r.int("inv_partner", "q.i", 1, N_PARTNERS)}
),
s AS (
  SELECT d.*, (row_number() OVER (PARTITION BY billing_entity ORDER BY draw, i) - 0.5)
              / count(*) OVER (PARTITION BY billing_entity) AS v
  FROM d
)
SELECT printf('INV-%06d', s.i + 1) AS invoice_id, s.partner_id, s.billing_entity,
       s.day AS issued_on, s.day + 30 AS due_on,
       round(800 + 14000 * s.v * s.v, 2)::DECIMAL(14, 2) AS amount,
       CASE WHEN s.day + 45 > DATE '{END_DATE}' AND {r.u("inv_open", "s.i")} < 0.6 THEN NULL
            WHEN {r.u("inv_late", "s.i")} < 0.04 THEN NULL
            ELSE least(s.day + {r.int("inv_pay", "s.i", 10, 55)}::INTEGER, DATE '{END_DATE}')
       END AS paid_on
FROM s"""
    payments_select = f"""
SELECT (row_number() OVER (ORDER BY order_id))::BIGINT AS payment_id, order_id,
       order_date + to_seconds({r.int("pay_sec", "order_id", 0, 86399)}) AS paid_at,
       {
        r.weighted(
            "pay_method",
            "order_id",
            [("card", 0.62), ("paypal", 0.2), ("invoice", 0.13), ("gift_card", 0.05)],
        )
    }
         AS method,
       amount - discount + shipping AS amount
FROM sales.orders WHERE status <> 'cancelled'"""
    budget_rows = " UNION ALL ".join(
        f"SELECT {y} AS y, {q} AS q, '{d}' AS department"
        for y in range(START_DATE.year - 1, END_DATE.year + 1)
        for q in range(1, 5)
        for d in DEPARTMENTS
    )
    budget_select = f"""
SELECT y::INTEGER AS budget_year, q::INTEGER AS budget_quarter, department,
       (round(250000 + 900000 * {r.u("budget", "y * 100 + q * 10 + length(department)")}, -3)
        * (1 + 0.2 * (y - 2022)))::DECIMAL(14, 2) AS amount
FROM ({budget_rows})"""
    return [
        DatasetSpec(
            id="finance.partners",
            domain="finance",
            kind="dimension",
            title="Wholesale partners",
            description="Outfitters that buy from Larkspur wholesale and are invoiced monthly "
            "by one of two Larkspur entities: LSQ-02 (Larkspur Supply Co., billing in US "
            "dollars; partners supplied from the US warehouses) or LSQ-01 (Larkspur Supply "
            "Canada Ltd., billing in Canadian dollars; partners supplied from the Vancouver "
            "warehouse). The entity follows the supplying warehouse, not the partner's "
            "country: both entities invoice partners in Canada and in the US.",
            owner=OWNER,
            columns={
                "partner_id": Col("Partner identifier."),
                "name": Col("Trading name."),
                "country": Col("Country of the partner."),
                "billing_entity": Col(
                    "Larkspur legal entity that invoices the partner: LSQ-02 (USD) or LSQ-01 "
                    "(CAD).",
                    glossary=("billing-entity",),
                ),
                "partner_since": Col("Start of the partnership."),
            },
            select=partners_select,
            order_by="partner_id",
            tags=("wholesale",),
        ),
        DatasetSpec(
            id="finance.fx_rates",
            domain="finance",
            kind="reference",
            title="Monthly exchange rates",
            description="Month-average exchange rates set by treasury, used for all currency "
            "conversion in reporting.",
            owner=OWNER,
            columns={
                "month": Col("First day of the month the rate applies to."),
                "currency": Col("ISO 4217 currency code."),
                "rate": Col("US dollars per one unit of the currency.", "USD per unit"),
            },
            select=fx_select,
            order_by="month, currency",
            tags=("treasury", "currency"),
            glossary=("reporting-currency",),
        ),
        days_helper("_invoice_days", r),
        DatasetSpec(
            id="finance.invoices",
            domain="finance",
            kind="fact",
            title="Wholesale invoices",
            description="Invoices issued to wholesale partners. The amount is in the billing "
            "currency of the issuing entity: LSQ-02 bills in US dollars, LSQ-01 bills in "
            "Canadian dollars (CAD). Convert to USD with finance.fx_rates (CAD rate of the "
            "month of issued_on) before adding amounts up.",
            owner=OWNER,
            columns={
                "invoice_id": Col("Invoice number."),
                "partner_id": Col("Partner invoiced (finance.partners)."),
                "billing_entity": Col(
                    "Issuing entity; decides the currency of amount.",
                    glossary=("billing-entity",),
                ),
                "issued_on": Col("Invoice date."),
                "due_on": Col("Payment due date (30 days net)."),
                "amount": Col(
                    "Invoice total in the entity's billing currency (USD for LSQ-02, CAD for "
                    "LSQ-01), in major units.",
                    "billing currency",
                    ("money",),
                    ("reporting-currency",),
                ),
                "paid_on": Col("Day the payment arrived; empty while unpaid."),
            },
            select=invoices_select,
            order_by="invoice_id",
            tags=("wholesale", "receivables"),
            glossary=("reporting-currency", "billing-entity"),
            upstream=("finance.partners",),
            transform="invoices exported from the ERP",
        ),
        DatasetSpec(
            id="finance.payments",
            domain="finance",
            kind="fact",
            title="Order payments",
            description="Payments captured for orders (cancelled orders are never charged). "
            "The amount is what the customer paid: order amount minus discount plus shipping, "
            "in integer US cents.",
            owner=OWNER,
            columns={
                "payment_id": Col("Payment identifier."),
                "order_id": Col("Order paid (sales.orders)."),
                "paid_at": Col("Capture timestamp."),
                "method": Col("card, paypal, invoice or gift_card."),
                "amount": Col(
                    "Amount captured in US cents (integer).",
                    "USD cents",
                    ("money",),
                    ("money-units",),
                ),
            },
            select=payments_select,
            order_by="payment_id",
            tags=("payments",),
            glossary=("money-units",),
            upstream=("sales.orders",),
            transform="captures from the payment processor",
        ),
        DatasetSpec(
            id="finance.budget",
            domain="finance",
            kind="reference",
            title="Departmental budget",
            description="Approved operating budget per department and quarter of the "
            "fiscal year (fiscal years start on February 1; see fiscal-calendar).",
            owner=OWNER,
            columns={
                "budget_year": Col(
                    "Fiscal year, named after the calendar year in which it starts.",
                    glossary=("fiscal-year",),
                ),
                "budget_quarter": Col(
                    "Fiscal quarter 1-4 (Q1 = February to April).", glossary=("fiscal-quarter",)
                ),
                "department": Col("Department."),
                "amount": Col("Approved budget in US dollars.", "USD", ("money",)),
            },
            select=budget_select,
            order_by="budget_year, budget_quarter, department",
            tags=("planning",),
            glossary=("fiscal-year", "fiscal-quarter"),
        ),
    ]
