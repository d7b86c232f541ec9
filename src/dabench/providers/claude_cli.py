"""The ``claude`` CLI (Claude Code) as a self-contained agent: it runs its own tool loop
against the target's MCP server and reports a provider-neutral :class:`ClaudeCliResult`.

dabench runs ``claude -p --output-format stream-json --verbose`` with ``--mcp-config`` (a
temporary file holding the given config) and ``--strict-mcp-config`` so only that server is
used, plus ``--model``, ``--allowedTools``, ``--max-turns`` and ``--system-prompt`` /
``--append-system-prompt`` when given. The prompt goes in on stdin. The NDJSON events are
parsed: ``system`` (init: session id, model), ``assistant`` (text and ``tool_use`` blocks),
``user`` (``tool_result`` blocks) and the final ``result`` (text, ``usage``,
``total_cost_usd``, ``num_turns``, ``subtype``, ``is_error``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from dabench.errors import UserInputError
from dabench.journal.records import TokenUsage
from dabench.providers.base import ProviderError
from dabench.providers.pricing import CostSource, PriceOverrides, PriceTable, resolve_cost
from dabench.providers.usage import anthropic_usage
from dabench.sandbox import SealedRun, run_sealed
from dabench.secretfile import write_private

MAX_TURNS_SUBTYPE = "error_max_turns"
"""The ``result`` subtype when the CLI ran out of turns: an agent outcome, not a harness error."""

_TRANSIENT = re.compile(
    r"\b(408|429|5\d\d)\b|overloaded|rate.?limit|timed?.?out|timeout|econnreset|"
    r"connection (error|refused|reset)|temporarily unavailable",
    re.IGNORECASE,
)


class ClaudeCliToolCall(BaseModel):
    """One tool call the CLI made, paired with its result."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    is_error: bool = False
    has_result: bool = False
    """False when the stream ended before a ``tool_result`` for this call arrived."""


