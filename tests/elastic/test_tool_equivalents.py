"""Expected tools across stacks: Agent Builder's built-in tools meet the reference platform's
expectations only where they play the same role (Kibana's built-in role map)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dabench.grading.tool_equivalents import met_expected_tools, offered_expected_tools
from dabench.grading.tools import check_tool_overlap
from dabench.journal.records import Episode, ToolCall
from dabench.roles import KIBANA_ROLES
from dabench.targets.base import TargetContext
from dabench.targets.registry import make_target


def episode(*names: str, recorded: bool = False) -> Episode:
    now = datetime.now(UTC)
    calls = [
        ToolCall(index=i, name=n, roles=KIBANA_ROLES.roles_of(n) if recorded else None)
        for i, n in enumerate(names)
    ]
    return Episode(
        key="k/t/0", run_id="r", arm="k", task_id="t", attempt=0, suite="s2",
        category="single_tool", difficulty="easy", status="completed", agent="kibana",
        target="kibana:elastic-ai-agent", prompts=["q"], tool_calls=calls,
        started_at=now, finished_at=now,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("used", "expected", "passed"),
    [
        ("platform.core.execute_esql", "sql_query", True),
        ("platform.core.search", "sql_query", True),
        ("platform.core.generate_esql", "sql_query", False),
        ("platform.core.get_index_mapping", "describe_table", True),
        ("platform.core.execute_esql", "search", False),
        ("platform.core.list_indices", "list_tables", True),
        ("sql_query", "sql_query", True),
    ],
)
def test_overlap_accepts_equivalent_tools(used: str, expected: str, passed: bool) -> None:
    # Journals without recorded roles (the legacy map) and with roles from Kibana's map.
    check = check_tool_overlap(episode(used), [expected])
    assert check.passed is passed, check.reason
    assert check.expected == [expected] and check.found == [used]
    if used.startswith("platform."):
        recorded = check_tool_overlap(episode(used, recorded=True), [expected], KIBANA_ROLES)
        assert recorded.passed is passed, recorded.reason


def test_tools_without_a_role_match_by_name() -> None:
    ep = episode("custom_tool", "platform.core.execute_esql", recorded=True)
    assert met_expected_tools(ep.tool_calls, ["custom_tool", "memory_capture"]) == ["custom_tool"]
    assert offered_expected_tools(
        ["sql_query", "fetch", "memory_capture"],
        ["platform.core.search", "platform.core.get_document_by_id"],
        KIBANA_ROLES,
    ) == ["sql_query", "fetch"]


def test_kibana_target_role_overrides(tmp_path: Path) -> None:
    target = make_target(
        {
            "kind": "kibana",
            "url": "http://127.0.0.1:9",
            "api_key": "k",
            "roles": {"search": {"tool": "dabench.knowledge"}, "fetch": None},
        },
        TargetContext(None, tmp_path),
    )
    roles = target.tool_roles
    assert roles.tools_for("search") == ("dabench.knowledge",)
    assert roles.binding("fetch") is None
    assert roles.tools_for("sql") == KIBANA_ROLES.tools_for("sql")
    assert roles.roles_of("platform.core.search") == ["sql"]
