"""Bad input is refused before anything is written or drawn (issue #28): a bad profile inside
an experiment leaves no run directory, and ``world export`` names a bad destination before
any progress bar."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.world.cache import default_world

cli = CliRunner()


def _experiment(tmp_path: Path, world: Path, profile: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: bad-profile\nworld: {{dir: {world}}}\ntasks: {{smoke: true}}\nk: 1\n"
        "arms:\n"
        "  - {name: a0, target: {kind: reference, profile: a0}, agent: {kind: oracle}}\n"
        f"  - {{name: mine, target: {{kind: reference, profile: {profile}}}, "
        "agent: {kind: oracle}}\n",
        encoding="utf-8",
    )
    return path


def test_a_bad_profile_inside_an_experiment_makes_no_run_dir(
    tmp_path: Path, mini_world: Path
) -> None:
    (tmp_path / "mine.yaml").write_text("name: mine\nsql: {row_limit_max: -3}\n")
    for profile, why in (("mine.yaml", "mine.yaml"), ("missing.yaml", "no such file")):
        out = tmp_path / f"run-{profile}"
        done = cli.invoke(
            app, ["run", str(_experiment(tmp_path, mini_world, profile)), "--out", str(out)]
        )
        assert isinstance(done.exception, UserInputError), done.output  # exit code 2
        assert f"target.profile {profile!r}" in str(done.exception) and why in str(done.exception)
        assert not out.exists()


def test_export_names_a_bad_destination_before_any_progress(
    tmp_path: Path, mini_world: Path
) -> None:
    taken = tmp_path / "parquet"
    taken.mkdir()
    (taken / "x").write_text("already here")
    done = cli.invoke(app, ["world", "export", "--world", str(mini_world), "--parquet", str(taken)])
    assert done.exit_code == 2, done.output
    assert done.stderr.strip().splitlines() == [
        f"error: {taken}: exists and is not empty (pass --force to replace it)"
    ]
    none = cli.invoke(app, ["world", "export", "--world", str(mini_world)])
    assert none.exit_code == 2 and "name exactly one destination" in none.stderr


@pytest.mark.slow
def test_world_defaults_to_the_cache_everywhere() -> None:
    world = default_world()
    shown = cli.invoke(app, ["world", "info"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith(f"world {world}: generator ")
    verified = cli.invoke(app, ["world", "verify"])
    assert verified.exit_code == 0 and verified.stdout.startswith("ok: "), verified.output
    for command in (["world", "export"], ["platform", "serve"], ["platform", "pg-role"],
                    ["tasks", "lock"], ["tasks", "validate"], ["target", "inspect"]):  # fmt: skip
        help_text = CliRunner(env={"COLUMNS": "250"}).invoke(app, [*command, "--help"]).stdout
        line = next(ln for ln in help_text.splitlines() if " --world " in ln)
        assert "(default: the cache)" in line, (command, line)
