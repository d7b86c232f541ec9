"""Export the world as a dbt project with MetricFlow metrics (``dabench world export --dbt DIR``).

The project reads the exported warehouse and materialises its marts apart from the world's
tables, so a build never writes to them: a DuckDB warehouse is attached read-only as
``warehouse`` and the marts go to the project's own file, ``DIR/semantic.duckdb``; a
PostgreSQL warehouse (``--warehouse DSN``, loaded by ``world export --postgres``) gets them in
its schema ``marts``, read through a SELECT-only role (:mod:`dabench.world.dbt_warehouse`).
It holds:

- ``models/sources.yml``: every warehouse table and column with the catalog's description
  (deprecated and raw tables are marked, and no model reads them);
- staging models (ephemeral) and mart tables that apply every policy of
  :mod:`dabench.world.policies` (test accounts out, erased accounts out of customer counts and
  customer-attribute breakdowns, net revenue of completed orders, cents to dollars, CAD
  invoices converted, web events de-duplicated and in company local time);
- semantic models and metrics (:data:`METRICS`) for the quantities the task suites ask about;
- ``metricflow_time_spine`` with the fiscal calendar as the custom granularities
  ``fiscal_quarter`` (``FY2024-Q1``) and ``fiscal_year`` (``FY2024``);
- ``models/docs.md``: one docs block per knowledge page, referenced from the models;
- ``profiles.yml`` (mode 0600) with two targets: ``build`` (writes the marts) and
  ``readonly`` (the default, for servers: the mart file opened with ``access_mode:
  READ_ONLY``, or the SELECT-only PostgreSQL role; a ``search_path`` so SQL names marts and
  warehouse tables as the warehouse does).

Nothing of the answer key (world.json, truth SQL, the truth lock) is written. Build it with
``dbt build --target build`` (:func:`dabench.world.dbt_env.dbt_build`); check it with
``dabench tasks metric-parity DIR`` (:mod:`dabench.tasks.metric_parity`).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dabench.errors import UserInputError
from dabench.world.constants import (
    ERASED_ROW_STATE,
    FOREIGN_CURRENCY,
    FOREIGN_ENTITY,
    TEST_SIGNUP_SOURCE,
)
from dabench.world.dbt_warehouse import (
    MART_FILE as MART_FILE,
)
from dabench.world.dbt_warehouse import (
    DbtWarehouse,
    Dialect,
    DuckDBWarehouse,
    PostgresWarehouse,
    hour_sql,
    local_ts_sql,
    resolve_warehouse,
    time_spine_sql,
)
from dabench.world.load import World
from dabench.world.metrics import KEY_ACCOUNT
from dabench.world.policies import NOT_FOR_REPORTING

PROJECT = "dabench_world"
"""The dbt project and profile name."""


def _doc_name(page_id: str) -> str:
    return re.sub(r"\W", "_", page_id)


@dataclass(frozen=True)
class Metric:
    """One metric of the project."""

    name: str
    measure: str
    description: str
    filter: str | None = None


STAGING: dict[str, str] = {
    "stg_customers": f"""
select customer_id, segment, region, tier, signup_date, signup_source, row_state,
       signup_source = '{TEST_SIGNUP_SOURCE}' as is_test,
       row_state = {ERASED_ROW_STATE} as is_erased,
       ({KEY_ACCOUNT}) as is_key_tier_segment
from {{{{ source('customers', 'customers') }}}} c""",
    "stg_orders": """
select o.order_id, o.customer_id, o.order_date, o.channel, o.status,
       o.amount, o.discount, coalesce(rf.refunded, 0) as refunded
from {{ source('sales', 'orders') }} o
left join (select order_id, sum(amount) as refunded
           from {{ source('sales', 'refunds') }} group by 1) rf using (order_id)""",
}
"""Ephemeral staging models: the raw tables with flags, nothing filtered yet."""

_CUSTOMER_ATTRS = """
       case when not c.is_erased then c.tier end as customer_tier,
       case when not c.is_erased then c.segment end as customer_segment,
       case when not c.is_erased then c.region end as customer_region,
       (c.is_key_tier_segment and not c.is_erased) as is_key_account"""

_LOCAL_TS = "__LOCAL_TS__"
_EVENT_HOUR = "__EVENT_HOUR__"
"""Placeholders in :data:`MARTS` for the dialect's own SQL (:func:`mart_sql`)."""

