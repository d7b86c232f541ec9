"""The oracle agent: answers from each task's gold SQL through the target's own SQL tool.

It validates tasks, the audit log and the graders end to end without a model, and its tool
calls are the minimum a correct episode needs: a call of the ``search`` role first when the
target offers one (the a2 gate requires it), then one call of the ``sql`` role with
``grading.truth_sql``. Tools are found through the target's role map
(:attr:`~dabench.targets.base.Target.tool_roles`), never by literal name: arguments are
renamed, dropped (``limit`` is sent only when the sql binding keeps it) and completed with
constants as the binding says, and the result is read in any shape
:func:`~dabench.sqlresult.read_sql_result` knows (with the binding's ``result``
adapter); a result it cannot read unambiguously is a harness error, never an empty table.
On a target that plays the ``metric`` role (a semantic layer), a metric-expressible task
(:data:`~dabench.tasks.metric_parity.METRIC_QUERIES`) is answered with one call of that role
instead of SQL. Entity tasks answer the first gold entity; refusal and abstain tasks answer
with a refusal; format tasks render the result in the required format. Earlier turns of a
multi-turn task are acknowledged, the last one answered.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.errors import HarnessError
from dabench.journal.records import EpisodeStatus, Message, ToolCall
from dabench.roles import Role, ToolRoles
from dabench.sqlresult import SqlTable, read_sql_result
from dabench.targets.base import TargetSession
from dabench.targets.registry import Kind
from dabench.tasks.engines import Dialect, dialect_of_sql_tool, table_name_in, truth_sql_for
from dabench.tasks.metric_parity import METRIC_QUERIES, MetricQuery, answer_cell
from dabench.tasks.model import FormatSpec, Task

__all__ = ["ABSTAIN", "REFUSAL", "OracleAgent", "read_result", "render_answer"]

REFUSAL = "I cannot answer this: the requested data does not exist in this warehouse."
ABSTAIN = "I don't know: I could not find this information."


class OracleAgentConfig(BaseModel):
    """``agent: {kind: oracle}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["oracle"] = "oracle"
    row_limit: int = 1000
    """The ``limit`` sent with the SQL (unless the target's sql binding drops it)."""


class RoleTools:
    """One session's tools by role: which tool plays each role, and calls through it."""

    def __init__(
        self,
        roles: ToolRoles,
        offered: set[str],
        who: str,
        descriptions: dict[str, str] | None = None,
    ) -> None:
        self.roles = roles
        self.offered = offered
        self.who = who
        self.descriptions = descriptions or {}

    def sql_dialect(self, default: Dialect) -> Dialect:
        """The SQL dialect to send: PostgreSQL when the sql role's tool says so in its
        description (the reference platform on a PostgreSQL warehouse), else ``default``
        (the target's declared ``sql_dialect``)."""
        binding = self.roles.binding("sql")
        description = self.descriptions.get(binding.tool, "") if binding else ""
        return "postgres" if dialect_of_sql_tool(description) == "postgres" else default

    def has(self, role: Role) -> bool:
        """True when the session offers the tool bound to ``role``."""
        binding = self.roles.binding(role)
        return binding is not None and binding.tool in self.offered

    async def call(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        role: Role,
        canonical: dict[str, Any],
        turn: int,
    ) -> ToolCall:
        """Call the tool of ``role`` with the canonical arguments mapped onto it."""
        binding = self.roles.binding(role)
        if binding is None or binding.tool not in self.offered:
            bound = f"its {role} role is bound to {binding.tool!r}, " if binding else ""
            raise HarnessError(
                f"{self.who}: the target has no tool in the {role} role ({bound}it offers: "
                f"{', '.join(sorted(self.offered)) or 'no tools'}); set target.roles.{role}"
            )
        return await recorder.call(session, binding.tool, binding.call_arguments(canonical), turn)

    def read(self, call: ToolCall, role: Role = "sql") -> SqlTable:
        """The table in a call of the ``sql`` (or ``metric``) role (its binding's adapter
        applied)."""
        return read_result(self.roles, call, self.who, role)


def read_result(roles: ToolRoles, call: ToolCall, who: str, role: Role = "sql") -> SqlTable:
    """The table in a ``sql`` (or ``metric``) call's result: a tool error or an unreadable
    result is a :class:`HarnessError` quoting the text."""
    if call.is_error:
        raise HarnessError(f"{who}: {role} call failed on the target: {call.result[:300]}")
    binding = roles.binding(role)
    return read_sql_result(call.result, binding.result if binding else None, who)


async def role_tools(recorder: ToolRecorder, session: TargetSession, who: str) -> RoleTools:
    """The session's tools by role (the role map of the target ``recorder`` opened)."""
    specs = await session.tools()
    offered = {t.name for t in specs}
    descriptions = {t.name: t.description or "" for t in specs}
    return RoleTools(recorder.roles or ToolRoles({}), offered, who, descriptions)


