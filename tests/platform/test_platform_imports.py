"""What a platform's main process imports: the SQL guard's parsers run in its SQL workers, the
world generator only where a world is built, the search rankers (numpy) only on a profile that
offers search. Each of them is a share of every platform start, and CI starts well over a
hundred (``python -m benchmarks.platform_start`` measures the CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys, tempfile
from pathlib import Path
import dabench.platform.app
from dabench.platform.admin.auth import DEV_AUTH
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.world_content import load_world_content

service = PlatformService(
    load_world_content(Path(sys.argv[1])), load_profile(sys.argv[2]), DEV_AUTH,
    Path(tempfile.mkdtemp()),
)
identity = DEV_AUTH.identities[0]
sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
args = {"session_id": sid, "sql": "SELECT count(*) AS n FROM sales.orders"}
answer = json.loads(service.call(identity, "sql_query", args).text)
service.close()
heavy = ["sqlglot", "numpy", "rank_bm25", "dabench.world.build", "dabench.platform.sqlguard.guard"]
print(json.dumps({"answer": answer, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def _probe(world: Path, profile: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(world), profile],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    out: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return out


@pytest.mark.parametrize("profile", ["a0"])
def test_a_profile_without_search_loads_no_parser_generator_or_ranker(
    world_dir: Path, profile: str
) -> None:
    """a0 (a1 offers the same tools) answers a query (the guard ran in the worker) with none
    of them loaded."""
    out = _probe(world_dir, profile)
    answer = out["answer"]
    assert isinstance(answer, dict) and answer.get("row_count") == 1, answer
    assert out["loaded"] == []


def test_a_profile_with_search_loads_the_rankers_only(world_dir: Path) -> None:
    """a2 offers search: its engine (rank_bm25, numpy) is built at start; the guard's parsers
    and the generator still stay out of the main process."""
    out = _probe(world_dir, "a2")
    assert out["loaded"] == ["numpy", "rank_bm25"]