MARTS: dict[str, tuple[str, str, str]] = {
    "fct_orders": (
        "Orders of real customers (test accounts left out), every status, amounts in US "
        "dollars. revenue_usd is net revenue: completed orders only (empty otherwise), order "
        "amount minus discount minus refunds, shipping excluded. Customer attributes are empty "
        "for erased accounts (their orders stay in company totals).",
        "revenue test_accounts erased_accounts key_accounts money_units",
        f"""
select o.order_id, o.customer_id, o.order_date, o.channel, o.status,
       o.amount / 100.0 as amount_usd, o.discount / 100.0 as discount_usd,
       o.refunded / 100.0 as refunded_usd,
       case when o.status = 'completed' then (o.amount - o.discount - o.refunded) / 100.0
       end as revenue_usd,{_CUSTOMER_ATTRS}
from {{{{ ref('stg_orders') }}}} o join {{{{ ref('stg_customers') }}}} c using (customer_id)
where not c.is_test""",
    ),
    "fct_refunds": (
        "Refunds of orders of real customers, by refund date, in US dollars.",
        "test_accounts money_units",
        """
select f.refund_id, f.refunded_on, f.reason, f.amount / 100.0 as refund_usd
from {{ source('sales', 'refunds') }} f
join {{ ref('stg_orders') }} o using (order_id)
join {{ ref('stg_customers') }} c using (customer_id)
where not c.is_test""",
    ),
    "dim_customers": (
        "Customers: real (not test) and not erased accounts, with the key-account flag.",
        "test_accounts erased_accounts key_accounts",
        """
select customer_id, segment, region, tier, signup_date,
       is_key_tier_segment as is_key_account
from {{ ref('stg_customers') }} c
where not c.is_test and not c.is_erased""",
    ),
    "fct_web_events": (
        "Web events, one row per event_id (redelivered copies removed), with the time in "
        "company local time (UTC before the collector switch).",
        "unique_events company_local_time",
        f"""
select event_id, event_type, page, ts_local, cast(ts_local as date) as event_date,
       {_EVENT_HOUR} as event_hour
from (select e.event_id, e.event_type, e.page, {_LOCAL_TS} as ts_local,
             row_number() over (partition by e.event_id order by e.received_at) as copy
      from {{{{ source('marketing', 'web_events') }}}} e) events
where copy = 1""",
    ),
    "fct_invoices": (
        f"Wholesale invoices in US dollars: {FOREIGN_ENTITY} invoices are in "
        f"{FOREIGN_CURRENCY} and are converted with the rate of the month of issue.",
        "currency",
        f"""
select i.invoice_id, i.partner_id, i.billing_entity, i.issued_on, i.due_on, i.paid_on,
       i.paid_on is not null as is_paid,
       case when i.billing_entity = '{FOREIGN_ENTITY}' then i.amount * fx.rate
            else i.amount end as amount_usd
from {{{{ source('finance', 'invoices') }}}} i
left join {{{{ source('finance', 'fx_rates') }}}} fx
  on fx.currency = '{FOREIGN_CURRENCY}' and fx.month = date_trunc('month', i.issued_on)""",
    ),
    "fct_campaign_spend": (
        "Daily media spend per marketing campaign, in US dollars.",
        "money_units",
        """
select s.campaign_id, s.spend_date, c.channel as campaign_channel, s.spend / 100.0 as spend_usd
from {{ source('marketing', 'campaign_spend') }} s
join {{ source('marketing', 'campaigns') }} c using (campaign_id)""",
    ),
    "dim_campaigns": (
        "Marketing campaigns with their approved budget in US dollars.",
        "money_units",
        """
select campaign_id, name, channel, starts_on, ends_on, budget / 100.0 as budget_usd
from {{ source('marketing', 'campaigns') }}""",
    ),
    "dim_products": (
        "Products with list price and unit cost in US dollars.",
        "money_units",
        """
select product_id, sku, name, category_id, launched_on,
       list_price / 100.0 as list_price_usd, unit_cost / 100.0 as unit_cost_usd
from {{ source('product', 'products') }}""",
    ),
}
"""Mart tables: name -> (description, policies applied, SQL)."""

