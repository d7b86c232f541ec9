"""One-arm experiments on the reference platform for agent-program tests (command, claude-cli):
the task file and experiment YAML they all write, in one place."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

DATA = Path(__file__).parent / "data"


def write_agent_experiment(
    directory: Path,
    world: Path,
    agent: dict[str, object],
    tasks: Sequence[str] = ("w.stores",),
    *,
    name: str = "agent",
    k: int = 1,
    concurrency: int | None = None,
    extra_tasks: str = "",
) -> Path:
    """Write ``tasks.yaml`` (the world-930 test tasks plus ``extra_tasks``) and ``exp.yaml``
    (arm ``a0`` on the reference platform's a0 profile with ``agent``) into ``directory``;
    returns the experiment file."""
    directory.mkdir(parents=True, exist_ok=True)
    text = (DATA / "tasks_w930.yaml").read_text(encoding="utf-8") + extra_tasks
    (directory / "tasks.yaml").write_text(text, encoding="utf-8")
    lines = [
        f"name: {name}",
        f"world: {{dir: {json.dumps(str(world))}}}",
        f"tasks: {{builtin: false, files: [tasks.yaml], tasks: {json.dumps(list(tasks))}}}",
        f"k: {k}",
        *([f"concurrency: {concurrency}"] if concurrency is not None else []),
        "arms:",
        "  - name: a0",
        "    target: {kind: reference, profile: a0}",
        f"    agent: {json.dumps(agent)}",
    ]
    exp = directory / "exp.yaml"
    exp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return exp
