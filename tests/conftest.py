"""Suite-wide collection rules: tests marked ``heavy`` run only when asked for.

A heavy test installs a third-party stack into the test cache (dbt and MetricFlow, say) or
runs a benchmark quick mode that needs minutes; together they would take CI past its time
budget, so the default run skips them with the reason and ``.ci/heavy`` runs them
(``DABENCH_HEAVY_TESTS=1``).
"""

from __future__ import annotations

import os

import pytest

HEAVY_ENV = "DABENCH_HEAVY_TESTS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``heavy`` tests unless ``DABENCH_HEAVY_TESTS`` is set to a true value."""
    if os.environ.get(HEAVY_ENV, "").lower() in {"1", "true", "yes"}:
        return
    skip = pytest.mark.skip(reason=f"heavy end-to-end test: run .ci/heavy ({HEAVY_ENV}=1)")
    for item in items:
        if "heavy" in item.keywords:
            item.add_marker(skip)
