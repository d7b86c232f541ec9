"""Local models are first-class (issue #28 item 2): the hint names the keyless kinds, ``openai:``
at a local URL needs no key, and a run pings its model server before the first episode.

End to end against a real OpenAI-compatible server process (``openai_server.py``, a tiny
scripted model), through the real ``dabench`` entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.providers import make_provider
from dabench.providers.builtin import KEYLESS_KINDS, is_local_url
from dabench.runner.commands import TO_RUN_A_MODEL

from .servers import closed_port_url

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).resolve().parent / "openai_server.py"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "80"}


@pytest.fixture
def model_server() -> Iterator[str]:
    """The scripted OpenAI-compatible server as its own process: its ``/v1`` base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _dabench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dabench.cli", *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip


def test_the_hint_names_every_keyless_kind() -> None:
    assert set(KEYLESS_KINDS) == {"vllm", "ollama", "llamacpp", "openai-compat"}
    for kind in KEYLESS_KINDS:
        assert f"{kind}:<model>" in TO_RUN_A_MODEL


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://192.168.0.7:8000/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://8.8.8.8/v1", False),
        (None, False),
    ],
)
def test_local_urls(url: str | None, local: bool) -> None:
    assert is_local_url(url) is local


def test_openai_at_a_local_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = make_provider("openai:qwen", base_url="http://127.0.0.1:8000/v1")
    assert provider.name == "openai"
    with pytest.raises(UserInputError, match="no API key: set OPENAI_API_KEY"):
        make_provider("openai:gpt-4.1", base_url="https://api.example.com/v1")
    with pytest.raises(UserInputError, match="no API key: set OPENAI_API_KEY"):
        make_provider("openai:gpt-4.1")


def test_a_smoke_run_against_a_local_server(model_server: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = _dabench(
        "run", "--smoke", "--model", "openai:tiny", "--base-url", model_server,
        "--out", str(run_dir), "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    episodes = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert episodes
    assert {e["status"] for e in episodes} <= {"completed", "no_answer", "budget_exhausted"}
    assert any(e["tool_calls"] for e in episodes)  # the scripted model called the SQL tool
    assert {(e["provider"], e["model"]) for e in episodes} == {("openai", "tiny")}
    assert all(e["final_answer"].endswith("FINAL ANSWER: 1") for e in episodes)
    assert "report.html" in done.stdout
    assert "ended in a harness error" not in done.stderr
    # Redirected stderr never wraps (COLUMNS=80; the run directory alone is longer than that).
    lines = done.stderr.splitlines()
    assert any(ln.startswith(f"run {run_dir}: 21 episode(s) run, 0 already") for ln in lines)


def test_an_unreachable_server_stops_the_run_with_one_error(tmp_path: Path) -> None:
    url = closed_port_url() + "/v1"
    run_dir = tmp_path / "run"
    done = _dabench(
        "run", "--smoke", "--model", "openai:tiny", "--base-url", url,
        "--out", str(run_dir), "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f"model server unreachable: openai:tiny at {url}" in errors[0]
    assert not run_dir.exists()
    assert "next:" not in done.stdout
