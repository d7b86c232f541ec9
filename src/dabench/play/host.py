"""The play host: a detached process that holds any target for the commands of one play run.

``dabench play`` runs each step (``next``, ``call``, ``answer``) as its own process. The
reference platform already outlives them (a detached server with an admin API); any other
target (an MCP server over stdio or HTTP, a semantic layer, Elastic Agent Builder) lives in
the process that started it, and an MCP session in the client that opened it. So for those
targets ``play start`` starts this host (``python -m dabench.play.host``): it builds the arm's
target from the run's manifest, starts it, and keeps the episode's view and its session open
between commands. The commands talk to it with :class:`HostTarget`, a target like any other
to the runner's episode code.

The wire: one JSON request line, one JSON reply line per TCP connection on 127.0.0.1. Every
request carries the host's token (32 random bytes, handed to the host on a pipe and kept in
the run's ``platform/keys.json``, mode 0600, as its admin key); the host compares it in
constant time. The host writes ``platform/host.json`` (its pid and port) once the target is
up, and its log to ``platform/host.log``. SIGTERM stops the target, then the host.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hmac
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import AuditCheck
from dabench.providers.base import ToolSpec
from dabench.secretfile import write_private
from dabench.targets.base import DelegatingTarget, Target, TargetSession, ToolOutcome
from dabench.targets.process import SECRET_FD_ARG, ServerProcess, pid_alive, stop_pid

HOST_FILE = "host.json"
SPEC_FILE = "host-spec.json"
HOST_LOG = "host.log"
LINE_LIMIT = 1 << 28
"""Longest request or reply line (a tool result of a few hundred MB at most)."""
READY_TIMEOUT_S = 900.0
"""A safety net for a host whose target never comes up (never a verdict: a host that dies is
reported at once)."""


class HostSpec(BaseModel):
    """``platform/host-spec.json``: the target the host builds (mode 0600: a target config
    may hold a header's secret)."""

    model_config = ConfigDict(extra="forbid")

    target: dict[str, Any]
    """The arm's target config, as in an experiment file."""
    world_dir: str
    work_dir: str
    experiment_dir: str
    """Relative paths in the config resolve against it."""


class HostAddress(BaseModel):
    """``platform/host.json``: where the host listens (written once its target is up)."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    port: int
    description: dict[str, Any] = Field(default_factory=dict)
    """The started target's :meth:`~dabench.targets.base.Target.describe` (the manifest's)."""
    efficiency_source: str = "harness"


class HostRequest(BaseModel):
    """One request to the host."""

    model_config = ConfigDict(extra="forbid")

    token: str
    op: Literal["ping", "begin", "open", "call", "end", "audit"]
    episode: str = ""
    """The episode's journal key (``begin``, ``open``, ``end``)."""
    identity: str = "default"
    session: str = ""
    tool: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    sessions: list[str] = Field(default_factory=list)
    expected_calls: int = 0
    platform_episode: str | None = None


class HostOutcome(BaseModel):
    """A tool call's outcome on the wire (:class:`~dabench.targets.base.ToolOutcome`)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    is_error: bool = False
    error_code: str | None = None
    latency_ms: float = 0.0
    started_at: datetime | None = None


class HostReply(BaseModel):
    """The host's answer: ``ok`` with the op's fields, or the error."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    error: str | None = None
    harness: bool = False
    """The error is an infrastructure failure (the target failed), not a bad request."""
    platform_episode: str | None = None
    session: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    outcome: HostOutcome | None = None
    audit: AuditCheck | None = None


def host_path(work_dir: Path) -> Path:
    """``<platform work dir>/host.json``."""
    return work_dir / HOST_FILE


# -- the host process -------------------------------------------------------------------------


