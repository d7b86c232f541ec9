"""The oracle agent: answers from each task's gold SQL through the target's own SQL tool.

It validates tasks, the audit log and the graders end to end without a model, and its tool
calls are the minimum a correct episode needs: a ``search`` first when the target offers one
(the a2 gate requires it), then one ``sql_query`` with ``grading.truth_sql``. Entity tasks
answer the first gold entity; refusal and abstain tasks answer with a refusal; format tasks
render the result in the required format. Earlier turns of a multi-turn task are acknowledged,
the last one answered.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.agents.registry import register_agent
from dabench.errors import HarnessError
from dabench.journal.records import EpisodeStatus, Message
from dabench.targets.base import TargetSession
from dabench.tasks.engines import dialect_of_sql_tool, truth_sql_for
from dabench.tasks.model import FormatSpec, Task

SEARCH_TOOL = "search"
SQL_TOOL = "sql_query"
DESCRIBE_TOOL = "describe_table"
REFUSAL = "I cannot answer this: the requested data does not exist in this warehouse."
ABSTAIN = "I don't know: I could not find this information."


class OracleAgentConfig(BaseModel):
    """``agent: {kind: oracle}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["oracle"] = "oracle"
    sql_tool: str = SQL_TOOL
    search_tool: str = SEARCH_TOOL
    row_limit: int = 1000


def parse_sql_result(text: str) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows of a SQL tool result (``{"columns": [...], "rows": [[...]]}`` or a
    list of row objects)."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"oracle: SQL tool result is not JSON: {text[:200]}") from exc
    if isinstance(body, dict) and "rows" in body:
        columns = [c["name"] if isinstance(c, dict) else str(c) for c in body.get("columns", [])]
        rows = body["rows"]
        if rows and isinstance(rows[0], dict):
            columns = columns or list(rows[0])
            rows = [[r.get(c) for c in columns] for r in rows]
        return columns, [list(r) for r in rows]
    if isinstance(body, list) and (not body or isinstance(body[0], dict)):
        columns = list(body[0]) if body else []
        return columns, [[r.get(c) for c in columns] for r in body]
    raise HarnessError(f"oracle: unrecognised SQL tool result: {text[:200]}")


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
        specs = {t.name: t for t in await session.tools()}
        names = set(specs)
        if self.config.search_tool in names:
            query = " ".join(g.entities[:1]) or task.messages[-1]
            await recorder.call(session, self.config.search_tool, {"query": query[:300]}, turn)
        if g.truth_sql:
            sql_spec = specs.get(self.config.sql_tool)  # the gold SQL in the target's dialect
            dialect = dialect_of_sql_tool(sql_spec.description if sql_spec else "")
            sql = truth_sql_for(g, dialect) or g.truth_sql
            return await self._answer_sql(recorder, session, names, sql, task, turn)
        if g.entities:
            entity = g.entities[0]
            # Without search, a dataset or column id is confirmed by describing its table;
            # pages, glossary terms and queries are answered directly.
            table = ".".join(entity.split(".")[:2]) if entity.count(".") in (1, 2) else None
            if table and self.config.search_tool not in names and DESCRIBE_TOOL in names:
                await recorder.call(session, DESCRIBE_TOOL, {"table": table}, turn)
            return entity
        raise HarnessError(f"oracle: task {task.id!r} has no gold SQL or entity to answer from")

    async def _answer_sql(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        names: set[str],
        sql: str,
        task: Task,
        turn: int,
    ) -> str:
        """Run ``sql`` through the target's SQL tool and render the result as the answer."""
        if self.config.sql_tool not in names:
            raise HarnessError(f"{self.kind}: the target has no {self.config.sql_tool} tool")
        args = {"sql": sql, "limit": self.config.row_limit}
        call = await recorder.call(session, self.config.sql_tool, args, turn)
        if call.is_error:
            raise HarnessError(f"{self.kind}: SQL failed on the target: {call.result[:300]}")
        columns, rows = parse_sql_result(call.result)
        g = task.grading
        return render_answer(columns, rows, g.format, sql if g.kind == "exec_sql" else None)


def _factory(config: OracleAgentConfig, context: AgentContext) -> Agent:
    return OracleAgent(config)


register_agent("oracle", OracleAgentConfig, _factory)
