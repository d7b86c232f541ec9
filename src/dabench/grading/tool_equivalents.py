"""Which tools count as an expected tool across stacks (the tool-overlap check).

Tasks name the reference platform's tools in ``expected_tools``. A target with other tool
names (Elastic Agent Builder's built-in ``platform.core.*`` tools) meets the expectation with
a tool that plays the same role: a task that expects a query tool (``sql_query``) accepts
``platform.core.execute_esql`` and ``platform.core.search`` (which can run ES|QL itself). The
table is documented in docs/targets.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from dabench.journal.records import RunManifest

TOOL_EQUIVALENTS: dict[str, tuple[str, ...]] = {
    "sql_query": ("platform.core.execute_esql", "platform.core.search"),
    "search": ("platform.core.search", "platform.core.index_explorer"),
    "list_tables": ("platform.core.list_indices", "platform.core.index_explorer"),
    "describe_table": ("platform.core.get_index_mapping",),
    "fetch": ("platform.core.get_document_by_id",),
}
"""Reference tool -> tools of other stacks that play the same role."""


def accepted_tools(expected: Iterable[str]) -> frozenset[str]:
    """The expected tools plus every tool equivalent to one of them."""
    names = set(expected)
    for name in list(names):
        names.update(TOOL_EQUIVALENTS.get(name, ()))
    return frozenset(names)


def offered_expected_tools(
    expected_tools: Sequence[str], offered: Collection[str] | None
) -> list[str]:
    """The expected tools the arm's target offers (itself or an equivalent): a tool the
    arm's profile does not offer is never counted against the arm. ``offered=None``
    (unknown, e.g. a run recorded before targets' tools were kept) keeps them all."""
    if offered is None:
        return list(expected_tools)
    have = set(offered)
    return [t for t in expected_tools if accepted_tools([t]) & have]


def manifest_offered_tools(manifest: RunManifest | None) -> dict[str, list[str]]:
    """Per arm, the tools its target offered (the manifest's ``arms[].tools``, recorded by
    the runner where the target reports them)."""
    out: dict[str, list[str]] = {}
    for arm in manifest.arms if manifest is not None else []:
        tools = arm.get("tools")
        if isinstance(tools, list):
            out[str(arm.get("name"))] = [str(t) for t in tools]
    return out
