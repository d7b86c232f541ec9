"""Experiment files: validation with file/line/field errors, registries, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import DabenchError, UserInputError
from dabench.runner.experiment import apply_overrides, builtin_experiment, load_experiment

GOOD = """\
name: ab
world: {seed: 930, scale: 1}
tasks: {smoke: true}
arms:
  - name: a0
    target: {kind: reference, profile: a0}
    agent: {kind: oracle}
  - name: a2
    target: {kind: reference, profile: a2}
    agent: {kind: oracle}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


def test_builtin_smoke() -> None:
    exp = builtin_experiment("smoke")
    assert [a.name for a in exp.arms] == ["a0", "a2", "a3"]
    # a3 (memory) plays only the lifecycle protocols; a0 and a2 play every selected suite.
    assert [a.suites for a in exp.arms] == [[], [], ["s5"]]
    assert exp.arms[2].runs_suite("s5") and not exp.arms[2].runs_suite("s1")
    assert exp.arms[0].runs_suite("s1") and exp.arms[0].runs_suite("s5")
    assert exp.tasks.smoke and exp.k == 1 and not exp.uses_model()
    assert (exp.world.seed, exp.world.scale) == (930, 1)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("k: 1\n", "k: 0\n"),
            ":4: experiment field 'k': Input should be greater than or equal to 1",
        ),
        (
            ("agent: {kind: oracle}\n  - name: a2", "agent: {kind: wizard}\n  - name: a2"),
            "arms[0].agent.kind: unknown agent kind 'wizard'; expected one of",
        ),
        (
            ("profile: a0}", "profile: a0, port: 1}"),
            "arms[0].target.port: Extra inputs are not permitted",
        ),
        (("name: a2", "name: a0"), "arm name 'a0' is already used at line"),
        (
            ("tasks: {smoke: true}", "tasks: {suites: [s9]}"),
            ":3: experiment field 'tasks.suites.0'",
        ),
    ],
)
def test_experiment_errors(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    text = GOOD.replace("arms:", "k: 1\narms:") if edit[0] == "k: 1\n" else GOOD
    path = write(tmp_path, text.replace(*edit))
    with pytest.raises(UserInputError) as err:
        load_experiment(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_llm_agent_config_is_validated(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("agent: {kind: oracle}", "agent: {kind: llm}", 1))
    with pytest.raises(UserInputError, match=r"arms\[0\]\.agent\.model: Field required"):
        load_experiment(path)


def test_overrides(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD))
    one = apply_overrides(exp, arms=["a2"], k=3, model="fake:latency=0", base_url="http://x/v1")
    assert [a.name for a in one.arms] == ["a2"] and one.k == 3 and one.uses_model()
    assert one.arms[0].agent == {
        "kind": "llm",
        "model": "fake:latency=0",
        "provider_settings": {"base_url": "http://x/v1"},
    }
    assert one.hash() != exp.hash()
    with pytest.raises(UserInputError, match="unknown arm"):
        apply_overrides(exp, arms=["a9"])
    with pytest.raises(UserInputError, match="--base-url needs --model"):
        apply_overrides(exp, base_url="http://x")


def test_resume_refuses_changes(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "--resume", str(tmp_path), "--model", "fake:x", "--k", "3"]
    )
    # The console script prints UserInputError as `error: ...` and exits 2.
    assert isinstance(result.exception, UserInputError)
    assert "--k, --model would change it" in str(result.exception)
    missing = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "none")])
    assert isinstance(missing.exception, DabenchError)
    assert "no manifest" in str(missing.exception)
