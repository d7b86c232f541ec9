"""The Agent Builder converse wire format, parsed defensively into a :class:`ConverseRound`.

Written against Kibana 9.2/9.3 (``POST /api/agent_builder/converse`` and ``/converse/async``,
API version ``2023-10-31``); docs/targets.md lists every field relied on. A synchronous
response is the round flattened into the body::

    {"conversation_id", "round_id", "status", "steps": [...], "response": {"message"},
     "started_at", "time_to_first_token", "time_to_last_token", "model_usage", "trace_id"}

A streamed round is a sequence of server-sent events whose ``data`` is ``{"data": {...}}``
(``conversation_id_set``, ``reasoning``, ``tool_call``, ``tool_progress``, ``tool_result``,
``message_chunk``, ``message_complete``, ``thinking_complete``, ``round_complete``,
``conversation_created``/``conversation_updated``) or ``{"error": {"code", "message"}}`` for
the ``error`` event. Unknown step and event types are ignored; a missing ``model_usage``
(older versions) is ``None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dabench.errors import HarnessError

MAX_RESULT_ROWS = 200
"""Rows of a tabular tool result rendered into the tool call's text (the rest is counted)."""


@dataclass
class ToolStep:
    """One tool call step of a round: tool id, params and results."""

    tool_call_id: str
    tool_id: str
    params: dict[str, Any] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        """True when every result is an ``error`` result (and there is at least one)."""
        return bool(self.results) and all(r.get("type") == "error" for r in self.results)

    def text(self) -> str:
        """The results as the text a reader (and the judge) sees."""
        return render_results(self.results)


@dataclass
class ConverseRound:
    """One conversation round as the harness records it."""

    conversation_id: str | None = None
    round_id: str | None = None
    status: str | None = None
    message: str = ""
    tool_steps: list[ToolStep] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    model_usage: dict[str, Any] | None = None
    reported_ttft_ms: float | None = None
    reported_ttlt_ms: float | None = None
    measured_ttft_ms: float | None = None
    """Arrival of the first ``message_chunk`` after the request was sent (streaming only;
    timed from the attempt that succeeded)."""
    wall_ms: float = 0.0
    """Wall time of the round, retries and their backoff included."""
    retries: int = 0
    """Requests repeated before the round was accepted (429/503, connection failures)."""
    created: bool = False
    """The stream announced a new conversation (``conversation_id_set`` or
    ``conversation_created``): on a later turn, Kibana lost the conversation."""


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _results(value: Any) -> list[dict[str, Any]]:
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def parse_steps(steps: Any, into: ConverseRound) -> None:
    """Add the ``tool_call`` and ``reasoning`` steps of a round to ``into``."""
    if not isinstance(steps, list):
        return
    for step in steps:
        if not isinstance(step, dict):
            continue
        kind = step.get("type")
        if kind == "tool_call":
            into.tool_steps.append(
                ToolStep(
                    tool_call_id=str(step.get("tool_call_id") or f"step-{len(into.tool_steps)}"),
                    tool_id=str(step.get("tool_id") or "unknown"),
                    params=_dict(step.get("params")),
                    results=_results(step.get("results")),
                )
            )
        elif (
            kind == "reasoning"
            and isinstance(step.get("reasoning"), str)
            and not step.get("transient")
        ):
            into.reasoning.append(step["reasoning"])


def parse_round_fields(body: dict[str, Any], into: ConverseRound) -> None:
    """Timings, usage, status and the response message of a round (or a sync body)."""
    into.status = _str(body.get("status")) or into.status
    response = body.get("response")
    if isinstance(response, dict) and isinstance(response.get("message"), str):
        into.message = response["message"]
    into.reported_ttft_ms = _num(body.get("time_to_first_token"))
    into.reported_ttlt_ms = _num(body.get("time_to_last_token"))
    usage = body.get("model_usage")
    into.model_usage = usage if isinstance(usage, dict) else None


def parse_sync_response(body: Any) -> ConverseRound:
    """The round of a synchronous ``/converse`` response; a malformed body is a
    :class:`HarnessError`."""
    if not isinstance(body, dict):
        raise HarnessError(f"kibana: converse returned a non-object body: {str(body)[:200]}")
    response = body.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("message"), str):
        raise HarnessError(
            "kibana: converse response has no response.message: " + json.dumps(body)[:300]
        )
    rnd = ConverseRound(
        conversation_id=_str(body.get("conversation_id")),
        round_id=_str(body.get("round_id")),
    )
    parse_steps(body.get("steps"), rnd)
    parse_round_fields(body, rnd)
    return rnd


