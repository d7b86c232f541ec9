"""No agent can read the answer key (issue #12 item 6).

A hostile ``command`` agent tries to reach ``world.json``, the truth lock, the task file and the
suites through every channel the harness gives an agent process: its working directory and
that directory's parents, every path in its environment, ``PATH`` (a ``dabench`` executable),
``import dabench``, and every tool of the platform (each string argument of each tool given
each file path, plus SQL file reads, replacement scans and ``ATTACH`` through ``sql_query``).
For the tools it is told the absolute paths (the strongest attacker: it guessed them); for the
file channels it only uses what it can discover. It prints what it reached; every try must fail.

The agent runs sealed (the bubblewrap sandbox, docs/harness.md "Isolation") on the system
Python; ``test_isolation.py`` tries the routes outside the platform's tools (absolute paths,
``/proc``, the network).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.journal.store import Journal
from dabench.sandbox import package_root

DATA = Path(__file__).parent / "data"

HOSTILE = r"""
import json, os, shutil, sys, urllib.request
from pathlib import Path

targets = json.loads(sys.argv[1])
NAMES = ["world.json", "catalog.json", "warehouse.duckdb", "tasks.lock.json", "tasks.yaml",
         "s3_traps.yaml", "episodes.jsonl", "manifest.json", "play.json"]
report = {"files_tried": 0, "files_read": [], "cwd": os.getcwd(), "cwd_files": os.listdir("."),
          "env": dict(os.environ), "dabench_on_path": shutil.which("dabench"),
          "import_dabench": None, "calls": []}


def try_read(path):
    report["files_tried"] += 1
    try:
        with open(path, "rb") as f:
            f.read(16)
        report["files_read"].append(str(path))
    except OSError:
        pass


def scan(directory, depth):
    for name in NAMES:
        try_read(directory / name)
        try_read(directory / "suites" / name)
        try_read(directory / "src" / "dabench" / "suites" / name)
    if depth:
        try:
            children = sorted(p for p in directory.iterdir() if p.is_dir())[:100]
        except OSError:
            children = []
        for child in children:
            scan(child, depth - 1)


cwd = Path.cwd()
for d in [cwd, *cwd.parents]:
    scan(d, 1 if d == cwd else 0)
for name in NAMES:
    try_read(name)
    try_read(Path("..") / name)
for value in os.environ.values():
    for part in value.split(os.pathsep):
        if part.startswith("/"):
            p = Path(part)
            for d in [p, *p.parents][:4]:
                scan(d, 0)
# Negative control: the same scan on a directory the test names finds its copies of the key.
control = len(report["files_read"])
scan(Path(targets["control"]), 0)
report["control_read"] = report["files_read"][control:]
del report["files_read"][control:]
try:
    import dabench
    report["import_dabench"] = dabench.__file__
except ImportError as exc:
    report["import_dabench"] = None


