"""Finding a judge's versioned file: a version name shipped with dabench, or a path."""

from __future__ import annotations

from pathlib import Path

from dabench.errors import UserInputError


def versioned_file(version_or_path: str | Path, shipped_dir: Path, suffix: str, what: str) -> Path:
    """``shipped_dir/VERSION{suffix}`` for a bare version name (no suffix), else the path
    itself; raises :class:`UserInputError` naming ``what`` when that file does not exist."""
    path = Path(version_or_path)
    if not path.suffix:
        path = shipped_dir / f"{version_or_path}{suffix}"
    if not path.is_file():
        raise UserInputError(f"{path}: no such {what} file")
    return path
