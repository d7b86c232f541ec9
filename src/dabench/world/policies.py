"""The world's global analysis policies as data, and a check that a task's SQL applies them.

Each :class:`Policy` says what the rule is, what it applies to and what it does not apply to
(the knowledge pages render the rule and that scope from here), and how to recognise SQL in its
scope and SQL that applies it. :func:`policy_issues` is what ``dabench tasks validate`` runs on
every task's truth SQL: a task in a policy's scope must apply the policy, or be exempt from it
and say so in its prompt (an exemption is the tag ``policy-exempt:<policy id>``).

The check is syntactic (regular expressions over normalised SQL): it recognises the canonical
forms of :mod:`dabench.world.metrics`. A task that applies a policy another way needs an
exemption with a prompt that states it.

Each policy is also executable the other way: :class:`Ignored` readings rewrite the canonical
forms to switch the policy off (:func:`ignore`), which gives the answer of an analyst who
ignores it (``dabench tasks validate`` requires it to fall outside the task's tolerance), and
:data:`Policy.states` / :data:`Policy.queries` name the knowledge-layer texts and curated
queries that must agree with it (:mod:`dabench.world.consistency`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

from dabench.world.constants import (
    COLLECTOR_SWITCH,
    ERASED_ROW_STATE,
    KEY_ACCOUNT_SEGMENTS,
    KEY_ACCOUNT_TIERS,
    TEST_SIGNUP_SOURCE,
)
from dabench.world.metrics import ACTIVE, KEY_ACCOUNT, NOT_TEST, monthly_revenue_select

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


Replacement = str | Callable[[re.Match[str]], str]
"""What a rewrite puts in place of a match (``re.sub`` semantics)."""


@dataclass(frozen=True)
class Ignored:
    """One careless reading of a policy: the policy switched off, as rewrites of its SQL."""

    id: str
    """Variant id (``<policy id>`` or ``<policy id>.<reading>``), unique over all policies."""
    reading: str
    """What the careless analyst does, in words."""
    rewrites: tuple[tuple[str, Replacement], ...]
    """(regular expression, replacement) pairs applied in order, case-insensitively, to the
    SQL as written; they undo the canonical forms of :mod:`dabench.world.metrics`."""


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
    ignored: tuple[Ignored, ...] = ()
    """The careless readings (the policy switched off), one variant each."""
    states: tuple[str, ...] = ()
    """Knowledge-layer texts besides :attr:`page` that must state :attr:`rule` verbatim
    (``catalog:<dataset>[.<column>]``, ``glossary:<id>``, ``query:<id>``, ``knowledge:<id>``)."""
    queries: tuple[str, ...] = ()
    """Curated queries whose SQL must apply the policy."""
    members_sql: str = ""
    """For a definition: SQL whose first column lists its members; a curated query in
    :attr:`queries` must return the same set in its first column."""
    term: str = ""
    """Regular expression of the defined term; any knowledge text that matches it and
    :attr:`defining` must state :attr:`rule` (no text may give another definition)."""
    defining: str = ""
    """Regular expression of the words a definition of :attr:`term` uses."""


_TRUE = "TRUE"
_FLAG = re.IGNORECASE | re.DOTALL
_COL = r"(?:\b\w+\.)?\b"
"""An optionally qualified column name's prefix."""
_TEST_OFF: tuple[tuple[str, Replacement], ...] = (
    (rf"{_COL}signup_source\s*(?:<>|!=)\s*'{TEST_SIGNUP_SOURCE}'", _TRUE),
    (rf"{_COL}signup_source\s*=\s*'{TEST_SIGNUP_SOURCE}'", "FALSE"),
)
_MONTHLY = r"\banalytics\.monthly_revenue\b"
_DISCOUNT = rf"\s*-\s*{_COL}discount\b"
_REFUNDS = r"\s*-\s*coalesce\(\s*(?:\w+\.)?refunded\s*,\s*0\s*\)"


