"""The built-in world's global analysis policies, as data.

The generator writes :data:`POLICIES` into every built world's knowledge directory as
``policies.yaml`` (:func:`dabench.world.policy_data.dump_policies`), the same format a user
writes for an external world, and renders each policy's rule and scope on its knowledge page.
Everything downstream (``dabench tasks validate``'s policy scope checks and careless readings,
the knowledge consistency check) reads the policies from the world's ``policies.yaml`` through
:func:`dabench.world.source.open_world`, never from this module; the generator code that
writes knowledge texts (pages, glossary, curated queries) quotes the rules from here.

Each policy says what the rule is, what it applies to and what it does not apply to, which
truth SQL is in its scope (:class:`~dabench.world.policy_data.PolicyScope` cases) and which SQL
applies it: the canonical forms of :mod:`dabench.world.metrics`. A task that applies a policy
another way needs an exemption with a prompt that states it. Its careless readings rewrite
those forms to switch the policy off, and :attr:`~dabench.world.policy_data.DataPolicy.states`
/ ``queries`` name the knowledge texts and curated queries that must agree with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dabench.world.constants import (
    COLLECTOR_SWITCH,
    ERASED_ROW_STATE,
    KEY_ACCOUNT_SEGMENTS,
    KEY_ACCOUNT_TIERS,
    TEST_SIGNUP_SOURCE,
)
from dabench.world.metrics import ACTIVE, KEY_ACCOUNT, NOT_TEST, monthly_revenue_select
from dabench.world.policy_data import DataPolicy, IgnoredReading, PolicyScope, Rewrite

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

_Pair = tuple[str, str] | Rewrite
"""A rewrite: ``(pattern, replacement)`` or a :class:`Rewrite` (date shifts)."""

_TRUE = "TRUE"
_COL = r"(?:\b\w+\.)?\b"
"""An optionally qualified column name's prefix."""
_TEST_OFF: tuple[tuple[str, str], ...] = (
    (rf"{_COL}signup_source\s*(?:<>|!=)\s*'{TEST_SIGNUP_SOURCE}'", _TRUE),
    (rf"{_COL}signup_source\s*=\s*'{TEST_SIGNUP_SOURCE}'", "FALSE"),
)
_MONTHLY = r"\banalytics\.monthly_revenue\b"
_DISCOUNT = rf"\s*-\s*{_COL}discount\b"
_REFUNDS = r"\s*-\s*coalesce\(\s*(?:\w+\.)?refunded\s*,\s*0\s*\)"
_DATE = r"'(\d{4})-(\d{2})-(\d{2})'"
_KEY_SEGMENTS = " or ".join(KEY_ACCOUNT_SEGMENTS)
_KEY_TIERS = " or ".join(KEY_ACCOUNT_TIERS)

# Scope patterns: prompts are matched case-insensitively, SQL lower-cased and normalised.
_DOLLARS = r"\bus dollars\b|\busd\b|\$|\bdollars\b"
_FISCAL = r"\bfiscal\b|\bFY\s?\d{4}\b"
_REVENUE = r"\brevenue\b"
_CUSTOMER_ATTR = r"\b(where|and|or|by|on)\s+\(?(c\.)?(tier|segment|region|signup_date)\b"
_KEY_ACCOUNTS = r"\bkey accounts?\b"
_EVENT_TIME = r"(hour|year|month|date_trunc|day)\s*\(|event_ts\s*[<>=]|::date"


_AS_STORED = "takes event_ts as stored (UTC before the switch)"


def _monthly(**rules: bool) -> tuple[str, str]:
    """Rewrite ``analytics.monthly_revenue`` into the same table built with a rule off."""
    return _MONTHLY, "(" + monthly_revenue_select(**rules).strip() + ")"


def _in_list(values: tuple[str, ...]) -> str:
    return r"\(\s*" + r"\s*,\s*".join(f"'{v}'" for v in values) + r"\s*\)"


def _S(
    *,
    tables: Sequence[str] = (),
    also_tables: Sequence[str] = (),
    not_tables: Sequence[str] = (),
    prompt: str = "",
    sql: str = "",
) -> PolicyScope:
    return PolicyScope(
        tables=list(tables),
        also_tables=list(also_tables),
        not_tables=list(not_tables),
        prompt=prompt,
        sql=sql,
    )


def _ignored(id: str, reading: str, rewrites: Sequence[_Pair]) -> IgnoredReading:
    return IgnoredReading(
        id=id,
        reading=reading,
        rewrites=[
            r if isinstance(r, Rewrite) else Rewrite(pattern=r[0], replacement=r[1])
            for r in rewrites
        ],
    )


