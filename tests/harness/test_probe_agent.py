"""The probe agent on the reference platform: a real experiment over the S3 smoke traps on a0
and a2 (k = 1), graded by the real graders. a2 surfaces the deciding facts (search, fetch,
enriched describe_table) and a0 does not, so the probe passes more trap tasks on a2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dabench.agents.probe import fact_locations, search_id
from dabench.cli import app
from dabench.tasks.model import Task
from dabench.world import read_manifest

EXPERIMENT = """\
name: probe
world: {seed: 930, scale: 1}
tasks: {suites: [s3], smoke: true}
k: 1
concurrency: 4
episode_timeout_s: 120
arms:
  - name: a0
    target: {kind: reference, profile: a0}
    agent: {kind: probe}
  - name: a2
    target: {kind: reference, profile: a2}
    agent: {kind: probe}
"""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_search_ids_of_fact_locations() -> None:
    assert search_id("knowledge:revenue-policy") == "page:revenue-policy"
    assert search_id("glossary:key-account") == "glossary:key-account"
    assert search_id("catalog:analytics.daily_sales") == "dataset:analytics.daily_sales"
    assert search_id("catalog:sales.orders.amount") == "column:sales.orders.amount"


def test_fact_locations_prefer_the_tagged_trap(real_world: Path) -> None:
    traps = read_manifest(real_world).traps
    task = Task.model_validate(
        {
            "id": "t",
            "suite": "s3",
            "category": "knowledge_trap",
            "difficulty": "medium",
            "prompt": "p",
            "trap_classes": ["cents_units"],
            "tags": ["world-trap:cents_units.avg_list_price"],
            "grading": {"kind": "numeric", "truth_sql": "SELECT 1", "naive_sql": "SELECT 2"},
        }
    )
    locs = fact_locations(task, traps)["cents_units"]
    assert "catalog:product.products.list_price" in locs
    assert "catalog:sales.orders.amount" not in locs


@pytest.mark.slow
def test_probe_passes_more_traps_on_a2_than_on_a0(real_world: Path, tmp_path: Path) -> None:
    exp = tmp_path / "probe.yaml"
    exp.write_text(EXPERIMENT, encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", str(exp), "--world", str(real_world), "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 0, f"{result.output[-4000:]}\n{result.exception!r}"
    assert "no model used: probe agent (answers a trap task with the gold SQL only" in " ".join(
        result.output.split()
    )
    grades = {str(g["key"]): g for g in _jsonl(out / "grades.jsonl")}
    episodes = {str(e["key"]): e for e in _jsonl(out / "episodes.jsonl")}
    assert len(grades) == len(episodes) >= 8
    passed = {
        arm: sum(1 for k, g in grades.items() if k.startswith(f"{arm}/") and g["passed"])
        for arm in ("a0", "a2")
    }
    assert passed["a2"] > passed["a0"], passed
    # Generator 2.3.0's superseded pages crowd one search for the partner-revenue prompt
    # (fiscal-year, partner-invoicing rank in the top ten; revenue-policy and the revenue
    # glossary entry do not), so the probe gives the naive answer there on a2 too.
    assert grades["a2/s3.net-revenue.partner-revenue-2024/0"]["passed"] is False
    for trap in ("s3.cents-units.avg-list-price", "s3.fiscal-calendar.orders-fq1-2025"):
        assert grades[f"a2/{trap}/0"]["passed"] is True
        assert grades[f"a0/{trap}/0"]["passed"] is False
        # a0 answered the naive number, which the numeric grader names as the known-wrong one
        assert "naive" in str(grades[f"a0/{trap}/0"]["reason"])
        a2_calls = [c["name"] for c in episodes[f"a2/{trap}/0"]["tool_calls"]]
        assert a2_calls[:2] == ["search", "fetch"] and a2_calls[-1] == "sql_query"
