"""The hardened task loader: limits, malformed YAML and invalid values are refused as
``FILE:LINE: ...`` (exit 2 on the command line), never as a traceback or a hang."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dabench import safe_yaml
from dabench.cli import main
from dabench.errors import UserInputError
from dabench.runner.experiment import load_experiment
from dabench.safe_yaml import MAX_ALIASES, MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES
from dabench.tasks.loader import load_builtin_tasks, load_tasks

TASK = (
    "- id: t.one\n"  # line 1
    "  suite: s2\n"
    "  category: filters\n"
    "  difficulty: easy\n"
    "  prompt: How many orders?\n"  # line 5
    "  grading:\n"
    "    kind: numeric\n"
    "    truth_sql: SELECT count(*) FROM sales.orders\n"
    "    tolerance_rel: 0.0\n"  # line 9
)
PROTOCOL = (
    "protocols:\n"
    "- id: p.one\n"  # line 2
    "  fact: The desk is staffed by agent 5.\n"
    "  steps:\n"
    "  - {kind: episode, name: teach, prompt: Remember it.}\n"  # line 5
    "  - kind: verify\n"
    "    name: captured\n"
    "    expect: {insights: {contains: agent 5}}\n"  # line 8
)


def write(tmp_path: Path, text: str | bytes, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def refused(path: Path) -> str:
    with pytest.raises(UserInputError) as err:
        load_tasks([path]).hash()
    return str(err.value)


def bomb(width: int, levels: int) -> str:
    parts = [f"&b0 [{', '.join(['lol'] * width)}]"]
    parts += [f"&b{i} [{', '.join([f'*b{i - 1}'] * width)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def test_the_shipped_suites_load() -> None:
    assert len(load_builtin_tasks().items) > 100


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # YAML features that are refused outright
        (
            TASK.replace("How many orders?", "!!python/object/apply:os.system [true]"),
            ":5: YAML tags",
        ),
        (TASK.replace("kind: numeric", "kind: !custom numeric"), ":7: YAML tags are not allowed"),
        (TASK.replace("filters", "!!str filters"), ":3: YAML tags are not allowed"),
        (TASK + "  [a, b]: 1\n", ":10: mapping keys must be plain scalars"),
        (TASK + "  {x: 1}: 1\n", ":10: mapping keys must be plain scalars"),
        (TASK + "  tags: [&k x]\n  *k : 1\n", ":11: mapping keys must be plain scalars"),
        (TASK + "  tags: &r [*r]\n", ":10: recursive alias *r"),
        (PROTOCOL.replace("{contains: agent 5}", "&r {k: [*r]}"), ":8: recursive alias *r"),
        (TASK + "  tags: [*nope]\n", ":10: undefined alias *nope"),
        (TASK + "---\n" + TASK, ":10: invalid YAML"),
        (TASK + "  suite: s3\n", ":10: key 'suite' is given twice"),
        # scalars the safe constructors cannot build
        (
            TASK.replace("How many orders?", "2024-13-45"),
            ":5: invalid YAML: cannot read '2024-13-45'",
        ),
        (TASK.replace("0.0", "0x_"), ":9: invalid YAML: cannot read '0x_'"),
        (TASK + "  <<: [1]\n", ":10: invalid YAML: expected a mapping for merging"),
        # control characters
        (TASK.replace("How many", "How\x00many"), ":5: control character U+0000"),
        (TASK.replace("orders?", "orders?\x7f"), ":5: control character U+007F"),
    ],
)
def test_malformed_yaml_is_refused_with_its_line(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    msg = refused(path)
    assert msg.startswith(f"{path}:"), msg
    assert expected in msg, msg


def test_non_utf8_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, TASK.encode().replace(b"How many", b"How\xffmany"))
    assert refused(path) == (
        f"{path}:5: not valid UTF-8 (byte 0xff at column 14); save the file as UTF-8"
    )


def test_size_limit_is_checked_before_parsing(tmp_path: Path) -> None:
    at_limit = write(tmp_path, b"#" * (MAX_FILE_BYTES - 1) + b"\n", "at.yaml")
    assert refused(at_limit) == f"{at_limit}:1: no tasks in this file"  # parsed: only a comment
    over = write(tmp_path, b"#" * MAX_FILE_BYTES + b"\n", "over.yaml")
    assert refused(over) == (
        f"{over}:1: file is larger than the {MAX_FILE_BYTES:,}-byte limit for YAML input"
    )


def test_nesting_limit(tmp_path: Path) -> None:
    # root mapping, protocols, item, steps, step and expect are levels 1-6: the rest is lists
    def nested(levels: int) -> str:
        return PROTOCOL.replace("{contains: agent 5}", "[" * levels + "x" + "]" * levels)

    assert load_tasks([write(tmp_path, nested(MAX_DEPTH - 6), "ok.yaml")]).protocols
    deep = write(tmp_path, nested(MAX_DEPTH - 5), "deep.yaml")
    assert refused(deep) == f"{deep}:8: nested deeper than {MAX_DEPTH} levels"
    whole = write(tmp_path, "[" * 200_000 + "]" * 200_000, "whole.yaml")
    assert refused(whole).startswith(f"{whole}:1: ")


def test_alias_limits(tmp_path: Path) -> None:
    def with_aliases(n: int) -> str:
        return TASK + "  tags: [&a x" + ", *a" * n + "]\n"

    assert load_tasks([write(tmp_path, with_aliases(MAX_ALIASES), "ok.yaml")]).tasks
    many = write(tmp_path, with_aliases(MAX_ALIASES + 1), "many.yaml")
    assert refused(many) == f"{many}:10: more than {MAX_ALIASES} YAML aliases"


def test_alias_bombs_are_refused_before_expansion(tmp_path: Path) -> None:
    # 9 levels of 9 aliases: under 700 bytes, 9**9 strings once PyYAML expands them.
    expect = bomb(9, 9)
    assert len(expect) < 700
    path = write(tmp_path, PROTOCOL.replace("{contains: agent 5}", expect))
    expected = f"{path}:8: more than {MAX_NODES:,} YAML nodes once aliases are expanded"
    assert refused(path) == expected


def test_shared_structure_within_limits_loads(tmp_path: Path) -> None:
    text = TASK + "  tags: &t [x, y]\n" + TASK.replace("t.one", "t.two") + "  tags: *t\n"
    ts = load_tasks([write(tmp_path, text)])
    assert [t.tags for t in ts.tasks] == [["x", "y"], ["x", "y"]]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "tolerance_rel: 0.0",
            "tolerance_rel: .inf",
            ":9: item 't.one' field 'grading.tolerance_rel': Input should be a finite number",
        ),
        (
            "tolerance_rel: 0.0",
            "tolerance_rel: .nan",
            ":9: item 't.one' field 'grading.tolerance_rel': Input should be a finite number",
        ),
        (
            "tolerance_rel: 0.0",
            "tolerance_abs: -.inf",
            "field 'grading.tolerance_abs': Input should be a finite number",
        ),
        (
            "tolerance_rel: 0.0",
            "tolerance_abs: 1.0e+999",
            "field 'grading.tolerance_abs': Input should be a finite number",
        ),
        (
            "tolerance_rel: 0.0",
            "tolerance_rel: -0.01",
            "field 'grading.tolerance_rel': Input should be greater than or equal to 0",
        ),
        (
            "prompt: How many orders?",
            "prompt: '  '",
            ":5: item 't.one' field 'prompt': must not be blank",
        ),
        ("prompt: How many orders?", "turns: [First?, ' ']", "field 'turns.1': must not be blank"),
        (
            "truth_sql: SELECT count(*) FROM sales.orders",
            "truth_sql: ' '",
            "field 'grading.truth_sql': must not be blank",
        ),
        (
            "    tolerance_rel: 0.0",
            "    naive_sql: ''",
            "field 'grading.naive_sql': must not be blank",
        ),
        ("id: t.one", "id: T.one", "field 'id': 'T.one' is not a well-formed id"),
        ("id: t.one", "id: t.one-", "field 'id': 't.one-' is not a well-formed id"),
        ("id: t.one", "id: " + "x" * 101, "field 'id': String should have at most 100 characters"),
        (
            "  category: filters",
            "  budget: '30'",
            ":3: item 't.one' field 'budget': Input should be a valid integer",
        ),
        ("  category: filters", "  smoke: 'yes'", "field 'smoke': Input should be a valid boolean"),
        (
            "tolerance_rel: 0.0",
            "tolerance_rel: true",
            "field 'grading.tolerance_rel': Input should be a valid number",
        ),
        ("  category: filters", "  tags: [ok, '']", "field 'tags.1': must not be blank"),
    ],
)
def test_invalid_task_values_are_refused(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert old in TASK
    path = write(tmp_path, TASK.replace(old, new))
    msg = refused(path)
    assert msg.startswith(f"{path}:"), msg
    assert expected in msg, msg


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "fact: The desk is staffed by agent 5.",
            "fact: ' '",
            ":3: item 'p.one' field 'fact': must not be blank",
        ),
        ("prompt: Remember it.", "prompt: '\t'", "field 'steps.0.prompt': must not be blank"),
        ("name: captured", "name: teach", "field '<item>': step name 'teach' is used twice"),
        ("id: p.one", "id: " + "p" * 92, "'" + "p" * 92 + ".captured' (the id of step 'captured'"),
        (
            "name: captured",
            "name: Captured Step",
            "field 'steps.1.name': 'Captured Step' is not a well-formed id",
        ),
    ],
)
def test_invalid_protocol_values_are_refused(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    assert old in PROTOCOL
    msg = refused(write(tmp_path, PROTOCOL.replace(old, new)))
    assert expected in msg, msg


def test_a_protocol_needs_steps(tmp_path: Path) -> None:
    text = "protocols:\n- id: p.one\n  fact: A fact.\n  steps: []\n"
    path = write(tmp_path, text)
    assert refused(path) == (
        f"{path}:4: item 'p.one' field 'steps': List should have at least 1 item after "
        "validation, not 0"
    )


def test_cli_exits_2_with_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, PROTOCOL.replace("{contains: agent 5}", bomb(9, 9)))
    monkeypatch.setattr(sys, "argv", ["dabench", "tasks", "list", "--tasks", str(path)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:8: more than {MAX_NODES:,} YAML nodes")
    assert "Traceback" not in err


def test_experiments_and_profiles_share_the_hardened_reader(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\narms: &a [*a]\n", "exp.yaml")
    with pytest.raises(UserInputError, match=rf"^{path}:2: recursive alias \*a"):
        load_experiment(path)
    with pytest.raises(UserInputError, match=r"^p\.yaml:1: YAML tags are not allowed"):
        safe_yaml.load_text("!!python/name:os.system\n", "p.yaml")
