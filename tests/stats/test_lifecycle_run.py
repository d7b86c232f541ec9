"""A real run: the smoke S5 protocol on a3 with the oracle -> the lifecycle table in report.md."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dabench.cli import app


def test_oracle_run_reports_full_capture(tmp_path: Path) -> None:
    from dabench.world import build_world

    world = tmp_path / "w930"
    build_world(930, 1, world)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"""name: lifecycle-smoke
world: {{dir: {json.dumps(str(world))}}}
tasks: {{suites: [s5], smoke: true}}
k: 2
concurrency: 2
arms:
  - name: a3
    target: {{kind: reference, profile: a3}}
    agent: {{kind: oracle}}
""",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", str(experiment), "--out", str(run_dir), "--no-progress"]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "## Lifecycle (S5)" in md
    assert "| `a3` | capture rate | 100.0% | 2 / 2 |" in md
    assert "| `a3` | `s5.flagship-store` | 2 | 2 | 100.0% | 100.0% |" in md
    stats = json.loads((run_dir / "stats.json").read_text(encoding="utf-8"))
    rates = {m["metric"]: m["rate"] for m in stats["lifecycle"]["a3"]["metrics"]}
    assert rates["capture"] == 1.0 and rates["transfer"] == 1.0
    assert 'id="lifecycle-metrics"' in (run_dir / "report.html").read_text(encoding="utf-8")
