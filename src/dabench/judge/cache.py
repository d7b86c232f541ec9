"""The judge cache: verdicts stored by SHA-256 of (judge model, prompt version, rubric version,
inputs), so re-grading an unchanged episode costs nothing.

SQLite file ``$DABENCH_CACHE/judge/cache.sqlite`` (default ``~/.cache/dabench/judge``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """``$DABENCH_CACHE/judge`` or ``~/.cache/dabench/judge``."""
    root = os.environ.get("DABENCH_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "dabench"
    return base / "judge"


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of ``payload``."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """A small SQLite key-value store of judge verdicts (JSON text)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "cache.sqlite"
        self._lock = threading.Lock()
        self._execute(
            "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )

    def _execute(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock, closing(sqlite3.connect(self.path, timeout=30)) as con, con:
            return list(con.execute(sql, params).fetchall())

    def get(self, key: str) -> str | None:
        """The cached verdict JSON for ``key``, or ``None``."""
        rows = self._execute("SELECT value FROM verdicts WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def put(self, key: str, value: str) -> None:
        """Store a verdict JSON under ``key``."""
        self._execute("INSERT OR REPLACE INTO verdicts (key, value) VALUES (?, ?)", (key, value))
