"""External worlds: ``world init`` introspection, the knowledge format, the data fingerprint,
stale-lock reports, Parquet, policies as data and the discoverability check; and the built-in
world opened by the same loader with its hash unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
import yaml

from dabench.errors import UserInputError
from dabench.tasks.loader import load_tasks
from dabench.tasks.lock import check_lock, compute_lock
from dabench.world import World
from dabench.world.external_checks import discoverability_issues
from dabench.world.init import init_world
from dabench.world.policy_data import policy_issues
from dabench.world.source import (
    RULES_FILE,
    SOURCE_FILE,
    HiddenRule,
    open_world,
    parquet_tables,
)


def _warehouse(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA shop")
    con.execute("CREATE TABLE shop.customers (customer_id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute(
        "CREATE TABLE shop.orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER "
        "REFERENCES shop.customers (customer_id), placed DATE, amount INTEGER)"
    )
    con.execute("INSERT INTO shop.customers VALUES (1, 'west'), (2, 'east'), (3, 'west')")
    con.execute(
        "INSERT INTO shop.orders SELECT i, 1 + i % 3, DATE '2024-01-01' + i::INTEGER, i * 100 "
        "FROM range(1, 31) t(i)"
    )
    con.close()
    return path


def _fill(world: Path) -> None:
    """Describe the skeleton as a user would: a rule stated in a column description."""
    catalog = (world / "catalog.json").read_text(encoding="utf-8")
    catalog = catalog.replace(
        '"description": "",\n          "glossary_terms": [],\n          "name": "amount"',
        '"description": "Order amount. Amounts are in euro cents.",\n'
        '          "glossary_terms": [],\n          "name": "amount"',
    )
    (world / "catalog.json").write_text(catalog, encoding="utf-8")
    rules = {
        "format_version": 1,
        "rules": [
            {
                "id": "cents",
                "trap_class": "cents",
                "kind": "units",
                "deciding_fact": "amounts are cents",
                "fact_locations": ["catalog:shop.orders.amount"],
                "statement": "Amounts are in euro cents",
                "giveaway_words": ["cents"],
            }
        ],
    }
    (world / RULES_FILE).write_text(yaml.safe_dump(rules), encoding="utf-8")


@pytest.fixture
def external(tmp_path: Path) -> Path:
    wh = _warehouse(tmp_path / "data.duckdb")
    out = tmp_path / "world"
    init_world(str(wh), out)
    _fill(out)
    return out


def _tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "tasks": [
                    {
                        "id": "t.revenue",
                        "suite": "s3",
                        "category": "knowledge_trap",
                        "difficulty": "medium",
                        "prompt": "Total order amount in euros?",
                        "trap_classes": ["cents"],
                        "grading": {
                            "kind": "numeric",
                            "truth_sql": "SELECT sum(amount) / 100.0 FROM shop.orders",
                            "naive_sql": "SELECT sum(amount) FROM shop.orders",
                        },
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    return path


def test_init_writes_the_skeleton_deterministically(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "data.duckdb")
    init_world(str(wh), tmp_path / "a")
    init_world(str(wh), tmp_path / "b")
    for name in (
        "world.yaml",
        "catalog.json",
        "policies.yaml",
        "rules.yaml",
        "knowledge/overview.md",
    ):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    world = open_world(tmp_path / "a")
    assert not world.builtin and world.source.engine == "duckdb"
    orders = world.dataset("shop.orders")
    assert orders.row_count == 30 and str(orders.last_loaded) == "2024-01-31"
    tags = {c.name: c.tags for c in orders.columns}
    assert tags["order_id"] == ["primary-key"]
    assert tags["customer_id"] == ["references:shop.customers"]
    assert [(e.upstream, e.downstream) for e in world.catalog.lineage] == [
        ("shop.customers", "shop.orders")
    ]
    with pytest.raises(UserInputError, match="not empty"):
        init_world(str(wh), tmp_path / "a")
    with pytest.raises(UserInputError, match="expected a DuckDB file"):
        init_world(str(tmp_path / "missing.duckdb"), tmp_path / "c")


def test_fingerprint_binds_the_lock_and_reports_a_changed_warehouse(
    external: Path, tmp_path: Path
) -> None:
    tasks = load_tasks([_tasks(tmp_path)])
    lock = compute_lock(tasks, external)
    assert lock.truths["t.revenue"].value == pytest.approx(465.0)
    assert lock.truths["t.revenue"].naive_value == pytest.approx(46500.0)
    fp = lock.data_fingerprint
    assert fp is not None and fp.tables["shop.orders"].rows == 30
    same = open_world(external)
    assert same.world_hash == lock.world_hash  # recomputed in the engine: identical
    check_lock(lock, tasks, same.world_hash, "lock", same.fingerprint())

    wh = Path(same.location)
    con = duckdb.connect(str(wh))
    con.execute("UPDATE shop.orders SET amount = amount + 1 WHERE order_id = 7")
    con.close()
    changed = open_world(external)
    with pytest.raises(UserInputError, match=r"shop\.orders: content changed \(same 30 rows\)"):
        check_lock(lock, tasks, changed.world_hash, "lock", changed.fingerprint())
    con = duckdb.connect(str(wh))
    con.execute("DELETE FROM shop.orders WHERE order_id > 28")
    con.close()
    fewer = open_world(external)
    with pytest.raises(UserInputError, match=r"shop\.orders: rows 30 -> 28"):
        check_lock(lock, tasks, fewer.world_hash, "lock", fewer.fingerprint())


def test_knowledge_change_changes_the_hash_but_not_the_data(external: Path, tmp_path: Path) -> None:
    tasks = load_tasks([_tasks(tmp_path)])
    lock = compute_lock(tasks, external)
    (external / "tasks.lock.json").write_text("{}", encoding="utf-8")  # not knowledge
    assert open_world(external).world_hash == lock.world_hash
    page = external / "knowledge" / "overview.md"
    page.write_text(page.read_text(encoding="utf-8") + "More.\n", encoding="utf-8")
    world = open_world(external)
    with pytest.raises(UserInputError, match="same data; the knowledge files changed"):
        check_lock(lock, tasks, world.world_hash, "lock", world.fingerprint())


def test_declared_snapshot_id_skips_content_hashes(external: Path) -> None:
    spec = yaml.safe_load((external / SOURCE_FILE).read_text(encoding="utf-8"))
    spec["snapshot_id"] = "nightly-2024-02-01"
    (external / SOURCE_FILE).write_text(yaml.safe_dump(spec), encoding="utf-8")
    fp = open_world(external).fingerprint()
    assert fp is not None and fp.snapshot_id == "nightly-2024-02-01"
    assert {t.content_hash for t in fp.tables.values()} == {None}


def test_parquet_world_matches_the_duckdb_content(external: Path, tmp_path: Path) -> None:
    duck = open_world(external)
    root = tmp_path / "parquet"
    con = duck.connect()
    for table in ("shop.customers", "shop.orders"):
        schema, name = table.split(".")
        (root / schema).mkdir(parents=True, exist_ok=True)
        con.close()
        con = duckdb.connect(duck.location, read_only=True)
        con.execute(f"COPY {table} TO '{root / schema / name}.parquet' (FORMAT parquet)")
    con.close()
    assert [t for t, _ in parquet_tables(root)] == ["shop.customers", "shop.orders"]
    out = tmp_path / "pq-world"
    init_world(str(root), out)
    pq = open_world(out)
    assert pq.source.engine == "parquet"
    pq_fp, duck_fp = pq.fingerprint(), duck.fingerprint()
    assert pq_fp is not None and duck_fp is not None
    assert {t: f.content_hash for t, f in pq_fp.tables.items()} == {
        t: f.content_hash for t, f in duck_fp.tables.items()
    }
    served = pq.warehouse_path  # the DuckDB copy the platform's workers open
    check = duckdb.connect(str(served), read_only=True)
    assert check.execute("SELECT count(*) FROM shop.orders").fetchone() == (30,)
    check.close()


def test_discoverability_and_policies_as_data(external: Path) -> None:
    world = open_world(external)
    assert discoverability_issues(world) == []
    hidden = world.rules[0]
    world.rules = [hidden.model_copy(update={"statement": "amounts are in dollars"})]
    assert "is in none of its fact locations" in discoverability_issues(world)[0]
    world.rules = [hidden.model_copy(update={"giveaway_words": ["amount"]})]
    assert "gives it away: ['amount']" in discoverability_issues(world)[0]
    world.rules = [
        HiddenRule.model_validate({**hidden.model_dump(), "fact_locations": ["knowledge:nowhere"]})
    ]
    assert "not in the knowledge" in discoverability_issues(world)[0]

    (external / "policies.yaml").write_text(
        yaml.safe_dump(
            {
                "policies": [
                    {
                        "id": "cents",
                        "title": "Money",
                        "rule": "Divide by 100.",
                        "page": "overview",
                        "scope": {"tables": ["shop.orders"], "prompt": r"\beuros?\b"},
                        "applied_by": [r"/ 100\.0"],
                        "exemption": r"\bcents\b",
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    policies = open_world(external).policies
    good = "SELECT sum(amount) / 100.0 FROM shop.orders"
    bad = "SELECT sum(amount) FROM shop.orders"
    assert policy_issues(policies, good, "in euros", []) == []
    assert "does not apply policy 'cents'" in policy_issues(policies, bad, "in euros", [])[0]
    assert policy_issues(policies, bad, "how many orders", []) == []  # out of scope
    exempt = ["policy-exempt:cents"]
    assert policy_issues(policies, bad, "in euros, in cents", exempt) == []
    assert "prompt does not say so" in policy_issues(policies, bad, "in euros", exempt)[0]


def test_bad_world_directories_are_named(tmp_path: Path, external: Path) -> None:
    with pytest.raises(UserInputError, match="neither a built world"):
        open_world(tmp_path)
    (external / SOURCE_FILE).write_text("kind: warehouse\nengine: oracle\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"world\.yaml"):
        open_world(external)


def test_the_builtin_world_opens_through_the_same_loader(world_dir: Path, world: World) -> None:
    opened = open_world(world_dir)
    assert opened.builtin and opened.world_hash == world.manifest.world_hash
    assert opened.fingerprint() is None
    assert opened.catalog == world.catalog and opened.pages == world.pages
    assert [t.id for t in opened.traps] == [t.id for t in world.traps]
    assert opened.warehouse_path == world.warehouse_path


def test_a_copied_builtin_world_keeps_its_identity(world_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "w"
    shutil.copytree(world_dir, copy)
    assert open_world(copy).world_hash == open_world(world_dir).world_hash


def test_agent_programs_are_kept_from_the_knowledge_and_the_warehouse(
    external: Path, tmp_path: Path
) -> None:
    from dabench.sandbox import names_protected_path, protected_paths

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(external, elsewhere)
    spec = yaml.safe_load((external / SOURCE_FILE).read_text(encoding="utf-8"))
    spec["knowledge"] = str(elsewhere)
    (external / SOURCE_FILE).write_text(yaml.safe_dump(spec), encoding="utf-8")
    roots = protected_paths(external)
    assert names_protected_path(str(elsewhere / "catalog.json"), roots)
    assert names_protected_path(spec["location"], roots)


def test_an_inline_external_world_in_an_experiment(
    external: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dabench.runner.experiment import Experiment
    from dabench.runner.run import resolve_world

    monkeypatch.setenv("DABENCH_CACHE", str(tmp_path / "cache"))
    arms = [
        {
            "name": "a0",
            "target": {"kind": "reference", "profile": "a0"},
            "agent": {"kind": "oracle"},
        }
    ]
    location = yaml.safe_load((external / SOURCE_FILE).read_text(encoding="utf-8"))["location"]
    inline = {"kind": "warehouse", "engine": "duckdb", "location": location, "knowledge": "world"}
    exp = Experiment.model_validate({"name": "x", "world": inline, "arms": arms})
    resolved = resolve_world(exp, tmp_path)
    assert resolved.parent == tmp_path / "cache" / "external-worlds"
    assert open_world(resolved).world_hash == open_world(external).world_hash
    builtin = Experiment.model_validate({"name": "x", "arms": arms})
    from dabench.tasks.hashing import canonical_hash

    dumped = builtin.model_dump(mode="json", exclude={"executor", "ray", "unsealed"})
    for key in ("kind", "engine", "location", "knowledge", "snapshot_id", "drawn"):
        del dumped["world"][key]
    assert builtin.hash() == canonical_hash(dumped)  # the built-in experiment's hash is as before
    with pytest.raises(ValueError, match="needs engine, location and knowledge"):
        Experiment.model_validate({"name": "x", "world": {"kind": "warehouse"}, "arms": arms})


def test_world_info_describes_an_external_world(external: Path) -> None:
    from typer.testing import CliRunner

    from dabench.cli import app

    runner = CliRunner()
    shown = runner.invoke(app, ["world", "info", str(external)])
    assert shown.exit_code == 0, shown.output
    fp = open_world(external).fingerprint()
    assert fp is not None
    assert "external duckdb warehouse" in shown.output and fp.hash[:12] in shown.output
    assert "shop.orders" in shown.output and "hidden rules" in shown.output
    md = runner.invoke(app, ["world", "info", str(external), "--markdown"])
    assert md.exit_code == 0, md.output
    assert "| `cents` | hidden (units) | `cents` |" in md.output
    assert "| policy | title | page | rule | careless readings |" in md.output


def test_a_ray_node_finds_and_checks_an_external_world(
    external: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a Ray worker does before it serves (``node_world``): an external world, by
    directory or inline, is opened and its hash (with the data fingerprint computed on the
    node) checked against the driver's; a node whose data differs refuses."""
    pytest.importorskip("ray")
    from dabench.errors import HarnessError
    from dabench.runner.experiment import Experiment
    from dabench.runner.ray_executor import node_world

    monkeypatch.setenv("DABENCH_CACHE", str(tmp_path / "cache"))
    arms = [{"name": "a0", "target": {"kind": "reference", "profile": "a0"},
             "agent": {"kind": "oracle"}}]  # fmt: skip
    driver_hash = open_world(external).world_hash
    by_dir = Experiment.model_validate({"name": "x", "world": {"dir": "world"}, "arms": arms})
    assert node_world(by_dir, external.parent, driver_hash) == external
    location = yaml.safe_load((external / SOURCE_FILE).read_text(encoding="utf-8"))["location"]
    inline = {"kind": "warehouse", "engine": "duckdb", "location": location, "knowledge": "world"}
    exp = Experiment.model_validate({"name": "x", "world": inline, "arms": arms})
    found = node_world(exp, external.parent, driver_hash)
    assert found.parent == tmp_path / "cache" / "external-worlds"
    con = duckdb.connect(location)
    con.execute("DELETE FROM shop.orders WHERE order_id = 1")
    con.close()
    with pytest.raises(HarnessError, match=r"differs from the driver's .*data differ on this node"):
        node_world(by_dir, external.parent, driver_hash)


