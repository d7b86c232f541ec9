"""Versioned prompt and rubric files, rendering and the ground truth shown to the judge."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.grading.builders import make_episode, make_task

from dabench.errors import UserInputError
from dabench.grading.judging import build_judge_input
from dabench.judge.prompt import JudgeInput, load_prompt, truncate
from dabench.judge.rubric import load_rubric
from dabench.tasks.model import Truth

TRAP_CLASSES = {
    "cents_units",
    "net_revenue",
    "fiscal_calendar",
    "freshness_cutoff",
    "tier_definition",
    "deprecated_table",
    "timezone_change",
    "test_accounts",
    "soft_deleted",
    "duplicate_events",
    "currency_conversion",
}


def test_rubric_v1_covers_every_trap_class_and_abstention() -> None:
    rubric = load_rubric("v1")
    assert rubric.version == "v1"
    assert {f"caveat.{c}" for c in TRAP_CLASSES} <= {i.id for i in rubric.items}
    assert {i.applies_to for i in rubric.items} == TRAP_CLASSES | {"abstain", "adversarial"}


def test_rubric_errors(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no such rubric"):
        load_rubric("v99")
    dup = tmp_path / "r.yaml"
    item = "{id: a, applies_to: x, question: q, yes_when: y, no_when: n}"
    dup.write_text(f"version: t\nitems: [{item}, {item}]\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="duplicate rubric item"):
        load_rubric(dup)
    with pytest.raises(UserInputError, match=r"no item 'caveat\.nope'"):
        load_rubric().item("caveat.nope")


def test_prompt_version_and_single_pass_render(tmp_path: Path) -> None:
    prompt = load_prompt()
    assert prompt.version == "claims_v1"
    text = prompt.render(JudgeInput(question="Q?", ground_truth="G", answer="{tool_outputs}"), "")
    assert "## ANSWER\n{tool_outputs}\n" in text
    assert "(no tool calls)" in text and "Q?" in text
    bad = tmp_path / "p.md"
    bad.write_text("no front matter", encoding="utf-8")
    with pytest.raises(UserInputError, match="front matter"):
        load_prompt(bad)


def test_truncate_notice() -> None:
    assert truncate("abc", 5) == "abc"
    cut = truncate("x" * 7000, 6000)
    assert cut.startswith("x" * 6000) and "showing the first 6,000 of 7,000 characters" in cut


def test_ground_truth_for_trap_and_multi_turn() -> None:
    task = make_task(
        {"kind": "numeric", "truth_sql": "SELECT 1", "naive_sql": "SELECT 2"},
        prompt=None,
        turns=["Hi", "What was revenue?"],
        trap_classes=["cents_units"],
        rubric=["caveat.cents_units"],
    )
    inp = build_judge_input(
        make_episode("x", answers=["ok", "FINAL ANSWER: 1,234.50"]),
        task,
        Truth(kind="numeric", value=1234.5, naive_value=123450.0),
    )
    assert "Turn 2: What was revenue?" in inp.question
    assert "1,234.5" in inp.ground_truth and "123,450" in inp.ground_truth
    assert "cents_units" in inp.ground_truth
    assert inp.answer == "FINAL ANSWER: 1,234.50" and inp.rubric_items == ["caveat.cents_units"]
