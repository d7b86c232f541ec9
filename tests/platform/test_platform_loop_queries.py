"""Queries run from the event loop (``PlatformService.acall``, ``guarded_run_async``): the
same answers, errors, worker replacement, fair-sharing slots and audit rows as on a thread,
and the thread path whenever a slot or a worker is not free at once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from dabench.platform.admin.audit import AuditQuery
from dabench.platform.admin.auth import DEV_AUTH, Identity
from dabench.platform.errors import ToolError
from dabench.platform.fair_share import QueryScheduler
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService, ToolOutcome
from dabench.platform.warehouse import DuckDBWarehouse
from dabench.platform.world_content import load_world_content

SLOW = "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range + b.range = 7"
"""A query that runs far past a test's timeout (it is interrupted there)."""


@pytest.fixture()
def service(world_dir: Path, tmp_path: Path) -> Iterator[PlatformService]:
    """A platform service on profile a0 with the dev identities."""
    svc = PlatformService(load_world_content(world_dir), load_profile("a0"), DEV_AUTH, tmp_path)
    yield svc
    svc.close()


def test_a_query_on_the_loop_answers_as_on_a_thread(one_worker: DuckDBWarehouse) -> None:
    done = asyncio.run(one_worker.guarded_run_async("SELECT 42 AS answer", 20000, 10, 30.0, 65536))
    assert done is not None
    tables, result = done
    assert tables == () and result.rows == [[42]] and not result.truncated
    assert one_worker.guarded_run("SELECT 42 AS answer", 20000, 10, 30.0, 65536)[1] == result
    with pytest.raises(ToolError) as err:  # the guard's refusal, from the worker
        asyncio.run(one_worker.guarded_run_async("SELECT getenv('HOME')", 20000, 10, 30.0, 65536))
    assert err.value.code == "SQL_FUNCTION_NOT_ALLOWED"


def test_a_query_on_the_loop_is_interrupted_at_its_timeout(one_worker: DuckDBWarehouse) -> None:
    with pytest.raises(ToolError) as err:
        asyncio.run(one_worker.guarded_run_async(SLOW, 20000, 10, 1.0, 65536))
    assert err.value.code == "QUERY_TIMEOUT"
    done = asyncio.run(one_worker.guarded_run_async("SELECT 2 AS n", 20000, 10, 30.0, 65536))
    assert done is not None and done[1].rows == [[2]]


def test_a_dead_worker_found_on_the_loop_is_replaced(one_worker: DuckDBWarehouse) -> None:
    (pid,) = one_worker.worker_pids
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ToolError) as err:  # the query finds its worker dead
        asyncio.run(one_worker.guarded_run_async("SELECT 1", 20000, 10, 30.0, 65536))
    assert err.value.code == "QUERY_MEMORY_LIMIT"
    assert one_worker.workers_replaced == 1 and one_worker.worker_pids != [pid]
    done = asyncio.run(one_worker.guarded_run_async("SELECT 3 AS n", 20000, 10, 30.0, 65536))
    assert done is not None and done[1].rows == [[3]]


def test_a_long_busy_worker_or_a_large_query_sends_the_query_to_a_thread(
    one_worker: DuckDBWarehouse,
) -> None:
    """``None`` (nothing run) once the only worker has been busy past the point where the
    pool would start another (``spawn_after_s``; the thread path starts or waits), and at
    once for a query too large to write from the loop; the busy worker's query is not
    disturbed."""
    codes: list[str] = []

    def busy() -> None:
        try:
            one_worker.guarded_run(SLOW, 20000, 10, 2.0, 65536)
        except ToolError as exc:
            codes.append(exc.code)

    thread = threading.Thread(target=busy)
    thread.start()
    pool = one_worker._pool
    for _ in range(2400):  # until the thread holds the worker (a safety net, not a timing)
        idle = pool.try_take()
        if idle is None:
            break
        pool._give(idle)  # the thread had not taken it yet
        threading.Event().wait(0.05)
    pool._spawn_after_s = 0.0  # the busy worker is past the spawn point at once
    stats: dict[str, float] = {}
    done = asyncio.run(one_worker.guarded_run_async("SELECT 1", 20000, 10, 30.0, 65536, stats))
    assert done is None and stats["queue_ms"] >= 0.0
    thread.join(60.0)
    assert codes == ["QUERY_TIMEOUT"]
    large = "SELECT 1 AS " + "x" * 40_000
    assert asyncio.run(one_worker.guarded_run_async(large, 100_000, 10, 30.0, 65536)) is None


