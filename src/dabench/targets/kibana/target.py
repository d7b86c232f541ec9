"""Elastic Agent Builder (Kibana) as a target: the agent loop runs inside Kibana.

The harness only converses: a :class:`KibanaSession` is one conversation, each
:meth:`KibanaSession.converse` one round (``conversation_id`` carried to later turns). The
target has no tool interface of its own and no audit API; the ``kibana`` agent records the
tool call steps Kibana reports, so efficiency comes from the harness trace.

At start the target reads ``GET /api/status`` (the version goes into the manifest) and, when
configured, registers tools (``esql``/``index_search``) and an agent with instructions, so
an experiment can define its own agent; re-runs update them in place, and arms of one run that
share a Kibana register each id once (:mod:`dabench.targets.kibana.setup`).
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.errors import HarnessError
from dabench.fields import Seconds
from dabench.providers.base import ToolSpec
from dabench.roles import KIBANA_ROLES, ToolRoles
from dabench.targets.base import Target, TargetContext, TargetSession, ToolOutcome
from dabench.targets.kibana.client import API, KibanaClient
from dabench.targets.kibana.retrying import KibanaRetryPolicy
from dabench.targets.kibana.setup import KibanaSetup
from dabench.targets.kibana.wire import ConverseRound
from dabench.targets.mcp import expand_env
from dabench.targets.registry import Kind

DEFAULT_AGENT_ID = "elastic-ai-agent"


class KibanaToolDefinition(BaseModel):
    """A tool registered through ``POST /api/agent_builder/tools``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: Literal["esql", "index_search"]
    description: str
    tags: list[str] = Field(default_factory=list)
    configuration: dict[str, Any]
    """``{query, params}`` for ``esql``, ``{pattern}`` for ``index_search``."""


class KibanaAgentDefinition(BaseModel):
    """An agent registered through ``POST /api/agent_builder/agents``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    description: str = ""
    instructions: str = ""
    tool_ids: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)


class KibanaTargetConfig(BaseModel):
    """``target: {kind: kibana, url: "${KIBANA_URL}", api_key: "${KIBANA_API_KEY}"}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["kibana"] = "kibana"
    url: str = "${KIBANA_URL}"
    """Kibana base URL; ``${VAR}`` is expanded from the environment at start."""
    api_key: str = "${KIBANA_API_KEY}"
    """An Elasticsearch API key (base64 ``id:key``) sent as ``Authorization: ApiKey ...``."""
    space: str | None = None
    """A Kibana space: requests go to ``/s/<space>/api/...``."""
    agent_id: str | None = None
    """The agent to converse with (default: ``agent.id`` when an agent is defined, else
    ``elastic-ai-agent``)."""
    tools: list[KibanaToolDefinition] = Field(default_factory=list)
    agent: KibanaAgentDefinition | None = None
    request_timeout_s: Seconds = 600.0
    connect_timeout_s: Seconds = 10.0
    verify_tls: bool = True
    check_status: bool = True
    """Read ``GET /api/status`` at start (a failure means the target did not start)."""
    retry: KibanaRetryPolicy = Field(default_factory=KibanaRetryPolicy)
    """Retries of requests that are safe to repeat (429/503, connection failures; see
    :mod:`dabench.targets.kibana.retrying`): ``{max_attempts: 4, base_delay: 1, max_delay: 30}``."""
    roles: ToolRoles | None = None
    """Role bindings over the built-in map :data:`~dabench.roles.KIBANA_ROLES` (e.g. a custom
    ``index_search`` tool as ``search``); a role given as ``null`` is not played."""


