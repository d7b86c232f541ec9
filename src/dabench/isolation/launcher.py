"""The sandbox's first process (standard library only; it runs on the system Python inside the
sandbox, never on the harness's environment).

``python3 -I -S launcher.py PORT=SOCKET ... -- PROGRAM ARGS...`` listens on ``127.0.0.1:PORT``
inside the sandbox's own network namespace for each pair, forwards every connection to the
Unix socket ``SOCKET`` (bound in by the harness, which forwards it on to the platform or the
model proxy), then runs the program and exits with its exit code. The program sees ordinary
local URLs; nothing else is reachable, since the namespace has no other interface.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading


def _pipe(src: socket.socket, dst: socket.socket, done: list[int], lock: threading.Lock) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
    with lock:
        done[0] += 1
        last = done[0] == 2
    if last:
        src.close()
        dst.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        done, lock = [0], threading.Lock()
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b, done, lock), daemon=True).start()


def main(argv: list[str]) -> int:
    """Start the forwarders, run the program, return its exit code."""
    if "--" not in argv:
        print("launcher: usage: PORT=SOCKET ... -- PROGRAM ARGS...", file=sys.stderr)
        return 2
    sep = argv.index("--")
    for spec in argv[:sep]:
        port, path = spec.split("=", 1)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    program = argv[sep + 1 :]
    try:
        process = subprocess.Popen(program)
    except OSError as exc:
        print(f"dabench sandbox: cannot start {program[0]!r}: {exc}", file=sys.stderr)
        return 127
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    code = process.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
