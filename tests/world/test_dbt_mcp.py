"""dbt-mcp as an arm, without starting it (that is tests/harness/test_semantic_layer.py):
its ``show`` answers read as tables or tool errors, the role map ``target inspect`` proposes
for its tools equals the example's, role-argument templates, the apt mirror the Debian root
is bootstrapped from, and the sandbox's command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dabench.errors import UserInputError
from dabench.providers.base import ToolSpec
from dabench.roles import RoleBinding, ToolRoles
from dabench.sqlresult import SqlToolError, read_sql_result
from dabench.targets.base import TargetContext
from dabench.targets.inspect import propose_roles
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig
from dabench.world.dbt_env import DbtToolError
from dabench.world.dbt_mcp_env import (
    SANDBOX_UV,
    VENV,
    _root_python_argv,
    apt_mirror,
    dbt_mcp_command,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "semantic_layer.yaml"
LOG = (
    "07:27:52  Running with dbt=1.11.16\n07:27:54  Registered adapter: duckdb=1.11.1\n"
    "07:28:04  Found 11 models, 1 sql operation, 35 sources, 17 metrics\n07:28:04  \n"
    "07:28:04  Concurrency: 1 threads (target='readonly')\n07:28:04  \n"
)


def test_show_answers_read_as_tables() -> None:
    rows = '{\n  "show": [\n    {"channel": "web", "n": 12, "avg": 2.5, "d": null}\n  ]\n}\n'
    table = read_sql_result(LOG + rows)
    assert (table.columns, table.rows) == (["channel", "n", "avg", "d"], [["web", 12, 2.5, None]])
    empty = read_sql_result(LOG + '{\n  "show": []\n}\n')
    assert empty.rows == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "--- stdout ---\n" + LOG + "07:28:18  Encountered an error:\nRuntime Error\n"
            "  Runtime Error in sql_operation inline_query (from remote system.sql)\n"
            '    Catalog Error: Table with name nowhere does not exist!\n    Did you mean "x"?\n',
            "Catalog Error: Table with name nowhere does not exist!",
        ),
        (
            "--- stdout ---\n" + LOG + "  Invalid Input Error: Cannot execute statement of type "
            '"CREATE" on database "semantic" which is attached in read-only mode!',
            'Invalid Input Error: Cannot execute statement of type "CREATE" on database '
            '"semantic" which is attached in read-only mode!',
        ),
        ("Timeout: dbt command took too long to complete.", "Timeout: dbt command"),
        ("Command failed with exit code 2 (no output)", "Command failed with exit code 2"),
    ],
)
def test_show_failures_are_tool_errors(text: str, error: str) -> None:
    """dbt-mcp answers a failed command with its output and ``isError`` false."""
    with pytest.raises(SqlToolError, match="answered with an error") as raised:
        read_sql_result(text)
    assert error in str(raised.value)


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": props, "required": required}
    return ToolSpec(name=name, description=description, input_schema=schema)


ANY: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
DBT_MCP_TOOLS = [  # dbt-mcp 2.8.0 in local mode with build/run/test/clone/docs/parse disabled
    _spec("compile", "dbt compile generates executable SQL from source model, test, and "
          "analysis files.", {"node_selection": ANY, "yml_selector": ANY}, []),
    _spec("list", "List the resources in the your dbt project.",
          {"node_selection": ANY, "yml_selector": ANY, "resource_type": ANY}, []),
    _spec("show", "dbt show executes an arbitrary SQL statement against the database and "
          "returns the results.", {"sql_query": {"type": "string"}, "limit": {"type": "integer"}},
          ["sql_query"]),
    _spec("get_lineage_dev", "Retrieves the lineage of a specific dbt resource from the local "
          "development manifest.", {"unique_id": {"type": "string"}, "types": ANY,
                                    "depth": {"type": "integer"}}, ["unique_id"]),
    _spec("get_node_details_dev", "Retrieves detailed information about a specific dbt node "
          "from the local development manifest using `dbt ls --output json`.",
          {"node_id": {"type": "string"}}, ["node_id"]),
]  # fmt: skip


def test_inspect_proposes_the_example_map_for_dbt_mcp() -> None:
    proposal = propose_roles(DBT_MCP_TOOLS)
    arms = yaml.safe_load(EXAMPLE.read_text())["arms"]
    example = next(a for a in arms if a["name"] == "dbt-mcp")["target"]["roles"]
    assert proposal.roles.dump() == example
    assert any("dbt selector" in n for n in proposal.notes)


def test_templates_shape_an_argument() -> None:
    binding = RoleBinding(
        tool="get_node_details_dev",
        arguments={"table": "node_id"},
        templates={"table": "source:{value}"},
    )
    assert binding.call_arguments({"table": "sales.orders"}) == {"node_id": "source:sales.orders"}
    with pytest.raises(ValueError, match="sent as it is"):
        ToolRoles.model_validate({"sql": {"tool": "show", "templates": {"sql": "{value} x"}}})
    with pytest.raises(ValueError, match="'name' is not a canonical argument"):
        ToolRoles.model_validate({"describe": {"tool": "d", "templates": {"name": "x{value}"}}})


def test_apt_mirror_reads_both_formats(tmp_path: Path) -> None:
    one_line = tmp_path / "sources.list"
    one_line.write_text(
        "# comment\ndeb http://security.example/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://mirror.example/debian bookworm main\n"
    )
    assert apt_mirror((one_line,)) == "http://mirror.example/debian"
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb822.example/debian\nSuites: bookworm\n"
    )
    assert apt_mirror((tmp_path / "absent.list", d)) == "http://deb822.example/debian"
    with pytest.raises(DbtToolError, match="no Debian archive URI"):
        apt_mirror((tmp_path / "absent.list",))


def test_the_sandbox_binds_the_project_and_warehouse_read_only(tmp_path: Path) -> None:
    project, warehouse = tmp_path / "proj", tmp_path / "w" / "warehouse.duckdb"
    project.mkdir()
    warehouse.parent.mkdir()
    warehouse.write_bytes(b"")
    attach = [{"path": str(warehouse), "alias": "warehouse", "read_only": True}]
    output = {"type": "duckdb", "path": str(project / "semantic.duckdb"), "attach": attach}
    profile = {"p": {"target": "readonly", "outputs": {"readonly": output}}}
    (project / "profiles.yml").write_text(yaml.safe_dump(profile))
    root = tmp_path / "root"
    with pytest.raises(DbtToolError, match="dbt-mcp install"):
        dbt_mcp_command(project, root)
    (root / VENV.lstrip("/") / "bin").mkdir(parents=True)
    (root / VENV.lstrip("/") / "bin" / "dbt-mcp").write_text("")
    argv = dbt_mcp_command(project, root)
    pairs = list(zip(argv, argv[1:], argv[2:], strict=False))
    assert ("--ro-bind", str(project), str(project)) in pairs
    assert ("--ro-bind", str(warehouse), str(warehouse)) in pairs
    assert "--bind" not in argv and "--unshare-all" in argv and "--clearenv" in argv
    assert ("--setenv", "DISABLE_TOOLS", "build,run,test,clone,docs,parse") in pairs
    assert argv[-1] == f"{VENV}/bin/dbt-mcp"
    warehouse.unlink()
    with pytest.raises(DbtToolError, match="does not exist"):
        dbt_mcp_command(project, root)


def test_a_reference_target_serves_its_own_world(tmp_path: Path) -> None:
    """``target.world`` (the marts arm): that directory, relative to the experiment file,
    instead of the experiment's world; a missing one is refused naming it."""
    (tmp_path / "marts").mkdir()
    context = TargetContext(tmp_path / "w930", tmp_path / "work", experiment_dir=tmp_path)
    default = ReferenceTarget(ReferenceTargetConfig(), context)
    assert default.served_world() == tmp_path / "w930"
    marts = ReferenceTarget(ReferenceTargetConfig(world="marts"), context)
    assert marts.served_world() == (tmp_path / "marts").resolve()
    with pytest.raises(UserInputError, match=r"target\.world 'absent': no such directory"):
        ReferenceTarget(ReferenceTargetConfig(world="absent"), context).served_world()


def test_the_install_sandbox_mounts_the_hosts_uv_and_names_the_ca_bundle(tmp_path: Path) -> None:
    """uv goes into the sandbox's private /tmp (mounted after it, so not hidden by it) and
    reads the CA bundle from SSL_CERT_FILE (set after --clearenv, which would unset it)."""
    argv = _root_python_argv(tmp_path, SANDBOX_UV, "pip", "install", uv="/host/bin/uv")
    pairs = list(zip(argv, argv[1:], argv[2:], strict=False))
    assert ("--ro-bind", "/host/bin/uv", SANDBOX_UV) in pairs
    assert argv.index("--tmpfs") < argv.index("/host/bin/uv")
    if Path("/etc/ssl/certs/ca-certificates.crt").is_file():
        assert argv.index("--clearenv") < argv.index("SSL_CERT_FILE")
    assert argv[-4:] == ["--", SANDBOX_UV, "pip", "install"]
    assert "/host/bin/uv" not in _root_python_argv(tmp_path, "/usr/bin/python3")
