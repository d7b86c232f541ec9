"""SQL tool results in the shapes MCP servers return, read by the oracle."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from dabench.agents.sql_result import parse_sql_result
from dabench.errors import HarnessError

TABLE = (["region", "revenue"], [["EU", 12.5], ["US", None]])


@pytest.mark.parametrize(
    "text",
    [
        '{"columns": ["region", "revenue"], "rows": [["EU", 12.5], ["US", null]]}',
        '{"columns": [{"name": "region", "type": "VARCHAR"}, {"name": "revenue"}],'
        ' "rows": [["EU", 12.5], ["US", null]]}',
        '[{"region": "EU", "revenue": 12.5}, {"region": "US", "revenue": null}]',
        '{"success": true, "data": {"rows": [{"region": "EU", "revenue": 12.5},'
        ' {"region": "US", "revenue": null}], "count": 2}}',
        '{"columns": ["region", "revenue"], "values": [["EU", 12.5], ["US", null]]}',
        '{"result": "[{\\"region\\": \\"EU\\", \\"revenue\\": 12.5}, '
        '{\\"region\\": \\"US\\", \\"revenue\\": null}]"}',
        "| region | revenue |\n|:---|---:|\n| EU | 12.5 |\n| US | NULL |\n\n2 rows returned",
        " region | revenue \n--------+---------\n EU     |    12.5\n US     |\n(2 rows)\n",
        "region    revenue\n--------  ---------\nEU        12.5\nUS        None",
        "region,revenue\nEU,12.5\nUS,",
        "region\trevenue\nEU\t12.5\nUS\tNULL",
        "Results:\n| region | revenue |\n|---|---|\n| EU | 12.5 |\n| US | null |",
    ],
)
def test_result_shapes(text: str) -> None:
    assert parse_sql_result(text) == TABLE


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 42 AS n", (["n"], [[42]])),
        (
            "SELECT i, i * 1.5 AS x, 'a' || i AS s FROM range(3) t(i)",
            (["i", "x", "s"], [[0, 0.0, "a0"], [1, 1.5, "a1"], [2, 3.0, "a2"]]),
        ),
        (
            "SELECT NULL AS x, DATE '2025-01-02' AS d, 12345678901234 AS big",
            (["x", "d", "big"], [[None, "2025-01-02", 12345678901234]]),
        ),
    ],
)
def test_duckdb_box_rendering(sql: str, expected: tuple[list[str], list[list[Any]]]) -> None:
    text = str(duckdb.connect().sql(sql))
    assert "│" in text
    assert parse_sql_result(text) == expected


def test_a_cut_short_table_is_a_harness_error() -> None:
    text = str(duckdb.connect().sql("SELECT i FROM range(100) t(i)"))
    with pytest.raises(HarnessError, match="cut short"):
        parse_sql_result(text)


@pytest.mark.parametrize("text", ["Query executed successfully", "42", '{"ok": true}', "x" * 300])
def test_unrecognised_results_quote_200_characters(text: str) -> None:
    with pytest.raises(HarnessError) as info:
        parse_sql_result(text, "probe")
    message = str(info.value)
    assert message.startswith("probe: unrecognised SQL tool result: ")
    assert message.endswith(text[:200])
