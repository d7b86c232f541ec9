"""The S5 protocol runner: one lifecycle protocol attempt on a reference-platform arm.

A protocol attempt resets the platform state (``POST /api/v1/admin/state/reset``), then plays
its steps in order:

- ``episode``: a fresh session as the step's identity (teacher / learner) through the arm's
  agent. The LLM agent gets the step's prompt as a one-turn task on a target bound to that
  identity; the oracle plays the step itself (:class:`ProtocolOracle`). A graded step's answer
  is checked with the deterministic graders against the step's truth (evaluated from the world).
- ``review``: a scripted ``apply_knowledge`` call as the reviewer identity: the newest matching
  pending insight is applied to the step's sink (a description or a knowledge page).
- ``verify``: admin API reads (insights, changesets, the effective dataset description or
  knowledge page) compared with the step's ``expect`` (see :func:`check_expectations`).

Everything the protocol did lands in ONE episode: the tool calls of all its sessions, one
:class:`~dabench.journal.records.StepRecord` per step, and the audit check over all sessions.
Protocol attempts on one target run one at a time (``protocol_slot``: the runner takes it
before the concurrency slots and the episode time limit).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast
from typing import Protocol as TypingProtocol

from dabench.agents.base import EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.agents.oracle import ABSTAIN, render_answer, role_tools
from dabench.errors import HarnessError
from dabench.grading import check_entity, check_numeric, check_refusal
from dabench.journal.records import EpisodeStatus, GradeCheck, Message, StepRecord
from dabench.journal.records import ToolCall as ToolCallRecord
from dabench.providers.base import ToolSpec
from dabench.runner.protocols import ProtocolRequest, register_protocol_runner
from dabench.stats.lifecycle import LIFECYCLE_METRICS as LIFECYCLE_METRICS
from dabench.stats.lifecycle import lifecycle_metrics as lifecycle_metrics
from dabench.targets.base import DelegatingTarget, Target, TargetSession
from dabench.tasks.engines import truth_sql_for
from dabench.tasks.loader import TaskSet
from dabench.tasks.lock import compute_lock
from dabench.tasks.model import Grading, Protocol, ProtocolStep, Task, Truth

ADMIN = "/api/v1/admin"
# LIFECYCLE_METRICS and lifecycle_metrics live in dabench.stats.lifecycle (re-exported here).
_EVIDENCE_FETCHES = 3


class AdminTarget(TypingProtocol):
    """What a protocol needs from a target: the admin API and the world it serves."""

    async def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call the admin API."""


def _admin_target(target: Target) -> AdminTarget:
    if not callable(getattr(target, "admin", None)):
        raise HarnessError(
            f"{target.label}: S5 protocols need a target with an admin API (the reference "
            "platform); this target has none"
        )
    return cast(AdminTarget, target)


def _world_dir(target: Target) -> Path:
    context = getattr(target, "context", None)
    world = getattr(context, "world_dir", None)
    if world is None:
        raise HarnessError(f"{target.label}: no world directory to evaluate protocol truths")
    return Path(world)


# -- identity-bound target (for the LLM agent) --------------------------------------------------


class IdentityTarget(DelegatingTarget):
    """A view of a target whose sessions always open as one identity."""

    def __init__(self, inner: Target, identity: str) -> None:
        super().__init__(inner)
        self.identity = identity

    async def open_session(self, identity: str = "default") -> TargetSession:
        """A session as the bound identity, whatever the agent asks for."""
        return await self.inner.open_session(self.identity)


# -- evidence and answers ------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9_.\-']+", text.lower()))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def tool_text(result: str, echoed: Iterable[str] = ()) -> str:
    """All the words a tool result shows (JSON string values flattened), normalised; strings
    equal to one of ``echoed`` (the call's own arguments, e.g. a search query) are left out."""
    skip = set(echoed)
    try:
        body = json.loads(result)
    except (json.JSONDecodeError, TypeError):
        return _normalise(result)
    return _normalise(" ".join(v for v in _strings(body) if v not in skip))


