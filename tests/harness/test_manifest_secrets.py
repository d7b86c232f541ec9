"""A password in a target's command line never reaches manifest.json (nor what publish
copies from it); the run keeps the command as given privately, for resume and play."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from dabench.journal.store import PRIVATE_EXPERIMENT_FILE, read_manifest
from dabench.redaction import redact, without_password
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.base import TargetContext
from dabench.targets.mcp import McpTarget
from dabench.targets.registry import make_target

from .conftest import DATA

DSN = "postgresql://reader:S3cret@db.example:5432/dabench"


def test_redact_masks_passwords_but_not_references() -> None:
    assert (
        redact(f"npx server {DSN}") == "npx server postgresql://reader:***@db.example:5432/dabench"
    )
    assert redact("postgresql://reader:${PGPW}@h/db") == "postgresql://reader:${PGPW}@h/db"
    assert without_password(DSN) == "postgresql://reader@db.example:5432/dabench"
    assert without_password("postgresql://reader@h/db") == "postgresql://reader@h/db"


async def test_the_manifest_masks_a_password_in_a_target_command(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    command = ["env", f"DSN={DSN}", *everything_server]
    exp_file = tmp_path / "exp.yaml"
    exp_file.write_text(
        yaml.safe_dump(
            {
                "name": "secret-command",
                "world": {"dir": str(mini_world)},
                "tasks": {"builtin": False, "files": [str(DATA / "tasks_basic.yaml")]},
                "k": 1,
                "arms": [
                    {
                        "name": "everything",
                        "target": {"kind": "mcp", "name": "everything", "command": command},
                        "agent": {"kind": "llm", "model": "fake:calls=1,sql_tool=echo"},
                    }
                ],
            }
        )
    )
    run_dir = tmp_path / "run"
    run = ExperimentRun(
        load_experiment(exp_file), run_dir, experiment_dir=tmp_path,
        console=Console(quiet=True), progress=False,
    )  # fmt: skip
    summary = await run.execute()
    assert summary.finished == 3
    text = (run_dir / "manifest.json").read_text()
    assert "S3cret" not in text
    manifest = json.loads(text)
    masked = "DSN=postgresql://reader:***@db.example:5432/dabench"
    assert manifest["experiment"]["arms"][0]["target"]["command"][1] == masked
    assert masked in manifest["arms"][0]["target"]["endpoint"]
    private = run_dir / PRIVATE_EXPERIMENT_FILE
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert read_manifest(run_dir).experiment["arms"][0]["target"]["command"][1] == masked
    resumed = read_manifest(run_dir, with_secrets=True)
    assert resumed.experiment["arms"][0]["target"]["command"] == command


def test_a_variable_in_a_command_is_expanded_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DABENCH_TEST_PW", "S3cret")
    target = make_target(
        {"kind": "mcp", "command": ["server", "postgresql://u:${DABENCH_TEST_PW}@h/db"]},
        TargetContext(None, tmp_path),
    )
    assert isinstance(target, McpTarget)
    assert target.endpoint.command == ["server", "postgresql://u:S3cret@h/db"]
    assert target.describe()["endpoint"] == "server postgresql://u:${DABENCH_TEST_PW}@h/db"
