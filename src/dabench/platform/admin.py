"""The admin REST API (``/api/v1/admin/...``), the health endpoint and the OpenAPI schema.

Every admin route needs ``Authorization: Bearer <admin key>``: 401 without a (known) key,
403 for an identity key that is not an admin key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dabench import __version__
from dabench.platform.audit import AuditPage, AuditQuery
from dabench.platform.auth import bearer_key
from dabench.platform.service import PlatformService
from dabench.platform.state import Changeset, Insight
from dabench.world.model import ColumnMeta, DatasetMeta, KnowledgePage

PREFIX = "/api/v1/admin"


class InsightList(BaseModel):
    """``GET /knowledge/insights``."""

    model_config = ConfigDict(extra="forbid")
    insights: list[Insight]
    total: int


class ChangesetList(BaseModel):
    """``GET /knowledge/changesets``."""

    model_config = ConfigDict(extra="forbid")
    changesets: list[Changeset]
    total: int


class EffectiveDataset(BaseModel):
    """``GET /catalog/datasets/{id}``: the dataset as the platform currently describes it."""

    model_config = ConfigDict(extra="forbid")
    dataset: DatasetMeta
    promoted_targets: list[str]
    """Which of the dataset and its columns have an active promoted description."""


class EffectivePage(BaseModel):
    """``GET /knowledge/pages/{id}``: a world page or a promoted one."""

    model_config = ConfigDict(extra="forbid")
    page: KnowledgePage
    promoted: bool


class ResetResult(BaseModel):
    """``POST /state/reset``."""

    model_config = ConfigDict(extra="forbid")
    status: str
    state_version: int


class Health(BaseModel):
    """``GET /healthz``."""

    model_config = ConfigDict(extra="forbid")
    status: str
    profile: str
    profile_hash: str
    version: str
    world_hash: str


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


Handler = Callable[[Request], Awaitable[Response]]


def admin_routes(service: PlatformService) -> list[Route]:
    """The admin API, health and OpenAPI routes for ``service``."""

    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            key = bearer_key(request.headers.get("authorization"))
            if service.auth.is_admin(key):
                return await handler(request)
            if service.auth.identity_for(key) is not None:
                return _error(403, "FORBIDDEN", "this key is not an admin key")
            return _error(401, "UNAUTHENTICATED", "an admin key is required (Bearer)")

        return endpoint

    async def health(request: Request) -> Response:
        info = service.info()
        body = Health(
            status="ok",
            profile=info["profile"],
            profile_hash=info["profile_hash"],
            version=__version__,
            world_hash=info["world_hash"],
        )
        return JSONResponse(body.model_dump(mode="json"))

    async def audit_events(request: Request) -> Response:
        params: dict[str, Any] = {k: v for k, v in request.query_params.items() if v != ""}
        try:
            query = AuditQuery.model_validate(params)
        except ValidationError as exc:
            msg = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            return _error(400, "INVALID_QUERY", msg)
        page: AuditPage = service.audit.events(query)
        return JSONResponse(page.model_dump(mode="json"))

    async def insights(request: Request) -> Response:
        status = request.query_params.get("status") or None
        captured_by = request.query_params.get("captured_by") or None
        items = service.state.insights(status=status, captured_by=captured_by)
        return JSONResponse(InsightList(insights=items, total=len(items)).model_dump(mode="json"))

    async def changesets(request: Request) -> Response:
        insight_id = request.query_params.get("insight_id") or None
        active = request.query_params.get("active") in ("1", "true")
        items = service.state.changesets(insight_id=insight_id, active_only=active)
        body = ChangesetList(changesets=items, total=len(items))
        return JSONResponse(body.model_dump(mode="json"))

    async def dataset(request: Request) -> Response:
        ds = service.view.dataset(request.path_params["dataset_id"])
        if ds is None:
            return _error(404, "NOT_FOUND", f"no dataset {request.path_params['dataset_id']!r}")
        targets = [ds.id] + [f"{ds.id}.{c.name}" for c in ds.columns]
        body = EffectiveDataset(
            dataset=ds, promoted_targets=[t for t in targets if service.view.is_promoted(t)]
        )
        return JSONResponse(body.model_dump(mode="json"))

    async def column(request: Request) -> Response:
        hit = service.view.column(request.path_params["column_id"])
        if hit is None:
            return _error(404, "NOT_FOUND", f"no column {request.path_params['column_id']!r}")
        col: ColumnMeta = hit[1]
        cid = f"{hit[0].id}.{col.name}"
        return JSONResponse(
            {
                "dataset": hit[0].id,
                "column": col.model_dump(mode="json"),
                "promoted": service.view.is_promoted(cid),
            }
        )

    async def page(request: Request) -> Response:
        pid = request.path_params["page_id"]
        found = service.view.page(pid)
        if found is None:
            return _error(404, "NOT_FOUND", f"no knowledge page {pid!r}")
        body = EffectivePage(page=found, promoted=service.view.is_promoted(pid))
        return JSONResponse(body.model_dump(mode="json"))

    async def pages(request: Request) -> Response:
        items = service.view.pages()
        return JSONResponse(
            {
                "pages": [
                    {"id": p.id, "title": p.title, "promoted": service.view.is_promoted(p.id)}
                    for p in items
                ],
                "total": len(items),
            }
        )

    async def reset(request: Request) -> Response:
        service.reset_state(by="admin")
        body = ResetResult(status="reset", state_version=service.state.version)
        return JSONResponse(body.model_dump(mode="json"))

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_schema())

    return [
        Route("/healthz", health, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route(f"{PREFIX}/openapi.json", openapi, methods=["GET"]),
        Route(f"{PREFIX}/audit/events", guarded(audit_events), methods=["GET"]),
        Route(f"{PREFIX}/knowledge/insights", guarded(insights), methods=["GET"]),
        Route(f"{PREFIX}/knowledge/changesets", guarded(changesets), methods=["GET"]),
        Route(f"{PREFIX}/knowledge/pages", guarded(pages), methods=["GET"]),
        Route(f"{PREFIX}/knowledge/pages/{{page_id}}", guarded(page), methods=["GET"]),
        Route(f"{PREFIX}/catalog/datasets/{{dataset_id}}", guarded(dataset), methods=["GET"]),
        Route(f"{PREFIX}/catalog/columns/{{column_id}}", guarded(column), methods=["GET"]),
        Route(f"{PREFIX}/state/reset", guarded(reset), methods=["POST"]),
    ]


def _q(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def _p(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _op(
    summary: str, model: type[BaseModel], params: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {
        "summary": summary,
        "security": [{"bearer": []}],
        "parameters": params or [],
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": ref}}},
            "401": {"description": "no or unknown key"},
            "403": {"description": "not an admin key"},
        },
    }


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the admin API."""
    models: list[type[BaseModel]] = [
        AuditPage,
        InsightList,
        ChangesetList,
        EffectiveDataset,
        EffectivePage,
        ResetResult,
        Health,
    ]
    components: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
    s, i, b = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
    dt = {"type": "string", "format": "date-time"}
    audit_params = [
        _q("session_id", s),
        _q("user_id", s),
        _q("tool_name", s),
        _q("success", b),
        _q("event_kind", s, "tool_call | session_start | admin"),
        _q("since", dt, "inclusive lower bound"),
        _q("until", dt, "exclusive upper bound"),
        _q("limit", i, "1..10000, default 100"),
        _q("offset", i),
    ]
    health_op = _op("Health", Health)
    health_op.pop("security")
    return {
        "openapi": "3.1.0",
        "info": {"title": "dabench platform admin API", "version": __version__},
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/healthz": {"get": health_op},
            f"{PREFIX}/audit/events": {"get": _op("Audit events", AuditPage, audit_params)},
            f"{PREFIX}/knowledge/insights": {
                "get": _op("Insights", InsightList, [_q("status", s), _q("captured_by", s)])
            },
            f"{PREFIX}/knowledge/changesets": {
                "get": _op("Changesets", ChangesetList, [_q("insight_id", s), _q("active", b)])
            },
            f"{PREFIX}/knowledge/pages/{{page_id}}": {
                "get": _op("Effective knowledge page", EffectivePage, [_p("page_id")])
            },
            f"{PREFIX}/catalog/datasets/{{dataset_id}}": {
                "get": _op("Effective dataset", EffectiveDataset, [_p("dataset_id")])
            },
            f"{PREFIX}/state/reset": {"post": _op("Reset platform state", ResetResult)},
        },
    }
