"""Sealed by isolation (issue 24): a hostile ``command`` agent, played through ``dabench run`` on
a0, tries every route to the answer key, to the harness, to other sessions and out of its
network (``data/hostile_agent.py``); inside the bubblewrap sandbox each fails. The same agent
run ``--unsealed`` reaches them (the negative control: the routes are real and the checks can
fail). docs/harness.md ("Isolation") lists the routes and their outcomes."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.harness.agent_runs import write_agent_experiment
from tests.harness.conftest import require_bwrap
from tests.quiet_http import QuietThreadingHTTPServer
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.isolation import SandboxSettings, check_ro_binds
from dabench.journal.records import Episode
from dabench.journal.store import Journal, read_manifest
from dabench.sandbox import UNSEALED_CAVEAT, cache_root, package_root, protected_paths
from dabench.targets.base import TargetContext
from dabench.targets.reference import ReferenceTarget
from dabench.targets.registry import make_target

DATA = Path(__file__).parent / "data"
HOSTILE = (DATA / "hostile_agent.py").read_text(encoding="utf-8")
CANARY = "canary-4f1c2a9e-harness-secret"
SECOND_SESSION_CALLS = 3

ROUTES = (
    "files_by_path", "dirs_by_path", "find_slash", "import_dabench", "proc_of_harness",
    "proc_parent", "proc_parent_environ_has_canary", "harness_env_canary", "sibling_session_ids",
    "network_other_endpoints", "abstract_unix_socket", "write_outside_workdir", "admin_api",
    "sql_file_reads",
)  # fmt: skip
"""What ``data/hostile_agent.py`` tries (docs/harness.md lists each with its outcome)."""

needs_bwrap = pytest.mark.usefixtures("bwrap_installed")


@pytest.fixture(scope="module")
def listeners() -> Iterator[dict[str, object]]:
    """A TCP listener on every interface and an abstract Unix socket: harness-side services
    that no agent may reach."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("0.0.0.0", 0))
    tcp.listen(16)
    name = f"dabench-canary-{os.getpid()}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + name)
    unix.listen(16)
    stop = threading.Event()

    def accept(sock: socket.socket) -> None:
        sock.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                conn.close()
            except OSError:
                continue

    threads = [threading.Thread(target=accept, args=(s,), daemon=True) for s in (tcp, unix)]
    for t in threads:
        t.start()
    yield {"port": tcp.getsockname()[1], "abstract": name}
    stop.set()
    for t in threads:
        t.join()
    tcp.close()
    unix.close()


def _host_ip() -> str | None:
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def _play_hostile(
    tmp_path: Path,
    factory: pytest.TempPathFactory,
    world: Path,
    listeners: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
    *flags: str,
) -> tuple[Episode, dict[str, object], Path]:
    monkeypatch.setenv("DABENCH_TEST_CANARY", CANARY)  # in the harness's environment only
    exp_dir = tmp_path / "experiment"
    exp_dir.mkdir()
    run_dir = tmp_path / "run"
    play_dir = tmp_path / "play-run"  # another run's play.json (admin key, identity keys)
    play_dir.mkdir()
    (play_dir / "play.json").write_text(json.dumps({"admin_key": CANARY}), encoding="utf-8")
    suites = package_root() / "src" / "dabench" / "suites"
    if not suites.exists():
        suites = package_root() / "suites"
    port = int(str(listeners["port"]))
    tcp: list[tuple[str, int]] = [("127.0.0.1", port), ("127.0.0.2", port), ("1.1.1.1", 80)]
    ip = _host_ip()
    if ip:
        tcp.append((ip, port))
    dirs = [package_root(), world, cache_root(), run_dir, exp_dir, play_dir, Path(sys.prefix)]
    dirs += [Path.home(), tmp_path]
    told = {
        "files": [
            str(suites / "s3_traps.yaml"),
            str(world / "world.json"),
            str(run_dir / "tasks.lock.json"),
            str(run_dir / "tasks.yaml"),
            str(run_dir / "targets" / "a0" / "auth.yaml"),
            str(run_dir / "manifest.json"),
            str(exp_dir / "exp.yaml"),
            str(exp_dir / "tasks.yaml"),
            str(play_dir / "play.json"),
            str(Path(sys.prefix) / "pyvenv.cfg"),
            str(package_root() / "src" / "dabench" / "__init__.py"),
        ],
        "dirs": [str(d) for d in dirs],
        "canary": CANARY[::-1],
        "harness_cmdline": Path("/proc/self/cmdline").read_bytes().decode("utf-8", "replace"),
        "tcp": tcp,
        "abstract": listeners["abstract"],
        "writable_probe": str(tmp_path / "written-by-agent"),
        "second_session_calls": SECOND_SESSION_CALLS,
    }
    program = factory.mktemp("hostile-agent")  # its runtime: bound read-only
    (program / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    (program / "told.json").write_text(json.dumps(told), encoding="utf-8")
    agent = {
        "kind": "command",
        "argv": [
            "/usr/bin/python3",
            "-I",
            "-S",
            str(program / "hostile.py"),
            str(program / "told.json"),
        ],
        "budget": 200,
        "timeout_s": 300,
        "sandbox": {"ro_binds": [str(program)]},
    }
    write_agent_experiment(exp_dir, world, agent, name="hostile")
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(exp_dir / "exp.yaml"),
            "--out",
            str(run_dir),
            "--no-progress",
            "--no-grade",
            *flags,
        ],
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed", (ep.harness_error, result.output)
    report: dict[str, object] = json.loads(ep.answers[0].splitlines()[0])
    return ep, report, run_dir