class ClaudeCliResult(BaseModel):
    """What one ``claude -p`` run produced, in provider-neutral form."""

    text: str = ""
    """The final answer (the ``result`` event's text, else the last assistant text)."""
    tool_calls: list[ClaudeCliToolCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_source: CostSource = "none"
    model: str = ""
    session_id: str = ""
    num_turns: int = 0
    subtype: str = ""
    """The ``result`` event's subtype (``success``, ``error_max_turns``...)."""
    is_error: bool = False
    duration_ms: float = 0.0
    exit_code: int = 0
    stderr: str = ""
    """The last 2,000 characters of the CLI's stderr."""
    events: int = 0
    """How many stream-json events were parsed."""
    mcp_servers: dict[str, str] = Field(default_factory=dict)
    """MCP server name -> status from the ``init`` event (``connected``, ``failed``...)."""


def find_claude(executable: str = "claude") -> str | None:
    """The path of the ``claude`` executable on PATH, or ``None`` when it is not installed."""
    return shutil.which(executable)


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the CLI gives MCP tool ``tool`` of server ``server`` (for ``allowed_tools``)."""
    return f"mcp__{server}__{tool}"


BUILTIN_TOOLS = (
    "Agent", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep", "KillShell", "LS",
    "ListMcpResourcesTool", "MultiEdit", "NotebookEdit", "NotebookRead", "Read",
    "ReadMcpResourceTool", "Skill", "SlashCommand", "Task", "TodoWrite", "WebFetch",
    "WebSearch", "Write",
)  # fmt: skip
"""The CLI's built-in tools (file, shell, web, sub-agents): denied when they are disabled."""


def build_command(
    executable: str,
    *,
    mcp_config_path: Path,
    model: str | None = None,
    allowed_tools: Sequence[str] = (),
    max_turns: int | None = None,
    system_prompt: str | None = None,
    append_system_prompt: bool = False,
    extra_args: Sequence[str] = (),
    disable_builtin_tools: bool = False,
    tools_flag: bool = True,
) -> list[str]:
    """The argv of one headless run (the prompt itself is written to stdin).
    ``disable_builtin_tools`` leaves only the MCP config's tools: ``--tools ""`` (no built-in
    tool at all; omitted when ``tools_flag`` is false, for CLIs without the option) and
    ``--disallowedTools`` naming every built-in tool."""
    argv = [
        executable,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        str(mcp_config_path),
        "--strict-mcp-config",
    ]
    if model:
        argv += ["--model", model]
    if disable_builtin_tools:
        if tools_flag:
            argv += ["--tools", ""]
        argv += ["--disallowedTools", ",".join(BUILTIN_TOOLS)]
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    if max_turns is not None:
        argv += ["--max-turns", str(max_turns)]
    if system_prompt:
        flag = "--append-system-prompt" if append_system_prompt else "--system-prompt"
        argv += [flag, system_prompt]
    argv += list(extra_args)
    return argv


class _StreamState:
    """Accumulates stream-json events into a :class:`ClaudeCliResult`."""

    def __init__(self) -> None:
        self.result = ClaudeCliResult()
        self.calls: dict[str, ClaudeCliToolCall] = {}
        self.last_text = ""
        self.final: dict[str, Any] | None = None

    def feed(self, event: dict[str, Any]) -> None:
        self.result.events += 1
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.result.session_id = str(event.get("session_id") or "")
            self.result.model = str(event.get("model") or "")
            for server in event.get("mcp_servers") or []:
                if isinstance(server, dict) and server.get("name"):
                    self.result.mcp_servers[str(server["name"])] = str(server.get("status") or "")
        elif kind == "assistant":
            self._assistant(event.get("message") or {})
        elif kind == "user":
            self._user(event.get("message") or {})
        elif kind == "result":
            self.final = event

    def _assistant(self, message: dict[str, Any]) -> None:
        if message.get("model") and not self.result.model:
            self.result.model = str(message["model"])
        texts = []
        for block in _blocks(message):
            if block.get("type") == "text":
                texts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                arguments = block.get("input")
                call = ClaudeCliToolCall(
                    id=str(block.get("id") or ""),
                    name=str(block.get("name") or ""),
                    arguments=arguments if isinstance(arguments, dict) else {},
                )
                self.calls[call.id] = call
                self.result.tool_calls.append(call)
        if texts:
            self.last_text = "".join(texts)

    def _user(self, message: dict[str, Any]) -> None:
        for block in _blocks(message):
            if block.get("type") != "tool_result":
                continue
            call = self.calls.get(str(block.get("tool_use_id") or ""))
            if call is None:
                continue
            call.result = _content_text(block.get("content"))
            call.is_error = bool(block.get("is_error"))
            call.has_result = True


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text") or "") for b in content if isinstance(b, dict) and "text" in b
        )
    return "" if content is None else json.dumps(content)


def parse_stream_json(
    lines: Iterable[str], *, prices: PriceOverrides | PriceTable = None
) -> tuple[ClaudeCliResult, dict[str, Any] | None]:
    """Parse NDJSON ``lines`` into a result and the raw final ``result`` event (if any).

    Lines that are blank or not JSON objects are skipped (the CLI may print warnings).
    """
    state = _StreamState()
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        try:
            event = json.loads(stripped)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            state.feed(event)
    result = state.result
    final = state.final
    result.text = state.last_text
    if final is not None:
        if isinstance(final.get("result"), str):
            result.text = final["result"]
        result.subtype = str(final.get("subtype") or "")
        result.is_error = bool(final.get("is_error")) or result.subtype.startswith("error")
        result.num_turns = int(final.get("num_turns") or 0)
        result.duration_ms = float(final.get("duration_ms") or 0.0)
        result.session_id = str(final.get("session_id") or result.session_id)
        result.usage = anthropic_usage(final.get("usage") or {})
        reported = final.get("total_cost_usd")
        result.cost_usd, result.cost_source = resolve_cost(
            float(reported) if isinstance(reported, int | float) else None,
            "anthropic",
            result.model,
            result.usage,
            prices,
        )
    return result, final


