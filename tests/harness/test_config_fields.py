"""Configuration fields are what they claim: names are names (no path, no ``..``, not
blank), time limits finite and positive, amounts finite, a relative tolerance at most 100 %
unless an absolute one is given."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from dabench.agents.claude_cli import ClaudeCliAgentConfig
from dabench.agents.command import CommandAgentConfig
from dabench.agents.llm import LlmAgentConfig
from dabench.errors import UserInputError
from dabench.grading.scores import ScoreConfig
from dabench.platform.profile import parse_profile
from dabench.providers.fake import FakeSettings
from dabench.providers.pricing import ModelPrice
from dabench.providers.registry import ProviderSettings
from dabench.retry import RetryPolicy
from dabench.runner.experiment import Experiment
from dabench.stats.gate import SuiteThresholds
from dabench.targets.kibana.target import KibanaTargetConfig
from dabench.targets.mcp import McpTargetConfig
from dabench.targets.reference import ReferenceTargetConfig
from dabench.tasks.model import Grading

BAD_TIMES = [float("inf"), float("nan"), 0.0, -1.0]
ARM = {"name": "a0", "target": {"kind": "reference"}, "agent": {"kind": "oracle"}}


def _refused(model: type[BaseModel], data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return str(caught.value)


@pytest.mark.parametrize("value", BAD_TIMES)
def test_time_limits_must_be_finite_and_positive(value: float) -> None:
    _refused(Experiment, {"name": "x", "arms": [ARM], "episode_timeout_s": value})
    for field in ("startup_timeout_s", "call_timeout_s", "keep_alive_s", "client_idle_s"):
        _refused(ReferenceTargetConfig, {field: value})
    for field in ("call_timeout_s", "idle_s"):
        _refused(McpTargetConfig, {"url": "http://127.0.0.1:1/mcp", field: value})
    _refused(CommandAgentConfig, {"argv": ["agent"], "timeout_s": value})
    _refused(ClaudeCliAgentConfig, {"timeout_s": value})
    _refused(ProviderSettings, {"timeout": value})
    for field in ("latency_good_s", "latency_bad_s"):
        _refused(ScoreConfig, {field: value})
    _refused(FakeSettings, {"median": value, "p99": 1.0})
    kibana = {"url": "http://127.0.0.1:1"}
    for field in ("request_timeout_s", "connect_timeout_s"):
        _refused(KibanaTargetConfig, {**kibana, field: value})


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.0])
def test_amounts_must_be_finite(value: float) -> None:
    for field in ("base_delay", "max_delay"):
        _refused(RetryPolicy, {field: value})
    _refused(ModelPrice, {"input": value})
    for field in ("max_accuracy_drop", "max_tool_call_ratio", "min_enrichment_ratio"):
        _refused(SuiteThresholds, {field: value})
    for field in ("cost_good_usd", "penalty_factor", "judge_pass_threshold"):
        _refused(ScoreConfig, {field: value})
    _refused(ScoreConfig, {"weights": {"accuracy": value}})
    for field in ("latency", "retry_after"):
        _refused(FakeSettings, {field: value})
    _refused(LlmAgentConfig, {"model": "fake:x", "temperature": value})


def test_the_defaults_and_ordinary_values_still_load() -> None:
    Experiment.model_validate({"name": "x", "arms": [ARM], "episode_timeout_s": 0.5})
    assert ReferenceTargetConfig(call_timeout_s=3).call_timeout_s == 3
    assert RetryPolicy(max_delay=0).max_delay == 0


@pytest.mark.parametrize("name", ["../../etc", "a/b", " ", "", ".hidden", "a..b", "x" * 101])
def test_profile_and_identity_names_are_names(name: str) -> None:
    text = f"name: {name!r}\ntools: [platform_info, sql_query]\n"
    with pytest.raises(UserInputError, match="name"):
        parse_profile(text, "p.yaml")
    assert "identities" in _refused(ReferenceTargetConfig, {"identities": [name]})
    assert "reviewers" in _refused(ReferenceTargetConfig, {"reviewers": [name]})
    persona = f"name: p\ntools: [platform_info]\npersonas: {{{name!r}: {{allow: ['*']}}}}\n"
    with pytest.raises(UserInputError):
        parse_profile(persona, "p.yaml")


def test_a_relative_tolerance_is_at_most_one_unless_an_absolute_one_is_given() -> None:
    base = {"kind": "numeric", "truth_sql": "SELECT 1"}
    with pytest.raises(ValidationError, match=r"tolerance_rel 2\.0 is above 1"):
        Grading.model_validate({**base, "tolerance_rel": 2})
    assert Grading.model_validate({**base, "tolerance_rel": 1}).tolerance_rel == 1
    assert (
        Grading.model_validate({**base, "tolerance_rel": 2, "tolerance_abs": 5}).tolerance_abs == 5
    )
