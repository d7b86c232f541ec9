"""Property-based fuzzing of the task loader (hypothesis, bounded and derandomized).

Whatever the bytes, loading either succeeds or raises ``UserInputError`` with a
``FILE:LINE: `` message; a valid generated task loads and round-trips; the same task with one
invalidating edit is refused. ``benchmarks/fuzz_tasks.py`` runs the large seeded campaign.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.errors import UserInputError
from dabench.tasks.loader import dump_tasks, load_tasks
from dabench.tasks.model import ID_PATTERN

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

FUZZ_STRUCTURED = settings(FUZZ, max_examples=30)
"""Generated tasks cost more to draw and dump: fewer examples."""

TOKENS = [
    "- ", "\n", "\n  ", "  ", ": ", ", ", "[", "]", "{", "}", "? ", "&a ", "&b ", "*a", "*b",
    "!!python/object/apply:os.system [x]", "!t ", "!!str ", "<<: ", "---\n", "'", '"', "#",
    "id", "suite", "prompt", "grading", "kind", "steps", "tasks", "protocols", "x", "s2",
    "1", "-1", ".inf", ".nan", "0x_", "2024-13-45", "~", "\t", "\x00", "é", "|\n ", ">\n ",
]  # fmt: skip
"""YAML-significant fragments that recombine into the structures that used to crash."""


def outcome(path: Path) -> str:
    """``accepted`` or ``refused``; anything else (a traceback) fails the test."""
    try:
        load_tasks([path]).hash()
    except UserInputError as exc:
        assert re.match(rf"{re.escape(str(path))}:\d+: \S", str(exc)), str(exc)
        return "refused"
    return "accepted"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return tmp_path / "fuzz.yaml"


@FUZZ
@given(st.binary(max_size=3000))
def test_any_bytes(target: Path, data: bytes) -> None:
    target.write_bytes(data)
    outcome(target)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=120))
def test_any_yaml_token_soup(target: Path, tokens: list[str]) -> None:
    target.write_text("".join(tokens), encoding="utf-8")
    outcome(target)


@settings(FUZZ, max_examples=60)
@given(st.integers(1, 400), st.sampled_from(["[", "{a: ", "- "]), st.booleans())
def test_any_nesting(target: Path, depth: int, opener: str, closed: bool) -> None:
    closer = {"[": "]", "{a: ": "}", "- ": ""}[opener]
    if opener == "- ":
        text = "".join("  " * i + "-\n" for i in range(depth)) + "  " * depth + "x\n"
    else:
        text = opener * depth + "x" + (closer * depth if closed else "")
    target.write_text(text, encoding="utf-8")
    outcome(target)


@FUZZ
@given(st.integers(1, 12), st.integers(1, 12), st.sampled_from(["tags", "arms", "tasks"]))
def test_any_alias_fan_out(target: Path, width: int, levels: int, where: str) -> None:
    parts = [f"&b0 [{', '.join(['x'] * width)}]"]
    parts += [f"&b{i} [{', '.join([f'*b{i - 1}'] * width)}]" for i in range(1, levels)]
    target.write_text(f"{where}: [{', '.join(parts)}]\n", encoding="utf-8")
    assert outcome(target) == "refused"  # never a valid suite, and never slow


TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zl", "Zp"]), min_size=1
).filter(lambda s: s.strip() != "")
IDS = st.from_regex(ID_PATTERN, fullmatch=True).filter(lambda s: len(s) <= 100)


@st.composite
def tasks(draw: st.DrawFn) -> dict[str, Any]:
    """A valid task mapping."""
    kind = draw(st.sampled_from(["numeric", "refusal", "entity", "exec_sql"]))
    grading: dict[str, Any] = {"kind": kind}
    if kind in ("numeric", "exec_sql"):
        grading["truth_sql"] = draw(TEXT)
    if kind == "entity":
        grading["entities"] = draw(st.lists(TEXT, min_size=1, max_size=3))
    grading["tolerance_rel"] = draw(st.floats(0, 1, allow_nan=False, allow_infinity=False))
    task: dict[str, Any] = {
        "id": draw(IDS),
        "suite": draw(st.sampled_from(["s1", "s2", "s3", "s4"])),
        "category": draw(st.sampled_from(["filters", "analytical", "temporal"])),
        "difficulty": draw(st.sampled_from(["easy", "medium", "hard", "expert"])),
        "budget": draw(st.integers(1, 200)),
        "tags": draw(st.lists(TEXT, max_size=2)),
        "grading": grading,
    }
    if draw(st.booleans()):
        task["prompt"] = draw(TEXT)
    else:
        task["turns"] = draw(st.lists(TEXT, min_size=1, max_size=4))
    return task


BLANK = st.sampled_from(["", " ", "\t", "\n", "\u3000 "])
BREAKS: dict[str, Any] = {
    "tolerance": st.sampled_from([float("nan"), float("inf"), -float("inf"), -1e-9, -2.0]),
    "blank_prompt": BLANK,
    "blank_sql": BLANK,
    "blank_tag": BLANK,
    "bad_id": st.sampled_from(["", "A", "a b", "-a", "a-", "a/b", "x" * 101, "é"]),
    "budget": st.sampled_from([0, -1, 201, "30", True, 2.5]),
    "smoke": st.sampled_from(["yes", 1, "true"]),
    "unknown": st.just("x"),
    "missing": st.sampled_from(["id", "suite", "category", "difficulty", "grading"]),
}


def broken(task: dict[str, Any], how: str, value: Any) -> dict[str, Any]:
    """The task with one invalidating edit."""
    task = {**task, "grading": dict(task["grading"])}
    if how == "tolerance":
        task["grading"]["tolerance_abs"] = value
    elif how == "blank_prompt":
        task.pop("turns", None)
        task["prompt"] = value
    elif how == "blank_sql":
        task["grading"]["naive_sql"] = value
    elif how == "blank_tag":
        task["tags"] = [*task["tags"], value]
    elif how == "bad_id":
        task["id"] = value
    elif how in ("budget", "smoke"):
        task[how] = value
    elif how == "unknown":
        task["promt"] = value
    else:
        task.pop(value)
    return task


@FUZZ_STRUCTURED
@given(st.lists(tasks(), min_size=1, max_size=3, unique_by=lambda t: t["id"]))
def test_valid_tasks_load_and_round_trip(target: Path, items: list[dict[str, Any]]) -> None:
    target.write_text(yaml.safe_dump(items, allow_unicode=True), encoding="utf-8")
    ts = load_tasks([target])
    assert ts.ids == [t["id"] for t in items]
    again = load_tasks([dump_tasks(ts, target.with_name("again.yaml"))])
    assert again.hash() == ts.hash()


@FUZZ_STRUCTURED
@given(tasks(), st.sampled_from(sorted(BREAKS)).flatmap(lambda h: st.tuples(st.just(h), BREAKS[h])))
def test_one_invalid_value_is_refused(target: Path, task: dict[str, Any], edit: Any) -> None:
    how, value = edit
    target.write_text(yaml.safe_dump([broken(task, how, value)]), encoding="utf-8")
    assert outcome(target) == "refused"
