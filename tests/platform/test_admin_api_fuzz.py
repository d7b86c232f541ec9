"""Property-based conformance of the admin API to its own OpenAPI document (schemathesis).

A real platform process (its own, because the fuzzer also calls ``POST /state/reset``) is
driven by the schemathesis command line with every phase (examples, coverage, fuzzing and
stateful, following the document's links) and every check: valid requests must be
accepted, invalid ones refused with a documented 4xx, every status and body must match the
document, auth must be enforced, unsupported methods must answer 405, and nothing may answer
5xx. Generation is deterministic, so a run is repeatable.

The CLI is used rather than schemathesis' pytest integration: the CLI is its stable public
interface, while the pytest plugin reaches into pytest internals that pytest 9 changed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from platform_helpers import (
    ADMIN_KEY,
    RunningPlatform,
    call,
    mcp_client,
    open_session,
    start_platform,
    stop_platform,
)

PHASES = "examples,coverage,fuzzing,stateful"


@pytest.fixture(scope="module")
def fuzz_platform(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    platform = start_platform(world_dir, "a3", auth_file, tmp_path_factory.mktemp("fuzz"))
    yield platform
    assert stop_platform(platform) == 0


async def _seed(platform: RunningPlatform, dataset: str) -> None:
    """Audit rows, an insight and a changeset, so the links have something to follow."""
    async with mcp_client(platform, "teacher") as teacher:
        sid = await open_session(teacher)
        _, body = await call(
            teacher,
            "memory_capture",
            {"session_id": sid, "content": "fuzz seed fact", "related_ids": [dataset]},
        )
    insight = body["insight"]["id"]
    async with mcp_client(platform, "reviewer") as reviewer:
        rid = await open_session(reviewer)
        is_error, body = await call(
            reviewer,
            "apply_knowledge",
            {
                "session_id": rid,
                "action": "apply",
                "insight_id": insight,
                "sink": "description",
                "target": dataset,
            },
        )
    assert not is_error, body


@pytest.mark.slow
async def test_admin_api_conforms_to_its_openapi(
    fuzz_platform: RunningPlatform, world: Any, tmp_path: Path
) -> None:
    dataset = str(world.catalog.datasets[0].id)
    await _seed(fuzz_platform, dataset)
    argv = [
        sys.executable, "-m", "schemathesis.cli", "run",
        f"{fuzz_platform.base_url}/openapi.json",
        "--header", f"Authorization: Bearer {ADMIN_KEY}",
        "--checks", "all", "--phases", PHASES,
        "--max-examples", "30", "--generation-deterministic",
        "--workers", "1", "--request-timeout", "30", "--no-color",
        "--report", "junit", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in output, output  # ran and passed, not skipped
    assert "No issues found" in output, output