@dataclass
class _Host:
    """The live state of a host: the target, each open episode's view and sessions."""

    target: Target
    token: str
    scopes: dict[str, Target] = field(default_factory=dict)
    sessions: dict[str, TargetSession] = field(default_factory=dict)

    async def handle(self, req: HostRequest) -> HostReply:
        if req.op == "ping":
            return HostReply(ok=True)
        if req.op == "begin":
            scope = await self.target.begin_episode(req.episode)
            self.scopes[req.episode] = scope
            return HostReply(ok=True, platform_episode=scope.episode_id)
        if req.op == "open":
            scope = self._scope(req.episode)
            session = await scope.open_session(req.identity)
            self.sessions[session.handle] = session
            return HostReply(ok=True, session=session.handle, tools=await session.tools())
        if req.op == "call":
            live = self.sessions.get(req.session)
            if live is None:
                raise UserInputError(f"no open session {req.session!r} on the play host")
            outcome = await live.call(req.tool, req.arguments)
            return HostReply(ok=True, outcome=HostOutcome(**dataclasses.asdict(outcome)))
        if req.op == "end":
            scope = self.scopes.pop(req.episode, self.target)
            try:
                await scope.end_episode(req.sessions)
            finally:
                for handle in req.sessions:
                    ended = self.sessions.pop(handle, None)
                    if ended is not None:
                        with contextlib.suppress(Exception):
                            await ended.close()
            return HostReply(ok=True)
        assert req.op == "audit"
        check = await self.target.read_audit(req.sessions, req.expected_calls, req.platform_episode)
        return HostReply(ok=True, audit=check)

    def _scope(self, episode: str) -> Target:
        scope = self.scopes.get(episode)
        if scope is None:
            raise UserInputError(f"no open episode {episode!r} on the play host")
        return scope

    async def serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            line = await reader.readline()
            reply = await self._reply(line)
            writer.write(reply.model_dump_json(exclude_defaults=True).encode("utf-8") + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away (or sent more than a line can hold)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _reply(self, line: bytes) -> HostReply:
        try:
            req = HostRequest.model_validate_json(line)
        except ValidationError as exc:
            return HostReply(ok=False, error=f"bad request: {exc.errors()[0]['msg']}")
        if not hmac.compare_digest(req.token.encode(), self.token.encode()):
            return HostReply(ok=False, error="bad token")
        try:
            return await self.handle(req)
        except UserInputError as exc:
            return HostReply(ok=False, error=str(exc))
        except Exception as exc:  # the target failed: the command records a harness error
            return HostReply(ok=False, harness=True, error=f"{type(exc).__name__}: {exc}")


def make_host_target(spec: HostSpec) -> Target:
    """The spec's target, built (not started)."""
    from dabench.targets.base import TargetContext
    from dabench.targets.registry import make_target

    ctx = TargetContext(
        world_dir=Path(spec.world_dir),
        work_dir=Path(spec.work_dir),
        experiment_dir=Path(spec.experiment_dir),
    )
    return make_target(spec.target, ctx, "arms[0].target")


def read_spec(work_dir: Path) -> HostSpec:
    """The host's spec (written by :func:`spawn_host`)."""
    path = work_dir / SPEC_FILE
    try:
        return HostSpec.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise UserInputError(f"{path}: cannot read the play host's spec: {exc}") from exc


async def _serve(work_dir: Path, token: str) -> None:
    target = make_host_target(read_spec(work_dir))
    host = _Host(target, token)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await target.start()
        server = await asyncio.start_server(host.serve_connection, "127.0.0.1", 0, limit=LINE_LIMIT)
        port = server.sockets[0].getsockname()[1]
        address = HostAddress(
            pid=os.getpid(),
            port=port,
            description=target.describe(),
            efficiency_source=target.efficiency_source,
        )
        write_private(host_path(work_dir), address.model_dump_json().encode("utf-8"))
        print(f"play host: {target.label} ready on 127.0.0.1:{port}", flush=True)
        async with server:
            await stop.wait()
    finally:
        for session in list(host.sessions.values()):
            with contextlib.suppress(Exception):
                await session.close()
        await target.stop()
        print("play host: stopped", flush=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m dabench.play.host --work-dir DIR --token-fd N``."""
    parser = argparse.ArgumentParser(prog="dabench.play.host")
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--token-fd", type=int, required=True)
    args = parser.parse_args(argv)
    with os.fdopen(args.token_fd, "rb") as f:
        token = f.read().decode("utf-8").strip()
    if not token:
        sys.exit("play host: no token on the token pipe")
    asyncio.run(_serve(args.work_dir, token))


# -- the commands' side -----------------------------------------------------------------------


def spawn_host(spec: HostSpec) -> tuple[HostAddress, str]:
    """Start a host for ``spec`` detached and wait until its target is up; its address and
    token. A host that exits first is reported with the end of its log."""
    work_dir = Path(spec.work_dir)
    token = secrets.token_urlsafe(32)
    host_path(work_dir).unlink(missing_ok=True)
    write_private(work_dir / SPEC_FILE, spec.model_dump_json(indent=2).encode("utf-8"))
    proc = ServerProcess(
        [
            sys.executable,
            "-m",
            "dabench.play.host",
            "--work-dir",
            str(work_dir),
            "--token-fd",
            SECRET_FD_ARG,
        ],
        work_dir / HOST_LOG,
        dict(os.environ),  # the host is the harness: the target's env may name any variable
        detached=True,
        secret_input=token.encode("utf-8"),
    )
    proc.start()
    assert proc.pid is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        address = read_address(work_dir)
        if address is not None and address.pid == proc.pid:
            return address, token
        if not proc.running():
            raise HarnessError(f"the play host exited before its target was up:\n{proc.log_tail()}")
        if time.monotonic() > deadline:
            stop_pid(proc.pid)
            raise HarnessError(f"the play host was not up after {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.05)


def read_address(work_dir: Path) -> HostAddress | None:
    """The host's address file, or ``None`` before it is written."""
    try:
        return HostAddress.model_validate_json(host_path(work_dir).read_bytes())
    except (OSError, ValidationError):
        return None


@dataclass
class HostClient:
    """Sends requests to a play host."""

    port: int
    token: str
    pid: int | None = None

    async def request(self, op: str, **fields: Any) -> HostReply:
        """One request; a refused request raises :class:`UserInputError`, a failed target or
        an unreachable host :class:`HarnessError`."""
        body = HostRequest(token=self.token, op=op, **fields)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=LINE_LIMIT)
        except OSError as exc:
            raise HarnessError(f"the play host (port {self.port}) is unreachable: {exc}") from exc
        try:
            writer.write(body.model_dump_json().encode("utf-8") + b"\n")
            await writer.drain()
            line = await reader.readline()
        except (OSError, ValueError) as exc:
            raise HarnessError(f"the play host failed during {op!r}: {exc}") from exc
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if not line:
            alive = self.pid is None or pid_alive(self.pid)
            raise HarnessError(
                f"the play host closed the connection during {op!r}"
                + ("" if alive else " (it is no longer running)")
            )
        try:
            reply = HostReply.model_validate_json(line)
        except ValidationError as exc:
            raise HarnessError(f"the play host sent an unreadable reply to {op!r}: {exc}") from exc
        if not reply.ok:
            if reply.harness:
                raise HarnessError(f"the target failed during {op!r}: {reply.error}")
            raise UserInputError(f"play host: {reply.error}")
        return reply


class HostSession(TargetSession):
    """A session held by the play host."""

    def __init__(self, client: HostClient, handle: str, identity: str, tools: list[ToolSpec]):
        self.client = client
        self.handle = handle
        self.identity = identity
        self._tools = tools

    async def tools(self) -> list[ToolSpec]:
        """The tools the session showed when the host opened it."""
        return list(self._tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call a tool through the host's session."""
        reply = await self.client.request(
            "call", session=self.handle, tool=name, arguments=arguments
        )
        assert reply.outcome is not None
        return ToolOutcome(**reply.outcome.model_dump())


class HostTarget(DelegatingTarget):
    """The arm's target as the play commands see it: described by the real target (label,
    roles, description; never started here), played through the host."""

    def __init__(self, inner: Target, client: HostClient, episode: str = "") -> None:
        super().__init__(inner)
        self.client = client
        self.episode = episode
        """The journal key of the episode this view belongs to (empty: the arm's view)."""

    async def start(self) -> None:
        """The host started the target."""

    async def stop(self) -> None:
        """The host stops the target (``play finish``); a command holds no connection."""

    async def open_session(self, identity: str = "default") -> TargetSession:
        """Open a session on the host, in this view's episode."""
        reply = await self.client.request("open", episode=self.episode, identity=identity)
        assert reply.session is not None
        return HostSession(self.client, reply.session, identity, reply.tools)

    async def begin_episode(self, label: str) -> Target:
        """Begin the episode ``label`` (its journal key) on the host; its view."""
        reply = await self.client.request("begin", episode=label)
        view = HostTarget(self.inner, self.client, label)
        view.episode_id = reply.platform_episode
        return view

    async def end_episode(self, sessions: list[str]) -> None:
        """End this view's episode on the host and close its sessions."""
        await self.client.request("end", episode=self.episode, sessions=sessions)

    async def read_audit(
        self, sessions: list[str], expected_calls: int, episode: str | None = None
    ) -> AuditCheck:
        """The target's audit check, read by the host."""
        reply = await self.client.request(
            "audit", sessions=sessions, expected_calls=expected_calls, platform_episode=episode
        )
        assert reply.audit is not None
        return reply.audit


if __name__ == "__main__":  # pragma: no cover - the detached host
    main()
