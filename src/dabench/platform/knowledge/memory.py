"""The memory -> insight -> knowledge lifecycle: capture, manage, apply, reject, roll back.

Similarity rule (documented in docs/platform.md): a new memory supersedes a live insight
(``pending`` or ``approved``) that the caller can see when

* it names it in ``supersedes``, or
* their token-set Jaccard similarity is >= the profile's ``supersede_threshold`` (0.6), or
* they share a related id and the similarity is >= half the threshold (0.3).

The old insight becomes ``superseded`` (``superseded_by`` set) instead of a duplicate
being stored. Insights a user captured are invisible to other users until promoted.

Only the owner of an approved (promoted) insight, or a reviewer (an identity whose persona
may call ``apply_knowledge``), may supersede it: naming someone else's approved insight in
``supersedes`` is refused with ``SUPERSEDE_NOT_ALLOWED``, and a near-duplicate of it is
stored as a new pending insight beside it. Superseding an approved insight does not undo its
promotion; rolling back its changeset does, and leaves the insight ``superseded``.

Rollback: the changeset is marked rolled back (the effective catalog is recomputed from the
active changesets); its insight returns to ``pending`` only while it is still ``approved``
by that changeset. An insight that was superseded, forgotten or rejected meanwhile keeps
that status (it is never revived).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from dabench.platform.errors import ToolError
from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.state import LIVE_STATUSES, Changeset, Insight, StateStore, new_id, similarity
from dabench.platform.tools import ApplyKnowledgeArgs, MemoryCaptureArgs, MemoryManageArgs


def _refuse_nul(args: BaseModel) -> None:
    """No NUL in anything the state store keeps or looks up (PostgreSQL TEXT cannot hold it)."""
    for name, value in args:
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "\x00" in v for v in values):
            raise ToolError(
                "INVALID_ARGUMENTS", f"{name}: must not contain NUL", "remove the NUL character"
            )


PAGE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""A ``knowledge_page`` target that is not one of the world's own pages: a slug like theirs
(``fiscal-calendar``), so ``GET /knowledge/pages/{id}`` and ``fetch page:{id}`` can serve
it."""


def _refuse_page_id(target: str) -> None:
    raise ToolError(
        "INVALID_ARGUMENTS",
        f"target: {target!r} is not a knowledge page id (lowercase letters and digits "
        "in words joined by single hyphens, e.g. fiscal-calendar)",
        "name the page with a slug, or give a world page's id",
    )


def _not_found(kind: str, ident: str | None) -> ToolError:
    return ToolError(f"{kind.upper()}_NOT_FOUND", f"no {kind} {ident!r}", "list them first")


def _insight_json(i: Insight) -> dict[str, Any]:
    return i.model_dump(mode="json")