@pytest.fixture(scope="module")
def sealed_hostile(
    real_world: Path, listeners: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Episode, dict[str, object], Path, Path]:
    """The hostile agent played sealed once for the module (two tests read its one episode):
    its episode, its report, the run directory and the test directory it was told of."""
    require_bwrap()
    tmp_path = tmp_path_factory.mktemp("sealed-hostile")
    with pytest.MonkeyPatch.context() as monkeypatch:
        ep, report, run_dir = _play_hostile(
            tmp_path, tmp_path_factory, real_world, listeners, monkeypatch
        )
    return ep, report, run_dir, tmp_path


@needs_bwrap
@pytest.mark.slow
def test_a_sealed_hostile_agent_reaches_nothing(
    sealed_hostile: tuple[Episode, dict[str, object], Path, Path],
) -> None:
    ep, report, run_dir, tmp_path = sealed_hostile
    routes = report["routes"]
    assert isinstance(routes, dict)
    assert routes == {
        name: ([] if name != "proc_parent_environ_has_canary" else False) for name in routes
    }
    assert sorted(routes) == sorted(ROUTES)
    # Positive controls: the same code reaches its platform and its own directory.
    assert report["controls"] == {
        "proc_self_visible": True,
        "workdir_writable": True,
        "healthz": 200,
        "own_session_call": True,
    }
    assert ep.answers[0].splitlines()[1] == "FINAL ANSWER: 12"  # stores in world 930
    assert not (tmp_path / "written-by-agent").exists()
    agent = read_manifest(run_dir).arms[0]["agent"]
    assert agent["isolation"] == "bwrap" and read_manifest(run_dir).caveats == []


@needs_bwrap
@pytest.mark.slow
def test_a_second_session_adds_no_uncounted_call(
    sealed_hostile: tuple[Episode, dict[str, object], Path, Path],
) -> None:
    ep, report, _, _ = sealed_hostile
    second = report["second_session"]
    assert isinstance(second, dict)
    # Accepted (the key is the episode's own) and counted in the episode: every call made
    # there, plus the platform_info that opened the session.
    there = [c for c in ep.tool_calls if c.session == second["session"]]
    assert second["calls"] == 3, second
    assert [c.name for c in there].count("platform_info") == 1
    assert len([c for c in there if c.name != "platform_info"]) == second["calls"]
    assert ep.audit is not None and ep.audit.ok, ep.audit


@pytest.mark.slow
def test_a_sibling_episodes_session_is_refused(real_world: Path, tmp_path: Path) -> None:
    """Two episodes of one arm; the second one's credentials on the first one's session."""

    async def main() -> tuple[int, str]:
        target = make_target(
            {"kind": "reference", "profile": "a0"},
            TargetContext(world_dir=real_world, work_dir=tmp_path / "target"),
        )
        assert isinstance(target, ReferenceTarget)
        await target.start()
        try:
            mine = await target.begin_episode("first")
            sibling = await target.begin_episode("second")
            first = await mine.open_session()
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "sibling", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            body = {
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "sql_query", "_meta": meta,
                           "arguments": {"session_id": first.handle, "sql": "SELECT 1"}},
            }  # fmt: skip
            headers = {
                "Authorization": f"Bearer {sibling.keys['default']}",
                "X-DPS-Session": first.handle,
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "sql_query",
            }
            async with httpx.AsyncClient() as client:
                resp = await client.post(target.base_url + "/mcp", json=body, headers=headers)
            return resp.status_code, resp.text
        finally:
            await target.stop()

    _code, text = asyncio.run(main())
    assert "result" in text, text  # a well-formed call, answered
    assert '"isError": true' in text or '"isError":true' in text, text
    assert "SESSION_OF_ANOTHER_EPISODE" in text, text


