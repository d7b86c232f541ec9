"""Skipping a test because a system dependency is missing — except in CI.

``.ci/run`` installs Chromium, PostgreSQL and npm, and CI runs with ``CI=true``; there a missing
dependency is a broken install step, so these helpers fail the test instead of skipping it.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """True when running under CI (``CI`` set to a true value)."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def skip_unless_ci(reason: str) -> None:
    """Skip with ``reason`` on a developer machine; fail with it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI must install it: see .ci/run)")
    pytest.skip(reason)