class MemoryService:
    """Implements memory_capture, memory_manage and apply_knowledge over a state store."""

    def __init__(self, state: StateStore, view: KnowledgeView, threshold: float) -> None:
        self.state = state
        self.view = view
        self.threshold = threshold

    def _check_related(self, related: list[str]) -> None:
        for rid in related:
            if self.view.dataset(rid) is None and self.view.column(rid) is None:
                raise ToolError(
                    "INVALID_ARGUMENTS",
                    f"related id {rid!r} is neither a dataset nor a column",
                    "use ids such as sales.orders or sales.orders.amount",
                )

    def capture(
        self, args: MemoryCaptureArgs, user: str, session_id: str, reviewer: bool = False
    ) -> dict[str, Any]:
        """Store an insight or supersede a near-duplicate (``reviewer``: the caller may
        supersede other users' approved insights)."""
        _refuse_nul(args)
        self._check_related(args.related_ids)
        visible = self.state.visible_insights(user)
        victims: list[Insight] = []

        def may_supersede(old: Insight) -> bool:
            return old.captured_by == user or reviewer

        if args.supersedes is not None:
            target = next((i for i in visible if i.id == args.supersedes), None)
            if target is None:
                raise _not_found("insight", args.supersedes)
            if not may_supersede(target):
                raise ToolError(
                    "SUPERSEDE_NOT_ALLOWED",
                    f"insight {target.id} is {target.captured_by}'s approved knowledge; only "
                    "its owner or a reviewer may supersede it",
                    "capture your correction without supersedes; a reviewer can promote it",
                )
            victims.append(target)
        for old in visible:
            if old in victims or not may_supersede(old):
                continue
            sim = similarity(old.content, args.content)
            shared = bool(set(old.related_ids) & set(args.related_ids))
            if sim >= self.threshold or (shared and sim >= self.threshold / 2):
                victims.append(old)
        now = datetime.now(UTC)
        insight = Insight(
            id=new_id("ins"),
            type=args.type,
            content=args.content,
            related_ids=args.related_ids,
            confidence=args.confidence,
            status="pending",
            captured_by=user,
            session_id=session_id,
            created_at=now,
            updated_at=now,
            supersedes=victims[0].id if victims else None,
        )
        self.state.add_insight(insight)
        for old in victims:
            self.state.update_insight(old.id, status="superseded", superseded_by=insight.id)
        return {
            "insight": _insight_json(insight),
            "superseded": [v.id for v in victims],
        }

    def manage(self, args: MemoryManageArgs, user: str) -> dict[str, Any]:
        """List, update or forget the caller's own insights."""
        _refuse_nul(args)
        if args.action == "list":
            mine = self.state.insights(status=args.status, captured_by=user)
            return {"insights": [_insight_json(i) for i in mine]}
        own = self.state.get_insight(args.insight_id or "")
        if own is None or own.captured_by != user:
            raise _not_found("insight", args.insight_id)
        if own.status not in LIVE_STATUSES:
            raise ToolError(
                "INVALID_STATE",
                f"insight {own.id} is {own.status}; only pending or approved insights change",
                "capture a new insight instead",
            )
        if args.action == "forget":
            self.state.update_insight(own.id, status="forgotten")
        else:
            fields: dict[str, Any] = {}
            if args.content is not None:
                fields["content"] = args.content
            if args.confidence is not None:
                fields["confidence"] = args.confidence
            if args.related_ids is not None:
                self._check_related(args.related_ids)
                fields["related_ids"] = args.related_ids
            if not fields:
                raise ToolError(
                    "INVALID_ARGUMENTS",
                    "update needs content, confidence or related_ids",
                    "pass the fields to change",
                )
            self.state.update_insight(own.id, **fields)
        updated = self.state.get_insight(own.id)
        assert updated is not None
        return {"insight": _insight_json(updated)}

    def apply_knowledge(self, args: ApplyKnowledgeArgs, user: str) -> dict[str, Any]:
        """Review actions: list, apply, reject, rollback."""
        _refuse_nul(args)
        if args.action == "list":
            return {
                "pending": [_insight_json(i) for i in self.state.insights(status="pending")],
                "changesets": [c.model_dump(mode="json") for c in self.state.changesets()],
            }
        if args.action == "rollback":
            return self._rollback(args, user)
        insight = self.state.get_insight(args.insight_id or "")
        if insight is None:
            raise _not_found("insight", args.insight_id)
        if args.action == "reject":
            if insight.status != "pending":
                raise ToolError(
                    "INVALID_STATE", f"insight {insight.id} is {insight.status}, not pending"
                )
            self.state.update_insight(insight.id, status="rejected")
            return {"insight": _insight_json(self._reload(insight.id))}
        return self._apply(insight, args, user)

    def _reload(self, insight_id: str) -> Insight:
        got = self.state.get_insight(insight_id)
        assert got is not None
        return got

    def _apply(self, insight: Insight, args: ApplyKnowledgeArgs, user: str) -> dict[str, Any]:
        if insight.status != "pending":
            raise ToolError(
                "INVALID_STATE",
                f"insight {insight.id} is {insight.status}; only pending insights are applied",
                "roll back its changeset first" if insight.status == "approved" else "",
            )
        if args.sink is None or not args.target:
            raise ToolError(
                "INVALID_ARGUMENTS",
                "apply needs sink and target",
                "sink=description|knowledge_page",
            )
        before: dict[str, Any] | None
        after: dict[str, Any]
        if args.sink == "description":
            ds = self.view.dataset(args.target)
            col = self.view.column(args.target) if ds is None else None
            if ds is not None:
                current, target = ds.description, ds.id
            elif col is not None:
                current, target = col[1].description, f"{col[0].id}.{col[1].name}"
            else:
                raise ToolError(
                    "TARGET_NOT_FOUND",
                    f"{args.target!r} is neither a dataset nor a column",
                    "use ids such as sales.orders or sales.orders.amount",
                )
            before = {"description": current}
            after = {"description": f"{current}\n\nNote: {insight.content}".strip()}
        else:
            target = args.target
            if PAGE_ID.fullmatch(target) is None and all(
                page.id != target for page in self.view.base_pages
            ):  # not even a promoted page left behind by an older version
                _refuse_page_id(target)
            page = self.view.page(target)
            related = [r for r in insight.related_ids if self.view.dataset(r) is not None]
            if page is not None:
                before = {"title": page.title, "body": page.body}
                after = {
                    "title": page.title,
                    "body": f"{page.body.rstrip()}\n\n## Note\n\n{insight.content}\n",
                    "tags": page.tags,
                    "related_datasets": sorted(set(page.related_datasets) | set(related)),
                }
            else:
                before = None
                after = {
                    "title": args.title or insight.content[:80],
                    "body": f"{insight.content}\n",
                    "tags": ["promoted-insight"],
                    "related_datasets": related,
                }
        cs = Changeset(
            id=new_id("chg"),
            insight_id=insight.id,
            sink=args.sink,
            target=target,
            before=before,
            after=after,
            applied_by=user,
            applied_at=datetime.now(UTC),
        )
        self.state.add_changeset(cs)
        self.state.update_insight(insight.id, status="approved", changeset_id=cs.id)
        return {
            "changeset": cs.model_dump(mode="json"),
            "insight": _insight_json(self._reload(insight.id)),
        }

    def _rollback(self, args: ApplyKnowledgeArgs, user: str) -> dict[str, Any]:
        cs_id = args.changeset_id
        if cs_id is None and args.insight_id is not None:
            insight = self.state.get_insight(args.insight_id)
            cs_id = insight.changeset_id if insight is not None else None
        cs = self.state.get_changeset(cs_id or "")
        if cs is None:
            raise _not_found("changeset", cs_id or args.insight_id)
        if cs.rolled_back:
            raise ToolError("INVALID_STATE", f"changeset {cs.id} is already rolled back")
        self.state.mark_rolled_back(cs.id, user)
        insight = self.state.get_insight(cs.insight_id)
        if insight is not None and insight.changeset_id == cs.id:
            if insight.status == "approved":  # a superseded/forgotten one is never revived
                self.state.update_insight(insight.id, status="pending", changeset_id=None)
            else:
                self.state.update_insight(insight.id, changeset_id=None)
        rolled = self.state.get_changeset(cs.id)
        assert rolled is not None
        return {"changeset": rolled.model_dump(mode="json")}
