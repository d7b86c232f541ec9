"""The effective catalog: the world's catalog and pages with promoted knowledge overlaid.

Promotions (active changesets) never touch the world files; this view applies them on read,
so describe, enrichment, search and the admin API all see the same effective knowledge.
"""

from __future__ import annotations

import threading

from dabench.platform.state import StateStore
from dabench.world.model import Catalog, ColumnMeta, DatasetMeta, KnowledgePage


class KnowledgeView:
    """Effective datasets and knowledge pages, recomputed when the state version changes."""

    def __init__(self, catalog: Catalog, pages: list[KnowledgePage], state: StateStore) -> None:
        self.catalog = catalog
        self.base_pages = list(pages)
        self.state = state
        self._lock = threading.Lock()
        self._version = -1
        self._datasets: dict[str, DatasetMeta] = {}
        self._pages: dict[str, KnowledgePage] = {}
        self._promoted_pages: set[str] = set()
        self._promoted_targets: set[str] = set()

    def _refresh(self) -> None:
        version = self.state.version
        if version == self._version:
            return
        with self._lock:
            if version == self._version:
                return
            descriptions: dict[str, str] = {}
            pages = {p.id: p for p in self.base_pages}
            promoted_pages: set[str] = set()
            for cs in self.state.changesets(active_only=True):
                if cs.sink == "description":
                    descriptions[cs.target] = str(cs.after["description"])
                else:
                    pages[cs.target] = KnowledgePage(
                        id=cs.target,
                        title=str(cs.after["title"]),
                        tags=list(cs.after.get("tags", [])),
                        related_datasets=list(cs.after.get("related_datasets", [])),
                        body=str(cs.after["body"]),
                    )
                    promoted_pages.add(cs.target)
            datasets: dict[str, DatasetMeta] = {}
            for ds in self.catalog.datasets:
                columns: list[ColumnMeta] = []
                for col in ds.columns:
                    cid = f"{ds.id}.{col.name}"
                    if cid in descriptions:
                        col = col.model_copy(update={"description": descriptions[cid]})
                    columns.append(col)
                update: dict[str, object] = {"columns": columns}
                if ds.id in descriptions:
                    update["description"] = descriptions[ds.id]
                datasets[ds.id] = ds.model_copy(update=update)
            self._datasets = datasets
            self._pages = pages
            self._promoted_pages = promoted_pages
            self._promoted_targets = set(descriptions) | promoted_pages
            self._version = version

    def datasets(self) -> list[DatasetMeta]:
        """Every dataset, effective descriptions applied, in catalog order."""
        self._refresh()
        return list(self._datasets.values())

    def dataset(self, dataset_id: str) -> DatasetMeta | None:
        """One effective dataset by id (case-insensitive), else ``None``."""
        self._refresh()
        return self._datasets.get(dataset_id.lower()) or self._datasets.get(dataset_id)

    def column(self, column_id: str) -> tuple[DatasetMeta, ColumnMeta] | None:
        """Resolve ``schema.table.column`` to its dataset and effective column."""
        ds_id, _, col_name = column_id.rpartition(".")
        ds = self.dataset(ds_id) if ds_id else None
        if ds is None:
            return None
        for col in ds.columns:
            if col.name.lower() == col_name.lower():
                return ds, col
        return None

    def pages(self) -> list[KnowledgePage]:
        """Every knowledge page, world pages first, promoted pages applied."""
        self._refresh()
        return list(self._pages.values())

    def page(self, page_id: str) -> KnowledgePage | None:
        """One effective knowledge page."""
        self._refresh()
        return self._pages.get(page_id)

    def is_promoted(self, target: str) -> bool:
        """Whether an active changeset currently changes ``target``."""
        self._refresh()
        return target in self._promoted_targets
