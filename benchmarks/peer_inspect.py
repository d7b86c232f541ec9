"""dabench and inspect_ai side by side: the same fake model, the same tool calls.

Both harnesses play ``--episodes`` episodes at each concurrency. In each, a fake model
answers every call after ``--latency-ms`` (200 ms), asks for ``--calls`` (2) ``sql_query``
calls one per response, then answers with the last result. dabench runs its runner against
the reference platform (a0) over MCP (streamable HTTP, its lean client), exactly as
``runner_throughput.py`` does; inspect_ai runs a ``Task`` of as many samples with
``use_tools`` + ``generate`` (its tool loop), no scorer, with an *in-process* ``sql_query``
tool that returns a fixed result (no platform work at all: inspect_ai's best case), or with
``--inspect-tool mcp`` the reference platform (a0) over MCP through inspect_ai's own MCP
client (one platform session per sample, opened before the clock starts; the fake model
passes its handle). Tool results that are errors fail the run. Repetitions are interleaved
(dabench, inspect_ai, next level...).

Efficiency = ideal / measured wall time, ideal = ``ceil(n / c) * (calls + 1) * latency``;
dabench's wall is its episode phase (platform already up), inspect_ai's is first sample
start to last sample end (from its log). CPU per episode is the harness process's CPU
(user + system) over that phase divided by the episodes; for inspect_ai that includes
writing its log.

inspect_ai is an optional extra, never a runtime dependency: ``pip install 'dabench[peer]'``.

    python benchmarks/peer_inspect.py [--concurrency 8 32 64] [--episodes 320] [--repeat 3]
        [--inspect-tool in-process|mcp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

os.environ.setdefault("INSPECT_DISPLAY", "none")
try:
    from inspect_ai import Task, eval_async
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageTool,
        ChatMessageUser,
        GenerateConfig,
        ModelAPI,
        ModelOutput,
        get_model,
        modelapi,
    )
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import Tool, ToolChoice, ToolInfo, mcp_server_http, tool
except ImportError:
    print(
        "inspect_ai is not installed: this benchmark compares against it.\n"
        "Install the optional extra: pip install 'dabench[peer]' (or pip install inspect-ai).",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dabench.targets.base import TargetContext
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig
from runner_throughput import default_world, measure

TOOL_RESULT = json.dumps(
    {"columns": [{"name": "1", "type": "INTEGER"}], "rows": [[1]], "row_count": 1}
)


class FakeInspectModel(ModelAPI):
    """The fake provider's script as an inspect_ai model: sleep, then the next tool call or
    the answer (the last tool result)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        latency: float = 0.2,
        calls: int = 2,
        connections: int = 10,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.latency, self.calls, self.connections = latency, calls, connections

    def max_connections(self) -> int:
        """As many concurrent calls as the benchmark's concurrency."""
        return self.connections

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """One scripted step."""
        await asyncio.sleep(self.latency)
        last_user = max(i for i, m in enumerate(input) if isinstance(m, ChatMessageUser))
        results = [m for m in input[last_user:] if isinstance(m, ChatMessageTool)]
        if len(results) < self.calls:
            arguments = {"sql": "SELECT 1"}
            prompt = input[last_user].text
            if prompt.startswith("session_id="):  # the platform over MCP: carry the handle
                arguments["session_id"] = prompt.removeprefix("session_id=")
            return ModelOutput.for_tool_call(
                "fake", "sql_query", arguments, tool_call_id=f"c{len(input)}"
            )
        return ModelOutput.from_content("fake", results[-1].text if results else "")


@modelapi(name="dabenchfake")
def dabenchfake() -> type[ModelAPI]:
    """Register the fake model with inspect_ai."""
    return FakeInspectModel


@tool
def sql_query() -> Tool:
    """An in-process stand-in for the platform's SQL tool."""

    async def execute(sql: str) -> str:
        """Run a read-only SQL query.

        Args:
            sql: The SQL query.
        """
        return TOOL_RESULT

    return execute


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure_inspect(
    concurrency: int, episodes: int, latency_ms: int, calls: int, world: Path, over_mcp: bool
) -> dict[str, float]:
    """Run one level through inspect_ai (in-process tool, or the reference platform over
    MCP) and return its figures."""
    if not over_mcp:
        prompts = [f"question {i}" for i in range(episodes)]
        return await _inspect_run(concurrency, prompts, latency_ms, calls, sql_query())
    with tempfile.TemporaryDirectory(prefix="dabench-peer-ref-") as tmp:
        ref = ReferenceTarget(ReferenceTargetConfig(profile="a0"), TargetContext(world, Path(tmp)))
        await ref.start()
        try:  # one platform session per sample, opened before the clock starts
            prompts = [f"session_id={(await ref.open_session()).handle}" for _ in range(episodes)]
            server = mcp_server_http(
                url=ref.base_url + "/mcp",
                headers={"Authorization": f"Bearer {ref.keys['default']}"},
                timeout=60,
            )
            return await _inspect_run(concurrency, prompts, latency_ms, calls, server)
        finally:
            await ref.stop()