def _monthly(**rules: bool) -> tuple[str, Replacement]:
    """Rewrite ``analytics.monthly_revenue`` into the same table built with a rule off."""
    return _MONTHLY, "(" + monthly_revenue_select(**rules).strip() + ")"


def _shift_dates(months: int) -> Callable[[re.Match[str]], str]:
    """Replace a date literal by the same date ``months`` earlier (a month end stays one)."""

    def shift(m: re.Match[str]) -> str:
        day = dt.date(int(m[1]), int(m[2]), int(m[3]))
        index = day.year * 12 + day.month - 1 - months
        year, month = divmod(index, 12)
        last = calendar.monthrange(year, month + 1)[1]
        month_end = day.day == calendar.monthrange(day.year, day.month)[1]
        return f"'{dt.date(year, month + 1, last if month_end else min(day.day, last))}'"

    return shift


_DATE = r"'(\d{4})-(\d{2})-(\d{2})'"
_KEY_SEGMENTS = " or ".join(KEY_ACCOUNT_SEGMENTS)
_KEY_TIERS = " or ".join(KEY_ACCOUNT_TIERS)


def _in_list(values: tuple[str, ...]) -> str:
    return r"\(\s*" + r"\s*,\s*".join(f"'{v}'" for v in values) + r"\s*\)"


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
        ignored=(Ignored("test_accounts", "keeps internal test accounts", _TEST_OFF),),
        queries=("customer-count", "key-accounts"),
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
        ignored=(Ignored("erased_accounts", "keeps erased accounts", (
            (rf"{_COL}row_state\s*(?:<>|!=|<)\s*{ERASED_ROW_STATE}\b", _TRUE),)),),
        queries=("customer-count", "key-accounts"),
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
        ignored=(Ignored("money_units", "reports cents as dollars", (
            (r"\s*/\s*100(?:\.0*)?(?![\d.])", ""),)),),
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
        ignored=(Ignored("currency", "adds CAD invoice amounts as if they were US dollars", (
            (r"\s*\*\s*(?:\w+\.)?rate\b", ""),)),),
        queries=("invoices-in-usd",),
    ),
    Policy(
        "unique_events", "Unique web events",
        "The collector delivers at least once: count web events by DISTINCT event_id.",
        ("every count of marketing.web_events rows",),
        ("other tables",),
        "event-data",
        (r"distinct event_id", r"distinct on \(event_id\)"),
        r"including (redelivered )?(duplicates|copies)",
        ignored=(Ignored("unique_events", "counts redelivered copies", (
            (r"count\(\s*distinct\s+((?:\w+\.)?event_id)\s*\)", r"count(\1)"),
            (r"distinct\s+on\s*\(\s*(?:\w+\.)?event_id\s*\)\s*", ""))),),
        queries=("unique-events-per-day",),
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
        ignored=(Ignored("company_local_time", "takes event_ts as stored (UTC before the switch)", (
            (rf"case\s+when\s+{_COL}event_ts\s*<\s*timestamp\s*'{COLLECTOR_SWITCH}[^']*'\s+"
             r"then\s+.+?\s+else\s+((?:\w+\.)?event_ts)\s+end", r"\1"),)),),
        queries=("unique-events-per-day",),
    ),
    Policy(
        "fiscal_calendar", "Fiscal calendar",
        "Fiscal years start on February 1 and are named after the calendar year they start in.",
        ("every question that says fiscal year, fiscal quarter or FY",),
        ("calendar years, quarters and months (the default when 'fiscal' is not said)",),
        "fiscal-calendar",
        (r"'\d{4}-(02|05|08|11)-01'", r"finance\.budget", r"- interval 1 month"),
        r"$^",
        ignored=(
            Ignored("fiscal_calendar.calendar", "reads fiscal periods as calendar periods",
                    ((_DATE, _shift_dates(1)),)),
            Ignored("fiscal_calendar.end_year", "names fiscal years after the year they end in",
                    ((_DATE, _shift_dates(12)),)),
        ),
        queries=("revenue-by-fiscal-quarter",),
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
        ignored=(
            Ignored("revenue.completed_only", "counts orders of every status", (
                (rf"{_COL}status\s*=\s*'completed'", _TRUE), _monthly(completed_only=False))),
            Ignored("revenue.gross", "reports the order amount before discounts and refunds", (
                (_DISCOUNT, ""), (_REFUNDS, ""), _monthly(net=False))),
            Ignored("revenue.refunds", "subtracts discounts but not refunds", (
                (_REFUNDS, ""), _monthly(refunds=False))),
            Ignored("revenue.test_accounts", "keeps the orders of internal test accounts", (
                *_TEST_OFF, _monthly(exclude_test=False))),
        ),
        queries=("revenue-by-month", "revenue-by-fiscal-quarter", "average-order-value"),
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
    Policy(
        "key_accounts", "Key accounts",
        f"A key account is a business customer (segment {_KEY_SEGMENTS}) whose current tier "
        f"is {_KEY_TIERS}; consumers never are, whatever their tier, and neither are erased "
        "or test accounts.",
        ("counts and lists of key accounts", "sales figures of key accounts"),
        (f"tiers on their own: a {_KEY_TIERS} consumer is a loyal customer, not a key account",),
        "customer-tiers",
        (f"tier in {_in_list(KEY_ACCOUNT_TIERS)}.*segment in {_in_list(KEY_ACCOUNT_SEGMENTS)}",),
        r"$^",
        ignored=(Ignored("key_accounts", "takes every customer in a top tier", (
            (rf"{_COL}segment\s+in\s*{_in_list(KEY_ACCOUNT_SEGMENTS)}", _TRUE),)),),
        states=("catalog:customers.customers.tier", "glossary:key-account", "query:key-accounts"),
        queries=("key-accounts",),
        members_sql=(f"SELECT customer_id FROM customers.customers c "
                     f"WHERE {KEY_ACCOUNT} AND {ACTIVE} AND {NOT_TEST}"),
        term=r"\bkey accounts?\b",
        defining=r"\b(" + "|".join(KEY_ACCOUNT_TIERS + KEY_ACCOUNT_SEGMENTS) + r")\b",
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
    """The "Rule" and "Scope" paragraphs a knowledge page shows for a policy."""
    p = policy(policy_id)
    applies = "; ".join(p.applies_to)
    not_applies = "; ".join(p.not_applies_to)
    return (
        f"**Rule.** {p.rule}\n\n"
        f"**Scope.** Applies to: {applies}. Does **not** apply to: {not_applies}."
    )


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
_KEY_ACCOUNTS = re.compile(r"\bkey accounts?\b", re.IGNORECASE)
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
    if p.id == "key_accounts":
        return customers and bool(_KEY_ACCOUNTS.search(prompt))
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


def ignore(reading: Ignored, sql: str) -> str | None:
    """``sql`` with the policy switched off as ``reading`` says, or ``None`` when none of its
    canonical forms occurs in ``sql`` (the variant cannot be derived by rewriting)."""
    out = sql
    for pattern, replacement in reading.rewrites:
        out = re.sub(pattern, replacement, out, flags=_FLAG)
    return None if out == sql else out


def ignored_readings(
    sql: str, prompt: str, tags: list[str] | tuple[str, ...]
) -> list[tuple[Policy, Ignored, str | None]]:
    """Every careless reading of the policies a truth SQL is in scope of and applies (not the
    ones it is exempt from), with the rewritten SQL (``None`` when it cannot be derived)."""
    exempt = {t[len(EXEMPT_TAG) :] for t in tags if t.startswith(EXEMPT_TAG)}
    return [
        (p, reading, ignore(reading, sql))
        for p in POLICIES
        if p.id not in exempt and in_scope(p, sql, prompt) and applies(p, sql)
        for reading in p.ignored
    ]
