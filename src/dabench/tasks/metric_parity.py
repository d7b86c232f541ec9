"""Which tasks a metric of the dbt export answers, and MetricFlow's parity with the gold.

:data:`METRIC_QUERIES` maps a task id to the MetricFlow query that answers it (metrics, group
by, where, order, limit, and the column holding the answer). It is the semantic-layer side of
the answer key: the oracle and the probe use it on a target that plays the ``metric`` role,
and :func:`parity` runs every query with MetricFlow (in the dbt venv, one process for all
queries) and compares the answer with the task's gold (its truth SQL on the world's
warehouse). A task is *metric-expressible* when it is in the map; :func:`coverage` counts
them per suite.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dabench.tasks.model import Task
from dabench.world.dbt_env import DbtToolError, dbt_venv
from dabench.world.load import World

PARITY_REL = 1e-9
"""Relative difference under which MetricFlow's answer equals the gold (float rounding)."""


class MetricQuery(BaseModel):
    """One MetricFlow query, in the ``metric`` role's canonical arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics: list[str]
    group_by: list[str] = Field(default_factory=list)
    where: str | None = None
    order_by: list[str] = Field(default_factory=list)
    limit: int | None = None
    answer: str | None = None
    """Column of the first row holding the answer (default: the first column)."""

    def canonical(self) -> dict[str, Any]:
        """The canonical arguments of a ``metric`` role call."""
        out: dict[str, Any] = {"metrics": self.metrics}
        if self.group_by:
            out["group_by"] = self.group_by
        if self.where:
            out["where"] = self.where
        if self.order_by:
            out["order_by"] = self.order_by
        if self.limit is not None:
            out["limit"] = self.limit
        return out


def _time(grain: str) -> str:
    return f"{{{{ TimeDimension('metric_time', '{grain}') }}}}"


def _days(first: str, last: str) -> str:
    return f"{_time('day')} >= '{first}' AND {_time('day')} <= '{last}'"


def _year(year: int) -> str:
    return _days(f"{year}-01-01", f"{year}-12-31")


def _fq(*quarters: str) -> str:
    return f"{_time('fiscal_quarter')} IN ({', '.join(repr(q) for q in quarters)})"


def _dim(name: str) -> str:
    return f"{{{{ Dimension('{name}') }}}}"


def _and(*parts: str) -> str:
    return " AND ".join(parts)


def _q(metric: str, where: str | None = None, **kw: Any) -> MetricQuery:
    return MetricQuery(metrics=[metric], where=where, **kw)


_HOUR = "web_event__event_hour"
METRIC_QUERIES: dict[str, MetricQuery] = {
    "s3.cents-units.avg-list-price": _q("average_list_price"),
    "s3.cents-units.avg-order-value-2024": _q("average_completed_order_amount", _year(2024)),
    "s3.cents-units.refunds-2025": _q("refunds", _year(2025)),
    "s3.net-revenue.partner-revenue-2024": _q(
        "revenue", _and(_year(2024), f"{_dim('order__channel')} = 'partner'")),
    "s3.net-revenue.web-revenue-2025h1": _q(
        "revenue", _and(_days("2025-01-01", "2025-06-30"), f"{_dim('order__channel')} = 'web'")),
    "s3.net-revenue.store-revenue-2023": _q(
        "revenue", _and(_year(2023), f"{_dim('order__channel')} = 'store'")),
    "s3.fiscal-calendar.orders-fq1-2025": _q("completed_orders", _fq("FY2025-Q1")),
    "s3.fiscal-calendar.revenue-fq1-2024": _q("revenue", _fq("FY2024-Q1")),
    "s3.fiscal-calendar.revenue-fy2023-h1": _q("revenue", _fq("FY2023-Q1", "FY2023-Q2")),
    "s3.freshness-cutoff.store-revenue-2025": _q(
        "revenue", _and(_year(2025), f"{_dim('order__channel')} = 'store'")),
    "s3.freshness-cutoff.web-orders-2025h2": _q(
        "completed_orders",
        _and(_days("2025-07-01", "2025-12-31"), f"{_dim('order__channel')} = 'web'")),
    "s3.freshness-cutoff.web-revenue-2025": _q(
        "revenue", _and(_year(2025), f"{_dim('order__channel')} = 'web'")),
    "s3.tier-definition.key-accounts": _q("key_accounts"),
    "s3.tier-definition.key-account-revenue-2025": _q(
        "revenue", _and(_year(2025), f"{_dim('order__is_key_account')}")),
    "s3.deprecated-table.orders-2025": _q("completed_orders", _year(2025)),
    "s3.timezone-change.peak-hour-2023": _q(
        "web_events", _year(2023), group_by=[_HOUR], order_by=["-web_events", _HOUR], limit=1),
    "s3.timezone-change.evening-events-2024h1": _q(
        "web_events",
        _and(_days("2024-01-01", "2024-06-30"), f"{_dim(_HOUR)} BETWEEN 18 AND 22")),
    "s3.timezone-change.morning-events-2023": _q(
        "web_events", _and(_year(2023), f"{_dim(_HOUR)} < 9")),
    "s3.duplicate-events.add-to-cart-2025": _q(
        "web_events", _and(_year(2025), f"{_dim('web_event__event_type')} = 'add_to_cart'")),
    "s3.duplicate-events.page-views-2025q3": _q(
        "web_events",
        _and(_days("2025-07-01", "2025-09-30"), f"{_dim('web_event__event_type')} = 'page_view'")),
    "s3.duplicate-events.checkouts-2024h2": _q(
        "web_events",
        _and(_days("2024-07-01", "2024-12-31"), f"{_dim('web_event__event_type')} = 'checkout'")),
    "s3.test-accounts.orders-2024": _q("orders", _year(2024)),
    "s3.test-accounts.customers": _q("customers"),
    "s3.soft-deleted.west-customers": _q("customers", f"{_dim('customer__region')} = 'West'"),
    "s3.currency-conversion.invoiced-2025": _q("invoiced_amount", _year(2025)),
    "s3.currency-conversion.unpaid": _q("invoiced_amount", f"NOT {_dim('invoice__is_paid')}"),
    "s3.currency-conversion.avg-invoice-2024": _q("average_invoice_amount", _year(2024)),
    "s3.cents-campaign-spend-2024": _q(
        "campaign_spend",
        _and(_year(2024), f"{_dim('campaign_spend_day__campaign_channel')} = 'social'")),
    "s3.cents-campaign-budget-2025": _q("campaign_budget", _year(2025)),
    "s3.fiscal-calendar.finance-review-fq1-2025": _q("revenue", _fq("FY2025-Q1")),
    "s3.adv-ambiguous-q1-revenue": _q("revenue", _days("2025-01-01", "2025-03-31")),
    "s3.mt-top-channel-revenue-2025": _q(
        "revenue", _year(2025), group_by=["order__channel"], order_by=["-revenue"], limit=1,
        answer="revenue"),
    "s3.mt-key-accounts-midwest": _q(
        "key_accounts", f"{_dim('customer__region')} = 'Midwest'"),
}  # fmt: skip
"""Task id -> the MetricFlow query that answers it (the metric-expressible tasks)."""


def answer_cell(columns: list[str], rows: list[list[Any]], query: MetricQuery) -> Any:
    """The answer in a metric query's result: the first row's ``answer`` column (or first
    column); ``None`` when the result is empty."""
    if not rows:
        return None
    want = query.answer
    index = 0
    if want is not None:
        matches = [i for i, c in enumerate(columns) if c == want or c.endswith("__" + want)]
        if not matches:
            raise KeyError(f"no column {want!r} in the metric result ({', '.join(columns)})")
        index = matches[0]
    return rows[0][index]


def _number(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None


def same_answer(gold: Any, got: Any) -> bool:
    """Whether MetricFlow's answer equals the gold (numbers within :data:`PARITY_REL`)."""
    a, b = _number(gold), _number(got)
    if a is None or b is None:
        return str(gold) == str(got)
    return abs(a - b) <= Decimal(PARITY_REL) * max(Decimal(1), abs(a))