def test_careless_readings_of_a_user_policy_are_checked(external: Path, tmp_path: Path) -> None:
    """A reading declared in the user's ``policies.yaml`` is a careless variant like a
    built-in one: its answer must fall outside the task's tolerance."""
    from dabench.validation.tasks import static_checks

    policy = {
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
    }
    (external / "policies.yaml").write_text(yaml.safe_dump({"policies": [policy]}))
    overview = external / "knowledge" / "overview.md"
    overview.write_text(overview.read_text() + "\nAmounts are in euro cents.\n")
    tasks = load_tasks([_tasks(tmp_path)])
    _, issues = static_checks(tasks, external)
    assert [(i.item, i.check) for i in issues] == [("t.revenue", "tolerance")], issues
    assert "variant 'cents.rounding' (divides by 100.01)" in issues[0].detail


def test_a_trap_class_no_rule_defines_is_an_issue(external: Path, tmp_path: Path) -> None:
    """``trap_classes`` names the ``trap_class`` of a rule in the world's rules.yaml: a
    mistyped class (``cent`` for ``cents``) is reported, the right one passes."""
    from dabench.validation.tasks import static_checks

    path = _tasks(tmp_path)
    path.write_text(path.read_text().replace("- cents", "- cent"))
    _, issues = static_checks(load_tasks([path]), external)
    traps = [(i.item, i.check, i.detail) for i in issues if i.check == "trap"]
    assert traps == [
        (
            "t.revenue",
            "trap",
            "trap class(es) cent defined by no rule of the world (its classes: cents)",
        )
    ]
    _, issues = static_checks(load_tasks([_tasks(tmp_path)]), external)
    assert not [i for i in issues if i.check == "trap"]
