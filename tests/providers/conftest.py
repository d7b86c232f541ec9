"""Fixtures for provider tests: a scripted local HTTP server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A running :class:`WireServer` on 127.0.0.1, stopped after the test."""
    with WireServer() as server:
        yield server
