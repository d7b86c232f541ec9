"""Tool roles: the config shape, argument mapping, and agreement with the reference platform."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from dabench.grading.exec_sql import PredictedSql, predicted_sql
from dabench.journal.records import Episode, ToolCall
from dabench.platform.tools import TOOL_ARGS
from dabench.roles import (
    CANONICAL_ARGUMENTS,
    KIBANA_ROLES,
    LEGACY_ROLES,
    REFERENCE_ROLES,
    REFERENCE_TOOLS,
    ToolRoles,
    reference_role,
)
from dabench.targets.mcp import McpTargetConfig


def test_canonical_arguments_are_the_reference_tools_arguments() -> None:
    for role, tool in REFERENCE_TOOLS.items():
        assert tuple(TOOL_ARGS[tool].model_fields) == CANONICAL_ARGUMENTS[role]


def test_binding_maps_drops_and_adds_constants() -> None:
    roles = ToolRoles.model_validate(
        {
            "sql": {
                "tool": "query",
                "arguments": {"sql": "query"},
                "drop": ["limit"],
                "constants": {"database": "w"},
            },
            "describe": {"tool": "describe_table", "arguments": {"table": "table_name"}},
        }
    )
    sql = roles.binding("sql")
    assert sql is not None
    assert sql.call_arguments({"sql": "SELECT 1", "limit": 5}) == {
        "query": "SELECT 1",
        "database": "w",
    }
    assert sql.read({"query": "SELECT 2"}, "sql") == "SELECT 2"
    assert sql.read({"query": "SELECT 2"}, "limit") is None
    describe = roles.binding("describe")
    assert describe is not None and describe.call_arguments({"table": "a.b"}) == {
        "table_name": "a.b"
    }
    assert roles.roles_of("query") == ["sql"] and roles.roles_of("other") == []


def test_mcp_target_config_accepts_the_shape_and_bare_names() -> None:
    cfg = McpTargetConfig.model_validate(
        {
            "command": ["server"],
            "roles": {
                "sql": {"tool": "query", "arguments": {"sql": "query"}, "drop": ["limit"]},
                "search": None,
                "fetch": "get_page",
            },
        }
    )
    merged = REFERENCE_ROLES.merged(cfg.roles)
    assert merged.binding("search") is None
    assert merged.tools_for("fetch") == ("get_page",)
    assert merged.tools_for("describe") == ("describe_table",)
    # The dump is usable verbatim as target.roles.
    assert ToolRoles.model_validate(merged.dump()) == merged


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"sql": {"tool": "q", "arguments": {"statement": "x"}}}, "'statement' is not a canonical"),
        ({"sql": {"tool": "q", "drop": ["rows"]}}, "sql.drop: 'rows'"),
        ({"query": {"tool": "q"}}, "sql"),
        ({"sql": {"tool": ""}}, "at least 1 character"),
        ({"sql": {"tool": "q", "argument": {}}}, "argument"),
    ],
)
def test_bad_role_maps_are_refused_clearly(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ToolRoles.model_validate(value)


def test_kibana_and_legacy_maps() -> None:
    assert KIBANA_ROLES.roles_of("platform.core.search") == ["sql", "search"]
    assert KIBANA_ROLES.roles_of("platform.core.index_explorer") == ["search", "list"]
    assert KIBANA_ROLES.roles_of("platform.core.generate_esql") == []
    assert LEGACY_ROLES.roles_of("sql_query") == ["sql"]
    assert LEGACY_ROLES.roles_of("platform.core.execute_esql") == ["sql"]
    assert reference_role("describe_table") == "describe" and reference_role("echo") is None
    missing = REFERENCE_ROLES.missing_tools(["sql_query", "search"])
    assert missing == [
        "roles.describe: the target has no tool 'describe_table'",
        "roles.list: the target has no tool 'list_tables'",
        "roles.fetch: the target has no tool 'fetch'",
    ]


def _episode(*calls: ToolCall, answer: str = "FINAL ANSWER: 3") -> Episode:
    now = datetime.now(UTC)
    return Episode(
        key="x/t/0", run_id="r", arm="x", task_id="t", attempt=0, suite="s2",
        category="single_tool", difficulty="easy", status="completed", agent="llm",
        target="mcp:x", prompts=["q"], answers=[answer], final_answer=answer,
        tool_calls=list(calls), started_at=now, finished_at=now,
    )  # fmt: skip


def test_predicted_sql_follows_the_sql_binding() -> None:
    roles = REFERENCE_ROLES.merged(
        ToolRoles.model_validate(
            {"sql": {"tool": "execute_query", "arguments": {"sql": "statement"}}}
        )
    )
    sql = {"statement": "SELECT 3"}
    recorded = ToolCall(index=0, name="execute_query", arguments=sql, roles=["sql"])
    found = predicted_sql(_episode(recorded), roles)
    assert found is not None and found.sql == "SELECT 3"
    assert found.source == "execute_query call #0 (sql role)"
    # A call recorded without roles (an older journal) is read through the arm's map ...
    legacy = ToolCall(index=0, name="execute_query", arguments=sql)
    assert predicted_sql(_episode(legacy), roles) == found
    # ... and without a map only the reference names count.
    assert predicted_sql(_episode(legacy)) is None
    old = ToolCall(index=1, name="sql_query", arguments={"sql": "SELECT 4"})
    assert predicted_sql(_episode(legacy, old)) == PredictedSql(
        "SELECT 4", "sql_query call #1 (sql role)"
    )
    # Failed calls and calls of other roles are never the prediction.
    failed = ToolCall(index=2, name="execute_query", arguments=sql, roles=["sql"], is_error=True)
    other = ToolCall(index=3, name="show_tables", arguments={}, roles=["list"])
    assert predicted_sql(_episode(failed, other), roles) is None
