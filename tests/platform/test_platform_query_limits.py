"""Hard per-query limits (worker processes) and fair sharing of the query slots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from dabench.platform.admin.audit import AuditQuery
from dabench.platform.admin.auth import DEV_AUTH
from dabench.platform.errors import ToolError
from dabench.platform.fair_share import QueryScheduler
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.warehouse import DuckDBWarehouse, WarehouseLimits
from dabench.platform.warehouse.duckdb_backend import read_only_config
from dabench.platform.warehouse.priority import LONG_QUERY_NICE, group_nice, set_group_nice
from dabench.platform.warehouse.process_pool import WorkerPool
from dabench.platform.world_content import load_world_content


@pytest.mark.parametrize(
    "sql", ["SELECT len(range(1000000000))", "SELECT len(list_resize([1], 1000000000))"]
)
def test_list_blowup_is_stopped_and_the_next_query_answers(
    one_worker: DuckDBWarehouse, sql: str
) -> None:
    with pytest.raises(ToolError) as err:
        one_worker.guarded_run(sql, 20000, 10, 2.0, 65536)
    assert err.value.code in {"QUERY_MEMORY_LIMIT", "QUERY_TIMEOUT"}
    _, result = one_worker.guarded_run("SELECT 42 AS answer", 20000, 10, 30.0, 65536)
    assert result.rows == [[42]]


def test_a_killed_worker_is_replaced(one_worker: DuckDBWarehouse) -> None:
    (pid,) = one_worker.worker_pids
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ToolError) as err:  # the query finds its worker dead
        one_worker.guarded_run("SELECT 1", 20000, 10, 30.0, 65536)
    assert err.value.code == "QUERY_MEMORY_LIMIT"
    _, result = one_worker.guarded_run("SELECT 2 AS n", 20000, 10, 30.0, 65536)
    assert result.rows == [[2]]
    assert one_worker.workers_replaced == 1 and one_worker.worker_pids != [pid]


def test_guard_refusals_come_back_from_the_worker(one_worker: DuckDBWarehouse) -> None:
    for sql, code in [
        ("SELECT getenv('HOME')", "SQL_FUNCTION_NOT_ALLOWED"),
        ("SELECT 1; SELECT 2", "SQL_MULTIPLE_STATEMENTS"),
        ("SELECT " + "1 + " * 3000 + "1", "SQL_TOO_LONG"),
    ]:
        with pytest.raises(ToolError) as err:
            one_worker.guarded_run(sql, 10000, 10, 30.0, 65536)
        assert err.value.code == code, sql
    assert one_worker.workers_replaced == 0


def _pool(world_dir: Path, size: int, **kwargs: Any) -> WorkerPool:
    """A pool over the test world; ``resident_budget`` and the rest as given."""
    config = read_only_config(1)
    config["memory_limit"] = "4GiB"  # the worker's own budgets stop a query first
    hello = {
        "path": str(world_dir / "warehouse.duckdb"),
        "config": config,
        "resident_budget": kwargs.pop("resident_budget", 512 * 2**20),
        "address_space_budget": kwargs.pop("address_space_budget", 4 * 2**30),
    }
    return WorkerPool(hello, size, **kwargs)


def _request(pool: WorkerPool, sql: str, timeout_s: float = 30.0, **extra: Any) -> dict[str, Any]:
    req = {"sql": sql, "max_sql_chars": 20000, "limit": 10, "timeout_s": timeout_s}
    return pool.request({**req, "max_bytes": 65536, **extra}, timeout_s)


def test_resident_memory_past_the_budget_stops_the_query(world_dir: Path) -> None:
    """A list built in memory the allocator already mapped grows the resident size, not the
    address space: the worker's own check stops it and the worker is replaced."""
    pool = _pool(world_dir, 1, resident_budget=64 * 2**20)
    try:
        answer = _request(pool, "SELECT len(range(200000000))")
        assert answer["error"]["code"] == "QUERY_MEMORY_LIMIT"
        assert "resident memory" in answer["error"]["message"]
        assert _request(pool, "SELECT 42")["ok"]["rows"] == [[42]]
        assert pool.replaced == 1
    finally:
        pool.close()


