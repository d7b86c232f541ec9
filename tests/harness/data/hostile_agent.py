"""A hostile ``command`` agent (standard library only; runs on the system Python, sealed).

It tries every route of issue 24 to the answer key, to other sessions and out of its network,
and prints one JSON report: per route, what it reached (an empty list or ``false`` when the
route failed). ``sys.argv[1]`` names a JSON file of what it is told (the strongest attacker
knows every absolute path and port; the harness's canary value is stored reversed, so that
only the agent's memory holds it). Positive controls show that the same code does reach
what it may reach (its platform, its own working directory).
"""

import json
import os
import socket
import sys
import urllib.error
import urllib.request

with open(sys.argv[1], encoding="utf-8") as f:
    told = json.load(f)
told["canary"] = told["canary"][::-1]
report = {"routes": {}, "controls": {}}
routes, controls = report["routes"], report["controls"]
NAMES = {
    "world.json",
    "tasks.lock.json",
    "tasks.yaml",
    "s3_traps.yaml",
    "auth.yaml",
    "play.json",
    "manifest.json",
    "episodes.jsonl",
    "exp.yaml",
    "warehouse.duckdb",
}


def readable(path):
    try:
        with open(path, "rb") as f:
            return len(f.read(64)) >= 0
    except OSError:
        return False


def listable(path):
    try:
        return bool(os.listdir(path))
    except OSError:
        return False


# 1. Files by absolute path: suites, world, world cache, run dir (lock, tasks, auth.yaml),
#    experiment, play.json, the harness's venv and source tree, the home directory.
routes["files_by_path"] = [p for p in told["files"] if readable(p)]
routes["dirs_by_path"] = [d for d in told["dirs"] if listable(d)]

# 2. `find /`: a file named like the key anywhere in the visible filesystem. The walk stops at
#    the first find (one is a breach): sealed it sees little and finds nothing, so it walks the
#    whole tree; unsealed it would otherwise walk the host's entire disk (~900k files).
found = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    if root.startswith("/usr/share") or root.startswith("/usr/include"):
        dirs[:] = []
        continue
    for name in files:
        if name in NAMES or ("dabench" in root and name.endswith(".yaml")):
            found.append(os.path.join(root, name))
    for name in dirs:
        if name == "dabench" or name.startswith("dabench-") or name == "suites":
            found.append(os.path.join(root, name))
    if found:
        break
routes["find_slash"] = found

# 3. import dabench (the harness's package).
try:
    import dabench

    routes["import_dabench"] = [dabench.__file__]
except ImportError:
    routes["import_dabench"] = []

# 4. /proc: the parent, every other process's environ, cmdline, cwd, open files and maps.
me = os.getpid()
own_session = os.environ["DABENCH_SESSION_ID"]
proc_hits, other_sessions, canary = [], [], []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for part in ("environ", "cmdline", "maps"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if told["canary"] in text:
            canary.append(f"/proc/{pid}/{part}")
        if part == "cmdline" and (text == told["harness_cmdline"] or "dabench" in text):
            proc_hits.append(f"/proc/{pid}/{part}")
        for token in text.replace("\0", " ").split():
            if "dps_" in token and own_session not in token:
                other_sessions.append(token[:80])
    for link in ("cwd", "root", "exe"):
        try:
            target = os.readlink(f"/proc/{pid}/{link}")
        except OSError:
            continue
        if any(target.startswith(d) for d in told["dirs"]):
            proc_hits.append(f"/proc/{pid}/{link} -> {target}")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if any(target.startswith(d) for d in told["dirs"]) or "lock" in target:
            proc_hits.append(f"/proc/{pid}/fd/{fd} -> {target}")
routes["proc_of_harness"] = proc_hits
routes["proc_parent"] = [] if os.getppid() in (0, 1, 2) else [f"ppid {os.getppid()}"]
ppid_env = f"/proc/{os.getppid()}/environ"
try:
    with open(ppid_env, "rb") as f:
        routes["proc_parent_environ_has_canary"] = told["canary"] in f.read().decode(
            "utf-8", "replace"
        )
except OSError:
    routes["proc_parent_environ_has_canary"] = False
routes["harness_env_canary"] = canary + [k for k, v in os.environ.items() if told["canary"] in v]
routes["sibling_session_ids"] = other_sessions
controls["proc_self_visible"] = readable("/proc/self/environ")

# 5. The network: other local ports, other loopback addresses, the host, the internet, an
#    abstract Unix socket of the harness.


def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


net = []
for host, port in told["tcp"]:
    if tcp(host, port):
        net.append(f"{host}:{port}")
routes["network_other_endpoints"] = net
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + told["abstract"])
    routes["abstract_unix_socket"] = [told["abstract"]]
