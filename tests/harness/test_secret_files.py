"""Secrets never sit where a child or another user could read them: key files are 0600 from
their first byte and replaced atomically, and server children get no secret-looking
environment variable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dabench.secretfile import write_private
from dabench.targets.process import scrubbed_environ


def test_write_private_is_0600_and_atomic(tmp_path: Path) -> None:
    old = os.umask(0)  # even a permissive umask gives no group/other bit
    try:
        path = tmp_path / "keys.json"
        write_private(path, b"first")
        write_private(path, b"second")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"second"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["keys.json"]  # no temporary left


def test_server_children_get_no_secret_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = {"OPENAI_API_KEY": "sk-x", "GH_TOKEN": "t", "MY_SECRET": "s", "DB_PASSWORD": "p",
              "AWS_CREDENTIALS": "c", "KIBANA_AUTH": "a"}  # fmt: skip
    kept = {"PGPASSWORD": "pg", "PGPASSFILE": "/x", "LANG": "C.UTF-8"}
    for name, value in {**secret, **kept}.items():
        monkeypatch.setenv(name, value)
    env = scrubbed_environ()
    assert not set(secret) & set(env)
    assert {k: env[k] for k in kept} == kept and "PATH" in env