def test_workers_start_on_demand_and_stop_when_idle(world_dir: Path) -> None:
    slow = "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range + b.range = 7"
    pool = _pool(world_dir, 2, spawn_after_s=0.0, idle_stop_s=0.2)
    try:
        assert len(pool.pids) == 1 and pool.started == 1
        codes: list[str] = []

        def run() -> None:
            codes.append(_request(pool, slow, timeout_s=1.0)["error"]["code"])

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120.0)
        assert codes == ["QUERY_TIMEOUT"] * 3
        for _ in range(2400):  # the second worker started (safety nets, not timings)
            if pool.stopped_idle and pool.started == 2:  # ... and, once idle, one stopped
                break
            threading.Event().wait(0.05)
        assert pool.started == 2  # never more than the pool's size
        assert pool.stopped_idle == 1 and len(pool.pids) == 1
        assert _request(pool, "SELECT 7")["ok"]["rows"] == [[7]]
    finally:
        pool.close()


@pytest.mark.parametrize("low_priority", [False, True])
def test_queries_queued_for_busy_workers_all_get_one(world_dir: Path, low_priority: bool) -> None:
    """A worker coming free wakes one waiting query (every one when a low-priority query
    waits, since it may pass the worker by): no query is left waiting for a wake-up."""
    pool = _pool(world_dir, 2, spawn_after_s=3600.0)  # the queue, not a new worker, serves
    answers: list[list[list[int]]] = []

    def run(n: int) -> None:
        for i in range(10):
            low = low_priority and n % 2 == 1
            answers.append(_request(pool, f"SELECT {n * 100 + i}", low_priority=low)["ok"]["rows"])

    try:
        threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300.0)  # a safety net: a lost wake-up would hang here
        assert not any(t.is_alive() for t in threads)
        assert sorted(a[0][0] for a in answers) == sorted(
            n * 100 + i for n in range(6) for i in range(10)
        )
    finally:
        pool.close()


