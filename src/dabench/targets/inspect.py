"""List an MCP server's tools and propose a role map for it (``dabench target inspect``).

The proposal is a heuristic over each tool's name, description and input schema; it is a
starting point to read and check (``--check`` runs the oracle through it), never trusted
blindly. Per role, a tool qualifies when it has an argument that can carry the role's main
canonical argument (``sql``: a string named ``sql``/``query``/``statement``...; ``search``: a
string such as ``query``/``q``; ``describe``: a table name; ``fetch``: an id; ``list``: no
required argument; ``metric``: a ``metrics`` list, and the tools that list metrics or
dimensions join it as ``also``) and its name or description says what the role does; the
best-scoring tool wins, and one tool plays one role. Canonical arguments the tool has no
argument for are dropped (``limit`` for a SQL tool without a limit-like argument); required
arguments the binding cannot fill are reported as notes (set them as ``constants``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dabench.errors import HarnessError
from dabench.providers.base import ToolSpec
from dabench.roles import CANONICAL_ARGUMENTS, ROLES, Role, RoleBinding, ToolRoles
from dabench.sqlresult.probe import PROBE_SQL, AdapterProposal, propose_adapter
from dabench.targets.mcp_connection import McpConnection, McpEndpoint

SESSION_ARGUMENTS = frozenset({"session_id", "session", "sessionid"})
"""Argument names that carry a session handle (the target injects them, not the role)."""

_ARGUMENT_NAMES: dict[Role, dict[str, tuple[str, ...]]] = {
    "sql": {
        "sql": ("sql", "statement", "sql_query", "query", "sqlquery", "query_sql", "q"),
        "limit": ("limit", "max_rows", "row_limit", "maxrows", "rows", "max_results", "top"),
    },
    "search": {
        "query": ("query", "q", "text", "search", "term", "keywords", "question", "prompt"),
        "kinds": ("kinds", "types", "kind", "type", "categories"),
        "limit": ("limit", "max_results", "top_k", "k", "size", "count", "n"),
    },
    "describe": {
        "table": ("table", "table_name", "tablename", "name", "table_id", "dataset", "relation"),
    },
    "list": {"pattern": ("pattern", "filter", "like", "name_pattern", "glob", "search")},
    "fetch": {"id": ("id", "doc_id", "document_id", "uri", "ref", "key", "page_id", "name")},
    "metric": {
        "metrics": ("metrics", "metric_names", "metric"),
        "group_by": ("group_by", "group_by_names", "dimensions", "groupby"),
        "where": ("where", "where_filter", "filter", "filters"),
        "order_by": ("order_by", "order", "order_by_names", "sort"),
        "limit": ("limit", "max_rows", "row_limit"),
    },
}
"""Per role and canonical argument, the tool argument names that can carry it (best first)."""

_WORDS: dict[Role, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sql": (("sql", "query", "execute", "select", "run", "statement"), ("search", "explain")),
    "search": (("search", "find", "lookup", "discover", "semantic"), ("sql", "execute", "metrics")),
    "describe": (
        ("describe", "schema", "columns", "column", "info", "structure", "details"),
        ("list", "lineage"),
    ),
    "list": (("list", "tables", "show", "datasets", "indices", "relations"), ("describe",)),
    "fetch": (("fetch", "get", "read", "document", "page", "resource"), ("sql", "search")),
    "metric": (("query", "metrics", "metric", "semantic", "measure"), ("list", "dimensions")),
}
"""Per role, words in a tool's name or description that speak for it and against it."""

_MAIN: dict[Role, str] = {
    "sql": "sql",
    "search": "query",
    "describe": "table",
    "list": "",
    "fetch": "id",
    "metric": "metrics",
}


@dataclass
class RoleProposal:
    """A proposed role map, with why each tool was chosen and what to check by hand."""

    roles: ToolRoles
    reasons: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    target: dict[str, Any] = field(default_factory=dict)
    """Proposed ``mcp`` target settings beside the map (``session_argument``,
    ``session_tool``); ``--check`` uses them."""
    probe: AdapterProposal | None = None
    """How the ``sql`` tool's answer to :data:`~dabench.sqlresult.probe.PROBE_SQL` reads."""


