"""The world's global analysis policies as data, and a check that a task's SQL applies them.

Each :class:`Policy` says what the rule is, what it applies to and what it does not apply to
(the knowledge pages render that scope from here), and how to recognise SQL in its scope and
SQL that applies it. :func:`policy_issues` is what ``dabench tasks validate`` runs on every
task's truth SQL: a task in a policy's scope must apply the policy, or be exempt from it and
say so in its prompt (an exemption is the tag ``policy-exempt:<policy id>``).

The check is syntactic (regular expressions over normalised SQL): it recognises the canonical
forms of :mod:`dabench.world.metrics`. A task that applies a policy another way needs an
exemption with a prompt that states it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dabench.world.constants import (
    COLLECTOR_SWITCH,
    ERASED_ROW_STATE,
    TEST_SIGNUP_SOURCE,
)

EXEMPT_TAG = "policy-exempt:"
"""Task tag prefix that exempts a task from one policy (its prompt must say so)."""

SALES_FACTS = ("sales.orders", "sales.order_lines", "sales.refunds", "finance.payments")
CUSTOMER_TABLES = (
    "customers.customers", "customers.tier_history", "core.customers", "analytics.customer_360",
)  # fmt: skip
OUT_OF_SCOPE_FACTS = (
    "support.tickets", "support.csat_responses", "marketing.web_events", "marketing.email_sends",
)  # fmt: skip
CENTS_TABLES = (
    "sales.orders", "sales.order_lines", "sales.refunds", "finance.payments", "product.products",
    "marketing.campaigns", "marketing.campaign_spend", "staging.orders_raw",
)  # fmt: skip
NOT_FOR_REPORTING = ("core.orders", "core.customers", "staging.orders_raw",
                     "staging.customers_raw", "analytics.daily_sales")  # fmt: skip
COMPLIANT_REVENUE = ("analytics.monthly_revenue",)


@dataclass(frozen=True)
class Policy:
    """One global analysis policy and its scope."""

    id: str
    title: str
    rule: str
    """The rule in one or two sentences."""
    applies_to: tuple[str, ...]
    """What the rule covers, in words (rendered on the knowledge page)."""
    not_applies_to: tuple[str, ...]
    """What it explicitly does not cover."""
    page: str
    """Knowledge page that states it."""
    applied_by: tuple[str, ...]
    """Regular expressions (over lower-cased, whitespace-normalised SQL): SQL in scope must
    match one of them."""
    exemption: str
    """Regular expression the prompt of an exempt task must match."""


POLICIES: tuple[Policy, ...] = (
    Policy(
        "test_accounts", "Internal test accounts",
        f"Accounts with customers.customers.signup_source = '{TEST_SIGNUP_SOURCE}' are internal "
        "QA test accounts; they and everything they did are left out.",
        ("orders, order lines, refunds and payments of test accounts",
         "every revenue, order, unit and payment figure",
         "customer counts, customer lists and breakdowns by customer attributes"),
        ("support tickets and survey responses", "marketing e-mail sends and web events"),
        "test-accounts",
        (rf"signup_source (<>|!=) '{TEST_SIGNUP_SOURCE}'",
         rf"signup_source = '{TEST_SIGNUP_SOURCE}'"),
        r"includ\w* (internal )?test accounts",
    ),
    Policy(
        "erased_accounts", "Erased (soft-deleted) accounts",
        f"customers.customers.row_state = {ERASED_ROW_STATE} marks an account erased on request; "
        "it is not a customer any more.",
        ("customer counts and customer lists",
         "breakdowns of any sales figure by a customer attribute (tier, segment, region, "
         "key accounts, signup date)"),
        ("company totals: the orders of erased accounts stay in revenue, order and unit "
         "totals that are not broken down by customer attributes",
         "support tickets, survey responses, e-mail sends and web events"),
        "customer-data-retention",
        (rf"row_state (<>|!=) {ERASED_ROW_STATE}\b", rf"row_state < {ERASED_ROW_STATE}\b"),
        r"includ\w* erased",
    ),
    Policy(
        "money_units", "Money units",
        "Money columns of sales, product, finance.payments and marketing are integer US cents.",
        ("every dollar figure computed from those columns",),
        ("analytics.* tables, core.orders and finance.budget (dollars)",
         "finance.invoices (major units of the billing currency)"),
        "money-and-units",
        (r"/ ?100(\.0*)?\b",),
        r"\bin (us )?cents\b",
    ),
    Policy(
        "currency", "Reporting currency",
        "Report in US dollars: LSQ-01 invoices are in CAD and are converted with the "
        "finance.fx_rates rate of the month of issued_on.",
        ("every amount of finance.invoices that is added up or compared",),
        ("invoice counts, dates and days to pay",),
        "currency-policy",
        (r"fx\.rate", r"finance\.fx_rates"),
        r"billing currency",
    ),
    Policy(
        "unique_events", "Unique web events",
        "The collector delivers at least once: count web events by DISTINCT event_id.",
        ("every count of marketing.web_events rows",),
        ("other tables",),
        "event-data",
        (r"distinct event_id", r"distinct on \(event_id\)"),
        r"including (redelivered )?(duplicates|copies)",
    ),
    Policy(
        "company_local_time", "Company local time",
        f"Hours and dates of web events are reported in company local time: event_ts is UTC "
        f"before {COLLECTOR_SWITCH} and local time from then on.",
        ("every hour-of-day, date or period filter on marketing.web_events.event_ts",),
        ("received_at (used only for collector monitoring)",),
        "event-data",
        (rf"event_ts < timestamp '{COLLECTOR_SWITCH}",),
        r"\bas stored\b|\bin utc\b",
    ),
    Policy(
        "fiscal_calendar", "Fiscal calendar",
        "Fiscal years start on February 1 and are named after the calendar year they start in.",
        ("every question that says fiscal year, fiscal quarter or FY",),
        ("calendar years, quarters and months (the default when 'fiscal' is not said)",),
        "fiscal-calendar",
        (r"'\d{4}-(02|05|08|11)-01'", r"finance\.budget"),
        r"$^",
    ),
    Policy(
        "revenue", "Revenue policy",
        "Revenue is net: completed orders only, order amount minus discount minus refunds, "
        "shipping excluded, test accounts excluded.",
        ("every figure called revenue",),
        ("gross sales, order amounts and line sales when the question names them",),
        "revenue-policy",
        (r"status = 'completed'.*discount.*refund|discount.*refund.*status = 'completed'",
         r"from analytics\.monthly_revenue"),
        r"\bgross\b",
    ),
    Policy(
        "reporting_sources", "Tables for reporting",
        "Report from the source-of-truth schemas and the exact analytics aggregates; never "
        "from core.* (deprecated), staging.* (raw loads) or analytics.daily_sales (misses "
        "late-arriving orders).",
        ("every figure",),
        ("questions that name one of those tables",),
        "warehouse-guide",
        (r"$^",),
        r"core\.|staging\.|daily_sales",
    ),
)  # fmt: skip
"""Every global analysis policy of the world."""

POLICY_IDS = tuple(p.id for p in POLICIES)


def policy(policy_id: str) -> Policy:
    """The policy with this id (``KeyError`` naming it otherwise)."""
    for p in POLICIES:
        if p.id == policy_id:
            return p
    raise KeyError(f"unknown policy {policy_id!r}; known: {', '.join(POLICY_IDS)}")


def scope_markdown(policy_id: str) -> str:
    """The "Scope" paragraph a knowledge page shows for a policy."""
    p = policy(policy_id)
    applies = "; ".join(p.applies_to)
    not_applies = "; ".join(p.not_applies_to)
    return f"**Scope.** Applies to: {applies}. Does **not** apply to: {not_applies}."


def normalise_sql(sql: str) -> str:
    """Lower case, one space between tokens, no spaces inside parentheses."""
    text = " ".join(sql.lower().split())
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


def tables_read(sql: str) -> set[str]:
    """Schema-qualified tables after FROM or JOIN."""
    return set(re.findall(r"\b(?:from|join)\s+([a-z_]+\.[a-z_0-9]+)", normalise_sql(sql)))


_DOLLARS = re.compile(r"\bus dollars\b|\busd\b|\$|\bdollars\b", re.IGNORECASE)
_FISCAL = re.compile(r"\bfiscal\b|\bFY\s?\d{4}\b", re.IGNORECASE)
_REVENUE = re.compile(r"\brevenue\b", re.IGNORECASE)
_CUSTOMER_ATTR = re.compile(
    r"\b(where|and|or|by|on)\s+\(?(c\.)?(tier|segment|region|signup_date)\b"
)
_EVENT_TIME = re.compile(r"(hour|year|month|date_trunc|day)\s*\(|event_ts\s*[<>=]|::date")


def in_scope(p: Policy, sql: str, prompt: str) -> bool:
    """Whether a truth SQL (for this prompt) falls in the policy's scope."""
    norm = normalise_sql(sql)
    tables = tables_read(sql)
    sales = bool(tables & set(SALES_FACTS))
    customers = bool(tables & set(CUSTOMER_TABLES))
    other_facts = bool(tables & set(OUT_OF_SCOPE_FACTS))
    if p.id == "test_accounts":
        return sales or (customers and not other_facts)
    if p.id == "erased_accounts":
        if not customers:
            return False
        if not sales and not other_facts:
            return True
        return sales and bool(_CUSTOMER_ATTR.search(norm))
    if p.id == "money_units":
        return bool(tables & set(CENTS_TABLES)) and bool(_DOLLARS.search(prompt))
    if p.id == "currency":
        return "finance.invoices" in tables and bool(re.search(r"\bamount\b", norm))
    if p.id == "unique_events":
        return "marketing.web_events" in tables and "count(" in norm
    if p.id == "company_local_time":
        return "marketing.web_events" in tables and bool(_EVENT_TIME.search(norm))
    if p.id == "fiscal_calendar":
        return bool(_FISCAL.search(prompt))
    if p.id == "revenue":
        return bool(_REVENUE.search(prompt)) and bool(
            tables & {"sales.orders", *COMPLIANT_REVENUE, "analytics.daily_sales"}
        )
    if p.id == "reporting_sources":
        return bool(tables & set(NOT_FOR_REPORTING))
    raise KeyError(p.id)  # pragma: no cover - every policy is handled above