def _policy(
    id: str,
    title: str,
    rule: str,
    applies_to: Sequence[str],
    not_applies_to: Sequence[str],
    page: str,
    applied_by: Sequence[str],
    exemption: str,
    *,
    scope: Sequence[PolicyScope],
    ignored: Sequence[IgnoredReading] = (),
    states: Sequence[str] = (),
    queries: Sequence[str] = (),
    members_sql: str = "",
    term: str = "",
    defining: str = "",
) -> DataPolicy:
    return DataPolicy(
        id=id, title=title, rule=rule, page=page, applies_to=list(applies_to),
        not_applies_to=list(not_applies_to), scope=list(scope), applied_by=list(applied_by),
        exemption=exemption, ignored=list(ignored), states=list(states), queries=list(queries),
        members_sql=members_sql, term=term, defining=defining,
    )  # fmt: skip


POLICIES: tuple[DataPolicy, ...] = (
    _policy(
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
        scope=(_S(tables=SALES_FACTS), _S(tables=CUSTOMER_TABLES, not_tables=OUT_OF_SCOPE_FACTS)),
        ignored=(_ignored("test_accounts", "keeps internal test accounts", _TEST_OFF),),
        queries=("customer-count", "key-accounts"),
    ),
    _policy(
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
        scope=(_S(tables=CUSTOMER_TABLES, not_tables=SALES_FACTS + OUT_OF_SCOPE_FACTS),
               _S(tables=CUSTOMER_TABLES, also_tables=SALES_FACTS, sql=_CUSTOMER_ATTR)),
        ignored=(_ignored("erased_accounts", "keeps erased accounts", (
            (rf"{_COL}row_state\s*(?:<>|!=|<)\s*{ERASED_ROW_STATE}\b", _TRUE),)),),
        queries=("customer-count", "key-accounts"),
    ),
    _policy(
        "money_units", "Money units",
        "Money columns of sales, product, finance.payments and marketing are integer US cents.",
        ("every dollar figure computed from those columns",),
        ("analytics.* tables, core.orders and finance.budget (dollars)",
         "finance.invoices (major units of the billing currency)"),
        "money-and-units",
        (r"/ ?100(\.0*)?\b",),
        r"\bin (us )?cents\b",
        scope=(_S(tables=CENTS_TABLES, prompt=_DOLLARS),),
        ignored=(_ignored("money_units", "reports cents as dollars", (
            (r"\s*/\s*100(?:\.0*)?(?![\d.])", ""),)),),
    ),
    _policy(
        "currency", "Reporting currency",
        "Report in US dollars: LSQ-01 invoices are in CAD and are converted with the "
        "finance.fx_rates rate of the month of issued_on.",
        ("every amount of finance.invoices that is added up or compared",),
        ("invoice counts, dates and days to pay",),
        "currency-policy",
        (r"fx\.rate", r"finance\.fx_rates"),
        r"billing currency",
        scope=(_S(tables=("finance.invoices",), sql=r"\bamount\b"),),
        ignored=(_ignored("currency", "adds CAD invoice amounts as if they were US dollars", (
            (r"\s*\*\s*(?:\w+\.)?rate\b", ""),)),),
        queries=("invoices-in-usd",),
    ),
    _policy(
        "unique_events", "Unique web events",
        "The collector delivers at least once: count web events by DISTINCT event_id.",
        ("every count of marketing.web_events rows",),
        ("other tables",),
        "event-data",
        (r"distinct event_id", r"distinct on \(event_id\)"),
        r"including (redelivered )?(duplicates|copies)",
        scope=(_S(tables=("marketing.web_events",), sql=r"count\("),),
        ignored=(_ignored("unique_events", "counts redelivered copies", (
            (r"count\(\s*distinct\s+((?:\w+\.)?event_id)\s*\)", r"count(\1)"),
            (r"distinct\s+on\s*\(\s*(?:\w+\.)?event_id\s*\)\s*", ""))),),
        queries=("unique-events-per-day",),
    ),
    _policy(
        "company_local_time", "Company local time",
        f"Hours and dates of web events are reported in company local time: event_ts is UTC "
        f"before {COLLECTOR_SWITCH} and local time from then on.",
        ("every hour-of-day, date or period filter on marketing.web_events.event_ts",),
        ("received_at (used only for collector monitoring)",),
        "event-data",
        (rf"event_ts < timestamp '{COLLECTOR_SWITCH}",),
        r"\bas stored\b|\bin utc\b",
        scope=(_S(tables=("marketing.web_events",), sql=_EVENT_TIME),),
        ignored=(_ignored("company_local_time", _AS_STORED, (
            (rf"case\s+when\s+{_COL}event_ts\s*<\s*timestamp\s*'{COLLECTOR_SWITCH}[^']*'\s+"
             r"then\s+.+?\s+else\s+((?:\w+\.)?event_ts)\s+end", r"\1"),)),),
        queries=("unique-events-per-day",),
    ),
    _policy(
        "fiscal_calendar", "Fiscal calendar",
        "Fiscal years start on February 1 and are named after the calendar year they start in.",
        ("every question that says fiscal year, fiscal quarter or FY",),
        ("calendar years, quarters and months (the default when 'fiscal' is not said)",),
        "fiscal-calendar",
        (r"'\d{4}-(02|05|08|11)-01'", r"finance\.budget", r"- interval 1 month"),
        r"$^",
        scope=(_S(prompt=_FISCAL),),
        ignored=(
            _ignored("fiscal_calendar.calendar", "reads fiscal periods as calendar periods",
                    (Rewrite(pattern=_DATE, shift_months=1),)),
            _ignored("fiscal_calendar.end_year", "names fiscal years after the year they end in",
                    (Rewrite(pattern=_DATE, shift_months=12),)),
        ),
        queries=("revenue-by-fiscal-quarter",),
    ),
    _policy(
        "revenue", "Revenue policy",
        "Revenue is net: completed orders only, order amount minus discount minus refunds, "
        "shipping excluded, test accounts excluded.",
        ("every figure called revenue",),
        ("gross sales, order amounts and line sales when the question names them",),
        "revenue-policy",
        (r"status = 'completed'.*discount.*refund|discount.*refund.*status = 'completed'",
         r"from analytics\.monthly_revenue"),
        r"\bgross\b",
        scope=(_S(tables=("sales.orders", *COMPLIANT_REVENUE, "analytics.daily_sales"),
                  prompt=_REVENUE),),
        ignored=(
            _ignored("revenue.completed_only", "counts orders of every status", (
                (rf"{_COL}status\s*=\s*'completed'", _TRUE), _monthly(completed_only=False))),
            _ignored("revenue.gross", "reports the order amount before discounts and refunds", (
                (_DISCOUNT, ""), (_REFUNDS, ""), _monthly(net=False))),
            _ignored("revenue.refunds", "subtracts discounts but not refunds", (
                (_REFUNDS, ""), _monthly(refunds=False))),
            _ignored("revenue.test_accounts", "keeps the orders of internal test accounts", (
                *_TEST_OFF, _monthly(exclude_test=False))),
        ),
        queries=("revenue-by-month", "revenue-by-fiscal-quarter", "average-order-value"),
    ),
    _policy(
        "reporting_sources", "Tables for reporting",
        "Report from the source-of-truth schemas and the exact analytics aggregates; never "
        "from core.* (deprecated), staging.* (raw loads) or analytics.daily_sales (misses "
        "late-arriving orders).",
        ("every figure",),
        ("questions that name one of those tables",),
        "warehouse-guide",
        (r"$^",),
        r"core\.|staging\.|daily_sales",
        scope=(_S(tables=NOT_FOR_REPORTING),),
    ),
    _policy(
        "key_accounts", "Key accounts",
        f"A key account is a business customer (segment {_KEY_SEGMENTS}) whose current tier "
        f"is {_KEY_TIERS}; consumers never are, whatever their tier, and neither are erased "
        "or test accounts.",
        ("counts and lists of key accounts", "sales figures of key accounts"),
        (f"tiers on their own: a {_KEY_TIERS} consumer is a loyal customer, not a key account",),
        "customer-tiers",
        (f"tier in {_in_list(KEY_ACCOUNT_TIERS)}.*segment in {_in_list(KEY_ACCOUNT_SEGMENTS)}",),
        r"$^",
        scope=(_S(tables=CUSTOMER_TABLES, prompt=_KEY_ACCOUNTS),),
        ignored=(_ignored("key_accounts", "takes every customer in a top tier", (
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


def policy(policy_id: str) -> DataPolicy:
    """The policy with this id (``KeyError`` naming it otherwise)."""
    for p in POLICIES:
        if p.id == policy_id:
            return p
    raise KeyError(f"unknown policy {policy_id!r}; known: {', '.join(POLICY_IDS)}")
