"""``dabench world export --elasticsearch``: explicit mappings with the catalog in ``_meta``,
the knowledge index, deterministic ids (idempotent re-runs), other worlds refused, per-item
bulk errors, and the command's output and exit codes — against a local server implementing
the index and bulk contract the official client uses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.elastic.fake_elasticsearch import FakeElasticsearch
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.world import load_world
from dabench.world.export_elasticsearch import (
    ExportError,
    connect_elasticsearch,
    es_field_type,
    export_world,
    index_name,
)

SMALL = ["sales.stores", "sales.channels", "product.categories"]


def test_field_types() -> None:
    assert es_field_type("BIGINT") == {"type": "long"}
    assert es_field_type("DECIMAL(18,2)") == {"type": "double"}
    assert es_field_type("DATE") == {"type": "date", "format": "strict_date"}
    assert es_field_type("VARCHAR") == {"type": "keyword"}
    assert es_field_type("STRUCT(a INT)") == {"type": "keyword"}
    assert index_name("dabench-", "Sales.Stores") == "dabench-sales.stores"


def test_export_tables_and_knowledge(world_dir: Path, fake_es: FakeElasticsearch) -> None:
    world = load_world(world_dir)
    client = connect_elasticsearch(fake_es.url, "es-key")
    seen: list[str] = []
    summary = export_world(
        world, client, datasets=SMALL, chunk_size=7, progress=lambda i, d, t: seen.append(i)
    )
    names = [i.index for i in summary.indices]
    order = [d.id for d in world.catalog.datasets if d.id in SMALL]
    assert names == [*(f"dabench-{d}" for d in order), "dabench-knowledge"]
    assert {i.action for i in summary.indices} == {"created"}
    con = world.connect()
    for ds_id in SMALL:
        ds = world.dataset(ds_id)
        index = fake_es.indices[f"dabench-{ds_id}"]
        rows = con.execute(f"SELECT count(*) FROM {ds_id}").fetchone()
        assert rows is not None and len(index["docs"]) == rows[0] == ds.row_count
        meta = index["mappings"]["_meta"]["dabench"]
        assert meta["world_hash"] == world.world_hash and meta["description"] == ds.description
        for col in ds.columns:
            assert meta["columns"][col.name]["description"] == col.description
            assert index["mappings"]["properties"][col.name] == {
                **es_field_type(col.type),
                **({"meta": {"unit": col.unit}} if col.unit else {}),
            }
        assert index["mappings"]["dynamic"] == "strict"
    con.close()
    knowledge = fake_es.docs("dabench-knowledge")
    assert len(knowledge) == len(world.pages) + len(world.catalog.glossary) + len(
        world.catalog.datasets
    )
    page = world.pages[0]
    assert knowledge[f"page:{page.id}"]["body"] == page.body
    deprecated = [d for d in world.catalog.datasets if d.deprecated]
    assert deprecated, "the world plants a deprecated table"
    assert "DEPRECATED: use" in knowledge[f"dataset:{deprecated[0].id}"]["body"]
    assert set(seen) == set(names)
    assert summary.docs == sum(len(i["docs"]) for i in fake_es.indices.values())


def test_rerun_overwrites_the_same_documents(world_dir: Path, fake_es: FakeElasticsearch) -> None:
    world = load_world(world_dir)
    client = connect_elasticsearch(fake_es.url, "es-key")
    export_world(world, client, datasets=SMALL[:1])
    first = {name: dict(i["docs"]) for name, i in fake_es.indices.items()}
    again = export_world(world, client, datasets=SMALL[:1])
    assert {i.action for i in again.indices} == {"reused"}
    assert {name: i["docs"] for name, i in fake_es.indices.items()} == first
    docs = first["dabench-sales.stores"]
    assert sorted(docs, key=int) == [str(i) for i in range(len(docs))]


def test_another_world_is_refused_unless_recreate(
    world_dir: Path, fake_es: FakeElasticsearch
) -> None:
    world = load_world(world_dir)
    client = connect_elasticsearch(fake_es.url, "es-key")
    export_world(world, client, datasets=SMALL[:1])
    meta = fake_es.indices["dabench-sales.stores"]["mappings"]["_meta"]["dabench"]
    meta["world_hash"] = "0" * 64
    with pytest.raises(UserInputError, match=r"holds another world .*--recreate"):
        export_world(world, client, datasets=SMALL[:1])
    fake_es.indices["dabench-sales.stores"]["docs"]["stale"] = {"x": 1}
    summary = export_world(world, client, datasets=SMALL[:1], recreate=True)
    assert summary.indices[0].action == "recreated"
    assert "stale" not in fake_es.docs("dabench-sales.stores")


def test_refused_documents_fail_the_export(world_dir: Path, fake_es: FakeElasticsearch) -> None:
    world = load_world(world_dir)
    fake_es.refuse_ids = {"3"}
    client = connect_elasticsearch(fake_es.url, "es-key")
    with pytest.raises(ExportError, match=r"dabench-sales.stores: 1 document\(s\) refused"):
        export_world(world, client, datasets=SMALL[:1])
    with pytest.raises(UserInputError, match="no such dataset"):
        export_world(world, client, datasets=["nope.nothing"])
    with pytest.raises(UserInputError, match="lower case"):
        export_world(world, client, prefix="Bad Prefix")


def test_command_output_and_errors(world_dir: Path, fake_es: FakeElasticsearch) -> None:
    runner = CliRunner()
    args = ["world", "export", "--world", str(world_dir), "--elasticsearch", fake_es.url]
    args += ["--dataset", "sales.channels"]
    ok = runner.invoke(app, [*args, "--api-key", "es-key"])
    assert ok.exit_code == 0, ok.output
    assert "2 indices (2 created)" in ok.output
    again = runner.invoke(app, args, env={"ES_API_KEY": "es-key"})
    assert again.exit_code == 0 and "2 reused" in again.output
    denied = runner.invoke(app, [*args, "--api-key", "wrong"])
    assert denied.exit_code == 2
    assert "error: elasticsearch http://127.0.0.1" in denied.output
    assert "HTTP 401: authentication failed (check --api-key" in denied.output
    missing = runner.invoke(app, [*args[:3], str(world_dir / "nope"), *args[4:]])
    assert missing.exit_code == 2 and "error:" in missing.output


def test_without_the_elastic_extra_the_export_names_it(
    world_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("elasticsearch", "elastic_transport"):
        monkeypatch.setitem(sys.modules, module, None)  # `import` fails as when not installed
    args = ["world", "export", "--world", str(world_dir), "--elasticsearch", "http://127.0.0.1:9"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "error: the elasticsearch client is not installed: pip install 'dabench[elastic]'"
    )
