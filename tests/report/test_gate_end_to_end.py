"""The regression gate end to end: a2 with its knowledge layer switched off, still called a2.

Two real experiments on the reference platform (oracle agent, smoke tasks, k = 1): the
baseline runs the shipped a2 profile; the candidate runs a custom profile with enrichment and
search off under the same arm name. ``dabench compare`` must fail (exit 1). With the oracle
the gate catches the missing enrichment; with the probe agent (which answers a trap with the
gold SQL only when the platform surfaced its deciding fact) it also catches the accuracy drop.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.report.test_cli import run_cli
from typer.testing import CliRunner

from dabench.cli import app

OFF_PROFILE = """\
name: a2-off
description: a2 with enrichment and the knowledge layer switched off.
tools: [platform_info, sql_query, describe_table, list_tables]
enrichment: {enabled: false}
personas:
  analyst: {allow: ["*"], deny: ["apply_knowledge"]}
  reviewer: {allow: ["*"]}
default_persona: analyst
"""

EXPERIMENT = """\
name: gate-{name}
world: {{seed: 930, scale: 1}}
tasks: {{smoke: true}}
k: 1
concurrency: 4
episode_timeout_s: 120
arms:
  - name: a2
    target: {{kind: reference, profile: {profile}}}
    agent: {{kind: {agent}}}
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dabench.world import build_world

    out = tmp_path_factory.mktemp("world") / "w930"
    build_world(930, 1, out)
    return out


def _run(tmp: Path, world: Path, name: str, profile: str, agent: str = "oracle") -> Path:
    exp = tmp / f"{name}.yaml"
    exp.write_text(EXPERIMENT.format(name=name, profile=profile, agent=agent), encoding="utf-8")
    out = tmp / name
    result = CliRunner().invoke(
        app, ["run", str(exp), "--world", str(world), "--out", str(out), "--no-progress"]
    )
    detail = f"{result.output[-4000:]}\n{result.exception!r}"
    assert result.exit_code == 0, detail
    assert (out / "report.html").exists() and (out / "stats.json").exists()
    return out


@pytest.mark.slow
def test_enrichment_off_in_an_arm_still_called_a2_fails_the_gate(
    world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    off = tmp_path / "a2-off.yaml"
    off.write_text(OFF_PROFILE, encoding="utf-8")
    base = _run(tmp_path, world, "base", "a2")
    bad = _run(tmp_path, world, "bad", str(off))
    capsys.readouterr()
    assert run_cli(monkeypatch, "compare", str(base), "--baseline", str(base)) == 0
    capsys.readouterr()
    gate_json = tmp_path / "gate.json"
    code = run_cli(
        monkeypatch, "compare", str(bad), "--baseline", str(base), "--json", str(gate_json)
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "enrichment tokens x0.00 of baseline" in out
    assert "target/profile differs" in out
    result = json.loads(gate_json.read_text(encoding="utf-8"))
    overall = next(r for r in result["rows"] if r["suite"] == "overall")
    assert overall["baseline_enrichment"] > 0 and overall["enrichment"] == 0


@pytest.mark.slow
def test_probe_agent_makes_the_gate_fail_on_accuracy_too(
    world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    off = tmp_path / "a2-off.yaml"
    off.write_text(OFF_PROFILE, encoding="utf-8")
    base = _run(tmp_path, world, "base", "a2", agent="probe")
    bad = _run(tmp_path, world, "bad", str(off), agent="probe")
    capsys.readouterr()
    gate_json = tmp_path / "gate.json"
    code = run_cli(
        monkeypatch, "compare", str(bad), "--baseline", str(base), "--json", str(gate_json)
    )
    out = capsys.readouterr().out
    assert code == 1, out
    rows = {r["suite"]: r for r in json.loads(gate_json.read_text(encoding="utf-8"))["rows"]}
    s3 = rows["s3"]
    assert s3["baseline_accuracy"] > s3["accuracy"]
    assert any(r.startswith("accuracy dropped") for r in s3["regressions"]), s3
    assert any(r.startswith("accuracy dropped") for r in rows["overall"]["regressions"])
