"""The replay agent's settings and what counts as a diverged tool output."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dabench.agents.replay import ReplayAgentConfig, output_fingerprint
from dabench.journal.records import ToolCall


def _call(result: str, *, is_error: bool = False, code: str | None = None) -> ToolCall:
    return ToolCall(index=0, name="sql_query", result=result, is_error=is_error, error_code=code)


def test_fingerprint_ignores_json_layout_and_trailing_space_only() -> None:
    a = _call('{"rows": [[1, "x"]], "columns": ["a", "b"]}')
    b = _call('{\n  "columns": ["a", "b"],\n  "rows": [[1, "x"]]\n}\n')
    assert output_fingerprint(a) == output_fingerprint(b)
    assert output_fingerprint(_call("42 rows\n")) == output_fingerprint(_call("42 rows"))
    assert output_fingerprint(_call('{"rows": [[2, "x"]]}')) != output_fingerprint(
        _call('{"rows": [[1, "x"]]}')
    )
    assert output_fingerprint(_call("ok")) != output_fingerprint(_call("ok", is_error=True))
    assert output_fingerprint(_call("x", is_error=True, code="A")) != output_fingerprint(
        _call("x", is_error=True, code="B")
    )


def test_modes_and_the_former_switch() -> None:
    assert ReplayAgentConfig(run="r").mode == "tools"
    assert ReplayAgentConfig.model_validate({"run": "r", "call_tools": False}).mode == "answer_only"
    assert ReplayAgentConfig.model_validate({"run": "r", "call_tools": True}).mode == "tools"
    with pytest.raises(ValidationError):
        ReplayAgentConfig.model_validate({"run": "r", "mode": "later"})
