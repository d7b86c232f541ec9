"""``dabench world init --from``: a file that is not a DuckDB database gets one clear error
naming what it is; a PostgreSQL DSN is recorded without its password."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml
from tests.postgres_server import postgres_cluster

from dabench.errors import UserInputError
from dabench.world.init import EXPECTED_SOURCES, init_world
from dabench.world.source import SOURCE_FILE


@pytest.mark.parametrize(
    ("name", "content", "found"),
    [
        ("w.sqlite", None, "a SQLite database (export it to DuckDB or Parquet first)"),
        ("README.md", b"# not a warehouse\n", "not a DuckDB database file"),
        (
            "t.parquet",
            b"PAR1\x00\x00",
            "a Parquet file (give the directory of <schema>/<table>.parquet files)",
        ),
        ("empty.duckdb", b"", "not a DuckDB database file"),
    ],
)
def test_a_file_that_is_not_duckdb_is_named(
    tmp_path: Path, name: str, content: bytes | None, found: str
) -> None:
    path = tmp_path / name
    if content is None:
        with sqlite3.connect(path) as con:
            con.execute("CREATE TABLE t (a INTEGER)")
    else:
        path.write_bytes(content)
    with pytest.raises(UserInputError) as info:
        init_world(str(path), tmp_path / "out")
    assert str(info.value) == f"--from {str(path)!r}: {found}; {EXPECTED_SOURCES}"
    assert EXPECTED_SOURCES.startswith("expected a DuckDB file, a directory of <schema>/")
    assert not (tmp_path / "out").exists()


def test_a_postgres_dsn_is_recorded_without_its_password(tmp_path: Path) -> None:
    import psycopg

    with postgres_cluster() as dsn:
        with psycopg.connect(dsn, autocommit=True) as pg:
            pg.execute("CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY)")
        with_password = dsn.replace("dabench@", "dabench:S3cret@")  # trust auth: ignored
        init_world(with_password, tmp_path / "w")
    source = yaml.safe_load((tmp_path / "w" / SOURCE_FILE).read_text())
    assert source["location"] == dsn
    assert "S3cret" not in (tmp_path / "w" / SOURCE_FILE).read_text()