def fact_found(fact: str, calls: Iterable[ToolCallRecord]) -> bool:
    """Whether any successful tool result shows the whole fact (case and spacing ignored);
    a result that merely echoes the call's arguments does not count."""
    wanted = _normalise(fact)
    return any(
        wanted in tool_text(c.result, [v for v in c.arguments.values() if isinstance(v, str)])
        for c in calls
        if not c.is_error
    )


def grade_step_answer(
    answer: str, grading: Grading, truth: Truth | None
) -> tuple[bool | None, str]:
    """Grade a step's answer with the deterministic graders; ``None`` when not gradable."""
    check: GradeCheck
    if grading.kind == "numeric":
        if truth is None or truth.value is None:
            return None, "no numeric truth for this step"
        check = check_numeric(
            answer,
            truth.value,
            tolerance_abs=grading.tolerance_abs,
            tolerance_rel=grading.tolerance_rel,
            naive=truth.naive_value,
        )
    elif grading.kind == "entity":
        check = check_entity(
            answer, grading.entities, aliases=grading.aliases, wrong_aliases=grading.wrong_aliases
        )
    elif grading.kind in ("refusal", "abstain"):
        check = check_refusal(answer, "refusal" if grading.kind == "refusal" else "abstain")
    else:
        return None, f"grading kind {grading.kind!r} is not supported in protocol steps"
    return check.passed, check.reason


def step_fact(protocol: Protocol, step: ProtocolStep) -> str:
    """The fact a step teaches or needs."""
    return step.fact or protocol.fact


# -- the oracle's play ---------------------------------------------------------------------------


class ProtocolOracle:
    """Plays protocol episode steps correctly through the platform's own tools.

    Teach: ``memory_capture`` with the fact (a correction passes ``supersedes`` with the live
    insight it replaces). Answer steps: search for the fact and fetch the top results (or list
    one's own memories); only when a tool result shows the fact does it answer the gold (running
    the step's gold SQL through the target's ``sql`` role), otherwise it says it does not know. So a
    protocol passes with the oracle only when the platform really kept, promoted and served
    the fact: the verification machinery is tested end to end.
    """

    def __init__(self, recorder: ToolRecorder) -> None:
        self.recorder = recorder

    async def _tools(self, session: TargetSession) -> dict[str, ToolSpec]:
        return {t.name: t for t in await session.tools()}

    async def teach(self, session: TargetSession, protocol: Protocol, step: ProtocolStep) -> str:
        """Capture the fact as a memory (a correction supersedes the live insight)."""
        tools = await self._tools(session)
        if "memory_capture" not in tools:
            return "I cannot keep notes on this platform, so I will not remember that."
        args: dict[str, Any] = {
            "content": step_fact(protocol, step),
            "type": "correction" if step.supersedes else "fact",
            "related_ids": list(protocol.related_ids),
        }
        if step.supersedes and "memory_manage" in tools:
            old = await self._live_insight(session, protocol)
            if old is not None:
                args["supersedes"] = old
        call = await self.recorder.call(session, "memory_capture", args)
        if call.is_error:
            return f"I could not save that note: {call.result[:200]}"
        return "Noted: I saved this for later sessions."

    async def _live_insight(self, session: TargetSession, protocol: Protocol) -> str | None:
        call = await self.recorder.call(session, "memory_manage", {"action": "list"})
        if call.is_error:
            return None
        try:
            insights = json.loads(call.result).get("insights", [])
        except (json.JSONDecodeError, AttributeError):
            return None
        related = set(protocol.related_ids)
        live = [
            i
            for i in insights
            if i.get("status") in ("pending", "approved")
            and (not related or related & set(i.get("related_ids") or []))
        ]
        return str(live[-1]["id"]) if live else None

    async def answer(
        self, session: TargetSession, protocol: Protocol, step: ProtocolStep
    ) -> tuple[str, bool]:
        """Look for the fact; answer the gold when found, else abstain. Returns the answer and
        whether the fact was found."""
        tools = await self._tools(session)
        roles = await role_tools(self.recorder, session, "oracle")
        fact = step_fact(protocol, step)
        start = len(self.recorder.transcript.tool_calls)
        if roles.has("search"):
            call = await roles.call(
                self.recorder, session, "search", {"query": fact[:300], "limit": 5}, 0
            )
            ids: list[str] = []
            if not call.is_error:
                try:
                    ids = [r["id"] for r in json.loads(call.result).get("results", [])]
                except (json.JSONDecodeError, AttributeError, KeyError, TypeError):
                    ids = []
            for rid in ids[:_EVIDENCE_FETCHES]:
                if roles.has("fetch"):
                    await roles.call(self.recorder, session, "fetch", {"id": rid}, 0)
        elif "memory_manage" in tools:
            await self.recorder.call(session, "memory_manage", {"action": "list"})
        found = fact_found(fact, self.recorder.transcript.tool_calls[start:])
        grading = step.grading
        if not found or grading is None or grading.kind in ("abstain", "refusal"):
            return ABSTAIN, found
        if grading.truth_sql and roles.has("sql"):
            sql = truth_sql_for(grading, roles.sql_dialect("duckdb")) or grading.truth_sql
            sql_args = {"sql": sql, "limit": 1000}
            call = await roles.call(self.recorder, session, "sql", sql_args, 0)
            table = roles.read(call)
            return render_answer(table.columns, table.rows, grading.format, None), found
        if grading.entities:
            return grading.entities[0], found
        return ABSTAIN, found


