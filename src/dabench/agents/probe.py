"""The probe agent: a deterministic retrieval probe of whether a platform surfaces trap facts.

It answers like the oracle, except on knowledge-trap tasks (``trap_classes`` and
``grading.naive_sql``): there it answers with the gold SQL only when the platform surfaced
the deciding fact of every trap class of the task during the episode, and with the naive SQL
(what a careful analyst computes from the schema alone) otherwise. A fact is surfaced when

1. the ``search`` role with the task prompt returns a result whose id is one of the fact's locations
   (``knowledge:<id>`` -> ``page:<id>``, ``glossary:<id>``, ``catalog:<ds>`` -> ``dataset:<ds>``,
   ``catalog:<ds>.<col>`` -> ``column:<ds>.<col>``) and the ``fetch`` role delivers it, or
2. the ``describe`` role on a dataset named by a ``catalog:`` location returns the catalog
   description of that dataset or column (the platform's enrichment), as a JSON string or
   within one (dbt-mcp's node details append the unit to a column's description).

On a target that plays the ``metric`` role, a trap task with a metric
(:data:`~dabench.tasks.metric_parity.METRIC_QUERIES`) is answered through the metric, which
applies the deciding fact by construction (the semantic layer's definition is the surfaced
fact); trap tasks without a metric are probed as above.

It reads the trap fact locations and catalog descriptions from the experiment's world
(``AgentContext.world_dir``, or the ``world_dir`` config option): a built world's planted
traps, or an external world's hidden rules (``rules.yaml``). Tools are found through the
target's role map, as for the oracle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.agents.oracle import OracleAgent, OracleAgentConfig, RoleTools, role_tools
from dabench.errors import UserInputError
from dabench.targets.base import TargetSession
from dabench.targets.registry import Kind
from dabench.tasks.engines import Dialect, sql_in_dialect, table_name_in, truth_sql_for
from dabench.tasks.metric_parity import METRIC_QUERIES
from dabench.tasks.model import Task
from dabench.world.model import Trap
from dabench.world.source import HiddenRule, OpenWorld, open_world

TRAP_TAG = "world-trap:"
_SEARCH_PREFIX = {"knowledge": "page", "glossary": "glossary"}


class ProbeAgentConfig(BaseModel):
    """``agent: {kind: probe}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["probe"] = "probe"
    world_dir: str | None = None
    """The built world to read traps from; defaults to the experiment's world."""
    row_limit: int = 1000


def search_id(location: str) -> str:
    """The platform search/fetch id of a trap fact location."""
    kind, _, ref = location.partition(":")
    if kind == "catalog":
        return ("column:" if ref.count(".") == 2 else "dataset:") + ref
    return f"{_SEARCH_PREFIX.get(kind, kind)}:{ref}"


def fact_locations(task: Task, traps: list[Trap | HiddenRule]) -> dict[str, list[str]]:
    """Per trap class of ``task``: the locations of its deciding fact (the traps the task is
    tagged with, else every world trap of that class)."""
    tagged = {t[len(TRAP_TAG) :] for t in task.tags if t.startswith(TRAP_TAG)}
    out: dict[str, list[str]] = {}
    for cls in task.trap_classes:
        of_class = [t for t in traps if t.trap_class == cls]
        chosen = [t for t in of_class if t.id in tagged] or of_class
        out[cls] = list(dict.fromkeys(loc for t in chosen for loc in t.fact_locations))
    return out


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def _json_strings(text: str) -> set[str]:
    try:
        return _strings(json.loads(text))
    except json.JSONDecodeError:
        return set()


