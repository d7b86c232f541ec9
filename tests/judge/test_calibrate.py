"""Cohen's kappa, and `dabench judge calibrate` end to end against a scripted judge server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from tests.judge.scripted import ScriptedJudgeServer
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.judge.calibrate import (
    DEFAULT_CALIBRATION_FILE,
    agreement,
    cohen_kappa,
    load_calibration,
)
from dabench.judge.rubric import load_rubric


def test_kappa_hand_computed() -> None:
    human = list("yyyyyynnnn")
    judge = list("yyyynnynnn")
    # p_o = 7/10; p_e = (6*5 + 4*5)/100 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert agreement(human, judge) == pytest.approx(0.7)
    assert cohen_kappa(human, judge) == pytest.approx(0.4)


def test_kappa_edges() -> None:
    assert cohen_kappa(["y", "y"], ["y", "y"]) == 1.0
    assert cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa([], [])


def test_shipped_calibration_covers_every_rubric_item() -> None:
    items = load_calibration()
    assert len(items) >= 30
    assert {i.rubric_item for i in items} == {i.id for i in load_rubric().items}
    labels = Counter(i.human_label for i in items)
    assert labels["yes"] > 0 and labels["no"] > 0


def test_bad_calibration_line(tmp_path: Path) -> None:
    path = tmp_path / "cal.jsonl"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(UserInputError, match=r"cal.jsonl:1: rubric_item"):
        load_calibration(path)


def _invoke(server: ScriptedJudgeServer, tmp_path: Path, *extra: str) -> dict[str, object]:
    out = tmp_path / "report.json"
    args = [
        "judge",
        "calibrate",
        "--judge",
        "openai-compat:judge-1",
        "--base-url",
        f"{server.url}/v1",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
        *extra,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    report["_output"] = result.output
    return report


def test_calibrate_end_to_end_known_kappa(
    judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    items = load_calibration(DEFAULT_CALIBRATION_FILE)
    human = {i.answer: i.human_label for i in items}
    yes = [i.answer for i in items if i.human_label == "yes"]
    no = [i.answer for i in items if i.human_label == "no"]
    flipped = {yes[0], yes[1], no[0]}

    def decide(_rid: str, answer: str) -> str:
        label = human[answer]
        if answer in flipped:
            return "no" if label == "yes" else "yes"
        return label

    judge_server.decide = decide
    report = _invoke(judge_server, tmp_path)
    n, n_yes = len(items), len(yes)
    judge_yes = n_yes - 2 + 1
    p_o = (n - 3) / n
    p_e = (n_yes * judge_yes + (n - n_yes) * (n - judge_yes)) / (n * n)
    assert report["n_items"] == n
    assert report["agreement"] == pytest.approx(p_o)
    assert report["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    # The scripted judge always returns one correct central claim.
    labelled = [i for i in items if i.human_central_correct is not None]
    expected_claim = sum(bool(i.human_central_correct) for i in labelled) / len(labelled)
    assert report["claim_items"] == len(labelled)
    assert report["claim_agreement"] == pytest.approx(expected_claim)
    assert report["flip_rate"] is None and report["rubric_version"] == "v2"
    assert "Cohen's kappa" in str(report["_output"])
    assert len(judge_server.requests) == n
    _invoke(judge_server, tmp_path)
    assert len(judge_server.requests) == n, "a second calibration is served from the cache"


def test_calibrate_repeat_reports_flip_rate(
    judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    items = load_calibration()
    human = {i.answer: i.human_label for i in items}
    flaky = items[0].answer
    seen: Counter[str] = Counter()

    def decide(_rid: str, answer: str) -> str:
        seen[answer] += 1
        if answer == flaky and seen[answer] == 2:
            return "no" if human[answer] == "yes" else "yes"
        return human[answer]

    judge_server.decide = decide
    report = _invoke(judge_server, tmp_path, "--repeat", "3")
    assert len(judge_server.requests) == 3 * len(items)
    assert report["flip_rate"] == pytest.approx(1 / len(items))
    assert report["kappa"] == pytest.approx(1.0)
    assert "flip rate" in str(report["_output"])