def test_loop_queries_are_handed_a_worker_in_turn(one_worker: DuckDBWarehouse) -> None:
    """Queries waiting on the loop for the only worker get it as it comes free, first come
    first served, without a thread; an idle worker is not taken past them."""
    pool = one_worker._pool
    pool._spawn_after_s = 3600.0  # no fallback to the thread path in this test

    async def scenario() -> list[int]:
        worker = pool.try_take()
        assert worker is not None
        order: list[int] = []

        async def wait(n: int) -> None:
            got = await pool.take_async()
            assert got is worker
            order.append(n)
            pool._give(got)

        tasks = [asyncio.create_task(wait(n)) for n in range(3)]
        await asyncio.sleep(0)  # every waiter queued
        assert pool.try_take() is None  # waiters queued: none passes them by
        pool._give(worker)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(asyncio.wait_for(scenario(), 60.0)) == [0, 1, 2]  # never hangs
    assert pool.try_take() is not None  # back in the idle list after the last


def test_a_cancelled_loop_waiter_gives_back_the_worker_it_was_handed(
    one_worker: DuckDBWarehouse,
) -> None:
    pool = one_worker._pool
    pool._spawn_after_s = 3600.0

    async def scenario() -> None:
        worker = pool.try_take()
        assert worker is not None
        task = asyncio.create_task(pool.take_async())
        await asyncio.sleep(0)
        pool._give(worker)  # handed to the waiter, which is cancelled before it resumes
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pool.try_take() is worker

    asyncio.run(asyncio.wait_for(scenario(), 60.0))


def test_a_thread_waiting_for_a_worker_goes_before_loop_queries(
    one_worker: DuckDBWarehouse,
) -> None:
    """While a query waits on a thread (say a low-priority one, which follows the pool's
    own rules), a loop query does not queue: it takes the thread path too."""
    pool = one_worker._pool
    pool._spawn_after_s = 3600.0
    worker = pool.try_take()
    assert worker is not None
    answers: list[dict[str, object]] = []
    thread = threading.Thread(
        target=lambda: answers.append(
            pool.request({"sql": "SELECT 5", "timeout_s": 30, "limit": 10, "max_bytes": 65536}, 30)
        )
    )
    thread.start()
    for _ in range(2400):  # until the thread waits in the pool (a safety net, not a timing)
        if pool._waiting:
            break
        threading.Event().wait(0.05)
    assert asyncio.run(pool.take_async()) is None
    pool._give(worker)
    thread.join(60.0)
    assert answers and "ok" in answers[0]


def test_closing_the_pool_releases_loop_waiters(one_worker: DuckDBWarehouse) -> None:
    pool = one_worker._pool
    pool._spawn_after_s = 3600.0

    async def scenario() -> object:
        assert pool.try_take() is not None
        task = asyncio.create_task(pool.take_async())
        await asyncio.sleep(0)
        await asyncio.to_thread(pool.close)
        return await task

    assert asyncio.run(asyncio.wait_for(scenario(), 60.0)) is None


