"""The warehouse is opened offline: no extension install or auto-load, no external access."""

from __future__ import annotations

import duckdb
import pytest

from dabench.world import World, connect_warehouse


def test_connection_settings(world: World) -> None:
    con = connect_warehouse(world.warehouse_path)
    try:
        row = con.execute(
            "SELECT current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions'), "
            "current_setting('enable_external_access')"
        ).fetchone()
        assert row == (False, False, False)
        with pytest.raises(duckdb.Error):
            con.execute("INSTALL httpfs")
        with pytest.raises(duckdb.Error):
            con.execute("CREATE TABLE sales.x (i INTEGER)")  # read-only
    finally:
        con.close()


def test_external_files_are_refused(world: World) -> None:
    con = connect_warehouse(world.warehouse_path)
    try:
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT * FROM read_csv('{world.path / 'catalog.json'}')")
    finally:
        con.close()