RUNNER = r"""
import json, os, sys
from dbt_metricflow.cli.cli_configuration import CLIConfiguration
from metricflow.engine.metricflow_engine import MetricFlowQueryRequest
queries = json.load(sys.stdin)
cfg = CLIConfiguration()
cfg.setup(configure_file_logging=False)
out = {}
for key, q in queries.items():
    try:
        result = cfg.mf.query(mf_request=MetricFlowQueryRequest.create(
            metric_names=q["metrics"], group_by_names=q.get("group_by") or None,
            where_constraints=[q["where"]] if q.get("where") else None,
            order_by_names=q.get("order_by") or None, limit=q.get("limit")))
        df = result.result_df
        out[key] = {"columns": list(df.column_names),
                    "rows": [[None if v is None else str(v) for v in r] for r in df.rows]}
    except Exception as exc:
        out[key] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
json.dump(out, sys.stdout)
"""
"""Runs in the dbt venv: every query on stdin (JSON), the results on stdout."""


def run_metric_queries(
    project: Path, queries: dict[str, MetricQuery], *, venv: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Every query through MetricFlow in one process; per key ``{columns, rows}`` (values as
    strings) or ``{error}``."""
    python = (venv or dbt_venv()) / "bin" / "python"
    env_project = str(project.resolve())
    payload = json.dumps({k: q.model_dump() for k, q in queries.items()})
    proc = subprocess.run(
        [str(python), "-c", RUNNER], input=payload, capture_output=True, text=True,
        cwd=env_project,
        env={"DBT_PROJECT_DIR": env_project, "DBT_PROFILES_DIR": env_project,
             "PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "DO_NOT_TRACK": "1"},
    )  # fmt: skip
    if proc.returncode != 0:
        raise DbtToolError(f"MetricFlow failed:\n{proc.stderr[-3000:]}")
    result: dict[str, dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@dataclass
class ParityRow:
    """One metric-expressible task: its query, the gold, MetricFlow's answer."""

    task_id: str
    query: MetricQuery
    gold: Any
    answer: Any
    error: str | None = None

    @property
    def passed(self) -> bool:
        """True when MetricFlow answered and its answer equals the gold."""
        return self.error is None and same_answer(self.gold, self.answer)


def gold_answer(world: World, task: Task) -> Any:
    """The first cell of the task's truth SQL on the world's warehouse."""
    sql = task.grading.truth_sql
    if not sql:
        raise KeyError(f"task {task.id} has no truth SQL")
    con = world.connect()
    try:
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    return row[0] if row else None


def parity(
    world: World, project: Path, tasks: list[Task], *, venv: Path | None = None
) -> list[ParityRow]:
    """MetricFlow's answer against the gold for every task of ``tasks`` in the map."""
    mapped = [t for t in tasks if t.id in METRIC_QUERIES]
    results = run_metric_queries(project, {t.id: METRIC_QUERIES[t.id] for t in mapped}, venv=venv)
    rows: list[ParityRow] = []
    for t in mapped:
        q = METRIC_QUERIES[t.id]
        res = results[t.id]
        gold = gold_answer(world, t)
        if "error" in res:
            rows.append(ParityRow(t.id, q, gold, None, res["error"]))
            continue
        try:
            got = answer_cell(res["columns"], res["rows"], q)
        except KeyError as exc:
            rows.append(ParityRow(t.id, q, gold, None, str(exc)))
            continue
        rows.append(ParityRow(t.id, q, gold, got))
    return rows


def coverage(tasks: list[Task]) -> dict[str, tuple[int, int]]:
    """Per suite: (metric-expressible tasks, tasks)."""
    out: dict[str, tuple[int, int]] = {}
    for t in tasks:
        mapped, total = out.get(t.suite, (0, 0))
        out[t.suite] = (mapped + (t.id in METRIC_QUERIES), total + 1)
    return out
