"""``dabench target inspect``: role maps proposed for real servers (the test server, the
reference platform over stdio) and for the tool shapes of known third-party servers, and
``--check`` running the oracle through the proposal."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import dabench
from dabench.cli import app
from dabench.providers.base import ToolSpec
from dabench.roles import REFERENCE_ROLES, ToolRoles
from dabench.targets.inspect import list_server_tools, propose_roles
from dabench.targets.mcp_connection import McpEndpoint
from dabench.targets.process import ServerProcess, free_port

from .test_roles_third_party import ROLES, SERVER

SRC = Path(dabench.__file__).resolve().parents[1]


def spec(name: str, description: str, **props: Any) -> ToolSpec:
    """A tool spec with string (``"s"``), integer (``"i"``) arguments; a ``*`` suffix on the
    type marks the argument required."""
    types = {"s": "string", "i": "integer", "a": "array"}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: {"type": types[v.rstrip("*")]} for k, v in props.items()},
        "required": [k for k, v in props.items() if v.endswith("*")],
    }
    return ToolSpec(name=name, description=description, input_schema=schema)


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (  # query(query): mcp-server-motherduck's documented SQL tool
            [spec("query", "Execute a SQL query on the DuckDB or MotherDuck database", query="s*")],
            {"sql": {"tool": "query", "arguments": {"sql": "query"}, "drop": ["limit"]}},
        ),
        (  # query(sql)
            [spec("query", "Run a read-only SQL query", sql="s*")],
            {"sql": {"tool": "query", "drop": ["limit"]}},
        ),
        (  # execute_sql(sql) beside a tool that plays no role
            [
                spec("execute_sql", "Execute a SQL query on the current database", sql="s*"),
                spec("get_time", "The current time"),
            ],
            {"sql": {"tool": "execute_sql", "drop": ["limit"]}},
        ),
        (  # a search tool and a SQL tool that both take `query`, a row limit and a database
            [
                spec("semantic_search", "Find tables and docs", query="s*", top_k="i"),
                spec("run_sql", "Run SQL", query="s*", max_rows="i", database="s*"),
                spec("get_document", "Read a document by id", doc_id="s*"),
                spec("list_tables", "All tables", schema="s"),
            ],
            {
                "sql": {
                    "tool": "run_sql",
                    "arguments": {"sql": "query", "limit": "max_rows"},
                },
                "search": {
                    "tool": "semantic_search",
                    "arguments": {"limit": "top_k"},
                    "drop": ["kinds"],
                },
                "list": {"tool": "list_tables", "drop": ["pattern"]},
                "fetch": {"tool": "get_document", "arguments": {"id": "doc_id"}},
            },
        ),
        (  # mcp-server-motherduck 1.1.0: list_columns takes the schema apart from the table,
            # so the qualified canonical `table` would be looked up as a bare name: no describe
            [
                spec("execute_query", "Execute a SQL query", sql="s*"),
                spec(
                    "list_columns",
                    "List all columns of a table or view",
                    table="s*",
                    database="s",
                    schema="s",
                ),
                spec("list_tables", "List all tables and views", database="s", schema="s"),
            ],
            {
                "sql": {"tool": "execute_query", "drop": ["limit"]},
                "list": {"tool": "list_tables", "drop": ["pattern"]},
            },
        ),
        ([spec("echo", "Echo the message back", message="s*")], {}),
    ],
)
def test_proposals_for_known_tool_shapes(tools: list[ToolSpec], expected: dict[str, Any]) -> None:
    proposal = propose_roles(tools)
    assert proposal.roles.dump() == expected, proposal.reasons


def test_required_arguments_without_a_role_are_noted() -> None:
    tools = [spec("run_sql", "Run SQL", query="s*", database="s*")]
    notes = propose_roles(tools).notes
    assert notes == [
        "sql: run_sql requires database, which no canonical argument fills: set it under constants"
    ]


@pytest.mark.slow
async def test_reference_platform_over_stdio_gets_the_identity(real_world: Path) -> None:
    endpoint = McpEndpoint(
        command=[
            sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(real_world),
            "--profile", "a2", "--transport", "stdio",
        ],
        env={"PYTHONPATH": str(SRC)},
    )  # fmt: skip
    proposal = propose_roles(await list_server_tools(endpoint))
    assert proposal.roles == REFERENCE_ROLES
    assert proposal.notes == [
        "sql_query, describe_table, list_tables, search, fetch require session_id, a session "
        "handle the target must supply (target.session_argument: session_id)",
        "platform_info says it must be called first: it opens each episode's session "
        "(target.session_tool: {name: platform_info, field: session_id})",
    ]
    assert proposal.target == {
        "session_argument": "session_id",
        "session_tool": {"name": "platform_info", "field": "session_id"},
    }


@pytest.mark.slow
def test_the_reference_platform_checks_over_stdio_unedited(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proposal (roles and session settings) passes --check with no edit, and relative
    --world/--check-dir resolve against the caller's directory."""
    if real_world.parent.parent != tmp_path.parent:
        pytest.skip("the world and tmp_path do not share a parent directory")
    monkeypatch.chdir(real_world.parent)
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--check", "--world", real_world.name,
            "--check-dir", str(Path("..") / tmp_path.name / "check"), "--env",
            f"PYTHONPATH={SRC}", "--format", "json", "--", sys.executable, "-m", "dabench.cli",
            "platform", "serve", "--world", real_world.name, "--profile", "a2",
            "--transport", "stdio",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["target"]["session_tool"]["name"] == "platform_info"
    assert body["check"] and all(c["passed"] for c in body["check"]), body["check"]
    sql_reads = [r for c in body["check"] for r in c["read"]]
    assert sql_reads and all(r.startswith("json: ") for r in sql_reads), sql_reads
    checked = yaml.safe_load((tmp_path / "check" / "experiment.yaml").read_text())
    assert checked["world"]["dir"] == str(real_world)


