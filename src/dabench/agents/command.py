"""The ``command`` agent: any agent program, run once per user turn, talks to the platform
itself.

Per episode the agent opens a platform session (``platform_info``) and runs ``argv`` for each
user turn, sealed (:mod:`dabench.sandbox`: a bubblewrap sandbox that reaches only the platform,
an empty working directory, an environment built from nothing that names no dabench path).
The program learns the prompt, the platform's MCP URL, the headers that authenticate it and
carry the session, and the budget from templated arguments and ``DABENCH_*`` environment
variables; it connects to the platform with any MCP client and prints its answer on stdout. The
key it gets was minted for the episode alone; the episode's tool calls are read from the
platform's audit log for every call of that key, in any session (the harness never sees them go
by), so they can be neither misreported nor hidden in a second session.
"""

from __future__ import annotations

import json
import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.platform_access import reference_of
from dabench.errors import HarnessError
from dabench.fields import Seconds
from dabench.isolation import SandboxSettings
from dabench.journal.records import EpisodeStatus, Message, ToolCall
from dabench.sandbox import Seal, protected_paths, run_sealed, sealed_env, tail
from dabench.targets.audit import episode_calls
from dabench.targets.reference import SESSION_ARG
from dabench.targets.reference_episode import ReferenceEpisode
from dabench.targets.registry import Kind
from dabench.tasks.model import Task

SESSION_HEADER = "X-DPS-Session"
"""The header that carries the platform session (the ``session_id`` argument may be empty)."""

PLACEHOLDERS = {
    "prompt": "DABENCH_PROMPT",
    "mcp_url": "DABENCH_MCP_URL",
    "headers_json": "DABENCH_MCP_HEADERS",
    "session_id": "DABENCH_SESSION_ID",
    "mcp_config_json": "DABENCH_MCP_CONFIG",
    "budget": "DABENCH_BUDGET",
    "turn": "DABENCH_TURN",
    "turns": "DABENCH_TURNS",
    "history_json": "DABENCH_HISTORY",
}
"""Argument placeholder -> the environment variable with the same value."""

SECRET_PLACEHOLDERS = ("headers_json", "mcp_config_json")
"""Placeholders whose value holds the episode's bearer key: allowed in ``env`` only, never in
``argv`` (any process on the machine can read another's arguments)."""


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


class CommandAgentConfig(BaseModel):
    """``agent: {kind: command, argv: [python, my_agent.py, "{prompt}"], label: my-agent}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["command"] = "command"
    argv: list[str] = Field(min_length=1)
    """The program and its arguments; ``{prompt}``, ``{mcp_url}``, ``{headers_json}``,
    ``{session_id}``, ``{mcp_config_json}``, ``{budget}``, ``{turn}``, ``{turns}``,
    ``{history_json}`` are replaced (``{{``/``}}`` for literal braces)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables (templated like ``argv``)."""
    inherit_env: list[str] = Field(default_factory=list)
    """Harness environment variables passed through by name (API keys; ``HOME``)."""
    stdin: Literal["none", "prompt"] = "none"
    """``prompt``: the turn's prompt is also written to the program's stdin."""
    timeout_s: Seconds = 600.0
    """Wall-clock limit of one run (exceeded: the episode ends as ``timeout``)."""
    budget: int | None = Field(default=None, ge=1)
    """Tool-call budget; default: the task's. More calls than this in the audit log end the
    episode as ``budget_exhausted``."""
    label: str | None = None
    """What the program is (e.g. ``langgraph:gpt-4o``); recorded as the episodes' model."""
    provider: str | None = None
    """Provider-concurrency key (default ``command``)."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """The program's runtime (``ro_binds``) and model hosts (``allow_hosts``) in the sandbox."""

    @model_validator(mode="after")
    def _known_placeholders(self) -> CommandAgentConfig:
        for text in [*self.argv, *self.env.values()]:
            try:
                unknown = _fields(text) - set(PLACEHOLDERS)
            except ValueError as exc:
                raise ValueError(f"{text!r}: {exc} (write literal braces as {{{{ }}}})") from exc
            if unknown:
                raise ValueError(
                    f"{text!r}: unknown placeholder(s) {sorted(unknown)}; known: "
                    f"{sorted(PLACEHOLDERS)}"
                )
        for text in self.argv:
            secret = sorted(_fields(text) & set(SECRET_PLACEHOLDERS))
            if secret:
                names = ", ".join(PLACEHOLDERS[p] for p in secret)
                raise ValueError(
                    f"{text!r}: {{{secret[0]}}} holds the bearer key and may not go into argv "
                    f"(visible to every process): read {names} from the environment"
                )
        return self


def mcp_config_for(
    url: str, headers: dict[str, str], server_name: str = "dabench"
) -> dict[str, Any]:
    """An ``mcpServers`` config (the shape Claude Code and many frameworks read) for one
    streamable-HTTP server."""
    return {"mcpServers": {server_name: {"type": "http", "url": url, "headers": headers}}}


NO_SESSION = "(no session)"
"""The session of a journaled call the platform ran in no session (refused before one)."""