_CALL_FIRST = re.compile(
    r"\b(call (it|this( tool)?) first|must be called (first|before)|call(ed)? (it )?before "
    r"(any|every|all|using)( other)? tools?|first call)\b",
    re.IGNORECASE,
)
"""A tool description saying it opens the session (the reference ``platform_info``: "Call it
first; pass session_id to every other tool")."""


_SEPARATE_SCHEMA = frozenset({"schema", "schema_name", "table_schema", "namespace"})
"""Argument names that carry a table's schema apart from its name."""


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w}


def _properties(spec: ToolSpec) -> dict[str, dict[str, Any]]:
    props = spec.input_schema.get("properties") or {}
    return {k: v if isinstance(v, dict) else {} for k, v in props.items()}


def _required(spec: ToolSpec) -> set[str]:
    return set(spec.input_schema.get("required") or [])


def _is_string(schema: dict[str, Any]) -> bool:
    kinds = [schema.get("type")] + [b.get("type") for b in schema.get("anyOf", []) if b]
    return "string" in kinds or not any(kinds)


def _match_argument(spec: ToolSpec, candidates: tuple[str, ...], taken: set[str]) -> str | None:
    props = _properties(spec)
    lowered = {k.lower(): k for k in props if k not in taken}
    return next((lowered[c] for c in candidates if c in lowered), None)


def _binding(role: Role, spec: ToolSpec) -> tuple[RoleBinding, list[str]] | None:
    """The binding of ``spec`` in ``role`` and notes, or ``None`` when it cannot play it."""
    props = _properties(spec)
    arguments: dict[str, str] = {}
    drop: list[str] = []
    taken: set[str] = set()
    for canonical in CANONICAL_ARGUMENTS[role]:
        name = _match_argument(spec, _ARGUMENT_NAMES[role][canonical], taken)
        if canonical == _MAIN[role]:
            if name is None and role in ("describe", "fetch"):
                strings = [k for k in _required(spec) - SESSION_ARGUMENTS if _is_string(props[k])]
                name = strings[0] if len(strings) == 1 else None
            if name is None or (role != "metric" and not _is_string(props[name])):
                return None
        if name is None:
            drop.append(canonical)
            continue
        taken.add(name)
        if name != canonical:
            arguments[canonical] = name
    if role == "list" and (_required(spec) - SESSION_ARGUMENTS - taken):
        return None
    if role == "describe" and props.keys() & _SEPARATE_SCHEMA - taken:
        # The canonical ``table`` is qualified (``sales.orders``); a tool that takes the
        # schema as its own argument looks the qualified name up as a bare table and fails.
        return None
    uncovered = sorted(_required(spec) - taken - SESSION_ARGUMENTS)
    notes = [
        f"{role}: {spec.name} requires {', '.join(uncovered)}, which no canonical argument "
        "fills: set it under constants"
    ] * bool(uncovered)
    return RoleBinding(tool=spec.name, arguments=arguments, drop=drop), notes


def _score(role: Role, spec: ToolSpec) -> int:
    pro, con = _WORDS[role]
    name, text = _words(spec.name), _words(spec.description)
    score = 3 * len(name & set(pro)) + len(text & set(pro))
    score -= 3 * len(name & set(con))
    if role == "sql" and "sql" in name | text:
        score += 3
    if role == "list" and "list" in name and name & {"tables", "datasets", "indices", "table"}:
        score += 3
    if role == "fetch" and name & {"lineage", "parents", "children"}:
        return 0  # walks a graph from an id (dbt-mcp's get_lineage_dev): not a document
    return score


