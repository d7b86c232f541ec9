"""The admin REST API (``/api/v1/admin/...``), the health endpoint and the OpenAPI schema.

Every admin route needs ``Authorization: Bearer <admin key>``: 401 without a (known) key,
403 for an identity key that is not an admin key (each refusal writes an ``admin`` audit
row). Every route refuses an unknown, repeated or
invalid query parameter with 400; unknown paths (404) and methods (405) answer JSON errors
too, and :class:`SingleAuthorization` refuses a request with more than one
``Authorization`` header (400) on every route.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import anyio
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
)
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from dabench import __version__
from dabench.platform.admin.audit import AuditPage, AuditQuery, AuditStore, FilterText
from dabench.platform.admin.auth import bearer_key
from dabench.platform.service import PlatformService
from dabench.platform.state import Changeset, Insight, InsightStatus
from dabench.world.model import ColumnMeta, DatasetMeta, KnowledgePage

PREFIX = "/api/v1/admin"


class NoQuery(BaseModel):
    """Routes without query parameters: any parameter is unknown (400)."""

    model_config = ConfigDict(extra="forbid")


class InsightQuery(BaseModel):
    """Filters of ``GET /knowledge/insights``."""

    model_config = ConfigDict(extra="forbid")
    status: InsightStatus | None = None
    captured_by: FilterText | None = None


class ChangesetQuery(BaseModel):
    """Filters of ``GET /knowledge/changesets``."""

    model_config = ConfigDict(extra="forbid")
    insight_id: FilterText | None = None
    active: bool = False
    """Only changesets that were not rolled back."""


class ErrorBody(BaseModel):
    """``{"error": {code, message}}`` of every 4xx answer."""

    model_config = ConfigDict(extra="forbid")
    error: dict[str, str] = Field(description="code and message")


class PageSummary(BaseModel):
    """One entry of ``GET /knowledge/pages``."""

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str
    promoted: bool


class PageList(BaseModel):
    """``GET /knowledge/pages``."""

    model_config = ConfigDict(extra="forbid")
    pages: list[PageSummary]
    total: int


class EffectiveColumn(BaseModel):
    """``GET /catalog/columns/{schema.table.column}``."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    column: ColumnMeta
    promoted: bool


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


UserName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.@-]+$")]
MAX_BODY_BYTES = 64 * 1024
"""Admin request bodies above this are refused (400 ``INVALID_BODY``)."""


class EpisodeOpen(BaseModel):
    """The body of ``POST /episodes``: which identities the episode acts as."""

    model_config = ConfigDict(extra="forbid")
    label: FilterText = Field(default="", description="what the episode is (for the audit log)")
    users: list[UserName] = Field(min_length=1, max_length=32)
    """Configured identities (by user) to mint one key each for."""

    @field_validator("users")
    @classmethod
    def _distinct(cls, users: list[str]) -> list[str]:
        if len(set(users)) != len(users):
            raise ValueError("each user at most once")
        return users


class EpisodeOpened(BaseModel):
    """``POST /episodes``: the episode's id and one key per user (shown only here)."""

    model_config = ConfigDict(extra="forbid")
    episode_id: str
    label: str
    keys: dict[str, str]


class EpisodeKeyRequest(BaseModel):
    """The body of ``POST /episodes/{episode_id}/keys``."""

    model_config = ConfigDict(extra="forbid")
    user: UserName


class EpisodeKey(BaseModel):
    """``POST /episodes/{episode_id}/keys``: one more identity's key for the episode."""

    model_config = ConfigDict(extra="forbid")
    episode_id: str
    user: str
    persona: str
    key: str


class EpisodeCloseQuery(BaseModel):
    """Query of ``DELETE /episodes/{episode_id}``."""

    model_config = ConfigDict(extra="forbid")
    audit: int = Field(
        default=0,
        ge=0,
        le=10000,
        description="also return the first this many audit events of the episode's keys, "
        "read once its keys are revoked (0: none)",
    )


