"""A small Chrome DevTools Protocol client over headless Debian Chromium (test helper)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
]


class Browser:
    """A headless Chromium with one page, driven over CDP."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.profile = tempfile.mkdtemp(prefix="dabench-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or len(port_file.read_text().splitlines()) < 2:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start (no DevToolsActivePort)")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{port}{path}", max_size=None
        ).__enter__()
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)
        self.resize(width, height)

    def resize(self, width: int, height: int = 1000) -> None:
        """Set the viewport (CSS pixels); the next page load lays out at this size."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> dict[str, Any]:
        """Send one command and wait for its result (events meanwhile are kept)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            data = json.loads(self.ws.recv(timeout=60))
            if data.get("id") == self._id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                result: dict[str, Any] = data.get("result", {})
                return result
            self.events.append(data)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        """Wait for an event (or return one already received)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(method)
            self.events.append(json.loads(self.ws.recv(timeout=remaining)))

    def goto(self, url: str) -> None:
        """Load ``url`` as a fresh document (via about:blank) and wait for its load event."""
        for target in ("about:blank", url):
            self.events = []  # errors are collected per loaded document
            self.send("Page.navigate", {"url": target}, session=True)
            self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS exception: {result['exceptionDetails']}")
        return result["result"].get("value")

    def settle(self, timeout: float = 30) -> None:
        """Wait until the page runs no CSS transition or animation (e.g. the drawer sliding
        in): a state check, polled, so a loaded machine only makes it wait longer."""
        deadline = time.monotonic() + timeout
        # Two frames first: a transition a hash change has queued has then started.
        self.evaluate(
            "new Promise(function (r) { requestAnimationFrame(function () {"
            " requestAnimationFrame(function () { r(true); }); }); })"
        )
        while self.evaluate(
            "document.getAnimations().some(function (a) { return a.playState === 'running'"
            " || a.playState === 'pending'; })"
        ):
            if time.monotonic() > deadline:
                raise TimeoutError("the page kept animating")
            time.sleep(0.05)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.send("Runtime.evaluate", {"expression": "1"}, session=True)  # flush events
        out = []
        for ev in self.events:
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(f"console: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        return out

    def screenshot(self, path: Path, *, y: int = 0, height: int | None = None) -> None:
        """Save a PNG of the page (from ``y``, ``height`` pixels tall, or the full page)."""
        metrics = self.send("Page.getLayoutMetrics", session=True)
        size = metrics["cssContentSize"]
        clip = {
            "x": 0,
            "y": y,
            "width": metrics["cssLayoutViewport"]["clientWidth"],
            "height": height or size["height"] - y,
            "scale": 1,
        }
        data = self.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
            session=True,
        )["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            if hasattr(self, "ws"):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
