"""The replay agent: plays a recorded run's episodes again, without a model.

For each episode it looks up the recorded episode with the same task and attempt (on the same
arm, or on ``arm`` when given) and gives the recorded answers, messages, tokens and cost.

Modes:

- ``tools`` (default): opens one fresh target session per recorded session and replays every
  tool call that reached the target with its recorded arguments. The recorded answers are
  only valid for the recorded tool outputs, so every replayed output is compared with the
  recorded one (:func:`output_fingerprint`); when any differs the episode **diverged** and
  ends as a harness error naming the first differing call (excluded from scores, never a
  model failure).
- ``answer_only``: copies the recorded tool calls without calling the target and re-grades
  the recorded answers (for a changed grader or answer key). The run manifest's arm record
  and the report name the mode.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import Episode, EpisodeStatus, ToolCall, episode_key
from dabench.journal.store import Journal
from dabench.targets.base import TargetSession
from dabench.targets.registry import Kind


class ReplayAgentConfig(BaseModel):
    """``agent: {kind: replay, run: runs/2026-...-smoke}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["replay"] = "replay"
    run: str
    """The recorded run directory (relative to the experiment file)."""
    arm: str | None = None
    """The recorded arm to replay (default: the arm with the same name)."""
    mode: Literal["tools", "answer_only"] = "tools"
    """``tools``: replay the tool calls on the target and mark an episode whose outputs
    differ from the recording as diverged (a harness error); ``answer_only``: copy the
    recorded calls and re-grade the recorded answers without calling the target."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_call_tools(cls, data: Any) -> Any:
        """``call_tools: false`` (the former switch) means ``mode: answer_only``."""
        if isinstance(data, dict) and "call_tools" in data:
            data = dict(data)
            call_tools = data.pop("call_tools")
            if not isinstance(call_tools, bool):
                raise ValueError(
                    "call_tools must be true or false (prefer mode: tools|answer_only)"
                )
            data.setdefault("mode", "tools" if call_tools else "answer_only")
        return data


def output_fingerprint(call: ToolCall) -> tuple[bool, str | None, str]:
    """What must match between a recorded and a replayed tool call: the error flag, the error
    code and the result text in canonical form (JSON re-serialised with sorted keys and no
    spaces when the text parses as JSON, else the text with trailing whitespace removed)."""
    text = call.result
    try:
        canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = text.rstrip()
    return call.is_error, call.error_code, canonical


def _describe_output(call: ToolCall) -> str:
    is_error, code, text = output_fingerprint(call)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    state = f"error {code or ''}".strip() if is_error else "ok"
    return f"{state}, {len(text):,} chars, sha256 {digest}: {text[:80]!r}"


class ReplayAgent(Agent):
    """Replays recorded episodes."""

    kind = "replay"

    def __init__(self, config: ReplayAgentConfig, run_dir: Path) -> None:
        self.config = config
        self.run_dir = run_dir
        if not (run_dir / "episodes.jsonl").exists():
            raise UserInputError(f"replay: {run_dir} has no episodes.jsonl to replay")
        self._episodes: dict[str, Episode] | None = None

    def describe(self) -> dict[str, Any]:
        """Kind and the recorded run."""
        return {**self.config.model_dump(), "run": str(self.run_dir)}

    def recorded(self, key: str) -> Episode | None:
        """The recorded episode with this key."""
        if self._episodes is None:
            self._episodes = {e.key: e for e in Journal(self.run_dir).load()}
        return self._episodes.get(key)

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """Replay the recorded episode of this task and attempt."""
        key = episode_key(self.config.arm or request.arm, request.task.id, request.attempt)
        rec = self.recorded(key)
        if rec is None:
            raise HarnessError(f"replay: no recorded episode {key!r} in {self.run_dir}")
        if rec.status == "harness_error":
            raise HarnessError(
                f"replay: the recorded episode was a harness error: {rec.harness_error}"
            )
        transcript.messages.extend(rec.messages)
        transcript.add_usage(rec.usage, rec.cost_usd, rec.cost_source)
        recorder = ToolRecorder(transcript)
        sessions: dict[str, TargetSession] = {}
        diverged: list[tuple[ToolCall, ToolCall]] = []
        for call in rec.tool_calls:
            if self.config.mode == "answer_only":
                transcript.tool_calls.append(call.model_copy(update={"session": ""}))
                continue
            if not call.session:
                recorder.refuse(
                    call.name, call.arguments, call.turn, call.error_code or "REFUSED", call.result
                )
                continue
            session = sessions.get(call.session)
            if session is None:
                session = await recorder.open(request.target)
                sessions[call.session] = session
            replayed = await recorder.call(session, call.name, call.arguments, call.turn)
            if output_fingerprint(replayed) != output_fingerprint(call):
                diverged.append((call, replayed))
        transcript.answers.extend(rec.answers)
        if diverged:
            recorded, now = diverged[0]
            raise HarnessError(
                f"replay diverged: {len(diverged)} of {len(rec.tool_calls)} tool call(s) gave "
                f"other outputs than the recording on {request.target.label}; first: call "
                f"#{recorded.index} {recorded.name} recorded [{_describe_output(recorded)}], "
                f"now [{_describe_output(now)}]. The recorded answers do not apply to this "
                "target (use mode: answer_only to re-grade recorded answers)"
            )
        return rec.status


def _factory(config: ReplayAgentConfig, context: AgentContext) -> Agent:
    path = Path(config.run)
    if not path.is_absolute():
        path = context.experiment_dir / path
    return ReplayAgent(config, path)


KIND: Kind[Agent, AgentContext] = Kind("replay", ReplayAgentConfig, _factory)
"""The ``replay`` agent kind (named in the agent registry)."""