def applies(p: Policy, sql: str) -> bool:
    """Whether the SQL applies the policy (matches one of its canonical forms)."""
    norm = normalise_sql(sql)
    return any(re.search(rx, norm) for rx in p.applied_by)


def policy_issues(sql: str, prompt: str, tags: list[str] | tuple[str, ...]) -> list[str]:
    """Every policy a truth SQL is in scope of but does not apply, as one message each.

    A tag ``policy-exempt:<id>`` exempts the task when its prompt states the exemption
    (matches the policy's ``exemption`` pattern); an exemption the prompt does not state, or
    one for an unknown policy, is itself an issue.
    """
    exempt = {t[len(EXEMPT_TAG) :] for t in tags if t.startswith(EXEMPT_TAG)}
    issues: list[str] = []
    for pid in sorted(exempt - set(POLICY_IDS)):
        issues.append(f"unknown policy in tag {EXEMPT_TAG}{pid}")
    for p in POLICIES:
        if p.id in exempt:
            if not re.search(p.exemption, prompt, re.IGNORECASE):
                issues.append(
                    f"exempt from policy {p.id!r} but the prompt does not say so "
                    f"(expected it to match /{p.exemption}/)"
                )
            continue
        if in_scope(p, sql, prompt) and not applies(p, sql):
            issues.append(
                f"truth SQL does not apply policy {p.id!r} ({p.title}, knowledge page "
                f"{p.page}): {p.rule}"
            )
    return issues