@pytest.mark.slow
def test_unsealed_the_same_agent_reaches_the_key_and_the_harness(
    real_world: Path,
    tmp_path: Path,
    listeners: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _ep, report, run_dir = _play_hostile(
        tmp_path, tmp_path_factory, real_world, listeners, monkeypatch, "--unsealed"
    )
    routes = report["routes"]
    assert isinstance(routes, dict)
    reached = {name for name, value in routes.items() if value}
    assert {"files_by_path", "dirs_by_path", "find_slash", "proc_of_harness",
            "harness_env_canary", "network_other_endpoints", "abstract_unix_socket",
            "write_outside_workdir"} <= reached  # fmt: skip
    manifest = read_manifest(run_dir)
    assert manifest.arms[0]["agent"]["isolation"] == "unsealed"
    assert manifest.caveats == [UNSEALED_CAVEAT]


def test_ro_binds_never_show_dabench(tmp_path: Path) -> None:
    own = tmp_path / "agent-runtime"
    own.mkdir()
    protected = protected_paths(tmp_path / "run")
    assert check_ro_binds([str(own)], protected, "t") == [own.resolve()]
    bad = [package_root(), Path(sys.prefix), Path("/"), tmp_path, Path("relative"), own / "no"]
    for path in bad:
        with pytest.raises(UserInputError, match="ro_binds"):
            check_ro_binds([str(path)], protected, "t")
    (own / "lib" / "python3.11" / "site-packages" / "dabench").mkdir(parents=True)
    with pytest.raises(UserInputError, match="a dabench installation"):
        check_ro_binds([str(own)], protected, "t")
    SandboxSettings.model_validate({"ro_binds": ["/opt"], "allow_hosts": ["h:443"]})


LOOKER = """
import os, sys
run, log, switch = sys.argv[1:4]
seen = [n for n in ("tasks.lock.json", "tasks.yaml") if os.path.exists(os.path.join(run, n))]
with open(log, "a") as f:
    f.write(",".join(seen) + "\\n")
if os.path.exists(switch):
    sys.exit(1)
print("FINAL ANSWER: 12")
"""


@pytest.mark.slow
def test_the_answer_key_is_written_only_after_the_last_episode(
    real_world: Path, tmp_path: Path
) -> None:
    """An unsealed agent (it can look at the run directory) finds no key during a run nor
    during its resumption; the key is there after each, byte-identical."""
    run_dir, log, switch = tmp_path / "run", tmp_path / "seen.log", tmp_path / "fail"
    switch.write_text("1", encoding="utf-8")
    agent = {
        "kind": "command",
        "argv": ["/usr/bin/python3", "-I", "-S", "-c", LOOKER.replace("{", "{{").replace("}", "}}"),
                 str(run_dir), str(log), str(switch)],
    }  # fmt: skip
    exp = write_agent_experiment(tmp_path, real_world, agent, name="key", k=2)
    first = CliRunner().invoke(
        app, ["run", str(exp), "--out", str(run_dir), "--no-progress", "--unsealed"]
    )
    assert first.exit_code == 3, first.output  # both episodes: harness errors
    key = {n: (run_dir / n).read_bytes() for n in ("tasks.lock.json", "tasks.yaml")}
    switch.unlink()
    second = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--no-progress"])
    assert second.exit_code == 0, second.output
    assert log.read_text(encoding="utf-8").splitlines() == ["", "", "", ""]
    assert {n: (run_dir / n).read_bytes() for n in key} == key
    assert {e.status for e in Journal(run_dir).load()} == {"completed"}
    assert UNSEALED_CAVEAT in (run_dir / "report.md").read_text(encoding="utf-8")


SEALED_CLAUDE = r'''#!/usr/bin/python3 -IS
"""A stand-in claude CLI (standard library only): one MCP call to the platform, one request
through the sandbox's proxy to the allowed model host and one to a host it does not allow."""
import json, os, socket, sys, urllib.request

argv = sys.argv[1:]
prompt = sys.stdin.read()
config = json.load(open(argv[argv.index("--mcp-config") + 1]))
(name, server), = config["mcpServers"].items()
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stand-in", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}
args = {"session_id": "", "sql": "SELECT count(*) AS n FROM sales.stores"}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sql_query", "arguments": args, "_meta": meta}}
headers = {**server["headers"], "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
           "Mcp-Method": "tools/call", "Mcp-Name": "sql_query"}
req = urllib.request.Request(server["url"], json.dumps(body).encode(), headers)
raw = urllib.request.urlopen(req, timeout=60).read().decode()
message = json.loads(raw) if raw.lstrip().startswith("{") else next(
    json.loads(l[5:]) for l in raw.splitlines() if l.startswith("data:"))
text = message["result"]["content"][0]["text"]


def connect(port):
    proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=10)
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(200)
        if not chunk:
            break
        buf += chunk
    head, _, data = buf.partition(b"\r\n\r\n")
    status = head.split(b"\r\n")[0].decode()
    while " 200 " in status and len(data) < len(b"model-ok"):
        chunk = s.recv(100)
        if not chunk:
            break
        data += chunk
    data = data.decode()
    s.close()
    return status, data


allowed = connect(int(os.environ["MODEL_PORT"]))
refused = connect(int(os.environ["OTHER_PORT"]))
count = json.loads(text)["rows"][0][0]
emit = lambda e: sys.stdout.write(json.dumps(e) + "\n")
emit({"type": "system", "subtype": "init", "session_id": "cli-1", "model": "claude-test",
      "mcp_servers": [{"name": name, "status": "connected"}]})
emit({"type": "assistant", "message": {"content": [
    {"type": "tool_use", "id": "tu1", "name": f"mcp__{name}__sql_query", "input": args}]}})
emit({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tu1",
    "content": [{"type": "text", "text": text}], "is_error": False}]}})
report = {"allowed": allowed, "refused": refused, "home": os.environ["HOME"], "cwd": os.getcwd()}
emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
      "result": json.dumps(report) + f"\nFINAL ANSWER: {count}", "session_id": "cli-1",
      "total_cost_usd": 0.01, "usage": {"input_tokens": 10, "output_tokens": 5}})
'''


@needs_bwrap
@pytest.mark.slow
def test_claude_cli_runs_sealed_with_only_its_model_host(
    real_world: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    listeners: dict[str, object],
) -> None:
    model = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    model.bind(("127.0.0.1", 0))
    model.listen(4)

    def serve() -> None:
        conn, _ = model.accept()
        conn.sendall(b"model-ok")
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    program = tmp_path_factory.mktemp("claude-install")
    cli = program / "claude"
    cli.write_text(SEALED_CLAUDE, encoding="utf-8")
    cli.chmod(0o755)
    port = model.getsockname()[1]
    agent = {
        "kind": "claude-cli", "executable": str(cli), "inherit_env": [],
        "env": {"MODEL_PORT": str(port), "OTHER_PORT": str(listeners["port"])},
        "sandbox": {"ro_binds": [str(program)], "allow_hosts": [f"127.0.0.1:{port}"]},
    }  # fmt: skip
    exp = write_agent_experiment(tmp_path, real_world, agent, name="sealed-claude")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(exp), "--out", str(run_dir), "--no-progress"])
    model.close()
    assert result.exit_code == 0, result.output
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed" and ep.audit is not None and ep.audit.ok
    report = json.loads(ep.answers[0].splitlines()[0])
    assert report["allowed"] == ["HTTP/1.1 200 Connection established", "model-ok"]
    assert report["refused"] == ["HTTP/1.1 403 Forbidden", ""]
    assert report["home"] == report["cwd"] == "/agent"
    assert read_manifest(run_dir).arms[0]["agent"]["isolation"] == "bwrap"