def test_acquire_async_waits_for_a_slot_on_the_loop() -> None:
    """A slot freed by ``release`` goes to the loop waiter in the scheduler's order
    (round robin over identities, across thread and loop waiters); ``SQL_BUSY`` when none
    comes; a cancelled waiter's granted slot is given back."""
    sched = QueryScheduler(slots=1, per_user=1, per_session=1)

    async def scenario() -> list[str]:
        assert sched.try_slot("a", "s1")
        got: list[str] = []

        async def wait(user: str, session: str) -> None:
            await sched.acquire_async(user, session, 60.0)
            got.append(user)
            sched.release(user, session)

        first = asyncio.create_task(wait("a", "s2"))
        await asyncio.sleep(0)
        second = asyncio.create_task(wait("b", "s3"))
        await asyncio.sleep(0)
        sched.release("a", "s1")
        await asyncio.gather(first, second)
        return got

    assert asyncio.run(asyncio.wait_for(scenario(), 60.0)) == ["a", "b"]

    async def busy() -> None:
        assert sched.try_slot("a", "s1")
        try:
            await sched.acquire_async("b", "s2", 0.05)
        finally:
            sched.release("a", "s1")

    with pytest.raises(ToolError) as err:
        asyncio.run(busy())
    assert err.value.code == "SQL_BUSY"

    async def cancelled() -> None:
        assert sched.try_slot("a", "s1")
        task = asyncio.create_task(sched.acquire_async("b", "s2", 60.0))
        await asyncio.sleep(0)
        sched.release("a", "s1")  # granted to the waiter, which is cancelled before it resumes
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert sched.try_slot("c", "s9")  # the cancelled waiter's slot came back


def test_try_slot_takes_a_slot_only_when_none_would_wait() -> None:
    sched = QueryScheduler(slots=2, per_user=2, per_session=1)
    assert sched.try_slot("a", "s1")
    assert not sched.try_slot("a", "s1")  # the session's quota
    assert sched.try_slot("b", "s2")
    assert not sched.try_slot("c", "s3")  # every slot taken
    sched.release("b", "s2")
    assert sched.try_slot("c", "s3")
    sched.release("a", "s1")
    sched.release("c", "s3")
    with sched.slot("a", "s1", 1.0) as waited:
        assert waited >= 0.0 and sched.try_slot("a", "s4")
        sched.release("a", "s4")
    assert sched.try_slot("a", "s1") and sched.try_slot("a", "s4")  # all given back


def test_acall_runs_sql_on_the_loop_and_audits_every_call(service: PlatformService) -> None:
    """``sql_query`` and ``platform_info`` from the loop: the same payloads as ``call``, one
    audit row each, and a query that found its slot and worker at once waited 0 ms."""
    identity = DEV_AUTH.identities[0]

    async def calls() -> list[ToolOutcome]:
        info = await service.acall(identity, "platform_info", {})
        sid = json.loads(info.text)["session_id"]
        args = {"session_id": sid, "sql": "SELECT 7 AS n"}
        ok = await service.acall(identity, "sql_query", args)
        refused = await service.acall(
            identity, "sql_query", {"session_id": sid, "sql": "SELECT getenv('HOME')"}
        )
        table = next(iter(service.tables))
        described = await service.acall(
            identity, "describe_table", {"session_id": sid, "table": table}
        )
        return [info, ok, refused, described, service.call(identity, "sql_query", args)]

    info, ok, refused, described, threaded = asyncio.run(calls())
    assert not info.is_error and not described.is_error
    assert not ok.is_error and ok.payload["rows"] == [[7]]
    assert ok.text == threaded.text
    assert refused.is_error and refused.payload["error"]["code"] == "SQL_FUNCTION_NOT_ALLOWED"
    rows = service.audit.events(AuditQuery(limit=100)).events
    assert [r.tool_name for r in rows] == [
        "platform_info",
        "sql_query",
        "sql_query",
        "describe_table",
        "sql_query",
    ]
    assert [r.success for r in rows] == [True, True, False, True, True]
    assert rows[1].queue_ms == 0.0 and rows[2].queue_ms == 0.0
    assert rows[2].error_code == "SQL_FUNCTION_NOT_ALLOWED"


def test_acall_waits_for_a_busy_slot_on_the_loop(service: PlatformService) -> None:
    identity = DEV_AUTH.identities[0]
    sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
    held = [service.scheduler.slot(f"other{i}", f"s{i}", 1.0) for i in range(4)]
    for h in held:  # every slot busy until released below
        h.__enter__()
    release = threading.Timer(0.3, lambda: [h.__exit__(None, None, None) for h in held])

    async def query() -> ToolOutcome:
        release.start()
        return await service.acall(identity, "sql_query", {"session_id": sid, "sql": "SELECT 8"})

    outcome = asyncio.run(query())
    release.join(60.0)
    assert not outcome.is_error and outcome.payload["rows"] == [[8]]
    rows = service.audit.events(AuditQuery(tool_name="sql_query")).events
    assert len(rows) == 1 and rows[0].queue_ms is not None and rows[0].queue_ms > 0


