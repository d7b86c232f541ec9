"""The ``claude-cli`` agent: Claude Code (``claude -p``) runs its own MCP tool loop against the
arm's reference platform; dabench journals what it did.

Per episode the agent opens a platform session (``platform_info``, as the LLM agent does) and
hands the CLI an MCP config that points at the platform's ``/mcp`` endpoint with the headers
``Authorization: Bearer <identity key>`` and ``X-DPS-Session: <dps_ handle>``; the platform
reads the session from that header, so the handle never appears in the prompt. The CLI's
stream-json result is mapped into the episode: every tool call (MCP prefix stripped, arguments,
result, error), the final answer, token usage and the CLI's ``total_cost_usd`` as provider cost.
The tool-call budget is stated in the system prompt (:func:`~dabench.agents.llm.budget_note`)
and becomes ``--max-turns`` (budget + 1 by default); a run that stops there, or
that used more tool calls than the budget, ends as ``budget_exhausted``. Later user turns of a
multi-turn task continue the CLI conversation with ``--resume <session id>``.

The CLI is sealed from the answer key (:mod:`dabench.sandbox`): it runs in a bubblewrap sandbox
(one per episode: an empty working directory that is also its ``HOME``, so ``--resume`` finds
the conversation; the platform and, through the sandbox's proxy, ``sandbox.allow_hosts``
(default ``api.anthropic.com:443``) are all it reaches; its installation must be listed in
``sandbox.ro_binds``), with its built-in tools disabled (``--tools ""``, ``--disallowedTools``
naming every file, shell, web and sub-agent tool, ``--strict-mcp-config``) so that only the
platform's MCP tools remain, and with an environment built from nothing but ``PATH`` (without
dabench's directories), the locale, the variables named in ``inherit_env`` and ``env``.

Retryable CLI failures (timeouts, 429/5xx, an MCP server that did not connect) are retried per
``retries`` with a fresh platform session; only the successful attempt's session belongs to the
episode (and to its audit check).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.llm import (
    DEFAULT_SYSTEM_PROMPT,
    FINAL_ANSWER_PROTOCOL,
    episode_system_prompt,
)
from dabench.agents.platform_access import reference_of
from dabench.errors import HarnessError, UserInputError
from dabench.fields import Seconds
from dabench.isolation import SandboxSettings
from dabench.journal.records import EpisodeStatus, Message, TargetRound, ToolCall
from dabench.providers import ProviderError, RetryPolicy, with_retries
from dabench.providers.base import ToolSpec
from dabench.providers.claude_cli import (
    MAX_TURNS_SUBTYPE,
    ClaudeCliResult,
    find_claude,
    mcp_tool_name,
    run_claude_cli,
)
from dabench.sandbox import Seal, SealedRun, protected_paths, sealed_env
from dabench.targets.base import TargetSession, error_code_of
from dabench.targets.reference_episode import ReferenceEpisode
from dabench.targets.registry import Kind
from dabench.tasks.model import Task

SESSION_HEADER = "X-DPS-Session"
SESSION_NOTE = (
    "Every platform tool has a `session_id` argument: pass an empty string; your connection "
    "already carries the session. Do not call `platform_info`."
)
"""Appended to the system prompt: the platform takes a non-empty ``session_id`` argument over
the header, so the model must leave it empty."""


CLAUDE_ENV = (
    "HOME", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "XDG_CONFIG_HOME",
)  # fmt: skip
"""The harness variables the CLI gets by default: its home (login and settings; sealed, its home
is its working directory), credentials, endpoints and proxies."""

ANTHROPIC_HOST = "api.anthropic.com:443"
"""The model API a sealed CLI reaches by default (through the sandbox's proxy)."""


class ClaudeCliAgentConfig(BaseModel):
    """``agent: {kind: claude-cli, model: claude-sonnet-4-5, max_turns: 20}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["claude-cli"] = "claude-cli"
    model: str | None = None
    """Passed to ``--model`` (an alias such as ``sonnet`` or a full model name); ``None``: the
    CLI's default. A ``anthropic:`` prefix is dropped."""
    max_turns: int | None = Field(default=None, ge=1)
    """``--max-turns``; default: the tool-call budget + 1."""
    budget: int | None = Field(default=None, ge=1)
    """Tool-call budget; default: the task's."""
    system_prompt: str | None = None
    """Appended to the CLI's own system prompt (default: the LLM agent's analyst prompt); the
    session note and the final-answer protocol are always appended."""
    executable: str = "claude"
    timeout_s: Seconds = 600.0
    """Wall-clock limit of one CLI run (a timeout is retryable)."""
    server_name: str = Field(default="dabench", pattern=r"^[A-Za-z0-9_-]+$")
    """The MCP server's name in the CLI config (tools appear as ``mcp__<name>__<tool>``)."""
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables of the CLI process."""
    inherit_env: list[str] = Field(default_factory=lambda: list(CLAUDE_ENV))
    """Harness environment variables passed through by name (the CLI's home and credentials;
    nothing else of the harness's environment reaches it)."""
    tools_flag: bool = True
    """Pass ``--tools ""`` (disables every built-in tool); turn off for CLI versions without
    the option (the ``--disallowedTools`` deny list still applies)."""
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    sandbox: SandboxSettings = Field(
        default_factory=lambda: SandboxSettings(allow_hosts=[ANTHROPIC_HOST])
    )
    """The CLI's installation (``ro_binds``: e.g. its Node and its package) and the model API
    it may reach (``allow_hosts``) inside the sandbox."""


def mcp_config_for(
    url: str, api_key: str, session: str, server_name: str = "dabench"
) -> dict[str, Any]:
    """The CLI's ``--mcp-config`` object: one streamable-HTTP server with the key and the
    session handle as headers."""
    return {
        "mcpServers": {
            server_name: {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer {api_key}", SESSION_HEADER: session},
            }
        }
    }


class ClaudeCliAgent(Agent):
    """Runs ``claude -p`` against the arm's reference platform."""

    kind = "claude-cli"
    provider = "claude-cli"
    uses_model = True

    def __init__(self, config: ClaudeCliAgentConfig, context: AgentContext | None = None) -> None:
        self.config = config
        context = context or AgentContext()
        self.roots = protected_paths(context.run_dir, context.world_dir)
        self.seal = Seal(
            config.sandbox,
            protected_paths(context.run_dir, context.world_dir, context.experiment_dir),
            "agent kind 'claude-cli'",
            unsealed=context.unsealed,
        )
        self.seal.check()
        model = config.model
        self.model = model.split(":", 1)[1] if model and model.startswith("anthropic:") else model
        self.system = (
            f"{config.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{SESSION_NOTE}\n\n"
            f"{FINAL_ANSWER_PROTOCOL}"
        )

    def describe(self) -> dict[str, Any]:
        """Kind, model and CLI settings (never the environment's values)."""
        return {
            "kind": self.kind,
            "provider": self.provider,
            "model": self.model,
            "max_turns": self.config.max_turns,
            "budget": self.config.budget,
            "system_prompt": self.system,
            "executable": self.config.executable,
            "timeout_s": self.config.timeout_s,
            "extra_args": self.config.extra_args,
            "env": sorted(self.config.env),
            "inherit_env": self.config.inherit_env,
            "sealed": True,
            "retries": self.config.retries.model_dump(),
            **self.seal.describe(),
        }

    def budget_for(self, task: Task) -> int:
        """The configured budget, else the task's."""
        return self.config.budget or task.budget

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """One CLI run per user turn (later turns resume the CLI session)."""
        target, identity = reference_of(request.target, self.kind)
        transcript.messages.append(
            Message(role="system", content=episode_system_prompt(self.system, request.budget))
        )
        session: TargetSession | None = None
        cli_session = ""
        async with self.seal.open([target.base_url]) as sealed:
            for turn, prompt in enumerate(request.task.messages):
                transcript.messages.append(Message(role="user", content=prompt))
                session, result = await self._turn(
                    target, identity, session, prompt, cli_session, request.budget, sealed
                )
                if session.handle not in transcript.sessions:
                    transcript.sessions.append(session.handle)
                cli_session = result.session_id
                self._record(result, turn, session.handle, transcript)
                over = len(transcript.tool_calls) > request.budget
                if result.subtype == MAX_TURNS_SUBTYPE or over:
                    return "budget_exhausted"
        return "completed" if transcript.answers and transcript.answers[-1].strip() else "no_answer"

    async def _turn(
        self,
        target: ReferenceEpisode,
        identity: str,
        session: TargetSession | None,
        prompt: str,
        cli_session: str,
        budget: int,
        sealed: SealedRun,
    ) -> tuple[TargetSession, ClaudeCliResult]:
        """Run the CLI for one user turn (retried with a fresh session on retryable errors
        of a first turn; a resumed conversation keeps its session)."""
        current = session

        async def once() -> tuple[TargetSession, ClaudeCliResult]:
            nonlocal current
            if current is None or not cli_session:
                current = await target.open_session(identity)
            tools = await current.tools()
            extra = list(self.config.extra_args)
            if cli_session:
                extra += ["--resume", cli_session]
            box = {"HOME": str(sealed.inside), **sealed.env()} if sealed.box else {}
            env = sealed_env(
                sealed.inside,
                self.roots,
                inherit=self.config.inherit_env,
                extra={**box, **self.config.env},
                where="agent kind 'claude-cli'",
            )
            result = await self._cli(
                prompt, target, identity, current, tools, extra, budget, sealed, env
            )
            return current, result

        try:
            return await with_retries(once, self.config.retries)
        except ProviderError as exc:
            kind = "retries exhausted" if exc.retryable else "non-retryable"
            raise HarnessError(f"claude-cli failed ({kind}): {exc}") from exc

    async def _cli(
        self,
        prompt: str,
        target: ReferenceEpisode,
        identity: str,
        current: TargetSession,
        tools: list[ToolSpec],
        extra: list[str],
        budget: int,
        sealed: SealedRun,
        env: dict[str, str],
    ) -> ClaudeCliResult:
        """One sealed CLI run in ``sealed``'s working directory."""
        return await run_claude_cli(
            prompt,
            mcp_config=mcp_config_for(
                target.base_url + "/mcp",
                await target.key(identity),
                current.handle,
                self.config.server_name,
            ),
            model=self.model,
            allowed_tools=[mcp_tool_name(self.config.server_name, t.name) for t in tools],
            max_turns=self.config.max_turns or budget + 1,
            system_prompt=episode_system_prompt(self.system, budget),
            append_system_prompt=True,
            timeout=self.config.timeout_s,
            executable=self.config.executable,
            extra_args=extra,
            env=env,
            cwd=sealed.workdir,
            inherit_environment=False,
            sealed=sealed if sealed.box else None,
            disable_builtin_tools=True,
            tools_flag=self.config.tools_flag,
        )

    def _record(
        self, result: ClaudeCliResult, turn: int, handle: str, transcript: EpisodeTranscript
    ) -> None:
        prefix = f"mcp__{self.config.server_name}__"
        if result.tool_calls:
            transcript.messages.append(
                Message(
                    role="assistant",
                    tool_calls=[
                        {"id": c.id, "name": c.name, "arguments": c.arguments}
                        for c in result.tool_calls
                    ],
                )
            )
        for call in result.tool_calls:
            ours = call.name.startswith(prefix)
            transcript.tool_calls.append(
                ToolCall(
                    index=len(transcript.tool_calls),
                    turn=turn,
                    # Only calls to the platform are expected in its audit log.
                    session=handle if ours and call.has_result else "",
                    name=call.name.removeprefix(prefix),
                    arguments=call.arguments,
                    result=call.result,
                    is_error=call.is_error,
                    error_code=(error_code_of(call.result) or "TOOL_ERROR")
                    if call.is_error
                    else None,
                )
            )
            transcript.messages.append(
                Message(role="tool", content=call.result, tool_call_id=call.id)
            )
        transcript.messages.append(Message(role="assistant", content=result.text))
        transcript.answers.append(result.text)
        transcript.add_usage(result.usage, result.cost_usd, result.cost_source)
        transcript.rounds.append(
            TargetRound(
                turn=turn,
                conversation_id=result.session_id or None,
                status=result.subtype or None,
                model_usage={
                    "model": result.model,
                    "num_turns": result.num_turns,
                    "total_cost_usd": result.cost_usd,
                },
                wall_ms=round(result.duration_ms, 3),
            )
        )


def _factory(config: ClaudeCliAgentConfig, context: AgentContext) -> Agent:
    if find_claude(config.executable) is None:
        raise UserInputError(
            f"agent kind 'claude-cli': the claude CLI ({config.executable!r}) is not on PATH; "
            "install Claude Code or use another agent kind"
        )
    return ClaudeCliAgent(config, context)


KIND: Kind[Agent, AgentContext] = Kind("claude-cli", ClaudeCliAgentConfig, _factory)
"""The ``claude-cli`` agent kind (named in the agent registry)."""
