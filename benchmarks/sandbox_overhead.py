"""What the agents' sandbox costs per program run: the same trivial program (the system Python
printing one line) run through ``dabench.sandbox.Seal`` sealed (bubblewrap, the launcher, one
forwarded endpoint) and unsealed, ``--repeat`` times each; prints the median and p90 wall time
of each and their difference.

    python benchmarks/sandbox_overhead.py --repeat 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from dabench.isolation import SandboxSettings, bwrap_path
from dabench.sandbox import Seal, protected_paths, run_sealed, sealed_env

PROGRAM = ["/usr/bin/python3", "-I", "-S", "-c", "print('ok')"]


async def _one(seal: Seal) -> float:
    t0 = time.perf_counter()
    async with seal.open(["http://127.0.0.1:9"]) as sealed:
        env = sealed_env(sealed.inside, seal.protected, extra=sealed.env())
        result = await run_sealed(sealed.argv(PROGRAM), cwd=sealed.workdir, env=env, timeout_s=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    return (time.perf_counter() - t0) * 1000


async def main(repeat: int) -> None:
    if bwrap_path() is None:
        raise SystemExit("bubblewrap (bwrap) is not installed")
    protected = protected_paths(Path("/nonexistent-run"))
    figures: dict[str, list[float]] = {}
    for name, unsealed in (("unsealed", True), ("sealed", False)):
        seal = Seal(SandboxSettings(), protected, "bench", unsealed=unsealed)
        await _one(seal)  # warm-up
        figures[name] = [await _one(seal) for _ in range(repeat)]
    for name, values in figures.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        print(f"{name:9s} median {statistics.median(values):7.1f} ms  p90 {p90:7.1f} ms")
    delta = statistics.median(figures["sealed"]) - statistics.median(figures["unsealed"])
    print(f"sandbox overhead per program run (median): {delta:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="seconds: 2 runs each")
    args = parser.parse_args()
    asyncio.run(main(2 if args.quick else args.repeat))