def propose_roles(tools: list[ToolSpec]) -> RoleProposal:
    """A role map for a server's tools (see the module docstring)."""
    chosen: dict[Role, RoleBinding] = {}
    reasons: dict[str, str] = {}
    notes: list[str] = []
    used: set[str] = set()
    order: list[Role] = ["metric", *(r for r in ROLES if r != "metric")]
    for role in order:
        best: tuple[int, RoleBinding, list[str]] | None = None
        for spec in tools:
            if spec.name in used:
                continue
            bound = _binding(role, spec)
            score = _score(role, spec)
            if bound is None or score < 2:
                continue
            if best is None or score > best[0]:
                best = (score, bound[0], bound[1])
        if best is None:
            continue
        score, binding, why = best
        if role == "metric":
            binding = binding.model_copy(update={"also": _metric_companions(tools, binding.tool)})
            used.update(binding.also)
        if role == "describe" and _takes_dbt_selector(tools, binding):
            binding = binding.model_copy(update={"templates": {"table": "source:{value}"}})
            why = [
                *why,
                f"describe: {binding.tool} takes a dbt selector; a warehouse table is the dbt "
                "source of that name (templates: {table: 'source:{value}'})",
            ]
        chosen[role] = binding
        used.add(binding.tool)
        notes.extend(why)
        reasons[role] = f"{binding.tool} (score {score})"
    session = {
        arg: [s.name for s in tools if s.name in used and arg in _required(s)]
        for arg in sorted(SESSION_ARGUMENTS)
    }
    target: dict[str, Any] = {}
    for arg, names in session.items():
        if names:
            notes.append(
                f"{', '.join(names)} require {arg}, a session handle the target must supply "
                f"(target.session_argument: {arg})"
            )
            target.setdefault("session_argument", arg)
    opener = _session_opener(tools, used)
    if opener is not None:
        field_name = target.get("session_argument", "session_id")
        target["session_tool"] = {"name": opener.name, "field": field_name}
        notes.append(
            f"{opener.name} says it must be called first: it opens each episode's session "
            f"(target.session_tool: {{name: {opener.name}, field: {field_name}}})"
        )
    return RoleProposal(ToolRoles(chosen), reasons, notes, target)


_DBT_SELECTOR_ARGUMENTS = frozenset({"node_id", "selector", "node_selection", "select"})


def _takes_dbt_selector(tools: list[ToolSpec], binding: RoleBinding) -> bool:
    """Whether a describe tool takes a dbt node selector (dbt-mcp's ``get_node_details_dev``:
    ``sales.orders`` selects nothing, ``source:sales.orders`` the table's source node)."""
    spec = next(s for s in tools if s.name == binding.tool)
    return binding.argument("table") in _DBT_SELECTOR_ARGUMENTS and "dbt" in _words(
        spec.description
    )


_METRIC_WORDS = frozenset({"metric", "metrics", "dimension", "dimensions", "entity", "entities"})


def _metric_companions(tools: list[ToolSpec], query_tool: str) -> list[str]:
    """The tools beside a semantic layer's query tool that list or describe its metrics,
    dimensions and entities (they join the ``metric`` role's ``also``)."""
    return [
        s.name
        for s in tools
        if s.name != query_tool
        and _words(s.name) & _METRIC_WORDS
        and _words(s.name) & {"list", "describe", "get", "show"}
    ]


def _session_opener(tools: list[ToolSpec], used: set[str]) -> ToolSpec | None:
    """The tool that says it must be called first and needs no argument, if exactly one."""
    found = [
        s
        for s in tools
        if s.name not in used and not _required(s) and _CALL_FIRST.search(s.description or "")
    ]
    return found[0] if len(found) == 1 else None


_SERVES_HTTP = re.compile(
    r"(?:\bon|\bat|running|listening|serving)\s+(?:on\s+|at\s+)?(?P<url>https?://[^\s'\"()]+)",
    re.IGNORECASE,
)
"""A stdio program's stderr saying it serves HTTP instead (uvicorn, the reference platform's
``platform serve`` without ``--transport stdio``, Node servers)."""