def audit_tool_calls(
    rows: list[dict[str, Any]], sessions: list[str], turn: int, start: int, seen: set[int]
) -> list[ToolCall]:
    """The episode's audited calls not in ``seen`` (row ids), as journal records of ``turn``
    (results are not in the audit log: only their size): every tool call of the episode's
    keys, in any session, and every session the program opened itself (``sessions``: the
    ones the harness opened)."""
    out: list[ToolCall] = []
    for row in episode_calls(rows, sessions):
        row_id = int(row.get("id", -1))
        if row_id in seen:
            continue
        seen.add(row_id)
        session = row.get("session_id") or row.get("presented_session_id") or NO_SESSION
        params = {k: v for k, v in (row.get("parameters") or {}).items() if k != SESSION_ARG}
        out.append(
            ToolCall(
                index=start + len(out),
                turn=turn,
                session=str(session),
                name=str(row.get("tool_name")),
                arguments=params,
                result=f"(not recorded: {row.get('response_chars', 0)} characters, from the "
                "platform's audit log)",
                is_error=not row.get("success", True),
                error_code=row.get("error_code"),
                latency_ms=float(row.get("duration_ms") or 0.0),
                started_at=row.get("timestamp"),
            )
        )
    return out


class CommandAgent(Agent):
    """Runs an agent program per user turn against the arm's reference platform."""

    kind = "command"
    uses_model = True

    def __init__(self, config: CommandAgentConfig, context: AgentContext) -> None:
        self.config = config
        self.model = config.label
        self.provider = config.provider or "command"
        self.roots = protected_paths(context.run_dir, context.world_dir)
        self.seal = Seal(
            config.sandbox,
            protected_paths(context.run_dir, context.world_dir, context.experiment_dir),
            "agent kind 'command'",
            unsealed=context.unsealed,
        )
        self.seal.check()

    def describe(self) -> dict[str, Any]:
        """Kind, argv template and settings (environment variable names, never values)."""
        data = self.config.model_dump()
        data["env"] = sorted(self.config.env)
        return {**data, **self.seal.describe()}

    def budget_for(self, task: Task) -> int:
        """The configured budget, else the task's."""
        return self.config.budget or task.budget

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """One sealed program run per user turn, all on one platform session opened with the
        episode's own key. Every call made with that key, in any session the program opens,
        is read back from the audit log and counts against the budget."""
        target, identity = reference_of(request.target, self.kind)
        session = await target.open_session(identity)
        transcript.sessions.append(session.handle)
        history: list[dict[str, str]] = []
        # Rows of earlier steps of the episode (a protocol) are not this run's calls.
        before = await target.read_audit(transcript.sessions, 0)
        seen = {int(r.get("id", -1)) for r in before.rows}
        first = len(transcript.tool_calls)
        turns = request.task.messages
        answer = ""
        for turn, prompt in enumerate(turns):
            transcript.messages.append(Message(role="user", content=prompt))
            key = await target.key(identity)
            values = self._values(target, key, session.handle, prompt, request, turn, history)
            async with self.seal.open([target.base_url]) as sealed:
                env = sealed_env(
                    sealed.inside,
                    self.roots,
                    inherit=self.config.inherit_env,
                    extra={
                        **sealed.env(),
                        **{var: values[key] for key, var in PLACEHOLDERS.items()},
                        **{k: v.format_map(values) for k, v in self.config.env.items()},
                    },
                    where="agent kind 'command'",
                )
                result = await run_sealed(
                    sealed.argv([a.format_map(values) for a in self.config.argv]),
                    cwd=sealed.workdir,
                    env=env,
                    stdin=prompt if self.config.stdin == "prompt" else None,
                    timeout_s=self.config.timeout_s,
                )
                metered = sealed.metered()
                if metered is not None:
                    transcript.add_usage(*metered)
            check = await target.read_audit(transcript.sessions, 0)
            transcript.tool_calls += audit_tool_calls(
                check.rows, transcript.sessions, turn, len(transcript.tool_calls), seen
            )
            if result.timed_out:
                return "timeout"
            if result.returncode != 0:
                raise HarnessError(
                    f"agent program exited with code {result.returncode}: "
                    f"{tail(result.stderr) or '(no stderr)'}"
                )
            answer = result.stdout.strip()
            transcript.messages.append(Message(role="assistant", content=answer))
            transcript.answers.append(answer)
            history += [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": answer},
            ]
            if len(transcript.tool_calls) - first > request.budget:
                return "budget_exhausted"
        return "completed" if answer else "no_answer"

    @staticmethod
    def _values(
        target: ReferenceEpisode,
        key: str,
        handle: str,
        prompt: str,
        request: EpisodeRequest,
        turn: int,
        history: list[dict[str, str]],
    ) -> dict[str, str]:
        url = target.base_url + "/mcp"
        headers = {"Authorization": f"Bearer {key}", SESSION_HEADER: handle}
        return {
            "prompt": prompt,
            "mcp_url": url,
            "headers_json": json.dumps(headers),
            "session_id": handle,
            "mcp_config_json": json.dumps(mcp_config_for(url, headers)),
            "budget": str(request.budget),
            "turn": str(turn + 1),
            "turns": str(len(request.task.messages)),
            "history_json": json.dumps(history),
        }


def _factory(config: CommandAgentConfig, context: AgentContext) -> Agent:
    return CommandAgent(config, context)


KIND: Kind[Agent, AgentContext] = Kind("command", CommandAgentConfig, _factory)
"""The ``command`` agent kind (named in the agent registry)."""