class EpisodeClosed(BaseModel):
    """``DELETE /episodes/{episode_id}``: the episode's keys are revoked (with ``?audit=N``,
    the first N audit events of its keys and their total, as ``GET /audit/events?episode_id=``
    would page them)."""

    model_config = ConfigDict(extra="forbid")
    episode_id: str
    revoked_keys: int
    audit: AuditPage | None = None


MAX_EPISODE_BATCH = 256
"""Episodes one ``POST /episodes/batch`` may close, and open, at most."""


class EpisodeBatch(BaseModel):
    """The body of ``POST /episodes/batch``: episodes to close, then episodes to open, in one
    request (a harness running many episodes at once sends what piled up while its last
    request was out)."""

    model_config = ConfigDict(extra="forbid")
    close: list[StrictStr] = Field(default_factory=list, max_length=MAX_EPISODE_BATCH)
    """Open episodes whose keys to revoke (as ``DELETE /episodes/{episode_id}``)."""
    open: list[EpisodeOpen] = Field(default_factory=list, max_length=MAX_EPISODE_BATCH)
    """Episodes to open (as ``POST /episodes``), once the closes are done."""
    audit: int = Field(
        default=0,
        ge=0,
        le=10000,
        description="also return the first this many audit events of each closed episode's "
        "keys, read once its keys are revoked (0: none)",
    )

    @field_validator("audit", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any) -> Any:
        if isinstance(value, bool):  # JSON true/false is no integer (949.0 is one)
            raise ValueError("Input should be a valid integer")
        return value


class EpisodeBatchDone(BaseModel):
    """``POST /episodes/batch``: what was closed (in the order asked), which of the episodes
    to close were not open, and what was opened (in the order asked)."""

    model_config = ConfigDict(extra="forbid")
    closed: list[EpisodeClosed]
    not_found: list[str]
    opened: list[EpisodeOpened]


class Health(BaseModel):
    """``GET /healthz``."""

    model_config = ConfigDict(extra="forbid")
    status: str
    profile: str
    profile_hash: str
    version: str
    world_hash: str
    sql_dialect: str
    """``duckdb`` (the world's file) or ``postgres`` (``platform serve --warehouse``)."""


LOOP_AUDIT_EPISODES = 8
"""Closed episodes of one batch whose audit rows may be read on the event loop."""
LOOP_AUDIT_ROWS = 100
"""Audit rows per closed episode read on the event loop at most (the rest on a thread)."""


async def closed_audit_pages(audit: AuditStore, episodes: list[str], limit: int) -> list[AuditPage]:
    """The first ``limit`` audit events of each closed episode. For a few episodes, the
    first :data:`LOOP_AUDIT_ROWS` rows of each are read on the event loop (a thread's
    wake-ups cost more than such a read); episodes with more rows than that, and larger
    batches, are read on a thread."""

    def read(episode: str, rows: int) -> AuditPage:
        return audit.events(AuditQuery(episode_id=episode, limit=rows))

    if len(episodes) > LOOP_AUDIT_EPISODES:
        return await anyio.to_thread.run_sync(lambda: [read(e, limit) for e in episodes])
    pages = [read(e, min(limit, LOOP_AUDIT_ROWS)) for e in episodes]
    more = [i for i, page in enumerate(pages) if page.total > len(page.events) < limit]
    if more:
        rest = await anyio.to_thread.run_sync(lambda: [read(episodes[i], limit) for i in more])
        for i, page in zip(more, rest, strict=True):
            pages[i] = page
    return pages


def _json(body: BaseModel, exclude: set[str] | None = None) -> Response:
    """``body`` as a JSON response, serialised by pydantic in one step (no dict in between:
    the audit read-back and the episode routes run once or twice per episode)."""
    return Response(body.model_dump_json(exclude=exclude), media_type="application/json")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


Q = TypeVar("Q", bound=BaseModel)


