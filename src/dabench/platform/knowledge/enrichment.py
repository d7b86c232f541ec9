"""Semantic context blocks attached to describe_table, list_tables and sql_query.

A block carries what the catalog knows about a dataset: description, units, tags, glossary
terms, owner, freshness, deprecation and replacement, and the caller's visible memories.
Within a session a block already delivered unchanged is abbreviated to a short reference.
Both sizes are recorded (approximate tokens, see :mod:`dabench.platform.knowledge.tokens`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from dabench.platform.knowledge.tokens import approx_tokens
from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.sessions import PlatformSession
from dabench.platform.state import Insight
from dabench.world.model import DatasetMeta


@dataclass(frozen=True)
class Enrichment:
    """The blocks to attach to a result and their token accounting."""

    blocks: list[dict[str, Any]]
    tokens_full: int
    tokens_delivered: int

    @property
    def applied(self) -> bool:
        """Whether any block was attached."""
        return bool(self.blocks)


NO_ENRICHMENT = Enrichment(blocks=[], tokens_full=0, tokens_delivered=0)


def _compact(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _memories_for(dataset_id: str, memories: list[Insight]) -> list[dict[str, Any]]:
    out = []
    prefix = dataset_id + "."
    for m in memories:
        if any(r == dataset_id or r.startswith(prefix) for r in m.related_ids):
            out.append(
                {
                    "id": m.id,
                    "type": m.type,
                    "content": m.content,
                    "status": m.status,
                    "captured_by": m.captured_by,
                }
            )
    return out


def dataset_block(
    ds: DatasetMeta, view: KnowledgeView, memories: list[Insight] | None
) -> dict[str, Any]:
    """The full semantic context block of one dataset."""
    glossary = {g.id: g for g in view.catalog.glossary}
    term_ids = list(
        dict.fromkeys([*ds.glossary_terms, *(t for c in ds.columns for t in c.glossary_terms)])
    )
    block: dict[str, Any] = {
        "dataset": ds.id,
        "title": ds.title,
        "kind": ds.kind,
        "description": ds.description,
        "owner": ds.owner,
        "freshness": {"last_loaded": ds.last_loaded.isoformat()},
        "deprecated": ds.deprecated,
        "replaced_by": ds.replaced_by,
        "tags": ds.tags,
        "glossary": [
            {"term": glossary[t].name, "id": t, "definition": glossary[t].definition}
            for t in term_ids
            if t in glossary
        ],
        "columns": [
            {
                "name": c.name,
                "description": c.description,
                **({"unit": c.unit} if c.unit else {}),
                **({"tags": c.tags} if c.tags else {}),
            }
            for c in ds.columns
        ],
    }
    if memories is not None:
        block["memories"] = _memories_for(ds.id, memories)
    return block


def _abbreviated(ds: DatasetMeta) -> dict[str, Any]:
    block: dict[str, Any] = {
        "dataset": ds.id,
        "abbreviated": True,
        "note": "full semantic context was delivered earlier in this session",
    }
    if ds.deprecated:
        block["deprecated"] = True
        block["replaced_by"] = ds.replaced_by
    return block


def enrich_datasets(
    datasets: list[DatasetMeta],
    view: KnowledgeView,
    session: PlatformSession,
    memories: list[Insight] | None,
    dedupe: bool,
) -> Enrichment:
    """Full blocks for ``datasets``; blocks already delivered unchanged are abbreviated."""
    blocks: list[dict[str, Any]] = []
    full = delivered = 0
    for ds in datasets:
        block = dataset_block(ds, view, memories)
        text = _compact(block)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        full += approx_tokens(text)
        seen = session.remember(ds.id, digest)
        if dedupe and seen:
            block = _abbreviated(ds)
            text = _compact(block)
        delivered += approx_tokens(text)
        blocks.append(block)
    return Enrichment(blocks=blocks, tokens_full=full, tokens_delivered=delivered)


def first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of ``text``, at most ``limit`` characters."""
    head = text.strip().split("\n", 1)[0]
    dot = head.find(". ")
    if dot != -1:
        head = head[: dot + 1]
    return head if len(head) <= limit else head[: limit - 3] + "..."


def summarize_datasets(datasets: list[DatasetMeta]) -> Enrichment:
    """One-line summaries for ``list_tables`` (never abbreviated)."""
    blocks = []
    for ds in datasets:
        block: dict[str, Any] = {
            "dataset": ds.id,
            "title": ds.title,
            "kind": ds.kind,
            "summary": first_sentence(ds.description),
            "last_loaded": ds.last_loaded.isoformat(),
        }
        if ds.deprecated:
            block["deprecated"] = True
            block["replaced_by"] = ds.replaced_by
        blocks.append(block)
    tokens = approx_tokens(_compact(blocks)) if blocks else 0
    return Enrichment(blocks=blocks, tokens_full=tokens, tokens_delivered=tokens)
