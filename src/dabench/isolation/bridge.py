"""The harness's side of a sandbox: Unix sockets that the launcher inside forwards local ports
to, each served here by a forwarder to one endpoint the harness hands in (the platform), or
by an HTTPS ``CONNECT`` proxy limited to ``allow_hosts`` (a model API)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from dabench.errors import UserInputError
from dabench.isolation.bwrap import (
    SandboxSettings,
    bwrap_argv,
    check_ro_binds,
    require_bwrap,
)
from dabench.isolation.model_proxy import Meter, model_proxy

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
"""A harness-side service behind a Unix socket in the sandbox."""

PROXY_PORT = 3128
"""The sandbox's HTTPS proxy port (``HTTPS_PROXY=http://127.0.0.1:3128``)."""


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()


async def _splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    b: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    try:
        await asyncio.gather(_pump(a[0], b[1]), _pump(b[0], a[1]))
    finally:
        for w in (a[1], b[1]):
            w.close()


def _forwarder(host: str, port: int) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await _splice((reader, writer), upstream)

    return handle


def _connect_proxy(allow: set[str]) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            writer.close()
            return
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        target = parts[1] if len(parts) == 3 and parts[0] == "CONNECT" else ""
        if target not in allow:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            with contextlib.suppress(OSError):
                await writer.drain()
            writer.close()
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await _splice((reader, writer), upstream)

    return handle


@dataclass
class Sandbox:
    """One sealed program run's endpoints (served while the ``sandbox`` context is open)."""

    bwrap: str
    run_dir: Path
    ro_binds: list[Path]
    hidden: list[Path]
    endpoints: list[tuple[int, str]] = field(default_factory=list)
    proxy: bool = False
    meter: Meter | None = None
    """The model endpoint's token meter (with ``sandbox.model_proxy``)."""
    model_port: int | None = None

    def wrap(self, program: Sequence[str], workdir: Path) -> list[str]:
        """The command that runs ``program`` inside the sandbox with ``workdir`` as ``/agent``."""
        return bwrap_argv(
            program,
            bwrap=self.bwrap,
            workdir=workdir,
            run_dir=self.run_dir,
            endpoints=self.endpoints,
            ro_binds=self.ro_binds,
            hidden=self.hidden,
        )

    def proxy_env(self) -> dict[str, str]:
        """``HTTPS_PROXY`` and friends when the arm allows model hosts, ``DABENCH_MODEL_URL``
        with a model proxy."""
        env: dict[str, str] = {}
        if self.proxy:
            url = f"http://127.0.0.1:{PROXY_PORT}"
            env = {"HTTPS_PROXY": url, "https_proxy": url, "NO_PROXY": "127.0.0.1,localhost"}
        if self.model_port is not None:
            env["DABENCH_MODEL_URL"] = f"http://127.0.0.1:{self.model_port}"
        return env


@contextlib.asynccontextmanager
async def sandbox(
    urls: Sequence[str],
    settings: SandboxSettings,
    protected: Sequence[Path],
    where: str,
    *,
    services: Mapping[str, Handler] | None = None,
    programs: Mapping[str, str] | None = None,
) -> AsyncIterator[Sandbox]:
    """A sandbox whose programs reach each of ``urls`` (``http://host:port``) at the same
    port on their own ``127.0.0.1``, and the ``allow_hosts`` of ``settings`` through the
    proxy; nothing else. ``services`` are served on Unix sockets ``/run/sandbox/<name>``;
    ``programs`` (name -> source) become executables in ``/run/sandbox/bin``."""
    box = Sandbox(
        bwrap=require_bwrap(where),
        run_dir=Path(tempfile.mkdtemp(prefix="sandbox-")),
        ro_binds=check_ro_binds(settings.ro_binds, protected, where),
        hidden=list(protected),
    )
    servers: list[asyncio.Server] = []
    client: httpx.AsyncClient | None = None
    try:
        launcher = resources.files("dabench.isolation").joinpath("launcher.py").read_text()
        (box.run_dir / "launcher.py").write_text(launcher, encoding="utf-8")
        for i, url in enumerate(urls):
            parts = urlsplit(url)
            host, port = parts.hostname or "127.0.0.1", parts.port or 80
            name = f"endpoint{i}.sock"
            servers.append(
                await asyncio.start_unix_server(
                    _forwarder(host, port), path=str(box.run_dir / name)
                )
            )
            box.endpoints.append((port, name))
        for name, handler in (services or {}).items():
            servers.append(await asyncio.start_unix_server(handler, path=str(box.run_dir / name)))
        if programs:
            (box.run_dir / "bin").mkdir()
            for name, source in programs.items():
                path = box.run_dir / "bin" / name
                path.write_text(source, encoding="utf-8")
                path.chmod(0o755)
        if settings.model_proxy is not None:
            client = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=30.0))
            box.meter = Meter(settings.model_proxy.wire)
            handler = model_proxy(settings.model_proxy, box.meter, client)
            servers.append(
                await asyncio.start_unix_server(handler, path=str(box.run_dir / "model.sock"))
            )
            box.endpoints.append((settings.model_proxy.port, "model.sock"))
            box.model_port = settings.model_proxy.port
        if settings.allow_hosts:
            servers.append(
                await asyncio.start_unix_server(
                    _connect_proxy(set(settings.allow_hosts)), path=str(box.run_dir / "proxy.sock")
                )
            )
            box.endpoints.append((PROXY_PORT, "proxy.sock"))
            box.proxy = True
        ports = [port for port, _ in box.endpoints]
        if len(set(ports)) != len(ports):
            raise UserInputError(
                f"{where}: two sandbox endpoints on one port ({sorted(ports)}); choose another "
                "sandbox.model_proxy.port"
            )
        yield box
    finally:
        for server in servers:
            server.close()
        if client is not None:
            await client.aclose()
        shutil.rmtree(box.run_dir, ignore_errors=True)
