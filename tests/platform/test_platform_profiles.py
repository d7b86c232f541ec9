"""Profiles: shipped a0..a3, validation of user files, personas (deny wins), the CLI listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.platform.profile import Persona, load_profile, parse_profile

A0 = ["platform_info", "sql_query", "describe_table", "list_tables"]
A2 = [*A0, "search", "fetch"]
A3 = [*A2, "memory_capture", "memory_manage", "apply_knowledge"]


@pytest.mark.parametrize(
    ("name", "tools", "enrichment", "gate", "memory"),
    [
        ("a0", A0, False, False, False),
        ("a1", A0, True, False, False),
        ("a2", A2, True, True, False),
        ("a3", A3, True, True, True),
    ],
)
def test_shipped_profiles(
    name: str, tools: list[str], enrichment: bool, gate: bool, memory: bool
) -> None:
    prof = load_profile(name)
    assert prof.tools_for("reviewer") == tools
    assert prof.tools_for("analyst") == [t for t in tools if t != "apply_knowledge"]
    assert prof.enrichment.enabled is enrichment
    assert prof.gate.search_first is gate
    assert prof.memory.enabled is memory
    assert len(prof.profile_hash) == 64
    assert prof.profile_hash == load_profile(name).profile_hash


def test_profile_hashes_differ() -> None:
    assert len({load_profile(n).profile_hash for n in ("a0", "a1", "a2", "a3")}) == 4


def test_unknown_key_rejected_with_location() -> None:
    text = "name: x\ntools: [platform_info]\nenrichment: {enabled: true, colour: red}\n"
    with pytest.raises(UserInputError, match=r"mine\.yaml: invalid profile: enrichment\.colour"):
        parse_profile(text, "mine.yaml")


def test_unknown_tool_rejected() -> None:
    with pytest.raises(UserInputError, match=r"tools\.1"):
        parse_profile("name: x\ntools: [platform_info, drop_table]\n", "p.yaml")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("tools: [platform_info, sql_query]\ngate: {search_first: true}", "needs the search tool"),
        ("tools: [platform_info, memory_capture]", "memory.enabled"),
        ("tools: [sql_query]", "must include platform_info"),
        ("tools: [platform_info]\nsql: {row_limit_default: 50, row_limit_max: 10}", "exceeds"),
    ],
)
def test_inconsistent_profiles_rejected(body: str, needle: str) -> None:
    with pytest.raises(UserInputError, match=needle):
        parse_profile(f"name: x\n{body}\n", "p.yaml")


def test_bad_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ntools: [platform_info\n")
    with pytest.raises(UserInputError, match=r"bad\.yaml:\d+: invalid YAML"):
        load_profile(str(path))


def test_missing_profile_file() -> None:
    with pytest.raises(UserInputError, match="not a shipped profile"):
        load_profile("/nonexistent/p.yaml")


def test_persona_deny_wins_over_allow() -> None:
    persona = Persona(allow=["memory_*", "sql_query"], deny=["memory_manage"])
    assert persona.permits("memory_capture")
    assert not persona.permits("memory_manage")
    assert persona.permits("sql_query")
    assert not persona.permits("search")


def test_user_profile_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\ntools: [platform_info, sql_query]\n"
        "personas: {intern: {allow: ['*'], deny: ['sql_*']}}\ndefault_persona: intern\n"
    )
    prof = load_profile(str(path))
    assert prof.tools_for("intern") == ["platform_info"]
    assert prof.tools_for("nobody") == []


def test_cli_profiles_lists_tools() -> None:
    result = CliRunner().invoke(app, ["platform", "profiles"], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "apply_knowledge" in result.output
    for name in ("a0", "a1", "a2", "a3"):
        assert name in result.output


@pytest.mark.parametrize(
    ("args", "auth_text", "needle"),
    [
        (["--profile", "a9"], None, "not a shipped profile"),
        (["--transport", "smoke"], None, "--transport must be http or stdio"),
        (["--audit-dsn", "mysql://x"], None, "postgresql://"),
        ([], "identities: [{key: abcdefgh1, user: a, persona: intern}]\n", "persona"),
        ([], "identities: [{key: short, user: a}]\n", "identities.0.key"),
        ([], "identities: []\nadmins: [x]\n", "admins"),
    ],
)
def test_serve_rejects_bad_input(
    world_dir: Path, tmp_path: Path, args: list[str], auth_text: str | None, needle: str
) -> None:
    argv = ["platform", "serve", "--world", str(world_dir), "--state-dir", str(tmp_path), *args]
    if auth_text is not None:
        auth = tmp_path / "auth.yaml"
        auth.write_text(auth_text)
        argv += ["--auth", str(auth)]
    result = CliRunner().invoke(app, argv)
    assert isinstance(result.exception, UserInputError), result.output
    assert needle in str(result.exception)


def test_serve_rejects_missing_world(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["platform", "serve", "--world", str(tmp_path / "none")])
    assert isinstance(result.exception, UserInputError)
    assert "not a directory" in str(result.exception)