class ProbeAgent(OracleAgent):
    """The oracle, but trap tasks get the gold answer only when the platform surfaced the fact."""

    kind = "probe"

    def __init__(self, config: ProbeAgentConfig, world: OpenWorld) -> None:
        super().__init__(OracleAgentConfig(row_limit=config.row_limit))
        self.probe_config = config
        self.world = world

    def describe(self) -> dict[str, Any]:
        """Kind, settings and the world read."""
        return {**self.probe_config.model_dump(), "world_hash": self.world.world_hash}

    async def _answer(
        self, request: EpisodeRequest, transcript: EpisodeTranscript, turn: int
    ) -> str:
        task = request.task
        g = task.grading
        if not (task.trap_classes and g.naive_sql and g.truth_sql):
            return await super()._answer(request, transcript, turn)
        recorder = ToolRecorder(transcript)
        session = await recorder.open(request.target)
        tools = await role_tools(recorder, session, self.kind)
        query = METRIC_QUERIES.get(task.id)
        if query is not None and tools.has("metric"):
            return await self._answer_metric(recorder, session, tools, query, task, turn)
        locations = fact_locations(task, self.world.traps)
        surfaced = await self._searched(recorder, session, tools, task, locations, turn)
        dialect = tools.sql_dialect(request.target.sql_dialect)
        surfaced |= await self._described(recorder, session, tools, locations, dialect, turn)
        if surfaced >= set(locations):
            sql = truth_sql_for(g, dialect) or g.truth_sql
        else:
            sql = sql_in_dialect(g.naive_sql, dialect) if g.naive_sql else g.naive_sql
        return await self._answer_sql(recorder, session, tools, sql, task, turn)

    async def _searched(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        tools: RoleTools,
        task: Task,
        locations: dict[str, list[str]],
        turn: int,
    ) -> set[str]:
        """Trap classes whose fact a search for the prompt returned and fetch delivered."""
        if not tools.has("search"):
            return set()
        call = await tools.call(
            recorder, session, "search", {"query": task.messages[-1][:2000]}, turn
        )
        if call.is_error:
            return set()
        body = json.loads(call.result) if call.result.startswith("{") else {}
        found = [r.get("id") for r in body.get("results", []) if isinstance(r, dict)]
        surfaced: set[str] = set()
        fetched: dict[str, bool] = {}
        for cls, locs in locations.items():
            for rid in (search_id(loc) for loc in locs):
                if rid not in found or not tools.has("fetch"):
                    continue
                if rid not in fetched:
                    got = await tools.call(recorder, session, "fetch", {"id": rid}, turn)
                    fetched[rid] = not got.is_error
                if fetched[rid]:
                    surfaced.add(cls)
                    break
        return surfaced

    async def _described(
        self,
        recorder: ToolRecorder,
        session: TargetSession,
        tools: RoleTools,
        locations: dict[str, list[str]],
        dialect: Dialect,
        turn: int,
    ) -> set[str]:
        """Trap classes whose catalog description the ``describe`` role returned (a table
        named as the target's ``dialect`` names it)."""
        if not tools.has("describe"):
            return set()
        results: dict[str, set[str]] = {}
        surfaced: set[str] = set()
        for cls, locs in locations.items():
            for loc in locs:
                kind, _, ref = loc.partition(":")
                if kind != "catalog":
                    continue
                parts = ref.split(".")
                dataset_id, column = ".".join(parts[:2]), ".".join(parts[2:])
                if dataset_id not in results:
                    named = {"table": table_name_in(dataset_id, dialect)}
                    call = await tools.call(recorder, session, "describe", named, turn)
                    results[dataset_id] = set() if call.is_error else _json_strings(call.result)
                ds = self.world.dataset(dataset_id)
                col = next((c for c in ds.columns if c.name == column), None)
                text = col.description if col is not None else ds.description
                if text and any(text in found for found in results[dataset_id]):
                    surfaced.add(cls)
                    break
        return surfaced


def _factory(config: ProbeAgentConfig, context: AgentContext) -> Agent:
    world_dir = Path(config.world_dir) if config.world_dir else context.world_dir
    if world_dir is None:
        raise UserInputError("agent probe: no world to read traps from; set agent.world_dir")
    if not world_dir.is_absolute():
        world_dir = context.experiment_dir / world_dir
    return ProbeAgent(config, open_world(world_dir))


KIND: Kind[Agent, AgentContext] = Kind("probe", ProbeAgentConfig, _factory)
"""The ``probe`` agent kind (named in the agent registry)."""