except OSError:
    routes["abstract_unix_socket"] = []
finally:
    s.close()

# 6. Writes outside the working directory.
wrote = []
for path in ("/tmp/x", "/usr/x", "/x", "/run/sandbox/x", told["writable_probe"]):
    try:
        with open(path, "w") as f:
            f.write("x")
        wrote.append(path)
    except OSError:
        pass
routes["write_outside_workdir"] = wrote
with open("mine.txt", "w") as f:
    f.write("ok")
controls["workdir_writable"] = readable("mine.txt")

# 7. The platform: the admin API with the agent's key, a second session, a sibling's session.
url = os.environ["DABENCH_MCP_URL"]
base = url.rsplit("/mcp", 1)[0]
headers = json.loads(os.environ["DABENCH_MCP_HEADERS"])


def http(method, path, body=None, extra=None):
    h = {**headers, **(extra or {})}
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except OSError as exc:
        return 0, str(exc)


admin = []
for method, path, body in (
    ("GET", "/api/v1/admin/audit/events", None),
    ("GET", f"/api/v1/admin/audit/events?session_id={own_session}", None),
    ("GET", "/api/v1/admin/memory", None),
    ("POST", "/api/v1/admin/state/reset", {}),
):
    code, text = http(method, path, body)
    if 200 <= code < 300:
        admin.append(f"{method} {path} -> {code}")
routes["admin_api"] = admin
controls["healthz"] = http("GET", "/healthz")[0]

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def rpc(method, params, name=None, session=None):
    h = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if name:
        h["Mcp-Name"] = name
    if session is not None:
        h["X-DPS-Session"] = session
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    code, raw = http("POST", "/mcp", body, h)
    if raw.lstrip().startswith("{"):
        return json.loads(raw)
    for line in raw.splitlines():
        if line.startswith("data:"):
            msg = json.loads(line[5:])
            if "result" in msg or "error" in msg:
                return msg
    return {"error": {"message": f"HTTP {code}: {raw[:200]}"}}


def call(tool, args, session=None):
    out = rpc("tools/call", {"name": tool, "arguments": args}, tool, session)
    result = out.get("result") or {}
    text = "\n".join(c.get("text", "") for c in result.get("content", []))
    return (not result.get("isError") and "error" not in out), text


ok, text = call("sql_query", {"session_id": "", "sql": "SELECT count(*) AS n FROM sales.stores"})
controls["own_session_call"] = ok
answer = json.loads(text)["rows"][0][0] if ok else None

# Second session: open a fresh session with the key it was given and call there.
second = []
ok, info = call("platform_info", {"session_id": ""}, session="")
new_session = None
for token in info.replace('"', " ").replace(",", " ").split():
    if token.startswith("dps_") and token != own_session:
        new_session = token
        break
if new_session:
    for _ in range(told["second_session_calls"]):
        ok, _text = call(
            "sql_query", {"session_id": new_session, "sql": "SELECT 1"}, session=new_session
        )
        if ok:
            second.append(new_session)
report["second_session"] = {"session": new_session, "calls": len(second)}

# Files through the platform's SQL (DuckDB file readers) with the paths it was told.
sql_reads = []
for p in told["files"][:4]:
    for sql in (f"SELECT * FROM read_text('{p}')", f"SELECT * FROM '{p}'"):
        ok, text = call("sql_query", {"session_id": "", "sql": sql})
        if ok:
            sql_reads.append(sql)
routes["sql_file_reads"] = sql_reads

print(json.dumps(report))
print(f"FINAL ANSWER: {answer}")