async def _inspect_run(
    concurrency: int, prompts: list[str], latency_ms: int, calls: int, tools: Any
) -> dict[str, float]:
    episodes = len(prompts)
    task = Task(
        dataset=MemoryDataset([Sample(input=p, target="1") for p in prompts]),
        solver=[use_tools(tools), generate()],
    )
    model = get_model(
        "dabenchfake/fake",
        latency=latency_ms / 1000,
        calls=calls,
        connections=concurrency,
    )
    with tempfile.TemporaryDirectory(prefix="dabench-peer-") as tmp:
        cpu0 = _cpu()
        logs = await eval_async(
            task,
            model=model,
            max_samples=concurrency,
            max_connections=concurrency,
            log_dir=tmp,
            score=False,
        )
        cpu = _cpu() - cpu0
        log = logs[0]
        samples = log.samples or []
        assert log.status == "success" and len(samples) == episodes, (log.status, len(samples))
        starts = [datetime.fromisoformat(str(s.started_at)) for s in samples]
        ends = [datetime.fromisoformat(str(s.completed_at)) for s in samples]
        results = [m for s in samples for m in s.messages if isinstance(m, ChatMessageTool)]
        tool_calls = len(results)
        failed = [m.error or m.text[:200] for m in results if m.error or '"error"' in m.text]
        assert not failed, failed[:3]
    wall = (max(ends) - min(starts)).total_seconds()
    assert tool_calls == episodes * calls, tool_calls
    ideal = math.ceil(episodes / concurrency) * (calls + 1) * latency_ms / 1000
    return {
        "wall_s": wall,
        "efficiency": ideal / wall,
        "cpu_ms_per_episode": 1000 * cpu / episodes,
    }


def main() -> None:
    """Measure both harnesses at each level and print them side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="a built world (default: cache)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--episodes", type=int, default=320, help="episodes per level")
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs; medians shown")
    parser.add_argument(
        "--inspect-tool",
        choices=["in-process", "mcp"],
        default="in-process",
        help="inspect_ai's tool: in-process (its best case) or the reference platform over MCP",
    )
    parser.add_argument("--quick", action="store_true", help="seconds: 8 episodes at c = 4, 20 ms")
    args = parser.parse_args()
    if args.quick:
        args.concurrency, args.episodes, args.latency_ms, args.repeat = [4], 8, 20, 1
    over_mcp = args.inspect_tool == "mcp"
    world = args.world or default_world()
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for c in args.concurrency:
            dab = asyncio.run(measure(world, c, args.episodes, args.latency_ms, args.calls))
            runs.setdefault(("dabench", c), []).append(dab)
            peer = asyncio.run(
                measure_inspect(c, args.episodes, args.latency_ms, args.calls, world, over_mcp)
            )
            runs.setdefault(("inspect_ai", c), []).append(peer)

    def med(harness: str, c: int, key: str) -> float:
        return statistics.median(r[key] for r in runs[(harness, c)])

    table = Table(
        "concurrency",
        "dabench efficiency",
        "inspect_ai efficiency",
        "efficiency ratio",
        "dabench CPU ms/episode",
        "inspect_ai CPU ms/episode",
        "CPU ratio",
    )
    for c in args.concurrency:
        eff_d, eff_i = med("dabench", c, "efficiency"), med("inspect_ai", c, "efficiency")
        cpu_d = med("dabench", c, "cpu_ms_per_episode")
        cpu_i = med("inspect_ai", c, "cpu_ms_per_episode")
        table.add_row(
            str(c),
            f"{eff_d:.3f}",
            f"{eff_i:.3f}",
            f"{eff_d / eff_i:.2f}x",
            f"{cpu_d:.2f}",
            f"{cpu_i:.2f}",
            f"{cpu_d / cpu_i:.2f}x",
        )
    console = Console(width=140)
    console.print(
        f"{args.episodes} episodes per level, fake model {args.latency_ms} ms per call, "
        f"{args.calls} tool calls + 1 answer per episode, medians of {args.repeat} interleaved "
        f"runs; dabench: reference platform a0 over MCP; inspect_ai: {args.inspect_tool} tool"
    )
    console.print(table)
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