async def run_claude_cli(
    prompt: str,
    *,
    mcp_config: Mapping[str, Any],
    model: str | None = None,
    allowed_tools: Sequence[str] = (),
    max_turns: int | None = None,
    system_prompt: str | None = None,
    timeout: float = 600.0,
    append_system_prompt: bool = False,
    executable: str = "claude",
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    prices: PriceOverrides | PriceTable = None,
    cwd: Path | None = None,
    inherit_environment: bool = True,
    disable_builtin_tools: bool = False,
    tools_flag: bool = True,
    sealed: SealedRun | None = None,
) -> ClaudeCliResult:
    """Run one headless ``claude`` episode against the MCP servers in ``mcp_config``.

    ``mcp_config`` is the CLI's config object (``{"mcpServers": {name: {...}}}``). The CLI
    runs in ``cwd`` (default: the current directory) with the harness's environment plus
    ``env``, or with exactly ``env`` when ``inherit_environment`` is false (a sealed agent).
    Returns the result, including a run that stopped at ``max_turns`` (``is_error`` set,
    ``subtype == "error_max_turns"``). Raises :class:`UserInputError` when the CLI is not
    installed and :class:`ProviderError` for a timeout (retryable), an MCP server of
    ``mcp_config`` that the ``init`` event reports as not connected (retryable), a non-zero
    exit without a result, or an error result (retryable when it looks transient: 429, 5xx,
    overloaded). With ``sealed``, the CLI runs in its sandbox (its MCP config is written into
    its working directory, the only place it can read it from).
    """
    path = find_claude(executable)
    if path is None:
        raise UserInputError(
            f"the claude CLI ({executable!r}) is not on PATH; install Claude Code or use "
            "another agent kind"
        )
    with tempfile.TemporaryDirectory(prefix="dabench-claude-") as tmp:
        config_path = Path(tmp) / "mcp.json"
        if sealed is not None:
            config_path = sealed.workdir / ".mcp-config.json"
        write_private(config_path, json.dumps(dict(mcp_config)).encode("utf-8"))
        seen_path = config_path if sealed is None else sealed.inside / config_path.name
        argv = build_command(
            path,
            mcp_config_path=seen_path,
            model=model,
            allowed_tools=allowed_tools,
            max_turns=max_turns,
            system_prompt=system_prompt,
            append_system_prompt=append_system_prompt,
            extra_args=extra_args,
            disable_builtin_tools=disable_builtin_tools,
            tools_flag=tools_flag,
        )
        full_env = {**os.environ, **(env or {})} if inherit_environment else dict(env or {})
        if sealed is not None:
            argv, cwd = sealed.argv(argv), sealed.workdir
        stdout, stderr, code = await _run(argv, prompt, timeout, full_env, cwd)
    result, final = parse_stream_json(stdout.splitlines(), prices=prices)
    result.exit_code = code
    result.stderr = stderr[-2000:]
    servers = mcp_config.get("mcpServers") or {}
    unavailable = {
        name: status
        for name, status in result.mcp_servers.items()
        if name in servers and status != "connected"
    }
    if unavailable:
        # The target was unreachable: whatever the model did next says nothing about it.
        raise ProviderError(
            f"claude-cli: MCP server not connected: {json.dumps(unavailable, sort_keys=True)}",
            retryable=True,
        )
    if final is None:
        detail = (stderr.strip() or "no result event")[-500:]
        raise ProviderError(
            f"claude-cli: exited with code {code} without a result: {detail}",
            retryable=bool(_TRANSIENT.search(detail)),
        )
    if result.is_error and result.subtype != MAX_TURNS_SUBTYPE:
        detail = f"{result.subtype}: {result.text or json.dumps(final.get('errors'))}"[:500]
        raise ProviderError(
            f"claude-cli: error result: {detail}", retryable=bool(_TRANSIENT.search(detail))
        )
    return result


async def _run(
    argv: list[str], prompt: str, timeout: float, env: dict[str, str], cwd: Path | None
) -> tuple[str, str, int]:
    result = await run_sealed(argv, cwd=cwd or Path.cwd(), env=env, stdin=prompt, timeout_s=timeout)
    if result.timed_out:
        raise ProviderError(
            f"claude-cli: no result within {timeout:g} s (process group killed)", retryable=True
        )
    return result.stdout, result.stderr, result.returncode