def _query(request: Request, model: type[Q]) -> Q | JSONResponse:
    """The request's query string validated by ``model``, or a 400 naming what is wrong.

    Unknown parameters are refused (a misspelt filter must not silently return everything);
    an empty value is a value, so ``until=`` is an invalid time rather than no bound.
    """
    params: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        if key in params:
            return _error(400, "INVALID_QUERY", f"{key}: given more than once")
        params[key] = value
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        msg = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'query'}: "
            + ("unknown parameter" if e["type"] == "extra_forbidden" else e["msg"])
            for e in exc.errors()
        )
        return _error(400, "INVALID_QUERY", msg)


async def _body(request: Request, model: type[Q], required: bool = False) -> Q | JSONResponse:
    """The request's JSON body validated by ``model``, or a 400 ``INVALID_BODY`` (also for
    no body at all when ``required``: a model whose every field has a default)."""
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            return _error(400, "INVALID_BODY", f"the body exceeds {MAX_BODY_BYTES} bytes")
    if required and not raw:
        return _error(400, "INVALID_BODY", "a JSON body is required")
    try:
        data = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        return _error(400, "INVALID_BODY", "the body is not JSON")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        return _error(400, "INVALID_BODY", msg)


Handler = Callable[[Request], Awaitable[Response]]
QueryHandler = Callable[[Request, Any], Awaitable[Response]]


def _authorization(scope: Scope) -> list[bytes]:
    return [v for k, v in scope["headers"] if k.lower() == b"authorization"]