class StreamAccumulator:
    """Builds a :class:`ConverseRound` from the events of ``/converse/async``.

    The ``round_complete`` event's round is authoritative for steps, response and usage; the
    individual ``tool_call``/``tool_result``/``reasoning``/``message_chunk`` events are the
    fallback when a version sends a round without steps.
    """

    def __init__(self) -> None:
        self.round = ConverseRound()
        self.complete = False
        self._calls: dict[str, ToolStep] = {}
        self._order: list[str] = []
        self._reasoning: list[str] = []
        self._chunks: list[str] = []
        self._final_message: str | None = None
        self._thinking_ttft: float | None = None

    def feed(self, event: str, payload: Any, elapsed_ms: float) -> None:
        """Take one event (``payload`` is the parsed ``data`` JSON)."""
        body = _dict(payload)
        if event == "error":
            err = _dict(body.get("error"))
            code = err.get("code", "error")
            message = err.get("message") or json.dumps(body)[:300]
            raise HarnessError(f"kibana: the round failed mid-stream ({code}): {message}")
        data = _dict(body.get("data"))
        rnd = self.round
        if event in ("conversation_id_set", "conversation_created", "conversation_updated"):
            rnd.conversation_id = _str(data.get("conversation_id")) or rnd.conversation_id
            rnd.created = rnd.created or event != "conversation_updated"
        elif event == "reasoning":
            if isinstance(data.get("reasoning"), str) and not data.get("transient"):
                self._reasoning.append(data["reasoning"])
        elif event == "tool_call":
            call_id = str(data.get("tool_call_id") or f"step-{len(self._order)}")
            if call_id not in self._calls:
                self._order.append(call_id)
            self._calls[call_id] = ToolStep(
                call_id, str(data.get("tool_id") or "unknown"), _dict(data.get("params"))
            )
        elif event == "tool_result":
            call_id = str(data.get("tool_call_id") or "")
            step = self._calls.get(call_id)
            if step is None:
                step = ToolStep(call_id, str(data.get("tool_id") or "unknown"))
                self._calls[call_id] = step
                self._order.append(call_id)
            step.results = _results(data.get("results"))
        elif event == "message_chunk":
            if rnd.measured_ttft_ms is None:
                rnd.measured_ttft_ms = elapsed_ms
            if isinstance(data.get("text_chunk"), str):
                self._chunks.append(data["text_chunk"])
        elif event == "message_complete":
            if isinstance(data.get("message_content"), str):
                self._final_message = data["message_content"]
        elif event == "thinking_complete":
            self._thinking_ttft = _num(data.get("time_to_first_token"))
        elif event == "round_complete":
            self._complete_round(_dict(data.get("round")))

    def _complete_round(self, body: dict[str, Any]) -> None:
        rnd = self.round
        rnd.round_id = _str(body.get("id")) or rnd.round_id
        parse_steps(body.get("steps"), rnd)
        parse_round_fields(body, rnd)
        self.complete = True

    def finish(self) -> ConverseRound:
        """The round, once the stream has ended; a stream without ``round_complete`` is a
        :class:`HarnessError`."""
        if not self.complete:
            raise HarnessError("kibana: the event stream ended before round_complete")
        rnd = self.round
        if not rnd.tool_steps:
            rnd.tool_steps = [self._calls[c] for c in self._order]
        if not rnd.reasoning:
            rnd.reasoning = list(self._reasoning)
        if not rnd.message:
            rnd.message = self._final_message or "".join(self._chunks)
        if rnd.reported_ttft_ms is None:
            rnd.reported_ttft_ms = self._thinking_ttft
        return rnd


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _table(query: Any, columns: Any, values: Any) -> str:
    """An ES|QL result as text: the query, a header row, up to :data:`MAX_RESULT_ROWS` rows
    and the row count."""
    names = [c.get("name", "?") if isinstance(c, dict) else str(c) for c in columns or []]
    rows: list[Any] = values if isinstance(values, list) else []
    lines = [f"query: {query}"] if query else []
    lines.append(" | ".join(str(c) for c in names))
    for row in rows[:MAX_RESULT_ROWS]:
        cells = row if isinstance(row, list) else [row]
        lines.append(" | ".join(_cell(v) for v in cells))
    if len(rows) > MAX_RESULT_ROWS:
        lines.append(f"[... {len(rows) - MAX_RESULT_ROWS} more rows]")
    lines.append(f"({len(rows)} rows)")
    return "\n".join(lines)


def _tabular_text(data: dict[str, Any]) -> str:
    """``tabular_data`` / ``esql_results`` data as a table: ``{query, columns, values}``, or
    the older ``{esqlQuery, esqlResult: {columns, values}}``."""
    if "esqlResult" in data:
        result = _dict(data.get("esqlResult"))
        return _table(data.get("esqlQuery"), result.get("columns"), result.get("values"))
    return _table(data.get("query"), data.get("columns"), data.get("values"))


def _resource_text(data: dict[str, Any]) -> str:
    ref = _dict(data.get("reference"))
    head = f"resource {ref.get('index', '?')}/{ref.get('id', '?')}"
    return f"{head}: {json.dumps(data.get('content', data), ensure_ascii=False)}"


TABULAR_TYPES = ("tabular_data", "esql_results")
"""Result types holding an ES|QL table: ``tabular_data`` (9.2, 9.3) and ``esql_results``
(current main)."""


def render_result(result: dict[str, Any]) -> str:
    """One tool result as text: ES|QL tables (``tabular_data``, ``esql_results`` and the older
    ``esqlQuery``/``esqlResult`` shape) as tables, resources and resource lists as labelled
    lines, queries and errors labelled, anything else as JSON."""
    kind = result.get("type")
    data = _dict(result.get("data"))
    if kind in TABULAR_TYPES:
        return f"{kind}:\n" + _tabular_text(data)
    if kind == "query":
        return f"query: {data.get('esql', json.dumps(data, ensure_ascii=False))}"
    if kind == "error":
        return f"error: {data.get('message', json.dumps(data, ensure_ascii=False))}"
    if kind == "resource":
        return _resource_text(data)
    if kind == "resource_list":
        resources = data.get("resources")
        items = [_dict(r) for r in resources] if isinstance(resources, list) else []
        lines = [_resource_text(_dict(r.get("data")) if "data" in r else r) for r in items]
        return "\n".join([f"resource_list: {len(items)} resources", *lines])
    return f"{kind or 'result'}: {json.dumps(data, ensure_ascii=False)}"


def render_results(results: list[dict[str, Any]]) -> str:
    """Every result of a tool call, one block each."""
    if not results:
        return "(no results)"
    return "\n\n".join(render_result(r) for r in results)
