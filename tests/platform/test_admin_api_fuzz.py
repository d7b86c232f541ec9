"""Property-based conformance of the admin API to its own OpenAPI document (schemathesis).

A real platform process (its own, because the fuzzer also calls ``POST /state/reset``) is
driven with requests generated from ``/openapi.json``: valid ones must be accepted, invalid
ones refused with a documented 4xx, every status and body must match the document, and
nothing may answer 5xx. Generation is derandomized, so a run is repeatable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from platform_helpers import ADMIN_KEY, RunningPlatform, start_platform, stop_platform


@pytest.fixture(scope="module")
def fuzz_platform(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    platform = start_platform(world_dir, "a3", auth_file, tmp_path_factory.mktemp("fuzz"))
    yield platform
    assert stop_platform(platform) == 0


@pytest.fixture(scope="module")
def admin_schema(fuzz_platform: RunningPlatform) -> Any:
    return schemathesis.openapi.from_url(fuzz_platform.base_url + "/openapi.json")


schema = schemathesis.pytest.from_fixture("admin_schema")


@schema.parametrize()
@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_admin_api_conforms_to_its_openapi(case: Any) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN_KEY}"})
