"""Shared fixtures of the grading tests: a real DuckDB warehouse."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real warehouse: sales.orders with amounts, duplicates and dates."""
    path = tmp_path_factory.mktemp("wh") / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute(
        "CREATE TABLE sales.orders (id INTEGER, region VARCHAR, amount DECIMAL(10,2), day DATE)"
    )
    con.execute(
        """INSERT INTO sales.orders VALUES
        (1, 'north', 10.00, DATE '2025-01-01'),
        (2, 'north', 20.00, DATE '2025-01-02'),
        (3, 'south', 5.50, DATE '2025-01-02'),
        (4, 'south', 5.50, DATE '2025-01-03'),
        (5, 'east', 100.25, DATE '2025-01-04')"""
    )
    con.close()
    return path
