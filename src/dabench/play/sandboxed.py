"""``dabench play start --sandbox -- CMD...``: the player program runs in the agents' sandbox
(:mod:`dabench.isolation`) with only the episode commands of ``dabench play`` reachable.

Inside, ``dabench`` (``/run/sandbox/bin/dabench``, first on ``PATH``) is a small client: it
sends ``play next|tools|call|answer|status ARGS`` (and its stdin when an argument is ``-``)
over the Unix socket ``/run/sandbox/play.sock``. The harness runs that command on the run
directory (``--run`` is added here; a player cannot name another directory, start, restart or
finish a run) and sends back its output and exit code. The run directory, ``play.json`` and
every key stay outside; the player's network reaches nothing but, with ``--allow-host``, the
model hosts it names (through the sandbox's proxy).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from dabench.errors import UserInputError
from dabench.isolation import INSIDE_WORKDIR, Handler, SandboxSettings, launcher_python, sandbox
from dabench.sandbox import agent_workdir, protected_paths, sealed_env

PLAYER_COMMANDS = frozenset({"next", "tools", "call", "answer", "status"})
"""What a sandboxed player may run (never start, restart or finish)."""

CLIENT = '''#!{python} -IS
"""dabench inside the sandbox: only `dabench play next|tools|call|answer|status ...`."""
import json, socket, sys

args = sys.argv[1:]
if not args or args[0] != "play":
    sys.exit("error: in this sandbox only `dabench play next|tools|call|answer|status` runs")
args = args[1:]
stdin = sys.stdin.read() if "-" in args else ""
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("/run/sandbox/play.sock")
s.sendall(json.dumps({{"argv": args, "stdin": stdin}}).encode() + b"\\n")
s.shutdown(socket.SHUT_WR)
data = b""
while chunk := s.recv(65536):
    data += chunk
reply = json.loads(data)
sys.stdout.write(reply["stdout"])
sys.stderr.write(reply["stderr"])
sys.exit(reply["code"])
'''


async def _play_command(run_dir: Path, request: dict[str, object]) -> dict[str, object]:
    argv = request.get("argv")
    stdin = request.get("stdin")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or not argv:
        return {"code": 2, "stdout": "", "stderr": "error: no play command\n"}
    if argv[0] not in PLAYER_COMMANDS:
        allowed = "|".join(sorted(PLAYER_COMMANDS))
        msg = f"error: `play {argv[0]}` is not available in the sandbox (only {allowed})\n"
        return {"code": 2, "stdout": "", "stderr": msg}
    if any(a == "--run" or a.startswith("--run=") for a in argv):
        return {"code": 2, "stdout": "", "stderr": "error: the sandbox chooses the run\n"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dabench.cli", "play", *argv, "--run", str(run_dir),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate(str(stdin or "").encode("utf-8"))
    return {
        "code": process.returncode or 0,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def _service(run_dir: Path) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            raw = await reader.read()
            try:
                request = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                request = {}
            reply = await _play_command(run_dir, request if isinstance(request, dict) else {})
            writer.write(json.dumps(reply).encode("utf-8"))
            await writer.drain()
        finally:
            writer.close()

    return handle


async def _run_player(
    run_dir: Path, program: Sequence[str], settings: SandboxSettings, inherit: Sequence[str]
) -> int:
    roots = protected_paths(run_dir.resolve())
    where = "play start --sandbox"
    async with sandbox(
        [],
        settings,
        roots,
        where,
        services={"play.sock": _service(run_dir.resolve())},
        programs={"dabench": CLIENT.format(python=launcher_python())},
    ) as box:
        with agent_workdir() as workdir:
            env = sealed_env(
                INSIDE_WORKDIR, roots, inherit=inherit, extra=box.proxy_env(), where=where
            )
            env["PATH"] = f"/run/sandbox/bin:/usr/local/bin:/usr/bin:/bin:{env['PATH']}"
            process = await asyncio.create_subprocess_exec(
                *box.wrap(program, workdir), env=env, stdin=None, stdout=None, stderr=None
            )
            return await process.wait()


def run_player(
    run_dir: Path,
    program: Sequence[str],
    *,
    ro_binds: Sequence[str] = (),
    allow_hosts: Sequence[str] = (),
    inherit_env: Sequence[str] = (),
) -> int:
    """Run the player ``program`` sealed against the play run ``run_dir``; its exit code."""
    if not program:
        raise UserInputError("play start --sandbox: name the player program after `--`")
    settings = SandboxSettings(ro_binds=list(ro_binds), allow_hosts=list(allow_hosts))
    return asyncio.run(_run_player(run_dir, program, settings, inherit_env))
