"""The fingerprint of a world's data (row counts and content hashes per table), as a task
lock records it: its own module, so that reading a lock needs none of the world's engines."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableFingerprint(_Record):
    """One table's row count and order-independent content hash (computed in the engine)."""

    rows: int
    content_hash: str | None = None


class DataFingerprint(_Record):
    """What the data of a warehouse was when a lock was computed."""

    engine: str
    tables: dict[str, TableFingerprint]
    snapshot_id: str | None = None
    hash: str

    def changes(self, other: DataFingerprint) -> list[str]:
        """Each table that differs from ``other`` (this one is the newer), in words."""
        out: list[str] = []
        if self.snapshot_id != other.snapshot_id:
            out.append(f"snapshot id {other.snapshot_id} -> {self.snapshot_id}")
        for table in sorted(set(self.tables) | set(other.tables)):
            new, old = self.tables.get(table), other.tables.get(table)
            if old is None:
                out.append(f"{table}: new table")
            elif new is None:
                out.append(f"{table}: table gone")
            elif new.rows != old.rows:
                out.append(f"{table}: rows {old.rows} -> {new.rows}")
            elif new.content_hash != old.content_hash:
                out.append(f"{table}: content changed (same {new.rows} rows)")
        return out