@pytest.mark.slow
def test_an_http_server_started_as_stdio_is_named_at_once(real_world: Path) -> None:
    port = free_port()
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--env", f"PYTHONPATH={SRC}", "--", sys.executable, "-m",
            "dabench.cli", "platform", "serve", "--world", str(real_world), "--profile", "a0",
            "--port", str(port),
        ],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "no MCP on stdio" in result.output
    assert f"use --url http://127.0.0.1:{port}/mcp" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("form", ["--env", "env-command"])
def test_env_values_never_reach_the_files(real_world: Path, tmp_path: Path, form: str) -> None:
    """A stdio server configured by its environment: the values reach the server, --out
    and the check's run directory name the variables only."""
    warehouse = str(real_world / "warehouse.duckdb")
    secret = "postgresql://reader:s3cret-pw@db.example:5432/w"
    assignments = [f"DABENCH_TEST_WAREHOUSE={warehouse}", f"DABENCH_TEST_DSN={secret}"]
    server = [sys.executable, str(SERVER), "--warehouse-env", "DABENCH_TEST_WAREHOUSE"]
    if form == "--env":
        words = [w for a in assignments for w in ("--env", a)] + ["--", *server]
    else:
        words = ["--", "env", *assignments, *server]
    out, check_dir = tmp_path / "roles.yaml", tmp_path / "check"
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--out", str(out), "--check", "--world", str(real_world),
            "--check-dir", str(check_dir), "--format", "json", *words,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["roles"] == ROLES and all(c["passed"] for c in body["check"])
    text = out.read_text()
    assert "DABENCH_TEST_DSN=${DABENCH_TEST_DSN}" in text
    assert "DABENCH_TEST_WAREHOUSE: ${DABENCH_TEST_WAREHOUSE}" in text
    written = [text] + [p.read_text() for p in check_dir.rglob("*") if p.is_file()]
    assert not any("s3cret" in w or warehouse in w for w in written)
    assert ToolRoles.model_validate(yaml.safe_load(text)).dump() == ROLES


