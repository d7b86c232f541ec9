"""Which tool calls meet a task's expected tools, on any stack, through tool roles.

Tasks name the reference platform's tools in ``expected_tools``. An expected tool that plays
a role (``sql_query`` -> ``sql``, ``search``, ``describe_table`` -> ``describe``,
``list_tables`` -> ``list``, ``fetch``) is met by any call whose tool plays that role on the
arm's target: the roles each call recorded in the journal (:attr:`ToolCall.roles`), or for
journals written before roles were recorded, the arm's role map from the manifest, else
:data:`~dabench.roles.LEGACY_ROLES` (the reference names plus Elastic Agent Builder's
built-in tools, the old cross-stack table). Any other expected tool (``memory_capture``...)
is met by a call of that name. The role maps are documented in docs/targets.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from dabench.journal.records import RunManifest, ToolCall
from dabench.roles import LEGACY_ROLES, Role, ToolRoles, parse_roles, reference_role

_ROLES_OF: dict[tuple[int, str], tuple[ToolRoles, list[Role]]] = {}
"""``(id(map), tool) -> (map, roles)``: a report or a re-grade asks the same few maps about
the same few tools for every call of every episode. The map itself is kept in the entry, so
its id cannot be reused while the entry lives; the memo is emptied when it grows large."""


def call_roles(call: ToolCall, roles: ToolRoles | None = None) -> list[Role]:
    """The roles a call's tool played: as recorded, else from ``roles`` (the arm's map) or
    the legacy map."""
    if call.roles is not None:
        return list(call.roles)
    return tool_roles(call.name, roles)


def _roles_of(tool: str, roles: ToolRoles | None) -> list[Role]:
    """The memoised roles of ``tool`` (shared: never to be changed by the caller)."""
    mapping = roles or LEGACY_ROLES
    key = (id(mapping), tool)
    hit = _ROLES_OF.get(key)
    if hit is None or hit[0] is not mapping:
        if len(_ROLES_OF) > 4096:
            _ROLES_OF.clear()
        hit = _ROLES_OF[key] = (mapping, mapping.roles_of(tool))
    return hit[1]


def tool_roles(tool: str, roles: ToolRoles | None = None) -> list[Role]:
    """The roles ``tool`` plays in ``roles`` (the arm's map), else in the legacy map."""
    return list(_roles_of(tool, roles))


def met_expected_tools(
    calls: Iterable[ToolCall], expected: Sequence[str], roles: ToolRoles | None = None
) -> list[str]:
    """The expected tools that some call met (by role, or by name for role-less tools)."""
    names: set[str] = set()
    unrecorded: set[str] = set()  # tools of calls without recorded roles: looked up once
    played: set[Role] = set()
    for c in calls:
        names.add(c.name)
        if c.roles is not None:
            played.update(c.roles)
        else:
            unrecorded.add(c.name)
    for name in unrecorded:
        played.update(_roles_of(name, roles))
    out = []
    for tool in expected:
        role = reference_role(tool)
        if (role in played) if role is not None else (tool in names):
            out.append(tool)
    return out


def offered_expected_tools(
    expected_tools: Sequence[str],
    offered: Collection[str] | None,
    roles: ToolRoles | None = None,
) -> list[str]:
    """The expected tools the arm's target offers (a tool in the same role, or the tool
    itself): a tool the arm's profile does not offer is never counted against the arm.
    ``offered=None`` (unknown, e.g. a run recorded before targets' tools were kept) keeps
    them all."""
    if offered is None:
        return list(expected_tools)
    have = set(offered)
    role_map = roles or LEGACY_ROLES
    out = []
    for tool in expected_tools:
        role = reference_role(tool)
        tools = role_map.tools_for(role) if role is not None else (tool,)
        if have & set(tools):
            out.append(tool)
    return out


def manifest_offered_tools(manifest: RunManifest | None) -> dict[str, list[str]]:
    """Per arm, the tools its target offered (the manifest's ``arms[].tools``, recorded by
    the runner where the target reports them)."""
    out: dict[str, list[str]] = {}
    for arm in manifest.arms if manifest is not None else []:
        tools = arm.get("tools")
        if isinstance(tools, list):
            out[str(arm.get("name"))] = [str(t) for t in tools]
    return out


def manifest_roles(manifest: RunManifest | None) -> dict[str, ToolRoles]:
    """Per arm, its target's role map (the manifest's ``arms[].roles``; arms of runs
    recorded before roles were kept are absent and fall back to the legacy map)."""
    out: dict[str, ToolRoles] = {}
    for arm in manifest.arms if manifest is not None else []:
        roles = parse_roles(arm.get("roles"))
        if roles is not None:
            out[str(arm.get("name"))] = roles
    return out


def manifest_sql_dialects(manifest: RunManifest | None) -> dict[str, str]:
    """Per arm, the SQL dialect its target speaks (the manifest's ``arms[].target.sql_dialect``;
    arms without one speak DuckDB's)."""
    out: dict[str, str] = {}
    for arm in manifest.arms if manifest is not None else []:
        target = arm.get("target")
        dialect = target.get("sql_dialect") if isinstance(target, dict) else None
        if isinstance(dialect, str):
            out[str(arm.get("name"))] = dialect
    return out