# -- verification --------------------------------------------------------------------------------


def _as_list(value: object) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _contains(text: str, needle: object) -> bool:
    return needle is None or _normalise(str(needle)) in _normalise(text)


async def read_state(target: AdminTarget, expect: Mapping[str, object]) -> dict[str, Any]:
    """The admin API's view of what ``expect`` talks about."""
    state: dict[str, Any] = {}
    insights = await target.admin("GET", f"{ADMIN}/knowledge/insights")
    state["insights"] = [
        {k: i.get(k) for k in ("id", "status", "captured_by", "content", "supersedes")}
        for i in insights.get("insights", [])
    ]
    if "changesets" in expect:
        body = await target.admin("GET", f"{ADMIN}/knowledge/changesets")
        state["changesets"] = [
            {k: c.get(k) for k in ("id", "insight_id", "sink", "target", "rolled_back")}
            for c in body.get("changesets", [])
        ]
    for spec in _as_list(expect.get("dataset")):
        ds_id = str(spec.get("id", ""))
        body = await target.admin("GET", f"{ADMIN}/catalog/datasets/{ds_id}")
        state.setdefault("datasets", {})[ds_id] = {
            "description": body["dataset"]["description"],
            "promoted_targets": body.get("promoted_targets", []),
        }
    if "page" in expect:
        listing = await target.admin("GET", f"{ADMIN}/knowledge/pages")
        known = {p["id"] for p in listing.get("pages", [])}
        for spec in _as_list(expect.get("page")):
            pid = str(spec.get("id", ""))
            if pid in known:
                body = await target.admin("GET", f"{ADMIN}/knowledge/pages/{pid}")
                state.setdefault("pages", {})[pid] = {
                    "body": body["page"]["body"],
                    "promoted": body.get("promoted", False),
                }
            else:
                state.setdefault("pages", {})[pid] = None
    return state


def _check_insights(spec: dict[str, Any], state: dict[str, Any]) -> str | None:
    rows = [
        i
        for i in state["insights"]
        if ("status" not in spec or i["status"] == spec["status"])
        and ("captured_by" not in spec or i["captured_by"] == spec["captured_by"])
        and _contains(i["content"] or "", spec.get("contains"))
    ]
    want = int(spec.get("count", 1))
    if len(rows) != want:
        what = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "count")
        return f"expected {want} insight(s) with {what}, found {len(rows)}"
    return None


def _check_changesets(spec: dict[str, Any], state: dict[str, Any]) -> str | None:
    rows = [
        c
        for c in state.get("changesets", [])
        if ("sink" not in spec or c["sink"] == spec["sink"])
        and ("target" not in spec or c["target"] == spec["target"])
        and (not spec.get("active", True) or not c["rolled_back"])
    ]
    want = int(spec.get("count", 1))
    if len(rows) != want:
        what = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "count")
        return f"expected {want} changeset(s) with {what}, found {len(rows)}"
    return None