def format_number(value: Any) -> str:
    """A number as plain digits (no exponent, at most 6 decimals, trailing zeros dropped)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6f}".rstrip("0").rstrip(".")


def _cell(value: Any) -> str:
    return format_number(value) if isinstance(value, int | float) else str(value)


def render_answer(
    columns: list[str], rows: list[list[Any]], fmt: FormatSpec | None, sql: str | None
) -> str:
    """The oracle's final answer for a SQL result, in the required format."""
    first = rows[0][0] if rows and rows[0] else None
    if fmt is None:
        if len(rows) == 1 and len(columns) <= 1:
            body = _cell(first)
        else:
            body = "\n".join("- " + ", ".join(_cell(c) for c in r) for r in rows)
        if sql and not (len(rows) == 1 and len(columns) <= 1):
            body += f"\n\n```sql\n{sql}\n```"
        return body
    if fmt.kind == "single_number":
        return format_number(first)
    if fmt.kind == "json":
        keys = fmt.columns or columns
        objs = [dict(zip(keys, r, strict=False)) for r in rows]
        return json.dumps(objs[0] if len(objs) == 1 else objs)
    if fmt.kind == "bullets":
        n = fmt.n or len(rows)
        lines = [", ".join(_cell(c) for c in r) for r in rows[:n]]
        lines += ["(no further rows)"] * (n - len(lines))
        return "\n".join(f"- {line}" for line in lines)
    header = fmt.columns or columns
    width = max(len(header), max((len(r) for r in rows), default=0))
    header = header + columns[len(header) : width]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


class OracleAgent(Agent):
    """Answers from the gold SQL, through the target's tools."""

    kind = "oracle"

    def __init__(self, config: OracleAgentConfig) -> None:
        self.config = config

    def describe(self) -> dict[str, Any]:
        """Kind and tool names."""
        return self.config.model_dump()

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """Acknowledge earlier turns; answer the last from the gold."""
        task = request.task
        turns = task.messages
        for prompt in turns[:-1]:
            transcript.messages.append(Message(role="user", content=prompt))
            self._say(transcript, "Understood.")
        transcript.messages.append(Message(role="user", content=turns[-1]))
        answer = await self._answer(request, transcript, len(turns) - 1)
        self._say(transcript, f"FINAL ANSWER: {answer}")
        return "completed"

    @staticmethod
    def _say(transcript: EpisodeTranscript, text: str) -> None:
        transcript.messages.append(Message(role="assistant", content=text))
        transcript.answers.append(text)

    async def _answer(
        self, request: EpisodeRequest, transcript: EpisodeTranscript, turn: int
    ) -> str:
        task: Task = request.task
        g = task.grading
        if g.kind == "refusal":
            return REFUSAL
        if g.kind == "abstain":
            return ABSTAIN
        recorder = ToolRecorder(transcript)
        session = await recorder.open(request.target)
        tools = await role_tools(recorder, session, self.kind)
        if tools.has("search"):
            query = " ".join(g.entities[:1]) or task.messages[-1]
            await tools.call(recorder, session, "search", {"query": query[:300]}, turn)
        metric = METRIC_QUERIES.get(task.id)
        if metric is not None and tools.has("metric"):
            return await self._answer_metric(recorder, session, tools, metric, task, turn)
        dialect = tools.sql_dialect(request.target.sql_dialect)
        sql = truth_sql_for(g, dialect)
        if sql:
            return await self._answer_sql(recorder, session, tools, sql, task, turn)
        if g.entities:
            entity = g.entities[0]
            # Without search, a dataset or column id is confirmed by describing its table;
            # pages, glossary terms and queries are answered directly.
            table = ".".join(entity.split(".")[:2]) if entity.count(".") in (1, 2) else None
            if table and not tools.has("search") and tools.has("describe"):
                named = table_name_in(table, dialect)
                await tools.call(recorder, session, "describe", {"table": named}, turn)
            return entity
        raise HarnessError(f"oracle: task {task.id!r} has no gold SQL or entity to answer from")

    async def _answer_metric(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        tools: RoleTools,
        query: MetricQuery,
        task: Task,
        turn: int,
    ) -> str:
        """Answer with one call of the ``metric`` role: the answer cell of its first row."""
        call = await tools.call(recorder, session, "metric", query.canonical(), turn)
        table = tools.read(call, "metric")
        try:
            value = answer_cell(table.columns, table.rows, query)
        except KeyError as exc:
            raise HarnessError(f"{self.kind}: {exc} ({table.describe()})") from None
        if value is None:
            raise HarnessError(f"{self.kind}: the metric query returned no rows")
        return render_answer(["answer"], [[value]], task.grading.format, None)

    async def _answer_sql(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        tools: RoleTools,
        sql: str,
        task: Task,
        turn: int,
    ) -> str:
        """Run ``sql`` through the target's sql role and render the result as the answer."""
        args = {"sql": sql, "limit": self.config.row_limit}
        call = await tools.call(recorder, session, "sql", args, turn)
        table = tools.read(call)
        g = task.grading
        fmt = g.format
        keyed = fmt is not None and fmt.kind == "json" and not fmt.columns
        if table.positional and keyed and table.columns:
            raise HarnessError(
                f"{self.kind}: the SQL tool gave no column names and the answer must be "
                f"JSON keyed by them ({table.describe()})"
            )
        sql_shown = sql if g.kind == "exec_sql" else None
        return render_answer(table.columns, table.rows, g.format, sql_shown)


def _factory(config: OracleAgentConfig, context: AgentContext) -> Agent:
    return OracleAgent(config)


KIND: Kind[Agent, AgentContext] = Kind("oracle", OracleAgentConfig, _factory)
"""The ``oracle`` agent kind (named in the agent registry)."""