def _sessions(service: PlatformService, identity: Identity, count: int) -> list[str]:
    return [
        json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
        for _ in range(count)
    ]


def test_a_penalized_identitys_waiting_queries_hold_no_thread(service: PlatformService) -> None:
    """Regression: a penalized identity's queries waited for their slot on SQL threads, so
    a flood of them held every thread and another identity's query (needing a thread) waited
    behind them. Now every query waits for its slot on the loop: with two threads and five
    of its queries waiting, no thread is held and the other identity is admitted first."""
    service.scheduler = QueryScheduler(slots=2, per_user=1, per_session=1)
    hostile, other = DEV_AUTH.identities[0], DEV_AUTH.identities[1]
    hostile_sids, (other_sid,) = _sessions(service, hostile, 5), _sessions(service, other, 1)
    for identity in (hostile, other):  # both run at low priority: on a thread once admitted
        service.scheduler.strike(f"user:{identity.user}", "QUERY_MEMORY_LIMIT")
    assert service.scheduler.try_slot(hostile.user, "held")  # the hostile's only slot

    async def scenario() -> tuple[ToolOutcome, list[ToolOutcome], int]:
        limiter = anyio.CapacityLimiter(2)

        def query(n: int, sid: str) -> Coroutine[Any, Any, ToolOutcome]:
            args = {"session_id": sid, "sql": f"SELECT {n}"}
            return service.acall(hostile, "sql_query", args, limiter=limiter)

        waiting = [asyncio.create_task(query(n, sid)) for n, sid in enumerate(hostile_sids)]
        while len(service.scheduler._queues.get(hostile.user, ())) < len(waiting):
            await asyncio.sleep(0.01)
        held_threads = limiter.borrowed_tokens
        admitted = await service.acall(
            other, "sql_query", {"session_id": other_sid, "sql": "SELECT 42"}, limiter=limiter
        )
        assert not any(task.done() for task in waiting)
        service.scheduler.release(hostile.user, "held")
        return admitted, list(await asyncio.gather(*waiting)), held_threads

    admitted, hostile_outcomes, held_threads = asyncio.run(asyncio.wait_for(scenario(), 120.0))
    assert held_threads == 0
    assert admitted.payload["rows"] == [[42]]
    assert [o.payload["rows"] for o in hostile_outcomes] == [[[n]] for n in range(5)]
    rows = service.audit.events(AuditQuery(tool_name="sql_query")).events
    assert [r.user_id for r in rows] == [other.user] + [hostile.user] * 5  # admission order
    assert all(r.success and r.queue_ms is not None for r in rows)
    assert all(r.queue_ms is not None and r.queue_ms > 0 for r in rows[1:])


@pytest.mark.parametrize("penalized", [False, True])
def test_a_query_refused_sql_busy_records_its_wait(
    service: PlatformService, penalized: bool
) -> None:
    """Regression: a query that waited for its slot until ``SQL_BUSY`` had no ``queue_ms``."""
    sql = service.profile.sql.model_copy(update={"queue_timeout_s": 0.05})
    service.profile = service.profile.model_copy(update={"sql": sql})
    service.scheduler = QueryScheduler(slots=2, per_user=1, per_session=1)
    identity = DEV_AUTH.identities[0]
    (sid,) = _sessions(service, identity, 1)
    if penalized:
        service.scheduler.strike(f"user:{identity.user}", "QUERY_TIMEOUT")
    assert service.scheduler.try_slot(identity.user, "held")
    args = {"session_id": sid, "sql": "SELECT 1"}
    outcome = asyncio.run(service.acall(identity, "sql_query", args))
    assert outcome.payload["error"]["code"] == "SQL_BUSY"
    (row,) = service.audit.events(AuditQuery(tool_name="sql_query")).events
    assert row.error_code == "SQL_BUSY" and row.queue_ms is not None and row.queue_ms > 0
    sync = service.call(identity, "sql_query", args)  # the thread path records it too
    assert sync.payload["error"]["code"] == "SQL_BUSY"
    assert service.audit.events(AuditQuery(tool_name="sql_query")).events[-1].queue_ms