_POLICY_PAGES = {
    "test_accounts": "test-accounts",
    "erased_accounts": "customer-data-retention",
    "money_units": "money-and-units",
    "currency": "currency-policy",
    "unique_events": "event-data",
    "company_local_time": "event-data",
    "revenue": "revenue-policy",
    "key_accounts": "customer-tiers",
}
FISCAL_PAGE = "fiscal-calendar"
"""The page whose calendar the time spine's fiscal granularities implement."""


def _dim(name: str, description: str, kind: str = "categorical", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": kind, "description": description}
    if kind == "time":
        out["type_params"] = {"time_granularity": "day"}
    return {**out, **extra}


def _measure(name: str, agg: str, expr: str, description: str) -> dict[str, Any]:
    return {"name": name, "agg": agg, "expr": expr, "description": description}


_CUSTOMER_DIMS = [
    _dim("customer_tier", "Customer tier (empty for erased accounts)."),
    _dim("customer_segment", "Customer segment (empty for erased accounts)."),
    _dim("customer_region", "Customer region (empty for erased accounts)."),
    _dim("is_key_account", "Business customer (smb, enterprise) in tier gold or platinum."),
]

SEMANTIC_MODELS: list[dict[str, Any]] = [
    {
        "name": "order", "model": "ref('fct_orders')",
        "description": "Orders of real customers (every status).",
        "defaults": {"agg_time_dimension": "order_date"},
        "entities": [{"name": "order", "type": "primary", "expr": "order_id"},
                     {"name": "customer", "type": "foreign", "expr": "customer_id"}],
        "dimensions": [_dim("order_date", "Order date.", "time"),
                       _dim("channel", "Sales channel: web, store, partner."),
                       _dim("status", "Order status: completed, cancelled, returned, ...."),
                       *_CUSTOMER_DIMS],
        "measures": [
            _measure("order_count", "count", "order_id", "Number of orders."),
            _measure("order_amount_usd", "sum", "amount_usd",
                     "Order amount before discounts, US dollars."),
            _measure("order_amount_usd_avg", "average", "amount_usd",
                     "Average order amount before discounts, US dollars."),
            _measure("revenue_usd", "sum", "revenue_usd",
                     "Net revenue (completed orders; amount - discount - refunds), US dollars."),
        ],
    },
    {
        "name": "refund", "model": "ref('fct_refunds')",
        "description": "Refunds of real customers' orders.",
        "defaults": {"agg_time_dimension": "refunded_on"},
        "entities": [{"name": "refund", "type": "primary", "expr": "refund_id"}],
        "dimensions": [_dim("refunded_on", "Refund date.", "time"),
                       _dim("reason", "Refund reason.")],
        "measures": [_measure("refund_usd", "sum", "refund_usd", "Refunded amount, US dollars.")],
    },
    {
        "name": "customer", "model": "ref('dim_customers')",
        "description": "Customers (real, not erased).",
        "defaults": {"agg_time_dimension": "signup_date"},
        "entities": [{"name": "customer", "type": "primary", "expr": "customer_id"}],
        "dimensions": [_dim("signup_date", "Signup date.", "time"),
                       _dim("segment", "Segment: consumer, smb, enterprise."),
                       _dim("region", "Region."), _dim("tier", "Current tier."),
                       _dim("is_key_account", "Key account flag.")],
        "measures": [_measure("customer_count", "count", "customer_id", "Number of customers."),
                     _measure("key_account_count", "sum",
                              "case when is_key_account then 1 else 0 end",
                              "Number of key accounts.")],
    },
    {
        "name": "web_event", "model": "ref('fct_web_events')",
        "description": "Unique web events in company local time.",
        "defaults": {"agg_time_dimension": "event_date"},
        "entities": [{"name": "web_event", "type": "primary", "expr": "event_id"}],
        "dimensions": [_dim("event_date", "Event date, company local time.", "time"),
                       _dim("event_type", "page_view, add_to_cart, checkout, ...."),
                       _dim("event_hour", "Hour of day 0-23, company local time."),
                       _dim("page", "Page path.")],
        "measures": [_measure("web_event_count", "count_distinct", "event_id",
                              "Number of unique web events.")],
    },
    {
        "name": "invoice", "model": "ref('fct_invoices')",
        "description": "Wholesale invoices in US dollars.",
        "defaults": {"agg_time_dimension": "issued_on"},
        "entities": [{"name": "invoice", "type": "primary", "expr": "invoice_id"}],
        "dimensions": [_dim("issued_on", "Issue date.", "time"),
                       _dim("billing_entity", "Billing entity (LSQ-01 bills in CAD)."),
                       _dim("is_paid", "Whether the invoice has been paid.")],
        "measures": [
            _measure("invoice_usd", "sum", "amount_usd", "Invoiced amount, US dollars."),
            _measure("invoice_usd_avg", "average", "amount_usd",
                     "Average invoice amount, US dollars."),
            _measure("invoice_count", "count", "invoice_id", "Number of invoices."),
        ],
    },
    {
        "name": "campaign_spend", "model": "ref('fct_campaign_spend')",
        "description": "Daily media spend per campaign.",
        "defaults": {"agg_time_dimension": "spend_date"},
        "entities": [{"name": "campaign_spend_day", "type": "primary",
                      "expr": "campaign_id || '-' || spend_date"}],
        "dimensions": [_dim("spend_date", "Spend date.", "time"),
                       _dim("campaign_channel", "Campaign channel: social, search, ....")],
        "measures": [_measure("spend_usd", "sum", "spend_usd", "Media spend, US dollars.")],
    },
    {
        "name": "campaign", "model": "ref('dim_campaigns')",
        "description": "Marketing campaigns.",
        "defaults": {"agg_time_dimension": "starts_on"},
        "entities": [{"name": "campaign", "type": "primary", "expr": "campaign_id"}],
        "dimensions": [_dim("starts_on", "Campaign start date.", "time"),
                       _dim("channel", "Campaign channel.")],
        "measures": [_measure("budget_usd", "sum", "budget_usd",
                              "Approved budget, US dollars.")],
    },
    {
        "name": "product", "model": "ref('dim_products')",
        "description": "Products.",
        "defaults": {"agg_time_dimension": "launched_on"},
        "entities": [{"name": "product", "type": "primary", "expr": "product_id"}],
        "dimensions": [_dim("launched_on", "Launch date.", "time")],
        "measures": [_measure("list_price_usd_avg", "average", "list_price_usd",
                              "Average list price, US dollars."),
                     _measure("product_count", "count", "product_id", "Number of products.")],
    },
]  # fmt: skip
"""MetricFlow semantic models over the marts."""

_COMPLETED = "{{ Dimension('order__status') }} = 'completed'"

METRICS: tuple[Metric, ...] = (
    Metric("revenue", "revenue_usd", "Net revenue in US dollars: completed orders only, "
           "order amount minus discount minus refunds, shipping excluded, test accounts "
           "excluded (the revenue policy)."),
    Metric("orders", "order_count", "Orders of any status, test accounts excluded."),
    Metric("completed_orders", "order_count", "Completed orders, test accounts excluded.",
           _COMPLETED),
    Metric("order_amount", "order_amount_usd", "Order amount before discounts, US dollars, "
           "orders of any status, test accounts excluded."),
    Metric("average_order_amount", "order_amount_usd_avg", "Average order amount before "
           "discounts of orders of any status, US dollars, test accounts excluded."),
    Metric("average_completed_order_amount", "order_amount_usd_avg", "Average order amount "
           "before discounts of completed orders, US dollars, test accounts excluded.",
           _COMPLETED),
    Metric("refunds", "refund_usd", "Money refunded to customers, US dollars, by refund date, "
           "test accounts excluded."),
    Metric("customers", "customer_count", "Customers: test accounts and erased accounts "
           "excluded."),
    Metric("key_accounts", "key_account_count", "Key accounts: business customers (smb, "
           "enterprise) in tier gold or platinum, not erased, not test accounts."),
    Metric("web_events", "web_event_count", "Unique web events (redelivered copies counted "
           "once), dated in company local time."),
    Metric("invoiced_amount", "invoice_usd", "Amount invoiced to wholesale partners, US "
           "dollars (CAD invoices converted at the month's rate)."),
    Metric("average_invoice_amount", "invoice_usd_avg", "Average wholesale invoice amount, US "
           "dollars (CAD invoices converted)."),
    Metric("invoices", "invoice_count", "Number of wholesale invoices."),
    Metric("campaign_spend", "spend_usd", "Marketing media spend, US dollars."),
    Metric("campaign_budget", "budget_usd", "Approved campaign budgets, US dollars, by the "
           "campaign's start date."),
    Metric("average_list_price", "list_price_usd_avg", "Average product list price, US "
           "dollars."),
    Metric("products", "product_count", "Number of products."),
)  # fmt: skip
"""Every metric of the project (simple metrics over one measure each)."""


def mart_sql(name: str, dialect: Dialect) -> str:
    """The SQL of mart ``name`` in ``dialect`` (the placeholders filled in)."""
    sql = MARTS[name][2]
    return sql.replace(_LOCAL_TS, local_ts_sql("e.event_ts", dialect)).replace(
        _EVENT_HOUR, hour_sql("ts_local", dialect)
    )


def _doc_refs(pages: Iterable[str]) -> str:
    return "\n\n".join(f"{{{{ doc('{_doc_name(page)}') }}}}" for page in dict.fromkeys(pages))


def _pages_by_table(world: World) -> dict[str, list[str]]:
    """``schema.table`` -> the knowledge pages that name it (or one of its columns) among
    their related datasets."""
    out: dict[str, list[str]] = {}
    for page in world.pages:
        for related in page.related_datasets:
            out.setdefault(".".join(related.lower().split(".")[:2]), []).append(page.id)
    return out


def _sources(world: World, database: str | None) -> dict[str, Any]:
    by_schema: dict[str, list[dict[str, Any]]] = {}
    pages = _pages_by_table(world)
    for ds in world.catalog.datasets:
        schema, table = ds.id.split(".", 1)
        text = ds.description
        if ds.deprecated:
            text += f" DEPRECATED: use {ds.replaced_by}." if ds.replaced_by else " DEPRECATED."
        if ds.id in NOT_FOR_REPORTING:
            text += " Not for reporting (no model reads it)."
        if pages.get(ds.id.lower()):
            text += "\n\nKnowledge pages:\n\n" + _doc_refs(pages[ds.id.lower()])
        columns = [
            {"name": c.name, "description": c.description + (f" Unit: {c.unit}." if c.unit else "")}
            for c in ds.columns
        ]
        by_schema.setdefault(schema, []).append(
            {"name": table, "description": text, "columns": columns}
        )
    return {
        "version": 2,
        "sources": [
            {
                "name": s,
                **({"database": database} if database else {}),
                "schema": s,
                "tables": tables,
            }
            for s, tables in by_schema.items()
        ],
    }


def _docs(world: World) -> str:
    blocks = []
    for page in world.pages:
        body = page.body.replace("{%", "{ %").replace("{{", "{ {")
        name = _doc_name(page.id)
        body = body.strip()
        if not body.startswith("# "):  # the page's own heading, else its title
            body = f"# {page.title}\n\n{body}"
        blocks.append(f"{{% docs {name} %}}\n{body}\n{{% enddocs %}}\n")
    return "\n".join(blocks)


def _models_yml(world: World) -> dict[str, Any]:
    pages = {p.id for p in world.pages}
    models: list[dict[str, Any]] = []
    for name, (description, applied, _sql) in MARTS.items():
        refs = _doc_refs(page for p in applied.split() if (page := _POLICY_PAGES[p]) in pages)
        text = description + ("\n\nPolicies applied:\n\n" + refs if refs else "")
        models.append({"name": name, "description": text})
    spine = (
        "Days with the fiscal calendar (fiscal years start on February 1 and are named after "
        "the calendar year they start in)."
    )
    if FISCAL_PAGE in pages:
        spine += "\n\nPolicy applied:\n\n" + _doc_refs([FISCAL_PAGE])
    models.append(
        {
            "name": "metricflow_time_spine",
            "description": spine,
            "time_spine": {
                "standard_granularity_column": "date_day",
                "custom_granularities": [
                    {"name": "fiscal_quarter", "column_name": "fiscal_quarter"},
                    {"name": "fiscal_year", "column_name": "fiscal_year"},
                ],
            },
            "columns": [
                {"name": "date_day", "granularity": "day"},
                {"name": "fiscal_quarter", "description": "e.g. FY2024-Q1 (Feb-Apr 2024)."},
                {"name": "fiscal_year", "description": "e.g. FY2024 (Feb 2024 - Jan 2025)."},
            ],
        }
    )
    return {"version": 2, "models": models}


def _semantic_yml() -> dict[str, Any]:
    semantic = list(SEMANTIC_MODELS)
    metrics: list[dict[str, Any]] = []
    for m in METRICS:
        entry: dict[str, Any] = {
            "name": m.name, "label": m.name.replace("_", " "), "description": m.description,
            "type": "simple", "type_params": {"measure": m.measure},
        }  # fmt: skip
        if m.filter:
            entry["filter"] = m.filter
        metrics.append(entry)
    return {"semantic_models": semantic, "metrics": metrics}


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True))


