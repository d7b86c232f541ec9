"""Files that hold a secret (keys): never readable by anyone but the owner, not even briefly.

:func:`write_private` creates a new temporary file with ``O_CREAT | O_EXCL`` and mode
``0600`` (so it is never world-readable, whatever the umask, and never a file someone else
prepared), writes and syncs it, then renames it over the destination.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, mode ``0600`` from the first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