headers = {**json.loads(os.environ["DABENCH_MCP_HEADERS"]), "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def rpc(method, params, name=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    h = {**headers, "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    req = urllib.request.Request(os.environ["DABENCH_MCP_URL"], json.dumps(body).encode(), h)
    try:
        raw = urllib.request.urlopen(req, timeout=60).read().decode()
    except urllib.error.HTTPError as exc:
        raw = exc.read().decode()
    if raw.lstrip().startswith("{"):
        return json.loads(raw)
    for line in raw.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if "result" in message or "error" in message:
                return message
    return {"error": {"message": raw[:200]}}


def call(tool, args):
    out = rpc("tools/call", {"name": tool, "arguments": {"session_id": "", **args}}, tool)
    result = out.get("result") or {}
    text = "\n".join(c.get("text", "") for c in result.get("content", []))
    report["calls"].append({"tool": tool, "args": args, "is_error": bool(
        result.get("isError") or "error" in out), "text": text or json.dumps(out)[:2000]})


tools = rpc("tools/list", {})["result"]["tools"]
if any(t["name"] == "search" for t in tools):  # the a2 gate: search before the first query
    call("search", {"query": "orders"})
    report["calls"].pop()
call("sql_query", {"sql": "SELECT 'SELECT count(*) FROM sales.stores' AS control"})
report["control_call"] = report["calls"].pop()
paths = targets["files"]
for p in paths:
    for sql in (f"SELECT * FROM read_text('{p}')", f"SELECT * FROM read_csv('{p}')",
                f"SELECT * FROM read_json_auto('{p}')", f"SELECT * FROM read_blob('{p}')",
                f"SELECT * FROM '{p}'", f'SELECT * FROM "{p}"',
                f"SELECT * FROM parquet_scan('{p}')", f"SELECT * FROM sniff_csv('{p}')",
                f"WITH x AS (SELECT * FROM '{p}') SELECT * FROM x"):
        call("sql_query", {"sql": sql})
for d in targets["dirs"]:
    call("sql_query", {"sql": f"SELECT * FROM glob('{d}/*')"})
for db in targets["databases"]:
    call("sql_query", {"sql": f"ATTACH '{db}' AS stolen"})
    call("sql_query", {"sql": f"SELECT * FROM read_blob('{db}')"})
for rel in ("world.json", "../world.json", "../../world.json", "tasks.lock.json"):
    call("sql_query", {"sql": f"SELECT * FROM read_text('{rel}')"})
    call("sql_query", {"sql": f"SELECT * FROM '{rel}'"})
for tool in tools:
    if tool["name"] == "platform_info":
        continue
    props = (tool.get("inputSchema") or {}).get("properties") or {}
    def is_string(v):
        kinds = [v.get("type")] + [a.get("type") for a in v.get("anyOf", [])]
        return "string" in kinds or any(isinstance(k, list) and "string" in k for k in kinds)
    strings = [k for k, v in props.items() if is_string(v) and k != "session_id"]
    for key in strings:
        for p in paths[:2] + ["../world.json", "file://" + paths[0]]:
            args = {k: "x" for k in strings}
            args[key] = p
            call(tool["name"], args)
print(json.dumps(report))
"""


def _literal(text: str) -> str:
    """``text`` as a literal argument of a templated argv (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _run_hostile(
    tmp_path: Path, control: Path, world: Path, profile: str
) -> tuple[Path, dict[str, object]]:
    run_dir = tmp_path / f"run-{profile}"
    for name in ("world.json", "tasks.lock.json"):
        (control / name).write_text("{}", encoding="utf-8")
    suites = package_root() / "src" / "dabench" / "suites"
    if not suites.exists():
        suites = package_root() / "suites"
    targets = {
        "files": [
            str(world / "world.json"),
            str(run_dir / "tasks.lock.json"),
            str(run_dir / "tasks.yaml"),
            str(suites / "s3_traps.yaml"),
            str(world / "catalog.json"),
        ],
        "dirs": [str(world), str(run_dir), str(suites)],
        "databases": [str(world / "warehouse.duckdb")],
        "control": str(control),
    }
    agent = {
        "kind": "command",
        "argv": [
            "/usr/bin/python3",
            "-I",
            "-S",
            "-c",
            _literal(HOSTILE),
            _literal(json.dumps(targets)),
        ],
        "budget": 200,
        "timeout_s": 120,
        "sandbox": {"ro_binds": [str(control)]},
    }
    (tmp_path / "tasks.yaml").write_text((DATA / "tasks_w930.yaml").read_text(), encoding="utf-8")
    exp = tmp_path / f"exp-{profile}.yaml"
    exp.write_text(
        f"""name: hostile
world: {{dir: {json.dumps(str(world))}}}
tasks: {{builtin: false, files: [tasks.yaml], tasks: [w.stores]}}
arms:
  - name: {profile}
    target: {{kind: reference, profile: {profile}}}
    agent: {json.dumps(agent)}
""",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["run", str(exp), "--out", str(run_dir), "--no-progress", "--no-grade"]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed", ep.harness_error
    assert ep.final_answer is not None
    report: dict[str, object] = json.loads(ep.final_answer)
    assert (run_dir / "tasks.lock.json").exists()  # written after the last episode
    return run_dir, report


def _secrets(run_dir: Path, world: Path) -> list[str]:
    """Strings that only the answer key holds."""
    lock = json.loads((run_dir / "tasks.lock.json").read_text())
    world_json = json.loads((world / "world.json").read_text())
    return [
        "SELECT count(*) FROM sales.stores",  # the task's truth_sql (tasks.yaml, lock)
        '"task_set_hash"',
        lock["task_set_hash"],
        '"generator_version"',
        json.dumps(world_json["traps"][0])[:60] if world_json.get("traps") else '"traps"',
        "naive_sql",
        "trap_classes",
    ]


@pytest.mark.usefixtures("bwrap_installed")
@pytest.mark.slow
@pytest.mark.parametrize("profile", ["a0", "a2"])
def test_a_hostile_agent_cannot_read_the_key(
    real_world: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, profile: str
) -> None:
    control = tmp_path_factory.mktemp("control")  # outside the experiment: bound read-only
    run_dir, report = _run_hostile(tmp_path, control, real_world, profile)
    protected = [str(package_root()), str(run_dir), str(real_world)]
    # The harness gave it nothing: an empty cwd outside dabench, no dabench path in its
    # environment, no dabench executable, no importable dabench.
    assert report["cwd_files"] == []
    env = report["env"]
    assert isinstance(env, dict)
    for name, value in env.items():
        assert not any(p in value for p in protected), (name, value)
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env and "DABENCH_CACHE" not in env
    assert report["dabench_on_path"] is None and report["import_dabench"] is None
    # Every file channel failed.
    assert isinstance(report["files_tried"], int) and report["files_tried"] > 100
    assert report["files_read"] == []
    assert len(report["control_read"]) == 2  # type: ignore[arg-type]  # the scan does find files
    # Every tool call with a path failed or returned nothing of the key.
    calls = report["calls"]
    assert isinstance(calls, list) and len(calls) >= 60
    secrets = _secrets(run_dir, real_world)
    control = report["control_call"]
    assert isinstance(control, dict) and any(s in control["text"] for s in secrets)
    for c in calls:
        leaked = [s for s in secrets if s in c["text"]]
        assert not leaked, (c["tool"], c["args"], leaked, c["text"][:300])
        if c["tool"] == "sql_query":
            assert c["is_error"], (c["args"], c["text"][:300])


@pytest.mark.slow
def test_sql_query_does_not_disclose_where_the_world_is(real_world: Path, tmp_path: Path) -> None:
    from tests.harness.test_play import play

    run = tmp_path / "play"
    play("start", "--run", str(run), "--world", str(real_world), "--task", "s1.orders-source")
    try:
        play("next", "--run", str(run))
        texts = [
            play("call", "--run", str(run), "sql_query", json.dumps({"sql": sql}))["result"]
            for sql in (
                "SELECT path FROM duckdb_databases()",
                "SELECT * FROM pragma_database_list",
                "SELECT database_name, path FROM duckdb_databases",
            )
        ]
    finally:
        play("finish", "--run", str(run), "--abandon", "--no-grade")
    assert not any(str(real_world) in t for t in texts), texts