def test_a_worker_starts_niced_and_serves_at_normal_priority(world_dir: Path) -> None:
    pool = _pool(world_dir, 1)
    try:
        (pid,) = pool.pids
        tasks = os.listdir(f"/proc/{pid}/task")
        assert {os.getpriority(os.PRIO_PROCESS, int(t)) for t in tasks} == {0}
        autogroup = Path(f"/proc/{pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "0"
        assert _request(pool, "SELECT 3")["ok"]["rows"] == [[3]]
    finally:
        pool.close()


def test_a_low_priority_query_runs_niced_and_the_worker_returns_to_normal(
    world_dir: Path,
) -> None:
    pool = _pool(world_dir, 1)
    try:
        (pid,) = pool.pids
        assert os.getsid(pid) == pid  # its own session: its own autogroup, if any
        autogroup = Path(f"/proc/{pid}/autogroup")
        low = _request(pool, "SELECT 5", low_priority=True)
        assert low["ok"]["rows"] == [[5]] and low["nice"] == LONG_QUERY_NICE
        assert low["group_nice"] == (LONG_QUERY_NICE if autogroup.exists() else None)
        normal = _request(pool, "SELECT 6")
        assert normal["ok"]["rows"] == [[6]] and "nice" not in normal
        assert pool.pids == [pid] and pool.replaced == 0  # the same worker served both
        tasks = os.listdir(f"/proc/{pid}/task")
        assert {os.getpriority(os.PRIO_PROCESS, int(t)) for t in tasks} == {0}
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "0"
    finally:
        pool.close()


def _wait_for(predicate: Any, done: threading.Event, safety_s: float = 120.0) -> bool:
    """Poll ``predicate`` until it holds (``True``) or ``done`` is set (``False``); the
    safety timeout only keeps a broken run from hanging."""
    waited = 0.0
    while not predicate():
        if done.is_set() or waited > safety_s:
            return bool(predicate())
        done.wait(0.02)
        waited += 0.02
    return True


def _niced(pid: int) -> bool:
    """Whether worker ``pid`` runs a thread at ``LONG_QUERY_NICE`` and, where the kernel has
    autogroups, its autogroup is at that nice value too."""
    if Path("/proc/self/autogroup").exists() and group_nice(pid) != LONG_QUERY_NICE:
        return False
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    return LONG_QUERY_NICE in {os.getpriority(os.PRIO_PROCESS, t) for t in tids}


def test_a_long_query_drops_its_workers_autogroup_to_nice_10(world_dir: Path) -> None:
    """Past ``LONG_QUERY_S`` the worker's session (its autogroup, where the kernel has them)
    and its thread drop to nice 10, so other sessions' short queries get the CPU first."""
    pool = _pool(world_dir, 1)
    done = threading.Event()
    answers: list[dict[str, Any]] = []

    def long_query() -> None:
        try:
            answers.append(_request(pool, "SELECT count(*) FROM range(1000000000000)", 300.0))
        except ToolError as exc:
            answers.append({"error": {"code": exc.code}})
        finally:
            done.set()

    try:
        (pid,) = pool.pids
        threading.Thread(target=long_query, daemon=True).start()

        assert _wait_for(lambda: _niced(pid), done), "the long query's worker was never niced"
        assert not done.is_set()
    finally:
        pool.close()  # kills the busy worker (back at nice 0 first)
    done.wait(60)
    assert answers and "error" in answers[0]


def test_a_long_guard_check_drops_to_nice_10(world_dir: Path) -> None:
    """The guard process of a PostgreSQL warehouse lowers a long check as a DuckDB worker
    lowers a long query (flat SQL of ~160 kB: seconds of parsing, 3x the 1 800-term one that
    took 0.5 s on a quiet machine)."""
    autogroups = Path("/proc/self/autogroup").exists()
    scope = {"catalog": "postgres", "tables": ["sales.orders"], "dialect": "postgres"}
    pool = WorkerPool({"path": None, "scope": scope, "address_space_budget": 2 * 2**30}, 1)
    done = threading.Event()
    answers: list[dict[str, Any]] = []
    bomb = " UNION ALL ".join(f"SELECT {i} AS n" for i in range(6000))

    def check() -> None:
        try:
            answers.append(pool.request({"sql": bomb, "max_sql_chars": 1_000_000}, 300.0))
        finally:
            done.set()

    try:
        (pid,) = pool.pids
        threading.Thread(target=check, daemon=True).start()

        assert _wait_for(lambda: _niced(pid), done), (
            "the long check's guard process was never niced"
        )
        assert done.wait(300) and "ok" in answers[0], answers
        assert pool.pids == [pid]  # the same process, back at nice 0
        assert {
            os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir(f"/proc/{pid}/task")
        } == {0}
        if autogroups:
            assert group_nice(pid) == 0
    finally:
        pool.close()


def test_set_group_nice_sets_a_sessions_autogroup() -> None:
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("this kernel schedules without autogroups")
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        assert group_nice(proc.pid) == 0
        assert set_group_nice(LONG_QUERY_NICE, proc.pid) and group_nice(proc.pid) == 10
        assert set_group_nice(0, proc.pid) and group_nice(proc.pid) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_query_behind_a_low_priority_one_starts_a_worker_at_once(world_dir: Path) -> None:
    """A low-priority query counts as long from its start: a normal query that finds the
    only worker busy with one starts a second at once (``spawn_after_s`` an hour here)."""
    slow = "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range + b.range = 7"
    pool = _pool(world_dir, 2, spawn_after_s=3600.0)
    try:
        codes: list[str] = []
        low = threading.Thread(
            target=lambda: codes.append(
                _request(pool, slow, timeout_s=3.0, low_priority=True)["error"]["code"]
            )
        )
        low.start()
        for _ in range(2400):  # until the low-priority query holds the worker (safety net)
            if pool._busy:
                break
            threading.Event().wait(0.05)
        assert _request(pool, "SELECT 8")["ok"]["rows"] == [[8]]
        low.join(120.0)
        assert codes == ["QUERY_TIMEOUT"]
        for _ in range(2400):  # the worker it started (safety net: never, if it did not)
            if pool.started == 2:
                break
            threading.Event().wait(0.05)
        assert pool.started == 2 and pool.replaced == 0
    finally:
        pool.close()


def test_a_low_priority_query_leaves_the_last_idle_worker_to_others(world_dir: Path) -> None:
    """While the pool can grow, a low-priority query starts a worker rather than take the
    only idle one; once the pool is full it takes any."""
    pool = _pool(world_dir, 2)
    try:
        (first,) = pool.pids
        assert _request(pool, "SELECT 9", low_priority=True)["ok"]["rows"] == [[9]]
        assert pool.started == 2 and first in pool.pids and len(pool.pids) == 2
        assert _request(pool, "SELECT 10", low_priority=True)["ok"]["rows"] == [[10]]
        assert pool.started == 2  # full: no third
    finally:
        pool.close()


def test_a_costly_query_penalizes_its_identity_only() -> None:
    sched = QueryScheduler(slots=2)
    assert not sched.strike("a", "SQL_ERROR") and not sched.strike("a", "SQL_BUSY")
    assert not sched.low_priority("a") and sched.strikes == {}
    assert sched.strike("a", "QUERY_MEMORY_LIMIT") and sched.strike("a", "QUERY_TIMEOUT")
    assert sched.low_priority("a") and not sched.low_priority("b")
    assert sched.strikes == {"a": 2}
    off = QueryScheduler(slots=2, penalty_s=0.0)
    assert not off.strike("a", "QUERY_TIMEOUT") and not off.low_priority("a")
    with pytest.raises(ValueError, match="penalty_s"):
        QueryScheduler(slots=2, penalty_s=-1.0)


def test_after_a_query_that_cost_its_worker_its_caller_runs_at_low_priority(
    world_dir: Path, tmp_path: Path
) -> None:
    """End to end: a blow-up penalizes its caller (an identity with a static key, or an
    episode), whose next query reaches the worker as a low-priority one; another identity's
    does not, nor another episode's of the same identity."""
    service = PlatformService(load_world_content(world_dir), load_profile("a0"), DEV_AUTH, tmp_path)
    sent: list[bool] = []
    guarded_run = service.warehouse.guarded_run

    def spy(sql: str, *args: Any, low_priority: bool = False) -> Any:
        sent.append(low_priority)
        return guarded_run(sql, *args, low_priority=low_priority)

    service.warehouse.guarded_run = spy  # type: ignore[method-assign]
    blowup = "SELECT len(list_resize([1], 1000000000))"
    try:
        hostile, other = DEV_AUTH.identities[0], DEV_AUTH.identities[1]
        assert hostile.user != other.user
        episode_id, keys = service.open_episode("e/0", [hostile.user])
        in_episode = service.identify(keys[hostile.user])
        assert in_episode is not None
        callers = {"hostile": hostile, "other": other, "episode": in_episode}
        sids = {
            name: json.loads(service.call(i, "platform_info", {}).text)["session_id"]
            for name, i in callers.items()
        }

        def query(name: str, sql: str) -> str:
            outcome = service.call(
                callers[name], "sql_query", {"session_id": sids[name], "sql": sql}
            )
            return str(json.loads(outcome.text)["error"]["code"]) if outcome.is_error else "OK"

        assert query("hostile", "SELECT 1") == "OK"
        assert query("hostile", blowup) in {"QUERY_MEMORY_LIMIT", "QUERY_TIMEOUT"}
        assert [query(name, "SELECT 2") for name in ("hostile", "other", "episode")] == ["OK"] * 3
        assert query("episode", blowup) in {"QUERY_MEMORY_LIMIT", "QUERY_TIMEOUT"}
        assert query("episode", "SELECT 3") == "OK"
        assert sent == [False, False, True, False, False, False, True]
        assert service.scheduler.strikes == {
            f"user:{hostile.user}": 1,
            f"episode:{episode_id}": 1,
        }
    finally:
        service.close()


def test_a_memory_share_too_small_for_a_worker_is_refused(world_dir: Path) -> None:
    with pytest.raises(ValueError, match="leaves 32 MiB each"):
        DuckDBWarehouse(
            world_dir / "warehouse.duckdb", 1, WarehouseLimits(memory_limit="128MiB", workers=4)
        )
    with pytest.raises(ValueError, match="min_workers"):
        _pool(world_dir, 2, min_workers=3)


def test_quota_per_identity_and_round_robin() -> None:
    sched = QueryScheduler(slots=3, per_user=2, per_session=2)
    order: list[str] = []
    release = {name: threading.Event() for name in ("a3", "a4", "b2")}
    started = {name: threading.Event() for name in release}

    def run(user: str, name: str) -> None:
        with sched.slot(user, f"s-{name}", 30.0):
            order.append(name)
            started[name].set()
            release[name].wait(30.0)

    holders = [sched.slot("a", "s-a1", 1.0), sched.slot("a", "s-a2", 1.0)]
    for h in holders:
        h.__enter__()
    # a's third query waits (quota 2) although a slot is free; b's first takes it
    threads = [threading.Thread(target=run, args=("a", "a3"))]
    threads[0].start()
    b1 = sched.slot("b", "s-b1", 1.0)
    b1.__enter__()
    assert order == [] and not started["a3"].is_set()
    threads += [threading.Thread(target=run, args=("a", "a4"))]
    threads[-1].start()
    threads += [threading.Thread(target=run, args=("b", "b2"))]
    threads[-1].start()
    while len(sched._queues.get("a", ())) < 2 or not sched._queues.get("b"):
        threading.Event().wait(0.01)
    holders[0].__exit__(None, None, None)  # a slot of a: a3 is next (a's turn comes first)
    assert started["a3"].wait(30.0)
    b1.__exit__(None, None, None)  # then b2: b's turn, although a4 waited before it
    assert started["b2"].wait(30.0)
    assert order == ["a3", "b2"]
    holders[1].__exit__(None, None, None)
    assert started["a4"].wait(30.0)
    for name in release:
        release[name].set()
    for t in threads:
        t.join(30.0)
    assert order == ["a3", "b2", "a4"]


def test_per_session_quota_and_queue_timeout() -> None:
    sched = QueryScheduler(slots=4, per_user=4, per_session=1)
    with sched.slot("a", "s1", 1.0), sched.slot("a", "s2", 1.0):
        with pytest.raises(ToolError) as err, sched.slot("a", "s1", 0.05):
            pass
        assert err.value.code == "SQL_BUSY"
    with sched.slot("a", "s1", 1.0) as waited:
        assert waited >= 0.0


def test_tools_without_sql_answer_while_every_sql_slot_is_busy(
    world_dir: Path, tmp_path: Path
) -> None:
    service = PlatformService(load_world_content(world_dir), load_profile("a0"), DEV_AUTH, tmp_path)
    try:
        identity = DEV_AUTH.identities[0]
        sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
        table = next(iter(service.tables))
        held = [service.scheduler.slot(f"other{i}", f"s{i}", 1.0) for i in range(4)]
        for h in held:  # every slot busy until released below
            h.__enter__()
        results: dict[str, object] = {}

        def query() -> None:
            results["sql"] = service.call(
                identity, "sql_query", {"session_id": sid, "sql": "SELECT 7"}
            )

        worker = threading.Thread(target=query)
        worker.start()
        outcome = service.call(identity, "describe_table", {"session_id": sid, "table": table})
        assert not outcome.is_error and "sql" not in results  # answered while SQL waits
        for h in held:
            h.__exit__(None, None, None)
        worker.join(60.0)
        sql = results["sql"]
        assert not sql.is_error and sql.payload["rows"] == [[7]]  # type: ignore[attr-defined]
        rows = service.audit.events(AuditQuery(tool_name="sql_query")).events
        assert rows[-1].queue_ms is not None and rows[-1].queue_ms > 0
    finally:
        service.close()
