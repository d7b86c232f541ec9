"""Tool roles: which of a target's tools plays ``sql``, ``search``, ``describe``, ``list``,
``fetch`` and ``metric``, and how each role's canonical arguments map onto that tool.

The canonical arguments of a role are the reference platform's argument names for its tool
of that role (``sql_query``: ``sql``, ``limit``; ``search``: ``query``, ``kinds``,
``limit``; ``describe_table``: ``table``; ``list_tables``: ``pattern``; ``fetch``: ``id``).
The ``metric`` role (a semantic layer's query of named metrics; the reference platform has
none) takes ``metrics``, ``group_by``, ``where``, ``order_by`` and ``limit`` as MetricFlow
names them; its ``also`` lists the server's tools that list and describe metrics.
A binding, as written under ``target.roles``::

    sql: {tool: query, arguments: {sql: query}, drop: [limit], constants: {}}
    describe: {tool: describe_table, arguments: {table: table_name}}

``arguments`` maps a canonical name to the tool's argument name (unmapped names pass through
unchanged), ``drop`` lists canonical arguments never sent, ``constants`` are extra arguments
always sent, ``templates`` put a value into a text the tool wants (``source:{value}``), and
``also`` names further tools that play the role for grading (never called by the harness).
A binding may be written as just the tool's name (``sql: execute_query``).

The ``sql`` binding may also say how to read its result (``result: {path, format}``, see
:class:`~dabench.sqlresult.ResultAdapter`).

This module depends only on :mod:`dabench.sqlresult` (itself dependency-free), so targets,
agents, the journal and grading all import it. Everything that used to know literal tool
names (the oracle, the probe, exec_sql grading, the tool-overlap score, statistics and
reports) works through these maps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from dabench.sqlresult import ResultAdapter

Role = Literal["sql", "search", "describe", "list", "fetch", "metric"]
"""What a tool does for an analyst, independent of its name."""
ROLES: tuple[Role, ...] = get_args(Role)

REFERENCE_TOOLS: dict[Role, str] = {
    "sql": "sql_query",
    "search": "search",
    "describe": "describe_table",
    "list": "list_tables",
    "fetch": "fetch",
}
"""The reference platform's tool of each role it plays (tasks name these in
``expected_tools``); it plays every role but ``metric``."""

CANONICAL_ARGUMENTS: dict[Role, tuple[str, ...]] = {
    "sql": ("sql", "limit"),
    "search": ("query", "kinds", "limit"),
    "describe": ("table",),
    "list": ("pattern",),
    "fetch": ("id",),
    "metric": ("metrics", "group_by", "where", "order_by", "limit"),
}
"""Per role, the reference tool's argument names (``dabench.platform.tools``)."""


class RoleBinding(BaseModel):
    """Which tool plays a role and how the role's canonical arguments map onto it."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    """The target's tool name."""
    arguments: dict[str, str] = Field(default_factory=dict)
    """Canonical argument name -> the tool's argument name (unmapped names pass through)."""
    drop: list[str] = Field(default_factory=list)
    """Canonical arguments never sent (the tool does not take them)."""
    constants: dict[str, Any] = Field(default_factory=dict)
    """Extra arguments always sent, by the tool's argument name."""
    templates: dict[str, str] = Field(default_factory=dict)
    """Canonical argument -> the text the tool gets, ``{value}`` standing for the value (a
    string): ``{table: "source:{value}"}`` sends ``source:sales.orders`` for
    ``sales.orders`` (dbt-mcp's ``get_node_details_dev`` takes a dbt selector). Not for
    ``sql``, whose sent text grading reads back."""
    also: list[str] = Field(default_factory=list)
    """Further tools of the target that play this role too (counted by grading, never
    called by the harness), e.g. Kibana's ``platform.core.search`` for ``sql``."""
    result: ResultAdapter | None = None
    """``sql`` and ``metric`` only: where the table is in the tool's result and in which shape
    (a JMESPath ``path``, a ``format``); without it the reader guesses
    (:mod:`dabench.sqlresult`)."""

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        return {"tool": value} if isinstance(value, str) else value

    def argument(self, canonical: str) -> str | None:
        """The tool's argument name for a canonical argument; ``None`` when dropped."""
        if canonical in self.drop:
            return None
        return self.arguments.get(canonical, canonical)

    def call_arguments(self, canonical: Mapping[str, Any]) -> dict[str, Any]:
        """The tool's arguments for canonical ones: renamed, dropped ones left out, ``None``
        values left out, constants added."""
        out: dict[str, Any] = {}
        for name, value in canonical.items():
            mapped = self.argument(name)
            if mapped is not None and value is not None:
                template = self.templates.get(name)
                out[mapped] = template.replace("{value}", str(value)) if template else value
        return {**out, **self.constants}

    def sends(self, canonical: str) -> bool:
        """True unless the canonical argument is dropped."""
        return canonical not in self.drop

    def read(self, arguments: Mapping[str, Any], canonical: str) -> Any:
        """A canonical argument's value in a call's arguments (``None`` when absent)."""
        mapped = self.argument(canonical)
        return arguments.get(mapped) if mapped is not None else None

    @property
    def tools(self) -> tuple[str, ...]:
        """The binding's tool, then ``also``."""
        return (self.tool, *self.also)


