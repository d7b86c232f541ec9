"""``dabench world`` commands: bad input exits 2 with one line and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app

runner = CliRunner()


def _leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if ".building-" in p.name or ".old-" in p.name]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "--seed must be an integer from 0"),
        (["--seed", "abc"], "--seed must be an integer, got 'abc'"),
        (["--scale", "0"], "--scale must be an integer from 1 to 1000"),
        (["--scale", "1001"], "--scale must be an integer from 1 to 1000"),
        (["--scale", "1.5"], "--scale must be an integer"),
    ],
)
def test_bad_seed_or_scale(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "w"
    result = runner.invoke(app, ["world", "build", *args, "--out", str(out)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not out.exists() and _leftovers(tmp_path) == []


def test_non_empty_out_without_force(tmp_path: Path) -> None:
    out = tmp_path / "w"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["world", "build", "--out", str(out)])
    assert result.exit_code == 2
    assert "not empty (use --force" in result.output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_parent(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        result = runner.invoke(app, ["world", "build", "--out", str(parent / "w")])
        assert result.exit_code == 2
        assert result.output.startswith("error: ") and str(parent) in result.output
        assert list(parent.iterdir()) == []
    finally:
        parent.chmod(0o755)


def test_unwritable_parent() -> None:
    """/proc refuses new directories even for root."""
    result = runner.invoke(app, ["world", "build", "--out", "/proc/dabench-world"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --out /proc/dabench-world")


def test_parent_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = runner.invoke(app, ["world", "build", "--out", str(tmp_path / "f" / "w")])
    assert result.exit_code == 2 and "is not a directory" in result.output


def test_missing_parents_are_created_and_removed_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dabench.world import build as build_module

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(build_module, "generate", boom)
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_module.build_world(930, 1, tmp_path / "a" / "b" / "w")
    assert list(tmp_path.iterdir()) == []


def test_out_is_a_file(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("x")
    result = runner.invoke(app, ["world", "build", "--out", str(out)])
    assert result.exit_code == 2 and "not a directory" in result.output


def test_build_into_new_parents_then_force(world_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "worlds" / "w930"
    build = ["world", "build", "--seed", "930", "--scale", "1", "--out", str(out)]
    result = runner.invoke(app, build)
    assert result.exit_code == 0, result.output
    assert "built world seed=930 scale=1" in result.output
    (out / "stale.txt").write_text("old")
    assert runner.invoke(app, build).exit_code == 2
    result = runner.invoke(app, [*build, "--force"])
    assert result.exit_code == 0, result.output
    assert not (out / "stale.txt").exists() and _leftovers(out.parent) == []

    info = runner.invoke(app, ["world", "info", str(out)])
    assert info.exit_code == 0
    assert "seed 930" in info.output and "net_revenue.partner_revenue_2024" in info.output

    assert runner.invoke(app, ["world", "verify", str(out)]).exit_code == 0
    (out / "knowledge" / "revenue-policy.md").write_text("tampered")
    bad = runner.invoke(app, ["world", "verify", str(out)])
    assert bad.exit_code == 1 and "knowledge/revenue-policy.md" in bad.output


def test_info_on_a_non_world(tmp_path: Path) -> None:
    result = runner.invoke(app, ["world", "info", str(tmp_path)])
    assert result.exit_code == 2 and "neither a built world (world.json)" in result.output


def test_interrupted_build_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure mid-build removes the temporary directory and leaves --out untouched."""
    from dabench.world import build as build_module

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(build_module, "_move_into_place", boom)
    out = tmp_path / "w"
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_module.build_world(930, 1, out)
    assert not out.exists() and _leftovers(tmp_path) == []
    shutil.rmtree(out, ignore_errors=True)


def test_a_trap_that_does_not_bite_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invariant names the trap, prints one line, exits 2 and leaves nothing behind."""
    from dabench.world import constants

    monkeypatch.setattr(constants, "TRAP_MARGIN_REL", 1e9)
    out = tmp_path / "w"
    result = runner.invoke(app, ["world", "build", "--out", str(out)])
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: trap cents_units.avg_list_price does not bite: correct=")
    assert not out.exists() and _leftovers(tmp_path) == []
