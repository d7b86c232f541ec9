"""Per-test wall and CPU time, for finding where the suite's time goes (a pytest plugin).

With ``DABENCH_TEST_CPU_LOG=FILE`` set, tests/conftest.py loads it and every test appends one
tab-separated line to FILE: wall seconds, CPU seconds of the test process, CPU seconds of its
reaped child processes (servers it started and stopped, CLI runs), and the test's id. A test
whose wall time is far above both CPU figures waits on something: a timeout, a sleep, a
process it does not reap (a module fixture's server is counted where it stops). Lines from
several xdist workers interleave whole (one ``write`` each, in append mode).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest

CPU_LOG_ENV = "DABENCH_TEST_CPU_LOG"


def _cpu() -> tuple[float, float]:
    """(this process's CPU seconds, its reaped children's CPU seconds)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """Time one test (setup, call and teardown) and append its line."""
    started, (own0, children0) = time.monotonic(), _cpu()
    try:
        return (yield)
    finally:
        wall, (own1, children1) = time.monotonic() - started, _cpu()
        line = f"{wall:.2f}\t{own1 - own0:.2f}\t{children1 - children0:.2f}\t{item.nodeid}\n"
        with open(os.environ[CPU_LOG_ENV], "a", encoding="utf-8") as log:
            log.write(line)