class ToolRoles(RootModel[dict[Role, RoleBinding | None]]):
    """A target's role map: role -> binding (a role absent or ``null`` is not played)."""

    @model_validator(mode="after")
    def _canonical_names(self) -> ToolRoles:
        for role, binding in self.root.items():
            if binding is None:
                continue
            if binding.result is not None and role not in ("sql", "metric"):
                raise ValueError(
                    f"{role}.result: only the sql and metric roles read a result as a table"
                )
            known = CANONICAL_ARGUMENTS[role]
            if "sql" in binding.templates:
                raise ValueError(f"{role}.templates: the SQL text is sent as it is")
            for field, names in (
                ("arguments", list(binding.arguments)),
                ("drop", binding.drop),
                ("templates", list(binding.templates)),
            ):
                bad = [n for n in names if n not in known]
                if bad:
                    raise ValueError(
                        f"{role}.{field}: {', '.join(map(repr, bad))} is not a canonical argument "
                        f"of the {role} role (its arguments: {', '.join(known)})"
                    )
        return self

    def binding(self, role: Role) -> RoleBinding | None:
        """The binding of ``role`` (``None`` when the target has no tool in that role)."""
        return self.root.get(role)

    def roles_of(self, tool: str) -> list[Role]:
        """The roles ``tool`` plays (in :data:`ROLES` order; empty when none)."""
        return [r for r in ROLES if (b := self.root.get(r)) is not None and tool in b.tools]

    def binding_for(self, role: Role, tool: str) -> RoleBinding | None:
        """The binding through which ``tool`` plays ``role``; for an ``also`` tool a binding
        of that tool with canonical argument names."""
        b = self.root.get(role)
        if b is None or tool not in b.tools:
            return None
        return b if b.tool == tool else RoleBinding(tool=tool)

    def tools_for(self, role: Role) -> tuple[str, ...]:
        """Every tool that plays ``role``."""
        b = self.root.get(role)
        return b.tools if b is not None else ()

    def merged(self, overrides: ToolRoles | None) -> ToolRoles:
        """This map with ``overrides`` applied: a role given there replaces this one's, a
        role given as ``null`` is removed, the others are kept."""
        out = dict(self.root)
        for role, binding in (overrides.root if overrides is not None else {}).items():
            out[role] = binding
        return ToolRoles({r: b for r in ROLES if (b := out.get(r)) is not None})

    def missing_tools(self, offered: Iterable[str]) -> list[str]:
        """Problems of the bindings whose tool ``offered`` lacks, one sentence each."""
        have = set(offered)
        return [
            f"roles.{role}: the target has no tool {b.tool!r}"
            for role in ROLES
            if (b := self.root.get(role)) is not None and b.tool not in have
        ]

    def played(self, offered: Iterable[str]) -> ToolRoles:
        """Only the bindings whose tool is offered (``also`` kept as is)."""
        have = set(offered)
        return ToolRoles(
            {r: b for r in ROLES if (b := self.root.get(r)) is not None and b.tool in have}
        )

    def dump(self) -> dict[str, Any]:
        """The map as plain data (usable verbatim under ``target.roles``), defaults left out."""
        return {
            role: b.model_dump(mode="json", exclude_defaults=True)
            for role in ROLES
            if (b := self.root.get(role)) is not None
        }


REFERENCE_ROLES = ToolRoles({r: RoleBinding(tool=t) for r, t in REFERENCE_TOOLS.items()})
"""The reference platform's map: the identity."""

KIBANA_ROLES = ToolRoles(
    {
        "sql": RoleBinding(tool="platform.core.execute_esql", also=["platform.core.search"]),
        "search": RoleBinding(tool="platform.core.search", also=["platform.core.index_explorer"]),
        "list": RoleBinding(
            tool="platform.core.list_indices", also=["platform.core.index_explorer"]
        ),
        "describe": RoleBinding(tool="platform.core.get_index_mapping"),
        "fetch": RoleBinding(tool="platform.core.get_document_by_id"),
    }
)
"""Elastic Agent Builder's built-in tools by role. ``platform.core.search`` can run ES|QL
itself, so it also plays ``sql``; ``platform.core.generate_esql`` writes a query without
running it and plays no role. The harness never calls these tools (the agent loop runs inside
Kibana), so their arguments are not mapped."""

LEGACY_ROLES = ToolRoles(
    {
        r: RoleBinding(tool=t, also=list(KIBANA_ROLES.tools_for(r)))
        for r, t in REFERENCE_TOOLS.items()
    }
)
"""For journals and manifests written before roles were recorded: the reference names, with
Kibana's built-in tools as equivalents (what the old cross-stack table accepted)."""


def reference_role(tool: str) -> Role | None:
    """The role of a reference platform tool named in a task's ``expected_tools``."""
    return next((r for r, t in REFERENCE_TOOLS.items() if t == tool), None)


def parse_roles(value: Any) -> ToolRoles | None:
    """A role map from plain data (a manifest's ``arms[].roles``); ``None`` when absent or
    not a valid map."""
    if not isinstance(value, dict):
        return None
    try:
        return ToolRoles.model_validate(value)
    except ValueError:
        return None
