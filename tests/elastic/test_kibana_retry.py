"""Retries of transient Kibana failures against the fake Kibana: 429/503 and connection
failures are repeated (``Retry-After`` as the minimum wait), a converse round is never
repeated after 500/502/504, idempotent requests also after 502/504, and used-up attempts
are a HarnessError naming their count and the last cause."""

from __future__ import annotations

import email.utils
import logging
import random
import time
from pathlib import Path

import httpx
import pytest
from tests.elastic.fake_kibana import CONVERSE_PATHS, FakeKibana
from tests.elastic.test_kibana_target import answer_42, make

from dabench.errors import HarnessError
from dabench.retry import RetryPolicy
from dabench.targets.base import TargetContext
from dabench.targets.kibana import KibanaClient, KibanaRetryPolicy, KibanaTargetConfig, retry_rule
from dabench.targets.process import free_port
from dabench.targets.registry import make_target

QUICK = {"max_attempts": 4, "base_delay": 0.0, "jitter": False}
"""No backoff: a retry follows at once."""
SYNC, STREAM = CONVERSE_PATHS
STATUS = "/api/status"


class Sleeps:
    """Records the delays the backoff asks for instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.mark.parametrize(("status", "stream"), [(429, False), (429, True), (503, True)])
async def test_transient_status_is_retried_until_the_round_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int, stream: bool
) -> None:
    with FakeKibana(answer_42) as server:
        server.fail(status, times=2, retry_after="0")
        target = make(server, tmp_path, retry=QUICK)
        await target.start()
        try:
            session = await target.open_session()
            with caplog.at_level(logging.WARNING, logger="dabench.targets.kibana.client"):
                rnd = await session.converse("q", connector_id="c", stream=stream)
            retries = target.client.retries
        finally:
            await target.stop()
    assert rnd.message.endswith("FINAL ANSWER: 42") and rnd.conversation_id == "conv-1"
    assert server.calls(STREAM if stream else SYNC) == 3
    assert rnd.retries == 2 and retries == 2
    assert server.conversations == {"conv-1": ["q"]}  # the failed attempts applied nothing
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert f"HTTP {status}" in warnings[0] and "(attempt 1 of 4)" in warnings[0]
    assert "(attempt 2 of 4)" in warnings[1]


@pytest.mark.parametrize("stream", [False, True])
async def test_503_forever_uses_up_the_attempts(tmp_path: Path, stream: bool) -> None:
    with FakeKibana(answer_42) as server:
        server.fail(503, times=None)
        target = make(server, tmp_path, retry={**QUICK, "max_attempts": 3})
        await target.start()
        try:
            session = await target.open_session()
            with pytest.raises(
                HarnessError, match=r"failed after 3 attempts; last: HTTP 503"
            ) as raised:
                await session.converse("q", connector_id="c", stream=stream)
        finally:
            await target.stop()
    assert server.calls(STREAM if stream else SYNC) == 3
    assert raised.value.retries == 2  # the episode keeps the count although the round is lost


async def test_a_server_error_after_retries_keeps_their_count(tmp_path: Path) -> None:
    with FakeKibana(answer_42) as server:
        server.fail(429, times=1, retry_after="0")
        server.fail(500, times=1)
        target = make(server, tmp_path, retry=QUICK)
        await target.start()
        try:
            session = await target.open_session()
            with pytest.raises(HarnessError, match="HTTP 500: scripted fault") as raised:
                await session.converse("q", connector_id="c", stream=False)
        finally:
            await target.stop()
    assert server.calls(SYNC) == 2 and raised.value.retries == 1


@pytest.mark.parametrize(
    ("status", "stream"), [(500, False), (500, True), (502, False), (504, True)]
)
async def test_converse_is_not_repeated_after_a_server_error(
    tmp_path: Path, status: int, stream: bool
) -> None:
    with FakeKibana(answer_42) as server:
        server.fail(status, times=1)
        target = make(server, tmp_path, retry=QUICK)
        await target.start()
        try:
            session = await target.open_session()
            with pytest.raises(HarnessError, match=f"HTTP {status}: scripted fault"):
                await session.converse("q", connector_id="c", stream=stream)
            assert target.client.retries == 0
        finally:
            await target.stop()
    assert server.calls(STREAM if stream else SYNC) == 1


async def test_retry_after_seconds_and_http_date_are_the_minimum_delay() -> None:
    in_30s = email.utils.formatdate(time.time() + 30, usegmt=True)
    with FakeKibana(answer_42) as server:
        server.fail(429, retry_after="7")
        server.fail(503, retry_after=in_30s)
        server.fail(503)  # no Retry-After: the backoff alone
        sleeps = Sleeps()
        policy = RetryPolicy(max_attempts=4, base_delay=0.01, jitter=False)
        client = KibanaClient(server.url, "test-key", retry=policy, sleep=sleeps)
        try:
            rnd = await client.converse({"input": "q", "agent_id": "a"})
        finally:
            await client.aclose()
    assert rnd.retries == 3 and server.calls(SYNC) == 4
    assert sleeps.delays[0] == 7.0
    assert 20.0 < sleeps.delays[1] <= 30.0
    assert sleeps.delays[2] == pytest.approx(0.04)  # base_delay * 2**2


async def test_jittered_delays_are_reproducible_given_the_rng() -> None:
    runs = []
    for _ in range(2):
        with FakeKibana(answer_42) as server:
            server.fail(503, times=3)
            sleeps = Sleeps()
            policy = KibanaRetryPolicy(base_delay=1.0)
            client = KibanaClient(
                server.url, "test-key", retry=policy, sleep=sleeps, rng=random.Random(7)
            )
            try:
                await client.converse_stream({"input": "q", "agent_id": "a"})
            finally:
                await client.aclose()
        runs.append(sleeps.delays)
    assert runs[0] == runs[1] and len(runs[0]) == 3
    assert all(0.0 <= d <= cap for d, cap in zip(runs[0], (1.0, 2.0, 4.0), strict=True))


async def test_idempotent_requests_also_retry_502_and_504_but_creation_does_not(
    tmp_path: Path,
) -> None:
    tool = {"id": "t1", "type": "esql", "description": "d", "configuration": {"query": "FROM x"}}
    tools = "/api/agent_builder/tools"
    with FakeKibana(answer_42) as server:
        server.fail(502, times=2, paths=(STATUS,))
        server.fail(504, times=1, paths=(f"{tools}/t1",), method="GET")
        target = make(server, tmp_path, retry=QUICK, tools=[tool])
        await target.start()  # GET status twice repeated, GET t1 once repeated, POST create
        assert target.client.retries == 3
        await target.stop()
        assert server.calls(STATUS) == 3 and server.calls(f"{tools}/t1", "GET") == 2
        server.fail(504, times=1, paths=(f"{tools}/t1",), method="PUT")
        again = make(server, tmp_path, retry=QUICK, tools=[tool])
        await again.start()  # the update (PUT) is repeated
        await again.stop()
        assert server.calls(f"{tools}/t1", "PUT") == 2
        assert again.describe()["setup"] == {"tool:t1": "updated"}
        assert again.describe()["retry"] == {"max_attempts": 4, "base_delay": 0.0,
                                             "max_delay": 30.0, "jitter": False}  # fmt: skip
        server.tools.clear()
        server.fail(502, times=1, paths=(tools,), method="POST")
        creating = make(server, tmp_path, retry=QUICK, tools=[tool])
        with pytest.raises(HarnessError, match=f"POST {tools} -> HTTP 502"):
            await creating.start()
        assert server.calls(tools, "POST") == 2  # one from the first start, one failed now


async def test_connection_refused_is_retried_then_reported_with_the_attempts(
    tmp_path: Path,
) -> None:
    raw = {"kind": "kibana", "url": f"http://127.0.0.1:{free_port()}", "api_key": "k",
           "retry": {**QUICK, "max_attempts": 2}}  # fmt: skip
    target = make_target(raw, TargetContext(world_dir=None, work_dir=tmp_path))
    with pytest.raises(HarnessError, match=r"GET /api/status failed after 2 attempts; last: Con"):
        await target.start()


def test_retry_rule_by_method() -> None:
    post, get, put = retry_rule("POST"), retry_rule("get"), retry_rule("PUT")
    assert post.retries_status(429) and post.retries_status(503)
    assert not any(post.retries_status(s) for s in (500, 502, 504, 400, 404))
    assert get.retries_status(502) and put.retries_status(504) and not get.retries_status(500)
    request = httpx.Request("POST", "http://127.0.0.1/")
    refused = httpx.ConnectError("refused", request=request)
    late = httpx.ReadTimeout("late", request=request)
    assert post.retries_transport(refused) and get.retries_transport(refused)
    assert not post.retries_transport(late) and get.retries_transport(late)


def test_retry_config_keeps_the_kibana_defaults_it_does_not_override(tmp_path: Path) -> None:
    default = KibanaTargetConfig().retry
    assert (default.max_attempts, default.base_delay, default.max_delay) == (4, 1.0, 30.0)
    config = KibanaTargetConfig.model_validate({"kind": "kibana", "retry": {"max_attempts": 6}})
    assert config.retry.max_attempts == 6 and config.retry.max_delay == 30.0
    with pytest.raises(ValueError, match="max_attempts"):
        KibanaTargetConfig.model_validate({"kind": "kibana", "retry": {"max_attempts": 0}})
    with pytest.raises(ValueError, match="extra"):
        KibanaTargetConfig.model_validate({"kind": "kibana", "retry": {"attempts": 3}})
