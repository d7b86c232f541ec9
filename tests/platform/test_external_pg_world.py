"""An external world on PostgreSQL: ``world init --from DSN`` introspects it, the truths and the
data fingerprint are computed in PostgreSQL, and a real platform process serves it on a2
through a SELECT-only role (no ``--warehouse``: the DSN comes from ``world.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
import yaml
from platform_helpers import call, mcp_client, open_session, start_platform, stop_platform
from tests.postgres_server import postgres_cluster

from dabench.tasks.loader import load_tasks
from dabench.tasks.lock import compute_lock
from dabench.world.init import init_world
from dabench.world.postgres_roles import create_read_only_role
from dabench.world.source import SOURCE_FILE, open_world

READER = "shop_reader"
TABLES = ["shop.customers", "shop.orders"]


def _load(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute("CREATE SCHEMA shop")
        con.execute("CREATE TABLE shop.customers (customer_id int PRIMARY KEY, region text)")
        con.execute(
            "CREATE TABLE shop.orders (order_id int PRIMARY KEY, customer_id int REFERENCES "
            "shop.customers (customer_id), placed date, amount int)"
        )
        con.execute("INSERT INTO shop.customers VALUES (1, 'west'), (2, 'east'), (3, 'west')")
        con.execute(
            "INSERT INTO shop.orders SELECT i, 1 + i % 3, DATE '2024-01-01' + i, i * 100 "
            "FROM generate_series(1, 30) AS i"
        )


async def test_postgres_world_from_init_to_a_served_query(tmp_path: Path, auth_file: Path) -> None:
    with postgres_cluster() as admin:
        _load(admin)
        world = tmp_path / "world"
        catalog = init_world(admin, world)
        orders = next(d for d in catalog.datasets if d.id == "shop.orders")
        assert orders.row_count == 30 and str(orders.last_loaded) == "2024-01-31"
        assert {c.name: c.tags for c in orders.columns}["customer_id"] == [
            "references:shop.customers"
        ]
        create_read_only_role(admin, READER, TABLES)
        spec = yaml.safe_load((world / SOURCE_FILE).read_text(encoding="utf-8"))
        assert spec["engine"] == "postgres"
        spec["location"] = admin.replace("dabench@", f"{READER}@", 1)
        (world / SOURCE_FILE).write_text(yaml.safe_dump(spec), encoding="utf-8")

        tasks = tmp_path / "tasks.yaml"
        tasks.write_text(
            yaml.safe_dump(
                {
                    "tasks": [
                        {
                            "id": "t.total",
                            "suite": "s2",
                            "category": "single_tool",
                            "difficulty": "easy",
                            "prompt": "Total order amount?",
                            "grading": {
                                "kind": "numeric",
                                "truth_sql": "SELECT sum(amount) / 100.0 FROM shop.orders",
                            },
                        }
                    ]
                }
            ),
            encoding="utf-8",
        )
        lock = compute_lock(load_tasks([tasks]), world)
        assert lock.truths["t.total"].value == pytest.approx(465.0)
        fp = lock.data_fingerprint
        assert fp is not None and fp.engine == "postgres"
        assert fp.tables["shop.orders"].rows == 30
        assert open_world(world).world_hash == lock.world_hash  # recomputed: the same

        platform = start_platform(world, "a2", auth_file, tmp_path / "state")
        try:
            async with mcp_client(platform) as client:
                sid = await open_session(client)
                _, info = await call(client, "platform_info")
                assert info["sql_dialect"] == "postgres"
                is_error, found = await call(
                    client, "search", {"session_id": sid, "query": "orders amount"}
                )
                assert not is_error and found["results"], found
                is_error, body = await call(
                    client,
                    "sql_query",
                    {"session_id": sid, "sql": "SELECT count(*) AS n FROM shop.orders"},
                )
                assert not is_error, body
                assert body["rows"] == [[30]]
                assert "shop.orders" in json.dumps(body["semantic_context"])
                is_error, body = await call(
                    client, "sql_query", {"session_id": sid, "sql": "DELETE FROM shop.orders"}
                )
                assert is_error
        finally:
            stop_platform(platform)


def test_careless_readings_and_members_are_checked_on_postgres(tmp_path: Path) -> None:
    """``tasks validate``'s static checks run on a PostgreSQL world as on DuckDB: a user
    policy's careless reading inside the tolerance and a curated query that disagrees with
    the policy's ``members_sql`` are both reported (the SQL is translated to PostgreSQL)."""
    from dabench.validation.tasks import static_checks

    with postgres_cluster() as admin:
        _load(admin)
        world = tmp_path / "world"
        init_world(admin, world)
        catalog = json.loads((world / "catalog.json").read_text(encoding="utf-8"))
        catalog["curated_queries"] = [
            {
                "id": "west_customers",
                "name": "West customers",
                "description": "Customers of the west region (lower-case 'west').",
                "sql": "SELECT customer_id FROM shop.customers WHERE region = 'west'",
                "datasets": ["shop.customers"],
            }
        ]
        (world / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
        overview = world / "knowledge" / "overview.md"
        overview.write_text(
            overview.read_text() + "\nAmounts are in euro cents. West means region west.\n"
        )
        policies = [
            {
                "id": "cents",
                "title": "Money",
                "rule": "Amounts are in euro cents",
                "page": "overview",
                "scope": {"tables": ["shop.orders"], "prompt": r"\beuros?\b"},
                "applied_by": [r"/ 100\.0"],
                "ignored": [
                    {
                        "id": "cents.rounding",
                        "reading": "divides by 100.01",
                        "rewrites": [{"pattern": r"/ 100\.0\b", "replacement": "/ 100.01"}],
                    }
                ],
            },
            {
                "id": "west",
                "title": "West",
                "rule": "West means region west",
                "page": "overview",
                "scope": {"tables": ["shop.customers"], "prompt": r"\bwest\b"},
                "applied_by": [r"region = 'west'"],
                "queries": ["west_customers"],
                # customer 1 only: the curated query also returns customer 3
                "members_sql": "SELECT customer_id FROM shop.customers WHERE customer_id = 1",
            },
        ]
        (world / "policies.yaml").write_text(yaml.safe_dump({"policies": policies}))
        tasks = tmp_path / "tasks.yaml"
        tasks.write_text(
            yaml.safe_dump(
                {
                    "tasks": [
                        {
                            "id": "t.revenue",
                            "suite": "s2",
                            "category": "single_tool",
                            "difficulty": "easy",
                            "prompt": "Total order amount in euros?",
                            "grading": {
                                "kind": "numeric",
                                "truth_sql": "SELECT sum(amount) / 100.0 FROM shop.orders",
                            },
                        }
                    ]
                }
            ),
            encoding="utf-8",
        )
        _, issues = static_checks(load_tasks([tasks]), world)
        found = {(i.item, i.check): i.detail for i in issues}
        assert "variant 'cents.rounding' (divides by 100.01)" in found[("t.revenue", "tolerance")]
        assert "returns 2 rows where the rule gives 1" in found[("world", "knowledge")], issues
