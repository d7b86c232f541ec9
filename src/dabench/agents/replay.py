"""The replay agent: plays a recorded run's episodes again, without a model.

For each episode it looks up the recorded episode with the same task and attempt (on the same
arm, or on ``arm`` when given), opens one fresh target session per recorded session, replays
every tool call that reached the target with its recorded arguments, and gives the recorded
answers. The recorded messages, tokens and cost are kept, so a run can be re-graded and
re-reported; the tool results are the target's answers now (so they also check that the
target still behaves the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.agents.registry import register_agent
from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import Episode, EpisodeStatus, episode_key
from dabench.journal.store import Journal
from dabench.targets.base import TargetSession


class ReplayAgentConfig(BaseModel):
    """``agent: {kind: replay, run: runs/2026-...-smoke}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["replay"] = "replay"
    run: str
    """The recorded run directory (relative to the experiment file)."""
    arm: str | None = None
    """The recorded arm to replay (default: the arm with the same name)."""
    call_tools: bool = True
    """Replay the tool calls against the target (off: copy the recorded calls)."""


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
        for call in rec.tool_calls:
            if not self.config.call_tools:
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
            await recorder.call(session, call.name, call.arguments, call.turn)
        transcript.answers.extend(rec.answers)
        return rec.status


def _factory(config: ReplayAgentConfig, context: AgentContext) -> Agent:
    path = Path(config.run)
    if not path.is_absolute():
        path = context.experiment_dir / path
    return ReplayAgent(config, path)


register_agent("replay", ReplayAgentConfig, _factory)
