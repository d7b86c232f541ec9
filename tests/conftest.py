"""Suite-wide collection rules: under pytest-xdist the files that wait on ``.ci/run``'s
background installs go first. Every test runs in the default run (``.ci/run``): there is no
separate heavy run (the last heavy test, ``benchmarks/peer_inspect.py``'s quick mode, joined
the default run on 2026-12-04).

``.ci/run`` starts the semantic layer's installs in the background and runs pytest with
``--dist loadfile --no-loadscope-reorder``: each worker collects the files in the order
the semantic layer's file ahead (:data:`tests.ordering.FIRST`), so one worker starts it (and
waits for the installs) while the other runs the rest; then the files that took longest
(:data:`tests.ordering.LONGEST`); then the rest by test count, as xdist's own reordering would.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """With ``DABENCH_TEST_CPU_LOG=FILE``, log each test's wall and CPU time
    (:mod:`tests.cpu_log`)."""
    import tests.cpu_log as cpu_log

    if os.environ.get(cpu_log.CPU_LOG_ENV) and not config.pluginmanager.is_registered(cpu_log):
        config.pluginmanager.register(cpu_log, "tests.cpu_log")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under an xdist worker, order the files (:func:`tests.ordering.files_first`)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker runs with the repository on sys.path
        from tests.ordering import files_first

        files_first(items)