def _check_dataset(spec: dict[str, Any], state: dict[str, Any]) -> str | None:
    ds_id = str(spec.get("id", ""))
    got = state.get("datasets", {}).get(ds_id)
    if got is None:
        return f"dataset {ds_id} was not read"
    if not _contains(got["description"], spec.get("contains")):
        return f"dataset {ds_id}: description does not contain {spec.get('contains')!r}"
    if "promoted" in spec and bool(got["promoted_targets"]) != bool(spec["promoted"]):
        promoted = bool(got["promoted_targets"])
        return f"dataset {ds_id}: promoted is {promoted}, expected {spec['promoted']}"
    return None


def _check_page(spec: dict[str, Any], state: dict[str, Any]) -> str | None:
    pid = str(spec.get("id", ""))
    got = state.get("pages", {}).get(pid)
    if got is None:
        return f"knowledge page {pid} does not exist"
    if not _contains(got["body"], spec.get("contains")):
        return f"knowledge page {pid} does not contain {spec.get('contains')!r}"
    if "promoted" in spec and bool(got["promoted"]) != bool(spec["promoted"]):
        return f"knowledge page {pid}: promoted is {got['promoted']}, expected {spec['promoted']}"
    return None


_CHECKS = {
    "insights": _check_insights,
    "changesets": _check_changesets,
    "dataset": _check_dataset,
    "page": _check_page,
}


def check_expectations(expect: Mapping[str, object], state: dict[str, Any]) -> list[str]:
    """The failures of ``expect`` against an admin-API ``state`` (empty: all hold).

    ``expect`` keys (each a mapping or a list of mappings):

    - ``insights``: ``{status, captured_by, contains, count}`` - exactly ``count`` (default 1)
      insights match the filters (``contains``: a case-insensitive phrase of the content).
    - ``changesets``: ``{sink, target, active, count}`` (``active`` default true: not rolled back).
    - ``dataset``: ``{id, contains, promoted}`` - the effective description.
    - ``page``: ``{id, contains, promoted}`` - the effective knowledge page exists.
    """
    failures: list[str] = []
    for key, value in expect.items():
        check = _CHECKS.get(key)
        if check is None:
            failures.append(f"unknown expectation {key!r} (expected one of {sorted(_CHECKS)})")
            continue
        specs = _as_list(value)
        if not specs:
            failures.append(f"expectation {key!r} must be a mapping or a list of mappings")
        for spec in specs:
            problem = check(spec, state)
            if problem:
                failures.append(problem)
    return failures


# -- playing a protocol --------------------------------------------------------------------------


def protocol_truths(protocol: Protocol, world_dir: Path) -> dict[str, Truth]:
    """The truths of a protocol's graded steps (``<protocol id>/<step name>``) from the world."""
    lock = compute_lock(TaskSet(protocols=[protocol]), world_dir)
    return lock.truths


def _step_task(protocol: Protocol, step: ProtocolStep) -> Task:
    return Task(
        id=f"{protocol.id}.{step.name}",
        suite=protocol.suite,
        category="lifecycle",
        difficulty=protocol.difficulty,
        prompt=step.prompt,
        budget=step.budget,
        grading=step.grading or Grading(kind="judge"),
    )