class SingleAuthorization:
    """ASGI middleware: 400 ``DUPLICATE_AUTHORIZATION`` for a request with more than one
    ``Authorization`` header, on every route but ``/mcp`` (whose gate refuses and audits it).
    One policy everywhere, so no route can pick a different header than another."""

    def __init__(self, app: ASGIApp, skip: str = "/mcp") -> None:
        self.app = app
        self.skip = skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        duplicate = scope["type"] == "http" and len(_authorization(scope)) > 1
        if duplicate and scope["path"] != self.skip:
            response = _error(
                400, "DUPLICATE_AUTHORIZATION", "send exactly one Authorization header"
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 and 405 (and any other HTTP error Starlette raises) as ``{"error": ...}``."""
    assert isinstance(exc, HTTPException)
    codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
    code = codes.get(exc.status_code, f"HTTP_{exc.status_code}")
    message = {
        404: f"no route {request.url.path}",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    response = _error(exc.status_code, code, message)
    response.headers.update(exc.headers or {})
    return response


HTTP_ERROR_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: _http_error
}
"""``exception_handlers`` of the app: Starlette's HTTP errors as JSON."""


def _content_length(request: Request) -> int:
    length = request.headers.get("content-length", "")
    return int(length) if length.isdigit() else 0


async def _refuse_non_admin(service: PlatformService, request: Request) -> Response | None:
    """``None`` for a request with an admin key; else its 401 (no or unknown key) or 403
    (an identity's key), audited as an ``admin`` row of the caller (or unauthenticated)."""
    started, timestamp = time.perf_counter(), datetime.now(UTC)
    key = bearer_key(request.headers.get("authorization"))
    if service.auth.is_admin(key):
        return None
    identity = service.identify(key)
    if identity is not None:
        status, code, message = 403, "FORBIDDEN", "this key is not an admin key"
    else:
        status, code, message = 401, "UNAUTHENTICATED", "an admin key is required (Bearer)"
    response = _error(status, code, message)
    await anyio.to_thread.run_sync(
        lambda: service.record_request(
            identity,
            timestamp=timestamp,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            tool_name=f"{request.method} {request.url.path}",
            event_kind="admin",
            parameters=dict(request.query_params),
            presented_session=None,
            error_code=code,
            request_chars=_content_length(request),
            response_chars=len(response.body),
        )
    )
    return response


def admin_routes(service: PlatformService) -> list[Route]:
    """The admin API, health and OpenAPI routes for ``service``."""

    def route(
        path: str,
        handler: QueryHandler,
        model: type[BaseModel] = NoQuery,
        method: str = "GET",
        admin: bool = True,
    ) -> Route:
        async def endpoint(request: Request) -> Response:
            if admin:
                refused = await _refuse_non_admin(service, request)
                if refused is not None:
                    return refused
            query = _query(request, model)
            if isinstance(query, JSONResponse):
                return query
            return await handler(request, query)

        return Route(path, endpoint, methods=[method])

    async def health(request: Request, query: NoQuery) -> Response:
        info = service.info()
        body = Health(
            status="ok",
            profile=info["profile"],
            profile_hash=info["profile_hash"],
            version=__version__,
            world_hash=info["world_hash"],
            sql_dialect=info["sql_dialect"],
        )
        return JSONResponse(body.model_dump(mode="json"))

    async def audit_events(request: Request, query: AuditQuery) -> Response:
        page: AuditPage = await anyio.to_thread.run_sync(service.audit.events, query)
        return _json(page)

    async def insights(request: Request, query: InsightQuery) -> Response:
        items = service.state.insights(status=query.status, captured_by=query.captured_by)
        return JSONResponse(InsightList(insights=items, total=len(items)).model_dump(mode="json"))

    async def changesets(request: Request, query: ChangesetQuery) -> Response:
        items = service.state.changesets(insight_id=query.insight_id, active_only=query.active)
        body = ChangesetList(changesets=items, total=len(items))
        return JSONResponse(body.model_dump(mode="json"))

    async def dataset(request: Request, query: NoQuery) -> Response:
        ds = service.view.dataset(request.path_params["dataset_id"])
        if ds is None:
            return _error(404, "NOT_FOUND", f"no dataset {request.path_params['dataset_id']!r}")
        targets = [ds.id] + [f"{ds.id}.{c.name}" for c in ds.columns]
        body = EffectiveDataset(
            dataset=ds, promoted_targets=[t for t in targets if service.view.is_promoted(t)]
        )
        return JSONResponse(body.model_dump(mode="json"))

    async def column(request: Request, query: NoQuery) -> Response:
        hit = service.view.column(request.path_params["column_id"])
        if hit is None:
            return _error(404, "NOT_FOUND", f"no column {request.path_params['column_id']!r}")
        col: ColumnMeta = hit[1]
        promoted = service.view.is_promoted(f"{hit[0].id}.{col.name}")
        body = EffectiveColumn(dataset=hit[0].id, column=col, promoted=promoted)
        return JSONResponse(body.model_dump(mode="json"))

    async def page(request: Request, query: NoQuery) -> Response:
        pid = request.path_params["page_id"]
        found = service.view.page(pid)
        if found is None:
            return _error(404, "NOT_FOUND", f"no knowledge page {pid!r}")
        body = EffectivePage(page=found, promoted=service.view.is_promoted(pid))
        return JSONResponse(body.model_dump(mode="json"))

    async def pages(request: Request, query: NoQuery) -> Response:
        items = [
            PageSummary(id=p.id, title=p.title, promoted=service.view.is_promoted(p.id))
            for p in service.view.pages()
        ]
        return JSONResponse(PageList(pages=items, total=len(items)).model_dump(mode="json"))

    async def reset(request: Request, query: NoQuery) -> Response:
        service.reset_state(by="admin")
        body = ResetResult(status="reset", state_version=service.state.version)
        return JSONResponse(body.model_dump(mode="json"))

    async def open_episode(request: Request, query: NoQuery) -> Response:
        body = await _body(request, EpisodeOpen)
        if isinstance(body, JSONResponse):
            return body
        try:
            episode_id, keys = service.open_episode(body.label, body.users)
        except KeyError as exc:
            return _error(400, "UNKNOWN_USER", f"no identity with user {exc.args[0]!r}")
        except OverflowError as exc:
            return _error(409, "TOO_MANY_EPISODES", str(exc))
        opened = EpisodeOpened(episode_id=episode_id, label=body.label, keys=keys)
        return _json(opened)

    async def episode_key(request: Request, query: NoQuery) -> Response:
        body = await _body(request, EpisodeKeyRequest)
        if isinstance(body, JSONResponse):
            return body
        episode_id = request.path_params["episode_id"]
        try:
            identity, key = service.mint_episode_key(episode_id, body.user)
        except KeyError as exc:
            return _error(400, "UNKNOWN_USER", f"no identity with user {exc.args[0]!r}")
        if key is None:
            return _error(404, "NOT_FOUND", f"no open episode {episode_id!r}")
        minted = EpisodeKey(
            episode_id=episode_id, user=identity.user, persona=identity.persona, key=key
        )
        return _json(minted)

    async def episode_batch(request: Request, query: NoQuery) -> Response:
        body = await _body(request, EpisodeBatch, required=True)
        if isinstance(body, JSONResponse):
            return body
        try:  # every user known and room for every episode before anything is done
            service.check_episode_batch([item.users for item in body.open], len(set(body.close)))
        except KeyError as exc:
            return _error(400, "UNKNOWN_USER", f"no identity with user {exc.args[0]!r}")
        except OverflowError as exc:
            return _error(409, "TOO_MANY_EPISODES", str(exc))
        revoked: list[tuple[str, int]] = []
        not_found: list[str] = []
        for episode_id in body.close:
            count = service.close_episode(episode_id)
            if count is None:
                not_found.append(episode_id)
            else:
                revoked.append((episode_id, count))
        opened = []
        for item in body.open:
            episode_id, keys = service.open_episode(item.label, item.users)
            opened.append(EpisodeOpened(episode_id=episode_id, label=item.label, keys=keys))
        audits: list[AuditPage | None] = [None] * len(revoked)
        if body.audit and revoked:
            # the keys are revoked: no call of these episodes starts after this read
            audits = list(
                await closed_audit_pages(service.audit, [e for e, _ in revoked], body.audit)
            )
        closed = [
            EpisodeClosed(episode_id=e, revoked_keys=n, audit=page)
            for (e, n), page in zip(revoked, audits, strict=True)
        ]
        done = EpisodeBatchDone(closed=closed, not_found=not_found, opened=opened)
        return _json(done)  # a closed episode's ``audit`` is null unless asked for

    async def close_episode(request: Request, query: EpisodeCloseQuery) -> Response:
        episode_id = request.path_params["episode_id"]
        revoked = service.close_episode(episode_id)
        if revoked is None:
            return _error(404, "NOT_FOUND", f"no open episode {episode_id!r}")
        audit: AuditPage | None = None
        if query.audit:
            # the keys are revoked: no call of the episode starts after this read
            audit = (await closed_audit_pages(service.audit, [episode_id], query.audit))[0]
        closed = EpisodeClosed(episode_id=episode_id, revoked_keys=revoked, audit=audit)
        return _json(closed, exclude=None if query.audit else {"audit"})

    first = service.world.catalog.datasets[0] if service.world.catalog.datasets else None
    examples = {}
    if first is not None:
        examples["dataset_id"] = first.id
        if first.columns:
            examples["column_id"] = f"{first.id}.{first.columns[0].name}"
    if service.world.pages:
        examples["page_id"] = service.world.pages[0].id
    document = openapi_schema(examples, [i.user for i in service.auth.identities])

    async def openapi(request: Request, query: NoQuery) -> Response:
        return JSONResponse(document)

    return [
        route("/healthz", health, admin=False),
        route("/openapi.json", openapi, admin=False),
        route(f"{PREFIX}/openapi.json", openapi, admin=False),
        route(f"{PREFIX}/audit/events", audit_events, AuditQuery),
        route(f"{PREFIX}/knowledge/insights", insights, InsightQuery),
        route(f"{PREFIX}/knowledge/changesets", changesets, ChangesetQuery),
        route(f"{PREFIX}/knowledge/pages", pages),
        route(f"{PREFIX}/knowledge/pages/{{page_id}}", page),
        route(f"{PREFIX}/catalog/datasets/{{dataset_id}}", dataset),
        route(f"{PREFIX}/catalog/columns/{{column_id}}", column),
        route(f"{PREFIX}/state/reset", reset, method="POST"),
        route(f"{PREFIX}/episodes", open_episode, method="POST"),
        route(f"{PREFIX}/episodes/batch", episode_batch, method="POST"),
        route(f"{PREFIX}/episodes/{{episode_id}}/keys", episode_key, method="POST"),
        route(
            f"{PREFIX}/episodes/{{episode_id}}",
            close_episode,
            EpisodeCloseQuery,
            method="DELETE",
        ),
    ]


def _query_params(model: type[BaseModel]) -> list[dict[str, Any]]:
    """OpenAPI query parameters from a query model's JSON schema (one source of truth)."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    out = []
    for name, prop in schema.get("properties", {}).items():
        variants = prop.get("anyOf", [prop])
        concrete = [v for v in variants if v.get("type") != "null"]
        param_schema = {
            k: v for k, v in (concrete[0] if concrete else prop).items() if k not in ("title",)
        }
        out.append(
            {
                "name": name,
                "in": "query",
                "required": False,
                "schema": param_schema,
                "description": prop.get("description", ""),
            }
        )
    return out


def _p(name: str, example: str | None = None) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": "path", "required": True}
    param["schema"] = {"type": "string"}
    if example is not None:
        param["example"] = example
    return param


_ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
_BAD_QUERY = "INVALID_QUERY: an unknown, repeated or invalid parameter"


def _op(
    summary: str,
    model: type[BaseModel],
    params: list[dict[str, Any]] | None = None,
    errors: dict[str, str] | None = None,
    links: dict[str, Any] | None = None,
    secured: bool = True,
    body: type[BaseModel] | None = None,
) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    ok: dict[str, Any] = {"description": "OK", "content": {"application/json": {"schema": ref}}}
    if links:
        ok["links"] = links
    responses: dict[str, Any] = {"200": ok}
    documented = {"400": _BAD_QUERY, **(errors or {})}
    if secured:
        documented |= {"401": "no or unknown key", "403": "not an admin key"}
    for status, text in documented.items():
        responses[status] = {
            "description": text,
            "content": {"application/json": {"schema": _ERROR_REF}},
        }
    op: dict[str, Any] = {"summary": summary, "parameters": params or [], "responses": responses}
    if body is not None:
        schema = {"$ref": f"#/components/schemas/{body.__name__}"}
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
    if secured:
        op["security"] = [{"bearer": []}]
    return op


def _link(operation: str, parameters: dict[str, str], description: str) -> dict[str, Any]:
    return {"operationRef": operation, "parameters": parameters, "description": description}


def _ref(path: str, method: str = "get") -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def openapi_schema(
    examples: dict[str, str] | None = None, users: list[str] | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the admin API.

    ``examples`` (``dataset_id``, ``column_id``, ``page_id``) name real objects of the
    served world, so clients and fuzzers can reach the 200 answers of the path routes;
    ``users`` (the configured identities) are the values the episode routes accept.
    """
    ex = examples or {}
    models: list[type[BaseModel]] = [
        AuditPage,
        InsightList,
        ChangesetList,
        PageList,
        EffectiveDataset,
        EffectiveColumn,
        EffectivePage,
        ResetResult,
        Health,
        ErrorBody,
        EpisodeOpen,
        EpisodeOpened,
        EpisodeKeyRequest,
        EpisodeKey,
        EpisodeClosed,
        EpisodeBatch,
        EpisodeBatchDone,
    ]
    components: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
    components["EpisodeOpen"]["properties"]["users"]["uniqueItems"] = True
    if users:
        components["EpisodeOpen"]["properties"]["users"]["items"] = {"enum": users}
        components["EpisodeOpen"]["properties"]["users"]["maxItems"] = len(users)
        components["EpisodeKeyRequest"]["properties"]["user"] = {"enum": users}
    not_found = {"404": "NOT_FOUND"}
    events, insights = f"{PREFIX}/audit/events", f"{PREFIX}/knowledge/insights"
    changesets, pages = f"{PREFIX}/knowledge/changesets", f"{PREFIX}/knowledge/pages"
    page, reset = f"{PREFIX}/knowledge/pages/{{page_id}}", f"{PREFIX}/state/reset"
    dataset = f"{PREFIX}/catalog/datasets/{{dataset_id}}"
    column = f"{PREFIX}/catalog/columns/{{column_id}}"
    episodes = f"{PREFIX}/episodes"
    episode, episode_keys = f"{episodes}/{{episode_id}}", f"{episodes}/{{episode_id}}/keys"
    bad_body = {"400": "INVALID_BODY or UNKNOWN_USER"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "dabench platform admin API", "version": __version__},
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/healthz": {"get": _op("Health", Health, secured=False)},
            events: {
                "get": _op(
                    "Audit events",
                    AuditPage,
                    _query_params(AuditQuery),
                    links={
                        "SameSession": _link(
                            _ref(events),
                            {"session_id": "$response.body#/events/0/session_id"},
                            "the other events of the first event's session",
                        )
                    },
                )
            },
            insights: {
                "get": _op(
                    "Insights",
                    InsightList,
                    _query_params(InsightQuery),
                    links={
                        "Changesets": _link(
                            _ref(changesets),
                            {"insight_id": "$response.body#/insights/0/id"},
                            "the changesets of the first insight",
                        )
                    },
                )
            },
            changesets: {"get": _op("Changesets", ChangesetList, _query_params(ChangesetQuery))},
            pages: {
                "get": _op(
                    "Knowledge pages",
                    PageList,
                    links={
                        "Page": _link(
                            _ref(page),
                            {"page_id": "$response.body#/pages/0/id"},
                            "the first page",
                        )
                    },
                )
            },
            page: {
                "get": _op(
                    "Effective knowledge page",
                    EffectivePage,
                    [_p("page_id", ex.get("page_id"))],
                    not_found,
                )
            },
            dataset: {
                "get": _op(
                    "Effective dataset",
                    EffectiveDataset,
                    [_p("dataset_id", ex.get("dataset_id"))],
                    not_found,
                    links={
                        "Dataset": _link(
                            _ref(dataset),
                            {"dataset_id": "$response.body#/dataset/id"},
                            "the same dataset again",
                        )
                    },
                )
            },
            column: {
                "get": _op(
                    "Effective column",
                    EffectiveColumn,
                    [_p("column_id", ex.get("column_id"))],
                    not_found,
                    links={
                        "Dataset": _link(
                            _ref(dataset),
                            {"dataset_id": "$response.body#/dataset"},
                            "the column's dataset",
                        )
                    },
                )
            },
            episodes: {
                "post": _op(
                    "Open an episode: one key per user, bound to the episode",
                    EpisodeOpened,
                    errors={**bad_body, "409": "TOO_MANY_EPISODES"},
                    body=EpisodeOpen,
                    links={
                        "Close": _link(
                            _ref(episode, "delete"),
                            {"episode_id": "$response.body#/episode_id"},
                            "revoke the episode's keys",
                        ),
                        "Key": _link(
                            _ref(episode_keys, "post"),
                            {"episode_id": "$response.body#/episode_id"},
                            "another identity's key for the episode",
                        ),
                    },
                )
            },
            f"{episodes}/batch": {
                "post": _op(
                    "Close episodes, then open episodes, in one request",
                    EpisodeBatchDone,
                    errors={**bad_body, "409": "TOO_MANY_EPISODES"},
                    body=EpisodeBatch,
                )
            },
            episode_keys: {
                "post": _op(
                    "Mint another identity's key for an open episode",
                    EpisodeKey,
                    [_p("episode_id")],
                    {**bad_body, **not_found},
                    body=EpisodeKeyRequest,
                )
            },
            episode: {
                "delete": _op(
                    "Close an episode: revoke its keys (and read its audit events)",
                    EpisodeClosed,
                    [_p("episode_id"), *_query_params(EpisodeCloseQuery)],
                    not_found,
                )
            },
            reset: {
                "post": _op(
                    "Reset platform state",
                    ResetResult,
                    links={
                        "Insights": _link(_ref(insights), {}, "insights after the reset (none)")
                    },
                )
            },
        },
    }
