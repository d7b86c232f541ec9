"""Queries run from the event loop (``PlatformService.acall``, ``guarded_run_async``): the
same answers, errors, worker replacement, fair-sharing slots and audit rows as on a thread,
and the thread path whenever a slot or a worker is not free at once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dabench.platform.admin.audit import AuditQuery
from dabench.platform.admin.auth import DEV_AUTH
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


def test_no_idle_worker_or_a_large_query_leaves_the_loop_at_once(
    one_worker: DuckDBWarehouse,
) -> None:
    """``None`` (nothing run) while the only worker is busy, and for a query too large to
    write from the loop; the busy worker's query is not disturbed."""
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
    assert asyncio.run(one_worker.guarded_run_async("SELECT 1", 20000, 10, 30.0, 65536)) is None
    thread.join(60.0)
    assert codes == ["QUERY_TIMEOUT"]
    large = "SELECT 1 AS " + "x" * 40_000
    assert asyncio.run(one_worker.guarded_run_async(large, 100_000, 10, 30.0, 65536)) is None


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


def test_acall_waits_on_a_thread_when_every_slot_is_busy(service: PlatformService) -> None:
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