def test_concurrent_loop_queries_never_take_the_thread_path(
    service: PlatformService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve queries at once from the loop, on one slot's worth of workers and fewer
    workers than queries: every one waits for its slot and worker on the loop."""

    def on_a_thread(*args: object) -> None:
        raise AssertionError("a loop query took the thread path")

    monkeypatch.setattr(service, "_run_query", on_a_thread)
    monkeypatch.setattr(service, "_run_with_slot", on_a_thread)
    warehouse = service.warehouse
    assert isinstance(warehouse, DuckDBWarehouse)
    warehouse._pool._spawn_after_s = 3600.0  # however slow the machine: no thread path
    identity = DEV_AUTH.identities[0]

    async def queries() -> list[ToolOutcome]:
        sids = [
            json.loads((await service.acall(identity, "platform_info", {})).text)["session_id"]
            for _ in range(4)
        ]
        calls = [
            service.acall(identity, "sql_query", {"session_id": sids[n % 4], "sql": f"SELECT {n}"})
            for n in range(12)
        ]
        return list(await asyncio.gather(*calls))

    outcomes = asyncio.run(asyncio.wait_for(queries(), 120.0))
    assert [o.payload["rows"] for o in outcomes] == [[[n]] for n in range(12)]
    rows = service.audit.events(AuditQuery(tool_name="sql_query")).events
    assert len(rows) == 12 and all(r.success and r.queue_ms is not None for r in rows)


def test_closed_audit_pages_read_long_episodes_in_full(
    service: PlatformService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first rows of a closed episode are read on the loop; an episode with more rows
    than that is read again in full (on a thread), and ``total`` counts them all."""
    from datetime import UTC, datetime

    from dabench.platform.admin import api

    monkeypatch.setattr(api, "LOOP_AUDIT_ROWS", 2)
    for episode, rows in (("epi_short", 1), ("epi_long", 5)):
        for n in range(rows):
            service.audit.record(
                timestamp=datetime.now(UTC), duration_ms=1.0, session_id=None, user_id="u",
                persona="analyst", tool_name=f"t{n}", parameters={}, success=True,
                error_code=None, request_chars=0, response_chars=0, episode_id=episode,
            )  # fmt: skip
    pages = asyncio.run(api.closed_audit_pages(service.audit, ["epi_short", "epi_long"], 100))
    assert [(len(p.events), p.total) for p in pages] == [(1, 1), (5, 5)]
    assert [e.tool_name for e in pages[1].events] == [f"t{n}" for n in range(5)]
    capped = asyncio.run(api.closed_audit_pages(service.audit, ["epi_long"], 3))
    assert [(len(p.events), p.total) for p in capped] == [(3, 5)]
    many = [f"epi_{n}" for n in range(api.LOOP_AUDIT_EPISODES + 1)] + ["epi_long"]
    assert asyncio.run(api.closed_audit_pages(service.audit, many, 100))[-1].total == 5


def test_a_waiter_on_a_closed_loop_gets_neither_slot_nor_worker(
    one_worker: DuckDBWarehouse,
) -> None:
    """A loop waiter left behind when its loop closed (a server shut down mid-wait) is
    skipped: the slot stays free, the worker goes back to the idle list."""
    sched = QueryScheduler(slots=1, per_user=1, per_session=1)
    pool = one_worker._pool
    pool._spawn_after_s = 3600.0
    assert sched.try_slot("a", "s1")
    worker = pool.try_take()
    assert worker is not None
    loop = asyncio.new_event_loop()
    slot_wait = loop.create_task(sched.acquire_async("b", "s2", 3600.0))
    worker_wait = loop.create_task(pool.take_async())
    loop.run_until_complete(asyncio.sleep(0))  # both queued, then their loop goes away
    loop.close()
    assert not slot_wait.done() and not worker_wait.done()
    sched.release("a", "s1")
    assert sched.try_slot("c", "s3")  # not held for the waiter that cannot wake
    pool._give(worker)
    assert pool.try_take() is worker
    for task in (slot_wait, worker_wait):  # what is left of them ends quietly
        task.get_coro().close()
