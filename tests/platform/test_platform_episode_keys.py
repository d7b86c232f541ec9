"""Episode keys on a real platform over HTTP: minted and revoked through the admin API, every
call of an episode's key (in any session) carries the episode's id in the audit log, and a
session of another episode (or of a static key) is refused to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from platform_helpers import ADMIN_KEY, KEYS, RunningPlatform, call, mcp_client, open_session

from dabench.errors import HarnessError
from dabench.targets.episode_batch import EpisodeBatcher

EPISODES = "/api/v1/admin/episodes"


def admin(
    platform: RunningPlatform, method: str, path: str, body: Any = None, key: str = ADMIN_KEY
) -> httpx.Response:
    return httpx.request(
        method,
        platform.base_url + path,
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def open_episode(
    platform: RunningPlatform, *users: str, label: str = "t"
) -> tuple[str, dict[str, str]]:
    resp = admin(platform, "POST", EPISODES, {"label": label, "users": list(users)})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    return body["episode_id"], body["keys"]


@asynccontextmanager
async def keyed(platform: RunningPlatform, key: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30.0)
    async with (
        http,
        Client(streamable_http_client(platform.base_url + "/mcp", http_client=http)) as client,
    ):
        yield client


SQL = {"sql": "SELECT 1 AS one"}


async def test_every_call_of_an_episode_key_in_any_session_carries_the_episode(
    platform_a0: RunningPlatform,
) -> None:
    episode, keys = open_episode(platform_a0, "teacher")
    assert episode.startswith("epi_") and set(keys) == {"teacher"}
    async with keyed(platform_a0, keys["teacher"]) as agent:
        is_error, info = await call(agent, "platform_info")
        assert not is_error and info["user"] == "teacher" and info["persona"] == "analyst"
        first = info["session_id"]
        second = await open_session(agent)  # a second session with the same key
        for sid in (first, second, second):
            is_error, body = await call(agent, "sql_query", {**SQL, "session_id": sid})
            assert not is_error, body
        is_error, body = await call(agent, "sql_query", SQL)  # no session at all
        assert is_error and body["error"]["code"] == "SESSION_REQUIRED"
    rows = platform_a0.audit(episode_id=episode)
    calls = [r for r in rows if r["event_kind"] == "tool_call"]
    starts = [r for r in rows if r["event_kind"] == "session_start"]
    assert len(calls) == 4 and len(starts) == 2
    assert {r["session_id"] for r in starts} == {first, second}
    assert [r["session_id"] for r in calls] == [first, second, second, None]
    assert all(r["user_id"] == "teacher" and r["episode_id"] == episode for r in calls)
    assert [r["tool_name"] for r in rows if r["event_kind"] == "admin"] == ["episode_open"]


async def test_another_episodes_session_is_refused(platform_a0: RunningPlatform) -> None:
    a, a_keys = open_episode(platform_a0, "teacher", label="a")
    b, b_keys = open_episode(platform_a0, "teacher", "learner", label="b")
    async with keyed(platform_a0, a_keys["teacher"]) as agent_a:
        a_session = await open_session(agent_a)
        is_error, _ = await call(agent_a, "sql_query", {**SQL, "session_id": a_session})
        assert not is_error
    # The sibling episode's keys (same identity, and another one) and a static key of the
    # same identity may not use episode a's session.
    for key in (b_keys["teacher"], b_keys["learner"], KEYS["teacher"]):
        async with keyed(platform_a0, key) as intruder:
            is_error, body = await call(intruder, "sql_query", {**SQL, "session_id": a_session})
            assert is_error and body["error"]["code"] == "SESSION_OF_ANOTHER_EPISODE", body
    # ...nor may an episode key use a session a static key opened.
    async with mcp_client(platform_a0, "teacher") as static:
        static_session = await open_session(static)
    async with keyed(platform_a0, b_keys["teacher"]) as agent_b:
        is_error, body = await call(agent_b, "sql_query", {**SQL, "session_id": static_session})
        assert is_error and body["error"]["code"] == "SESSION_OF_ANOTHER_EPISODE"
    # Episode a's rows hold its own call only; the refusals are rows of b (or of no episode).
    a_calls = [r for r in platform_a0.audit(episode_id=a) if r["event_kind"] == "tool_call"]
    assert len(a_calls) == 1 and a_calls[0]["success"]
    assert platform_a0.audit(session_id=a_session, event_kind="tool_call") == a_calls
    refused = platform_a0.audit(presented_session_id=a_session)
    assert [r["episode_id"] for r in refused] == [b, b, None]
    assert {r["error_code"] for r in refused} == {"SESSION_OF_ANOTHER_EPISODE"}
    assert all(r["session_id"] is None for r in refused)


async def test_keys_are_revoked_with_the_episode(platform_a0: RunningPlatform) -> None:
    episode, keys = open_episode(platform_a0, "teacher")
    resp = admin(platform_a0, "POST", f"{EPISODES}/{episode}/keys", {"user": "reviewer"})
    assert resp.status_code == 200, resp.text
    minted = resp.json()
    assert (minted["user"], minted["persona"], minted["episode_id"]) == (
        "reviewer",
        "reviewer",
        episode,
    )
    async with keyed(platform_a0, minted["key"]) as reviewer:
        sid = await open_session(reviewer)
    closed = admin(platform_a0, "DELETE", f"{EPISODES}/{episode}")
    assert closed.status_code == 200 and closed.json() == {
        "episode_id": episode,
        "revoked_keys": 2,
    }
    for key in (keys["teacher"], minted["key"]):
        resp = httpx.post(
            platform_a0.base_url + "/mcp",
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            timeout=30,
        )
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHENTICATED"
    # Revoked keys are not admin keys either, and a closed episode mints nothing more.
    assert (
        admin(platform_a0, "GET", "/api/v1/admin/audit/events", key=keys["teacher"]).status_code
        == 401
    )
    assert admin(platform_a0, "DELETE", f"{EPISODES}/{episode}").status_code == 404
    again = admin(platform_a0, "POST", f"{EPISODES}/{episode}/keys", {"user": "teacher"})
    assert again.status_code == 404
    # A live episode key is an identity, not an admin: 403 on the admin API.
    _, live = open_episode(platform_a0, "learner")
    assert (
        admin(
            platform_a0, "POST", EPISODES, {"users": ["teacher"]}, key=live["learner"]
        ).status_code
        == 403
    )
    close_rows = platform_a0.audit(episode_id=episode, event_kind="admin")
    assert [r["tool_name"] for r in close_rows] == ["episode_open", "episode_key", "episode_close"]
    assert sid.startswith("dps_")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"users": ["nobody"]}, "UNKNOWN_USER"),
        ({"users": []}, "INVALID_BODY"),
        ({"users": ["teacher", "teacher"]}, "INVALID_BODY"),
        ({"users": ["teacher"], "extra": 1}, "INVALID_BODY"),
        ({"users": ["../etc"]}, "INVALID_BODY"),
        ("not an object", "INVALID_BODY"),
    ],
)
def test_opening_an_episode_refuses_bad_bodies(
    platform_a0: RunningPlatform, body: Any, code: str
) -> None:
    resp = admin(platform_a0, "POST", EPISODES, body)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == code, resp.text
    raw = httpx.post(
        platform_a0.base_url + EPISODES,
        content=b"{not json",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        timeout=30,
    )
    assert raw.status_code == 400 and raw.json()["error"]["code"] == "INVALID_BODY"


async def test_episode_keys_keep_the_identitys_memory(platform_a3: RunningPlatform) -> None:
    """An episode key acts as its identity: a memory it captures is the identity's, and a
    later episode of the same identity sees it (the S5 lifecycle relies on this)."""
    _, first = open_episode(platform_a3, "learner")
    async with keyed(platform_a3, first["learner"]) as teach:
        sid = await open_session(teach)
        is_error, body = await call(
            teach,
            "memory_capture",
            {"session_id": sid, "content": "episode keys remember for their identity"},
        )
        assert not is_error, body
    insight = body["insight"]["id"]
    _, later = open_episode(platform_a3, "learner")
    async with keyed(platform_a3, later["learner"]) as recall:
        sid = await open_session(recall)
        is_error, body = await call(recall, "memory_manage", {"session_id": sid, "action": "list"})
    assert not is_error and insight in {i["id"] for i in body["insights"]}
    captured = platform_a3.admin_get("/knowledge/insights", captured_by="learner").json()
    assert insight in {i["id"] for i in captured["insights"]}


async def test_closing_an_episode_can_return_its_audit_rows(platform_a0: RunningPlatform) -> None:
    """``DELETE ...?audit=N``: the first N rows of the episode, read once its keys are revoked
    (the close's own row included), exactly as the audit API pages them, with their total."""
    episode, keys = open_episode(platform_a0, "teacher")
    async with keyed(platform_a0, keys["teacher"]) as agent:
        sid = await open_session(agent)
        for _ in range(2):
            is_error, body = await call(agent, "sql_query", {**SQL, "session_id": sid})
            assert not is_error, body
    every = platform_a0.audit(episode_id=episode)
    assert len(every) >= 3 and sum(r["event_kind"] == "tool_call" for r in every) == 2
    closed = admin(platform_a0, "DELETE", f"{EPISODES}/{episode}?audit=2")
    assert closed.status_code == 200, closed.text
    body = closed.json()
    assert body["revoked_keys"] == 1
    after = platform_a0.audit(episode_id=episode)  # the close's own row is the last
    assert after[:-1] == every and after[-1]["tool_name"] == "episode_close"
    assert body["audit"] == {"events": after[:2], "total": len(after)}
    other, _ = open_episode(platform_a0, "teacher")
    for bad in ("-1", "10001", "x"):
        resp = admin(platform_a0, "DELETE", f"{EPISODES}/{other}?audit={bad}")
        assert resp.status_code == 400, resp.text
    whole = admin(platform_a0, "DELETE", f"{EPISODES}/{other}?audit=500").json()
    assert whole["audit"] == {"events": platform_a0.audit(episode_id=other), "total": 2}
    assert [e["tool_name"] for e in whole["audit"]["events"]] == ["episode_open", "episode_close"]


async def test_a_batch_closes_then_opens_episodes(platform_a0: RunningPlatform) -> None:
    """``POST /episodes/batch``: each close and open as its own route would do it (keys
    revoked, audit rows read back once revoked; keys minted), closes first, an unknown
    episode named apart; a batch with an unknown user does nothing."""
    first, keys = open_episode(platform_a0, "teacher", label="b/0")
    async with keyed(platform_a0, keys["teacher"]) as agent:
        sid = await open_session(agent)
        is_error, body = await call(agent, "sql_query", {**SQL, "session_id": sid})
        assert not is_error, body
    batch = {
        "close": [first, "epi_unknown"],
        "open": [{"label": "b/1", "users": ["teacher"]}, {"label": "b/2", "users": ["learner"]}],
        "audit": 500,
    }
    resp = admin(platform_a0, "POST", f"{EPISODES}/batch", batch)
    assert resp.status_code == 200, resp.text
    done = resp.json()
    assert done["not_found"] == ["epi_unknown"]
    (closed,) = done["closed"]
    assert closed["episode_id"] == first and closed["revoked_keys"] == 1
    rows = platform_a0.audit(episode_id=first)
    assert closed["audit"] == {"events": rows, "total": len(rows)}
    assert [r["tool_name"] for r in rows if r["event_kind"] != "protocol"] == [
        "episode_open",
        "platform_info",
        "sql_query",
        "episode_close",
    ]
    assert [o["label"] for o in done["opened"]] == ["b/1", "b/2"]
    assert set(done["opened"][1]["keys"]) == {"learner"}
    async with keyed(platform_a0, done["opened"][0]["keys"]["teacher"]) as agent:
        await open_session(agent)  # the new key works, the closed episode's does not
    resp = httpx.post(
        platform_a0.base_url + "/mcp",
        headers={"Authorization": f"Bearer {keys['teacher']}", "Accept": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=30,
    )
    assert resp.status_code == 401
    second = done["opened"][0]["episode_id"]
    bad = {"close": [second], "open": [{"label": "x", "users": ["nobody"]}]}
    resp = admin(platform_a0, "POST", f"{EPISODES}/batch", bad)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "UNKNOWN_USER"
    resp = admin(platform_a0, "POST", f"{EPISODES}/batch", {"close": [second]})
    assert resp.status_code == 200 and resp.json()["closed"][0]["audit"] is None  # still open


async def test_the_batcher_sends_what_piles_up_as_one_request(
    platform_a0: RunningPlatform,
) -> None:
    """A reference target's :class:`EpisodeBatcher`: opens asked for together go in one
    request, closes too, each caller gets its own episode's answer, and closing an episode
    that is not open fails that close alone."""
    sent: list[dict[str, Any]] = []
    async with httpx.AsyncClient(
        base_url=platform_a0.base_url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:

        async def send(body: dict[str, Any]) -> Any:
            sent.append(body)
            resp = await http.post(f"{EPISODES}/batch", json=body, timeout=30)
            assert resp.status_code == 200, resp.text
            return resp.json()

        batcher = EpisodeBatcher(send, audit=500)
        labels = [f"t/{i}" for i in range(20)]
        # asyncio runs the callers (FIFO) before the sender task the first one started
        opened = await asyncio.gather(*(batcher.open(label, ["teacher"]) for label in labels))
        assert [o["label"] for o in opened] == labels and batcher.requests == 1
        ids = [o["episode_id"] for o in opened]
        assert len(set(ids)) == 20
        results = await asyncio.gather(
            *(batcher.close(e) for e in [*ids, "epi_unknown"]), return_exceptions=True
        )
        assert batcher.requests == 2 and len(sent[1]["close"]) == 21
        assert isinstance(results[-1], HarnessError)
        for episode, closed in zip(ids, results[:-1], strict=True):
            assert isinstance(closed, dict) and closed["episode_id"] == episode
            events = closed["audit"]["events"]
            assert [e["tool_name"] for e in events] == ["episode_open", "episode_close"]
            assert {e["episode_id"] for e in events} == {episode}
