"""What episode keys cost per episode on the reference platform (issue #24 item 3).

Starts the reference target on a built world (scale 1, seed 930, built in a temporary
directory unless ``--world`` names one) and times, for N episodes each:

- ``static``: open a session with the identity's static key, one ``sql_query``, audit check by
  session (what every episode did before episode keys);
- ``episode``: ``begin_episode`` (admin POST, key minted), open a session with the episode's
  key, one ``sql_query``, ``end_episode`` (admin DELETE, key revoked), audit check by episode.

Prints the median and p90 wall milliseconds per episode of each, and their difference.

    python benchmarks/episode_keys.py [--episodes 200] [--world DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from dabench.targets.base import TargetContext
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig
from dabench.world import build_world

SQL = {"sql": "SELECT 1 AS one"}


async def _static(ref: ReferenceTarget) -> float:
    t0 = time.perf_counter()
    session = await ref.open_session()
    await session.call("sql_query", SQL)
    check = await ref.read_audit([session.handle], 1)
    assert check.ok, check.detail
    return (time.perf_counter() - t0) * 1000


async def _episode(ref: ReferenceTarget, n: int) -> float:
    t0 = time.perf_counter()
    scope = await ref.begin_episode(f"bench/{n}")
    session = await scope.open_session()
    await session.call("sql_query", SQL)
    await scope.end_episode([session.handle])
    check = await scope.read_audit([session.handle], 1)
    assert check.ok, check.detail
    return (time.perf_counter() - t0) * 1000


def _summary(name: str, ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    p50 = statistics.median(ordered)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(f"{name:8} n={len(ms):4}  p50 {p50:7.2f} ms  p90 {p90:7.2f} ms per episode")
    return p50, p90


async def main(episodes: int, world: Path, work: Path) -> None:
    ref = ReferenceTarget(ReferenceTargetConfig(profile="a0"), TargetContext(world, work))
    await ref.start()
    try:
        await _static(ref)  # warm the connection and the tool list
        await _episode(ref, -1)
        static, episode = [], []
        for n in range(episodes):  # interleaved, so load drifts hit both alike
            static.append(await _static(ref))
            episode.append(await _episode(ref, n))
    finally:
        await ref.stop()
    s50, s90 = _summary("static", static)
    e50, e90 = _summary("episode", episode)
    print(f"episode keys add {e50 - s50:+.2f} ms (p50) / {e90 - s90:+.2f} ms (p90) per episode")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="seconds: 10 episodes")
    args = parser.parse_args()
    if args.quick:
        args.episodes = 10
    with tempfile.TemporaryDirectory(prefix="episode-keys-") as tmp:
        world = args.world
        if world is None:
            world = Path(tmp) / "w930"
            build_world(930, 1, world)
        asyncio.run(main(args.episodes, world, Path(tmp) / "target"))