class KibanaSession(TargetSession):
    """One conversation with an Agent Builder agent."""

    def __init__(self, target: KibanaTarget, identity: str) -> None:
        self.target = target
        self.identity = identity
        self.handle = "kbn-" + secrets.token_hex(8)
        """Harness-minted until the first round returns the ``conversation_id``."""
        self.conversation_id: str | None = None
        self.rounds = 0
        """Rounds answered in this conversation so far."""

    async def tools(self) -> list[ToolSpec]:
        """No tools: Kibana runs the agent loop and calls its own tools."""
        return []

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Not supported: tools run inside Kibana (use the ``kibana`` agent)."""
        raise HarnessError(
            f"{self.target.label}: the kibana target runs its own agent loop; "
            f"it cannot call {name!r} for another agent kind (use agent kind 'kibana')"
        )

    async def converse(
        self, message: str, *, connector_id: str | None, stream: bool = True
    ) -> ConverseRound:
        """Send one user message (a new round); later calls continue the conversation."""
        payload: dict[str, Any] = {"input": message, "agent_id": self.target.agent_id}
        if connector_id:
            payload["connector_id"] = connector_id
        if self.conversation_id:
            payload["conversation_id"] = self.conversation_id
        client = self.target.client
        rnd = await (client.converse_stream(payload) if stream else client.converse(payload))
        if (
            self.conversation_id
            and rnd.conversation_id
            and rnd.conversation_id != self.conversation_id
        ):
            # Current Kibana main silently opens a new conversation for an unknown id: the
            # later turn would be answered without the earlier ones.
            raise HarnessError(
                f"{self.target.label}: a later turn was answered in conversation "
                f"{rnd.conversation_id!r}, not {self.conversation_id!r} (Kibana lost the "
                "conversation; the turn would be answered without the earlier turns)"
            )
        if self.conversation_id and self.rounds:
            await self._check_history(rnd)
        if rnd.conversation_id:
            self.conversation_id = rnd.conversation_id
            self.handle = rnd.conversation_id
        self.rounds += 1
        return rnd

    async def _check_history(self, rnd: ConverseRound) -> None:
        """A later turn must continue the conversation: Kibana main may lose it and re-create
        it under the same id, answering without the earlier turns. Caught by the stream's
        creation event, or by the conversation's history (``GET .../conversations/{id}``)
        holding fewer rounds than were answered."""
        lost = (
            f"{self.target.label}: Kibana lost conversation {self.conversation_id!r} and "
            "re-created it under the same id"
        )
        if rnd.created:
            raise HarnessError(
                f"{lost} (the stream announced a new conversation on turn {self.rounds + 1}); "
                "the turn was answered without the earlier turns"
            )
        body = await self.target.client.request(
            "GET", f"{API}/conversations/{self.conversation_id}", ok404=True
        )
        rounds = body.get("rounds") if isinstance(body, dict) else None  # 404: cannot tell
        if isinstance(rounds, list) and len(rounds) != self.rounds + 1:
            raise HarnessError(
                f"{lost}: its history holds {len(rounds)} round(s) after turn "
                f"{self.rounds + 1}; the turn was answered without the earlier turns"
            )


class KibanaTarget(Target):
    """A Kibana with Agent Builder, shared by an arm's episodes."""

    kind = "kibana"
    efficiency_source = "harness"

    def __init__(self, config: KibanaTargetConfig, context: TargetContext) -> None:
        self.config = config
        self.context = context
        self._client: KibanaClient | None = None
        self.version: str | None = None
        self.setup: dict[str, str] = {}
        self.url = expand_env(config.url)
        """The resolved URL (a missing environment variable is bad input, reported early)."""
        self._api_key = expand_env(config.api_key)

    @property
    def agent_id(self) -> str:
        """The agent conversed with."""
        if self.config.agent_id:
            return self.config.agent_id
        return self.config.agent.id if self.config.agent else DEFAULT_AGENT_ID

    @property
    def tool_roles(self) -> ToolRoles:
        """Agent Builder's built-in tools by role, with the configured overrides."""
        return KIBANA_ROLES.merged(self.config.roles)

    @property
    def label(self) -> str:
        """``kibana:<agent id>``."""
        return f"kibana:{self.agent_id}"

    @property
    def client(self) -> KibanaClient:
        """The HTTP client (after :meth:`start`)."""
        if self._client is None:
            raise HarnessError(f"{self.label}: target not started")
        return self._client

    async def start(self) -> None:
        """Resolve URL and key, check ``/api/status``, register tools and the agent."""
        if self._client is not None:
            return
        client = KibanaClient(
            self.url,
            self._api_key,
            space=self.config.space,
            timeout_s=self.config.request_timeout_s,
            connect_timeout_s=self.config.connect_timeout_s,
            verify_tls=self.config.verify_tls,
            retry=self.config.retry,
        )
        try:
            if self.config.check_status:
                status = await client.status()
                version = status.get("version")
                if isinstance(version, dict):
                    self.version = str(version.get("number") or "") or None
            await self._register(client)
        except BaseException:
            await client.aclose()
            raise
        self._client = client

    async def _register(self, client: KibanaClient) -> None:
        setup = KibanaSetup.of(self.context.shared)
        owner = f"{self.label} ({self.context.work_dir.name})"
        for tool in self.config.tools:
            create = tool.model_dump()
            update = {k: v for k, v in create.items() if k not in ("id", "type")}
            self.setup[f"tool:{tool.id}"] = await setup.register(
                client, "tools", tool.id, create, update, owner=owner
            )
        agent = self.config.agent
        if agent is not None:
            configuration = {
                "instructions": agent.instructions,
                "tools": [{"tool_ids": agent.tool_ids}] if agent.tool_ids else [],
            }
            body = {
                "name": agent.name,
                "description": agent.description,
                "labels": agent.labels,
                "configuration": configuration,
            }
            self.setup[f"agent:{agent.id}"] = await setup.register(
                client, "agents", agent.id, {"id": agent.id, **body}, body, owner=owner
            )

    async def stop(self) -> None:
        """Close the HTTP client (conversations stay in Kibana)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def describe(self) -> dict[str, Any]:
        """Kind, URL, space, agent, Kibana version and what the set-up registered."""
        return {
            "kind": self.kind,
            "label": self.label,
            "url": self.url,
            "space": self.config.space,
            "agent_id": self.agent_id,
            "kibana_version": self.version,
            "setup": dict(self.setup),
            "tools": [t.id for t in self.config.tools],
            "efficiency_source": self.efficiency_source,
            "retry": self.config.retry.model_dump(),
        }

    async def open_session(self, identity: str = "default") -> KibanaSession:
        """A new conversation (created by Kibana on the first round)."""
        return KibanaSession(self, identity)


def _factory(config: KibanaTargetConfig, context: TargetContext) -> Target:
    return KibanaTarget(config, context)


KIND: Kind[Target, TargetContext] = Kind("kibana", KibanaTargetConfig, _factory)
"""The ``kibana`` target kind (named in the target registry)."""
