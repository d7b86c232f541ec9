"""Expected tools across stacks: Agent Builder's built-in tools meet the reference platform's
expectations only where they play the same role."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dabench.grading.tool_equivalents import TOOL_EQUIVALENTS, accepted_tools
from dabench.grading.tools import check_tool_overlap
from dabench.journal.records import Episode, ToolCall


def episode(*names: str) -> Episode:
    now = datetime.now(UTC)
    calls = [ToolCall(index=i, name=n) for i, n in enumerate(names)]
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
    check = check_tool_overlap(episode(used), [expected])
    assert check.passed is passed, check.reason
    assert check.expected == [expected] and check.found == [used]


def test_accepted_tools_keeps_the_expected_names() -> None:
    assert accepted_tools(["custom_tool"]) == frozenset({"custom_tool"})
    assert accepted_tools(["sql_query"]) == frozenset({"sql_query", *TOOL_EQUIVALENTS["sql_query"]})
