"""Opening the warehouse offline, and pinning the one random field DuckDB writes.

DuckDB writes a random 16-byte database identifier into the main file header (bytes
124..139), protected by the header checksum (bytes 0..7). With one writer thread, a fixed
statement order and a final CHECKPOINT everything else in the file is a function of its
content, so :func:`pin_database_identifier` replaces the identifier with bytes derived from
the world's identity and recomputes the checksum: the file becomes byte-identical across
builds and machines (for one DuckDB version).
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import duckdb

from dabench.world.offline import OFFLINE_CONFIG as OFFLINE_CONFIG

_HEADER_SIZE = 4096
_MAGIC_OFFSET = 8
_IDENTIFIER_OFFSET = 124
_IDENTIFIER_SIZE = 16
_CHECKSUM_MULTIPLIER = 0xBF58476D1CE4E5B9
_CHECKSUM_SEED = 5381


def connect_warehouse(
    path: Path,
    *,
    read_only: bool = True,
    memory_limit: str | None = None,
    temp_directory: Path | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open a world's ``warehouse.duckdb`` offline (see :data:`OFFLINE_CONFIG`).

    ``memory_limit`` and ``temp_directory`` bound a connection that streams whole tables
    (exports): DuckDB spills what exceeds the limit there. They can only be set here, at
    connect time: the offline configuration forbids changing the spill directory later.
    """
    config = dict(OFFLINE_CONFIG)
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    if temp_directory is not None:
        config["temp_directory"] = str(temp_directory)
    return duckdb.connect(str(path), read_only=read_only, config=config)


def header_checksum(block: bytes) -> int:
    """DuckDB's block checksum: XOR of every little-endian uint64 times a constant, ^ 5381."""
    import numpy as np  # only a world build pins the header (opening one needs no numpy)

    words = np.frombuffer(block, dtype="<u8")
    with np.errstate(over="ignore"):
        mixed = words * np.uint64(_CHECKSUM_MULTIPLIER)
    return int(np.bitwise_xor.reduce(mixed)) ^ _CHECKSUM_SEED


def pin_database_identifier(path: Path, identity: str) -> None:
    """Overwrite the random database identifier with ``sha256(identity)[:16]``.

    Raises ``RuntimeError`` when the header does not have the layout this was written for
    (a DuckDB upgrade): determinism must then be re-investigated, not silently lost.
    """
    with path.open("r+b") as fh:
        header = bytearray(fh.read(_HEADER_SIZE))
        if (
            len(header) != _HEADER_SIZE
            or bytes(header[_MAGIC_OFFSET : _MAGIC_OFFSET + 4]) != b"DUCK"
        ):
            raise RuntimeError(f"{path}: not a DuckDB file with the expected header layout")
        stored = struct.unpack_from("<Q", header, 0)[0]
        if stored != header_checksum(bytes(header[8:])):
            raise RuntimeError(f"{path}: unexpected DuckDB header checksum layout")
        current = bytes(header[_IDENTIFIER_OFFSET : _IDENTIFIER_OFFSET + _IDENTIFIER_SIZE])
        if current == bytes(_IDENTIFIER_SIZE):
            raise RuntimeError(f"{path}: no database identifier where DuckDB >= 1.4 writes it")
        ident = hashlib.sha256(identity.encode()).digest()[:_IDENTIFIER_SIZE]
        header[_IDENTIFIER_OFFSET : _IDENTIFIER_OFFSET + _IDENTIFIER_SIZE] = ident
        struct.pack_into("<Q", header, 0, header_checksum(bytes(header[8:])))
        fh.seek(0)
        fh.write(header)