class ProtocolPlay:
    """One protocol attempt: plays every step into the transcript and the step records."""

    def __init__(self, request: ProtocolRequest, transcript: EpisodeTranscript) -> None:
        self.request = request
        self.protocol = request.protocol
        self.transcript = transcript
        self.recorder = ToolRecorder(transcript)
        self.admin = _admin_target(request.target)
        self.truths: dict[str, Truth] = {}

    async def run(self) -> tuple[EpisodeStatus, list[StepRecord]]:
        """Reset the platform state and play the steps; stop at a failed episode status."""
        if any(s.grading is not None for s in self.protocol.steps):
            world = _world_dir(self.request.target)
            self.truths = await asyncio.to_thread(protocol_truths, self.protocol, world)
        await self.admin.admin("POST", f"{ADMIN}/state/reset")
        records: list[StepRecord] = []
        for step in self.protocol.steps:
            start = len(self.transcript.tool_calls)
            status, record = await self._step(step)
            record.tool_calls = list(self.transcript.tool_calls[start:])
            records.append(record)
            if status != "completed":
                return status, records
        return "completed", records

    async def _step(self, step: ProtocolStep) -> tuple[EpisodeStatus, StepRecord]:
        if step.kind == "episode":
            return await self._episode(step)
        if step.kind == "review":
            return "completed", await self._review(step)
        return "completed", await self._verify(step)

    async def _episode(self, step: ProtocolStep) -> tuple[EpisodeStatus, StepRecord]:
        record = StepRecord(name=step.name, kind=step.kind, identity=step.identity)
        agent = self.request.agent
        answers_before = len(self.transcript.answers)
        status: EpisodeStatus = "completed"
        if agent.kind == "oracle":
            await self._oracle_episode(step)
        else:
            task = _step_task(self.protocol, step)
            req = EpisodeRequest(
                run_id=self.request.run_id,
                arm=self.request.arm,
                task=task,
                attempt=self.request.attempt,
                target=IdentityTarget(self.request.target, step.identity),
                budget=agent.budget_for(task),
            )
            status = await agent.run(req, self.transcript)
        new_answers = self.transcript.answers[answers_before:]
        record.answer = new_answers[-1] if new_answers else None
        if status != "completed":
            record.passed = False if step.grading is not None else None
            record.detail = f"the agent ended the step with {status}"
            return status, record
        if step.grading is not None:
            truth = self.truths.get(f"{self.protocol.id}/{step.name}")
            record.passed, record.detail = grade_step_answer(
                record.answer or "", step.grading, truth
            )
        else:
            record.detail = "ungraded episode (verified by the next verify step)"
        return status, record

    async def _oracle_episode(self, step: ProtocolStep) -> None:
        oracle = ProtocolOracle(self.recorder)
        session = await self.recorder.open(self.request.target, step.identity)
        self.transcript.messages.append(Message(role="user", content=step.prompt or ""))
        if step.grading is None:
            text = await oracle.teach(session, self.protocol, step)
        else:
            text, _ = await oracle.answer(session, self.protocol, step)
            text = f"FINAL ANSWER: {text}"
        self.transcript.messages.append(Message(role="assistant", content=text))
        self.transcript.answers.append(text)

    async def _review(self, step: ProtocolStep) -> StepRecord:
        record = StepRecord(name=step.name, kind=step.kind, identity=step.identity)
        session = await self.recorder.open(self.request.target, step.identity)
        listing = await self.recorder.call(session, "apply_knowledge", {"action": "list"})
        if listing.is_error:
            record.passed, record.detail = False, f"apply_knowledge list failed: {listing.result}"
            return record
        pending = json.loads(listing.result).get("pending", [])
        action = step.action
        wanted_by = action.get("captured_by")
        phrase = action.get("contains")
        candidates = [
            i
            for i in pending
            if (wanted_by is None or i.get("captured_by") == wanted_by)
            and _contains(str(i.get("content", "")), phrase)
        ]
        if not candidates:
            record.passed = False
            record.detail = "no pending insight to promote (nothing was captured)"
            return record
        insight = candidates[-1]
        args: dict[str, Any] = {
            "action": "apply",
            "insight_id": insight["id"],
            "sink": action["sink"],
            "target": action["target"],
        }
        if action.get("title"):
            args["title"] = action["title"]
        call = await self.recorder.call(session, "apply_knowledge", args)
        record.passed = not call.is_error
        record.detail = (
            f"applied insight {insight['id']} to {action['sink']} {action['target']}"
            if record.passed
            else f"apply_knowledge failed: {call.result[:300]}"
        )
        return record

    async def _verify(self, step: ProtocolStep) -> StepRecord:
        record = StepRecord(name=step.name, kind=step.kind, identity="admin")
        state = await read_state(self.admin, step.expect)
        failures = check_expectations(step.expect, state)
        record.state = state
        record.passed = not failures
        record.detail = (
            "; ".join(failures) if failures else "the admin API shows the expected state"
        )
        return record


async def run_protocol(
    request: ProtocolRequest, transcript: EpisodeTranscript
) -> tuple[EpisodeStatus, list[StepRecord]]:
    """The registered protocol runner: one attempt (the runner serialises protocol attempts
    per target with :func:`dabench.runner.protocols.protocol_slot`)."""
    return await ProtocolPlay(request, transcript).run()


register_protocol_runner(run_protocol)