def test_passwords_in_a_command_line_are_masked() -> None:
    from dabench.runner.target_commands import redact

    assert redact("srv --dsn postgres://u:pw@h:5/db?x=1") == "srv --dsn postgres://u:***@h:5/db?x=1"
    assert redact("srv --dsn postgres://u@h/db") == "srv --dsn postgres://u@h/db"


def test_session_tool_is_proposed_from_a_call_first_description() -> None:
    tools = [
        spec("open_session", "Returns a session id. You must call this first."),
        spec("run_sql", "Run SQL", sql="s*", session_id="s*"),
    ]
    proposal = propose_roles(tools)
    assert proposal.target == {
        "session_argument": "session_id",
        "session_tool": {"name": "open_session", "field": "session_id"},
    }
    plain = propose_roles([spec("run_sql", "Run SQL first thing in the morning", sql="s*")])
    assert plain.target == {}


@pytest.mark.slow
def test_inspect_writes_and_checks_the_map(real_world: Path, tmp_path: Path) -> None:
    out = tmp_path / "roles.yaml"
    warehouse = str(real_world / "warehouse.duckdb")
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--out", str(out), "--check", "--world", str(real_world),
            "--check-dir", str(tmp_path / "check"), "--format", "json",
            "--", sys.executable, str(SERVER), warehouse,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert [t["name"] for t in body["tools"]] == ["execute_query", "table_schema", "show_tables"]
    assert body["roles"] == ROLES
    assert body["check"] and all(c["passed"] for c in body["check"]), body["check"]
    assert {c["task_id"].split(".")[0] for c in body["check"]} == {"s1", "s3"}
    reads = [r for c in body["check"] for r in c["read"]]
    assert reads and all(r.startswith("json: 1 row x ") for r in reads), reads
    # The file is usable verbatim under target.roles.
    assert ToolRoles.model_validate(yaml.safe_load(out.read_text())).dump() == ROLES
    # The check ran its episodes on one server process (each with its own handle).
    checked = yaml.safe_load((tmp_path / "check" / "experiment.yaml").read_text())
    assert checked["arms"][0]["target"]["share_process"] is True
    # A wrong map fails the check with the cause, per task.
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"sql": {"tool": "execute_query"}}))
    extra = tmp_path / "target.yaml"
    extra.write_text(yaml.safe_dump({"name": "custom", "hide_tools": ["show_tables"]}))
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--roles", str(wrong), "--check", "--world", str(real_world),
            "--format", "json", "--command", f"{sys.executable} {SERVER} {warehouse}",
            "--target-config", str(extra), "--check-dir", str(tmp_path / "wrong"),
        ],
    )  # fmt: skip
    assert result.exit_code == 1
    failed = [c for c in json.loads(result.stdout)["check"] if not c["passed"]]
    assert failed and all("harness error" in c["detail"] for c in failed)
    assert "execute_query" in failed[0]["detail"] and "statement" in failed[0]["detail"]
    checked = yaml.safe_load((tmp_path / "wrong" / "experiment.yaml").read_text())
    target = checked["arms"][0]["target"]
    assert target["name"] == "custom" and target["hide_tools"] == ["show_tables"]
    assert target["share_process"] is True


def test_the_check_shares_a_stdio_process_unless_told() -> None:
    """--check runs a stdio server's episodes on one process, each with its own handle; the
    target settings (--target-config) can ask for a process per episode or a warm pool."""
    from dabench.runner.role_check import check_experiment

    def sessions(**target: Any) -> dict[str, Any]:
        exp = check_experiment(target, ToolRoles.model_validate(ROLES), None)
        checked: dict[str, Any] = exp["arms"][0]["target"]
        return {k: checked[k] for k in ("share_process", "warm_pool") if k in checked}

    assert sessions(command=["srv"]) == {"share_process": True}
    assert sessions(command=["srv"], share_process=False) == {"share_process": False}
    assert sessions(command=["srv"], warm_pool=2) == {"warm_pool": 2}
    assert sessions(url="http://127.0.0.1:9/mcp") == {}