async def list_server_tools(endpoint: McpEndpoint, timeout_s: float = 60.0) -> list[ToolSpec]:
    """Connect to an MCP server, list its tools and disconnect. A stdio program that says on
    stderr that it serves HTTP fails at once: ``no MCP on stdio: ... use --url``."""
    tools, _ = await inspect_server(endpoint, timeout_s, probe=False)
    return tools


async def inspect_server(
    endpoint: McpEndpoint, timeout_s: float = 60.0, probe: bool = True
) -> tuple[list[ToolSpec], RoleProposal]:
    """The server's tools and a proposed role map; with ``probe``, the ``sql`` tool is sent
    :data:`~dabench.sqlresult.probe.PROBE_SQL` and a result adapter proposed from its answer
    (set on the ``sql`` binding when the reader needs one)."""
    if endpoint.command and endpoint.errlog is None:
        with tempfile.TemporaryDirectory(prefix="dabench-inspect-") as tmp:
            logged = replace(endpoint, errlog=Path(tmp) / "stderr.log")
            return await inspect_server(logged, timeout_s, probe)
    conn = McpConnection(endpoint, call_timeout_s=timeout_s)
    try:
        if endpoint.command and endpoint.errlog is not None:
            await _open_or_spot_http(conn, endpoint.errlog, timeout_s)
        else:
            await conn.open(timeout_s)
        tools = await conn.list_tools()
        proposal = propose_roles(tools)
        if probe:
            await _probe(conn, proposal)
        return tools, proposal
    finally:
        await conn.close()


async def _probe(conn: McpConnection, proposal: RoleProposal) -> None:
    """Send the probe query through the proposed sql binding and read its answer."""
    binding = proposal.roles.binding("sql")
    if binding is None:
        return
    arguments = binding.call_arguments({"sql": PROBE_SQL, "limit": 10})
    session_tool = proposal.target.get("session_tool")
    if session_tool is not None:
        opened = await conn.call(session_tool["name"], {})
        try:
            handle = json.loads(opened.text)[session_tool["field"]]
        except (json.JSONDecodeError, KeyError, TypeError):
            proposal.notes.append(f"probe: {session_tool['name']} returned no session handle")
            return
        arguments[proposal.target["session_argument"]] = handle
    outcome = await conn.call(binding.tool, arguments)
    if outcome.is_error:
        proposal.notes.append(f"probe: {binding.tool} refused {PROBE_SQL!r}: {outcome.text[:200]}")
        return
    proposal.probe = propose_adapter(outcome.text)
    if proposal.probe.adapter is not None:
        adapted = binding.model_copy(update={"result": proposal.probe.adapter})
        proposal.roles = proposal.roles.merged(ToolRoles({"sql": adapted}))
        needed = proposal.probe.adapter.model_dump(exclude_none=True)
        proposal.notes.append(f"probe: the reader needs result: {needed}")
    elif not proposal.probe.ok:
        proposal.notes.append(
            f"probe: cannot read {binding.tool}'s answer to {PROBE_SQL!r} ({proposal.probe.read});"
            " set roles.sql.result (path, format) by hand"
        )


async def _open_or_spot_http(conn: McpConnection, errlog: Path, timeout_s: float) -> None:
    """Open ``conn``, watching the program's stderr for an HTTP address meanwhile."""
    opening = asyncio.create_task(conn.open(timeout_s))
    try:
        while not opening.done():
            await asyncio.wait({opening}, timeout=0.25)
            text = errlog.read_text(encoding="utf-8", errors="replace") if errlog.exists() else ""
            m = _SERVES_HTTP.search(text)
            if m is not None and not opening.done():
                url = m.group("url").rstrip(".,;")
                raise HarnessError(
                    f"no MCP on stdio: {shlex.join(conn.endpoint.command)} says it serves "
                    f"{url}; for an HTTP server use --url {url} (or start it in stdio mode)"
                )
        opening.result()
    finally:
        if not opening.done():
            opening.cancel()
            with contextlib.suppress(BaseException):
                await opening