PLAYER = """
import json, os, subprocess, sys

def play(*args, stdin=None):
    out = subprocess.run(["dabench", "play", *args], capture_output=True, text=True, input=stdin)
    return out.returncode, out.stdout, out.stderr

code, out, _ = play("next", "--json")
prompt = json.loads(out)
code, out, _ = play("call", "sql_query", "-", "--json", stdin='{"sql": "SELECT 42 AS n"}')
called = json.loads(out)
report = {
    "first_prompt": bool(prompt.get("prompt")),
    "call_ok": code == 0 and "42" in called["result"],
    "finish": play("finish", "--json")[0],
    "restart": play("restart")[0],
    "other_run": play("status", "--run", "/tmp")[0],
    "not_play": subprocess.run(["dabench", "run", "--smoke"], capture_output=True).returncode,
    "play_json": [p for p in sys.argv[1:] if os.path.exists(p)],
}
code, out, err = play("answer", json.dumps(report) + "\\nFINAL ANSWER: 42", "--json")
sys.exit(0 if code == 0 else 10 + code)
"""


@needs_bwrap
@pytest.mark.slow
def test_play_start_sandbox_runs_the_player_sealed(
    real_world: Path, run_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tests.harness.test_play import play

    program = tmp_path_factory.mktemp("player")
    (program / "player.py").write_text(PLAYER, encoding="utf-8")
    args = ["play", "start", "--run", str(run_dir), "--world", str(real_world)]
    args += ["--task", "s1.orders-source", "--ro-bind", str(program), "--sandbox", "--"]
    args += ["/usr/bin/python3", "-I", "-S", str(program / "player.py")]
    args += [str(run_dir / "play.json"), str(run_dir / "manifest.json"), str(package_root())]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    play("finish", "--run", str(run_dir), "--no-grade")
    (ep,) = Journal(run_dir).load()
    report = json.loads(ep.answers[0].splitlines()[0])
    assert report == {
        "first_prompt": True,
        "call_ok": True,
        "finish": 2,
        "restart": 2,
        "other_run": 2,
        "not_play": 1,
        "play_json": [],
    }
    assert [c.name for c in ep.tool_calls] == ["sql_query"]


@needs_bwrap
@pytest.mark.slow
def test_a_sealed_program_that_hangs_is_killed_with_its_sandbox(
    real_world: Path, tmp_path: Path
) -> None:
    marker = "3171.5"  # a sleep only this test starts
    agent = {"kind": "command", "argv": ["/bin/sh", "-c", f"sleep {marker} & sleep {marker}"],
             "timeout_s": 5}  # fmt: skip
    exp = write_agent_experiment(tmp_path, real_world, agent, name="hang")
    run_dir = tmp_path / "run"
    CliRunner().invoke(app, ["run", str(exp), "--out", str(run_dir), "--no-progress"])
    (ep,) = Journal(run_dir).load()
    assert ep.status == "timeout"

    def sleepers() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and b"sleep" in cmd:
                found.append(pid)
        return found

    for _ in range(50):  # the kernel reaps the namespace asynchronously
        if not sleepers():
            break
        time.sleep(0.2)
    assert sleepers() == []


MODEL_CLIENT = """
import json, os, urllib.request
url = os.environ["DABENCH_MODEL_URL"] + "/v1/chat/completions"
got = []
for stream in (False, True):
    body = {"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Content-Type": "application/json", "Authorization": "Bearer not-mine"}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers)
    got.append(urllib.request.urlopen(req, timeout=30).read().decode())
print(json.dumps(got))
print("FINAL ANSWER: 12")
"""


class _Provider(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible stand-in: one JSON completion, or a stream whose last chunk has
    the usage."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/chat/completions" and self.headers["Authorization"] == "Bearer k"
        if body["stream"]:
            chunks = [
                {"model": "gpt-4o", "choices": [{"delta": {"content": "hel"}}]},
                {"model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 5,
                                                             "completion_tokens": 3}},
            ]  # fmt: skip
            data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            data = json.dumps({"model": "gpt-4o", "choices": [{"message": {"content": "hi"}}],
                               "usage": {"prompt_tokens": 11, "completion_tokens": 7}})  # fmt: skip
            kind = "application/json"
        raw = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@needs_bwrap
@pytest.mark.slow
def test_the_model_proxy_forwards_and_meters_tokens_into_the_episode(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = QuietThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("TEST_MODEL_KEY", "k")  # the harness's; the program sends another
    code = MODEL_CLIENT.replace("{", "{{").replace("}", "}}")
    proxy = {"upstream": upstream, "wire": "openai", "key_env": "TEST_MODEL_KEY"}
    agent = {
        "kind": "command",
        "argv": ["/usr/bin/python3", "-I", "-S", "-c", code],
        "sandbox": {"model_proxy": proxy},
    }
    exp = write_agent_experiment(tmp_path, real_world, agent, name="metered")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(exp), "--out", str(run_dir), "--no-progress"])
    server.shutdown()
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed", (ep.harness_error, result.output)
    plain, streamed = json.loads(ep.answers[0].splitlines()[0])
    assert json.loads(plain)["choices"][0]["message"]["content"] == "hi"
    assert streamed.endswith("data: [DONE]\n\n") and '"content": "hel"' in streamed
    assert (ep.usage.input, ep.usage.output) == (16, 10)
    assert ep.cost_source == "price_table"
    assert ep.cost_usd == pytest.approx((16 * 2.50 + 10 * 10.0) / 1_000_000)