def test_inspect_refuses_bad_input(tmp_path: Path) -> None:
    extra = tmp_path / "target.yaml"
    extra.write_text("roles: {}\n")
    fixed = CliRunner().invoke(
        app, ["target", "inspect", "--target-config", str(extra), "--", "srv"]
    )
    assert fixed.exit_code == 2 and "roles come from the command line" in fixed.output
    both = CliRunner().invoke(app, ["target", "inspect", "--url", "http://x/mcp", "--", "srv"])
    assert both.exit_code == 2 and "exactly one server" in both.output
    header = CliRunner().invoke(
        app, ["target", "inspect", "--url", "http://127.0.0.1:9/mcp", "--header", "nocolon"]
    )
    assert header.exit_code == 2 and "NAME:VALUE" in header.output


@pytest.mark.slow
def test_inspect_over_http_with_a_header(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    command = [sys.executable, str(SERVER), str(real_world / "warehouse.duckdb")]
    server = ServerProcess([*command, "--port", str(port), "--token", "s3cret"], tmp_path / "log")
    server.start()
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = CliRunner().invoke(app, ["target", "inspect", "--url", url])
        assert refused.exit_code == 3 and "cannot connect" in refused.output
        monkeypatch.setenv("INSPECT_TOKEN", "s3cret")
        check_dir = tmp_path / "check"
        result = CliRunner().invoke(
            app,
            [
                "target", "inspect", "--url", url, "--header",
                "Authorization: Bearer ${INSPECT_TOKEN}", "--check", "--world", str(real_world),
                "--check-dir", str(check_dir), "--format", "json",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert body["roles"] == ROLES and all(c["passed"] for c in body["check"])
        # The key reached the server through the environment, never the run directory.
        written = [p.read_text() for p in check_dir.rglob("*") if p.is_file()]
        assert written and not any("s3cret" in text for text in written)
    finally:
        server.kill_now()


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    """Until something listens on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


@pytest.mark.slow
def test_inspect_proposes_a_result_adapter_from_the_probe(real_world: Path, tmp_path: Path) -> None:
    """A server whose rows sit where the reader does not look: the probe query's known
    answer locates them, the proposal carries the JMESPath, and --check passes unedited."""
    warehouse = str(real_world / "warehouse.duckdb")
    out = tmp_path / "roles.yaml"
    result = CliRunner().invoke(
        app,
        [
            "target", "inspect", "--out", str(out), "--check", "--world", str(real_world),
            "--check-dir", str(tmp_path / "check"), "--format", "json",
            "--", sys.executable, str(SERVER), warehouse, "--format", "envelope",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    adapter = {"path": "payload.batches[0].tuples", "format": "json"}
    assert body["roles"]["sql"]["result"] == adapter
    assert body["probe"]["ok"] and body["probe"]["adapter"] == adapter
    assert all(c["passed"] for c in body["check"]), body["check"]
    assert ToolRoles.model_validate(yaml.safe_load(out.read_text())).dump() == body["roles"]


@pytest.mark.parametrize(
    ("text", "adapter"),
    [
        ("[(1, 'x')]", None),
        ('{"success": true, "data": {"statements": [{"rows": [{"a": 1, "b": "x"}]}]}}', None),
        ('{"payload": {"batches": [{"tuples": [[1, "x"]]}]}}', "payload.batches[0].tuples"),
        ('{"out": {"columns": ["a", "b"], "rows": [["1", "x"]]}}', "out"),
        ('{"res": {"data-set": [{"a": 1, "b": "x"}]}}', 'res."data-set"'),
    ],
)
def test_probe_answers_locate_the_rows(text: str, adapter: str | None) -> None:
    from dabench.sqlresult.probe import propose_adapter

    proposal = propose_adapter(text)
    assert proposal.ok, proposal.read
    found = proposal.adapter.path if proposal.adapter is not None else None
    assert found == adapter


def test_an_unreadable_probe_answer_is_reported() -> None:
    from dabench.sqlresult.probe import propose_adapter

    proposal = propose_adapter("Query executed successfully")
    assert not proposal.ok and proposal.adapter is None
    assert "no known table shape" in proposal.read
