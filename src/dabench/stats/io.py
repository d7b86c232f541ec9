"""Reading and writing ``stats.json``."""

from __future__ import annotations

from pathlib import Path

from dabench.recordfile import read_record_file
from dabench.stats.model import RunStats

STATS_FILE = "stats.json"


def write_stats(run_dir: Path | str, stats: RunStats) -> Path:
    """Write ``stats.json`` (sorted, indented: byte-identical for identical statistics)."""
    path = Path(run_dir) / STATS_FILE
    path.write_text(stats.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def read_stats(run_dir: Path | str) -> RunStats | None:
    """``stats.json`` of a run, or ``None`` when absent or from another schema version."""
    path = Path(run_dir) / STATS_FILE
    if not path.exists():
        return None
    return read_record_file(path, RunStats, what="stats file", missing=f"{path}: no stats file")