def export_dbt(
    world: World,
    out: Path,
    *,
    warehouse: str | Path | DbtWarehouse | None = None,
    reader: str | None = None,
    force: bool = False,
) -> Path:
    """Write the dbt project for ``world`` into ``out`` (see the module docstring), reading
    ``warehouse``: a DuckDB file (default: the world's own) or a PostgreSQL DSN holding the
    world, read through ``reader`` (a SELECT-only DSN; :mod:`dabench.world.dbt_warehouse`).
    Returns ``out``."""
    out = out.resolve()
    if out.exists() and not force:
        raise UserInputError(f"--dbt {out} exists; pass --force to replace it")
    wh = (
        warehouse
        if isinstance(warehouse, DuckDBWarehouse | PostgresWarehouse)
        else resolve_warehouse(world, warehouse, reader)
    )
    if out.exists():
        shutil.rmtree(out)
    models = out / "models"
    extra = wh.project_config()
    run_end = extra.pop("on-run-end", None)
    _dump(
        out / "dbt_project.yml",
        {
            "name": PROJECT, "version": "1.0.0", "config-version": 2, "profile": PROJECT,
            "model-paths": ["models"],
            "models": {PROJECT: {"staging": {"+materialized": "ephemeral"},
                                 "+materialized": "table",
                                 **{f"+{k}": v for k, v in extra.items()}}},
            **({"on-run-end": run_end} if run_end else {}),
            "flags": {"send_anonymous_usage_stats": False},
        },
    )  # fmt: skip
    schemas = sorted({ds.id.split(".", 1)[0] for ds in world.catalog.datasets})
    profiles = out / "profiles.yml"
    _dump(profiles, {})
    profiles.chmod(0o600)  # before the passwords go in
    _dump(profiles, wh.profiles(PROJECT, out, schemas))
    _dump(models / "sources.yml", _sources(world, wh.source_database()))
    for name, sql in STAGING.items():
        (models / "staging").mkdir(parents=True, exist_ok=True)
        (models / "staging" / f"{name}.sql").write_text(sql.strip() + "\n")
    for name in MARTS:
        (models / "marts").mkdir(parents=True, exist_ok=True)
        (models / "marts" / f"{name}.sql").write_text(mart_sql(name, wh.dialect).strip() + "\n")
    spine = time_spine_sql(wh.dialect)
    (models / "metricflow_time_spine.sql").write_text(spine.strip() + "\n")
    _dump(models / "models.yml", _models_yml(world))
    _dump(models / "semantic.yml", _semantic_yml())
    (models / "docs.md").write_text(_docs(world))
    (out / ".gitignore").write_text("target/\nlogs/\n*.duckdb\n*.wal\nprofiles.yml\n")
    return out


def run_dbt_export(
    world: World,
    out: Path,
    *,
    warehouse: str | None = None,
    reader: str | None = None,
    force: bool = False,
) -> None:
    """``dabench world export --dbt DIR``: write the project, build it with dbt (the dbt venv
    is installed under the cache on first use) and print what was made."""
    import time

    from dabench.listing import stdout_console
    from dabench.world.dbt_env import dbt_build

    t0 = time.perf_counter()
    wh = resolve_warehouse(world, warehouse, reader)
    project = export_dbt(world, out, warehouse=wh, force=force)
    dbt_build(project)
    stdout_console().print(
        f"exported world {world.world_hash[:16]} as a dbt project to {project} over "
        f"{wh.describe()}: "
        f"{len(world.catalog.datasets)} sources, {len(STAGING) + len(MARTS) + 1} models, "
        f"{len(SEMANTIC_MODELS)} semantic models, {len(METRICS)} metrics, built in "
        f"{time.perf_counter() - t0:.1f}s\nverify: dabench tasks validate --warehouse {project}",
        highlight=False,
        soft_wrap=True,
    )
