"""Format graders."""

from __future__ import annotations

from dabench.grading.format_content import check_content
from dabench.grading.formats import check_format
from dabench.tasks.model import FormatSpec


def _spec(kind: str, **kw: object) -> FormatSpec:
    return FormatSpec.model_validate({"kind": kind, **kw})


def test_json_only() -> None:
    assert check_format('{"total": 3}', _spec("json")).passed
    assert not check_format('Here: {"total": 3}', _spec("json")).passed
    fenced = check_format('```json\n{"total": 3}\n```', _spec("json"))
    assert fenced.passed and "fence" in fenced.reason
    assert not check_format('```json\n{"total": 3}\n```\nDone.', _spec("json")).passed


def test_json_required_keys() -> None:
    spec = _spec("json", columns=["region", "total"])
    assert check_format('[{"region": "n", "total": 1}]', spec).passed
    bad = check_format('[{"region": "n", "total": 1}, {"region": "s"}]', spec)
    assert not bad.passed and "item 1 lacks key(s) total" in bad.reason


def test_single_number() -> None:
    assert check_format("1,234", _spec("single_number")).passed
    assert check_format("FINAL ANSWER: 12.5%", _spec("single_number")).passed
    assert not check_format("1,234 orders", _spec("single_number")).passed


def test_exactly_n_bullets() -> None:
    three = "Top:\n- a\n- b\n  - nested\n* c\n"
    assert check_format(three, _spec("bullets", n=3)).passed
    check = check_format(three, _spec("bullets", n=2))
    assert not check.passed and "3 top-level bullets" in check.reason
    assert check_format("1. a\n2) b", _spec("bullets", n=2)).passed


def test_markdown_table_columns() -> None:
    table = "| Region | **Total** | extra |\n|---|:--:|---|\n| n | 1 | x |\n"
    assert check_format(table, _spec("markdown_table", columns=["region", "total"])).passed
    missing = check_format(table, _spec("markdown_table", columns=["region", "count"]))
    assert not missing.passed and "count" in missing.reason
    no_sep = "| Region | Total |\n| n | 1 |\n"
    assert not check_format(no_sep, _spec("markdown_table", columns=["region"])).passed
    header_only = "| Region |\n|---|\n"
    assert not check_format(header_only, _spec("markdown_table", columns=["region"])).passed


def test_single_number_percent_sign_forbidden_by_the_question() -> None:
    question = "Answer with a single number only, no words and no percent sign."
    check = check_format("25%", _spec("single_number"), question=question)
    assert not check.passed and "percent sign" in check.reason
    assert check_format("25", _spec("single_number"), question=question).passed
    assert check_format("25%", _spec("single_number"), question="The top rate?").passed


def test_content_every_item_against_the_truth_rows() -> None:
    bullets = _spec("bullets", n=3)
    cols, rows = ["days", "name"], [[14, "Lakeshore Foam"], [16, "Prairie Canvas"], [18, "Maple"]]
    right = "- **Prairie Canvas**: 16 days.\n- Lakeshore Foam: 14 days\n- maple (18 days)"
    check = check_content(right, bullets, cols, rows)
    assert check is not None and check.passed, check.reason
    wrong = check_content(right.replace("16", "17"), bullets, cols, rows)
    assert wrong is not None and not wrong.passed and "matches no truth row" in wrong.reason
    json_spec = _spec("json", columns=["campaigns", "total_budget_usd"])
    cents = check_content('{"campaigns": 24, "total_budget_usd": 217400000}', json_spec,
                          json_spec.columns, [[24, 2174000.0]])  # fmt: skip
    assert cents is not None and not cents.passed
    assert check_content("42", _spec("single_number"), ["n"], [[42]]) is None


def test_content_table_order_only_when_asked() -> None:
    spec = _spec("markdown_table", columns=["priority", "tickets"])
    rows = [["normal", 194], ["low", 121]]
    asc = "| priority | tickets |\n|---|---|\n| Low | 121 |\n| **Normal** | 194 |"
    unordered = check_content(asc, spec, spec.columns, rows, question="tickets per priority")
    assert unordered is not None and unordered.passed, unordered.reason
    asked = check_content(asc, spec, spec.columns, rows, question="most tickets first")
    assert asked is not None and not asked.passed and "asked order" in asked.reason


def test_json_exact_keys_and_object_asked() -> None:
    spec = FormatSpec(kind="json", columns=["email", "chat", "phone"])
    exact = 'a JSON object with exactly the keys "email", "chat" and "phone".'
    extra = '{"email": 198, "chat": 138, "phone": 64, "total": 400}'
    assert not check_format(extra, spec, question=exact).passed
    assert check_format(
        extra, spec, question="a JSON object with the keys email, chat, phone"
    ).passed
    array = '[{"email": 198, "chat": 138, "phone": 64}]'
    assert not check_format(array, spec, question=exact).passed
    assert check_format(array, spec, question="a JSON array of objects with the keys").passed


def test_header_variants_name_the_required_columns() -> None:
    spec = FormatSpec(kind="markdown_table", columns=["priority", "tickets"])
    rows = "\n|---|---|\n| normal | 194 |"
    for header in ("| Priority level | # tickets |", "| Priority | Ticket count |"):
        assert check_format(header + rows, spec).passed, header
    assert not check_format("| Priority level | # open tickets |" + rows, spec).passed


def test_bullet_content_one_value_per_bullet() -> None:
    spec = FormatSpec(kind="bullets", n=4)
    cols, rows = ["department"], [["Apparel"], ["Camp"], ["Climb"], ["Hike"]]
    question = "List the departments as exactly 4 bullet points, one department per bullet."

    def content(answer: str) -> bool:
        check = check_content(answer, spec, cols, rows, question=question)
        assert check is not None
        return check.passed

    assert not content("- Apparel, Camp\n- Climb, Hike\n- Camp\n- Hike")
    assert not content("- Apparel\n- Camp\n- Climb\n- Hike, Ski, Surf")
    assert not content("- Apparel\n- Camp\n- Climb\n- Not Hike")
    assert content("- Apparel\n- Camp\n- Climb\n- Hike (not Surf)")
    assert content("- ~~Water~~ Apparel\n- Camp\n- Climb\n- **Hike**.")
    lead = FormatSpec(kind="bullets", n=1)
    range_ = check_content(
        "- Prairie Canvas: 16–18 days", lead, ["d", "name"], [[16, "Prairie Canvas"]]
    )
    assert range_ is not None and not range_.passed


def test_total_row_is_the_sum_of_the_truth_column() -> None:
    spec = FormatSpec(kind="markdown_table", columns=["priority", "tickets"])
    body = "| priority | tickets |\n|---|---|\n| normal | 194 |\n| low | 121 |\n"
    rows = [["normal", 194], ["low", 121]]
    for total, passed in (("315", True), ("**315**", True), ("**325**", False), ("", True)):
        check = check_content(
            body + f"| **Total** | {total} |", spec, ["priority", "tickets"], rows
        )
        assert check is not None and check.passed is passed, total
