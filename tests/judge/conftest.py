"""Fixtures of the judge tests: the scripted judge server and a judge builder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.judge.scripted import ScriptedJudgeServer
from tests.providers.servers import WireServer

from dabench.judge.cache import JudgeCache
from dabench.judge.judge import Judge
from dabench.providers import make_provider
from dabench.providers.retry import RetryPolicy


@pytest.fixture
def judge_server() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture
def make_judge(tmp_path: Path) -> Callable[..., Judge]:
    """Build a judge over the scripted server with a cache in ``tmp_path``."""

    def build(server: WireServer, **kwargs: Any) -> Judge:
        provider = make_provider("openai-compat:judge-1", base_url=f"{server.url}/v1", timeout=10)
        kwargs.setdefault("cache", JudgeCache(tmp_path / "judge-cache"))
        kwargs.setdefault("retry", RetryPolicy(max_attempts=1))
        return Judge(provider, **kwargs)

    return build
