"""Elasticsearch plumbing shared by the world export and the results store: the client
(the ``elastic`` extra), API error descriptions and bulk writes with per-item errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from dabench.errors import DabenchError, UserInputError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch


class BulkWriteError(DabenchError):
    """Elasticsearch refused documents of a bulk write (the message names the index, how many
    were refused, and the first one's id and cause)."""


MISSING_CLIENT = "the elasticsearch client is not installed: pip install 'dabench[elastic]'"


def require_elasticsearch() -> None:
    """Raise a one-line :class:`UserInputError` naming the ``elastic`` extra when the
    ``elasticsearch`` client is not installed."""
    try:
        import elastic_transport  # noqa: F401
        import elasticsearch  # noqa: F401
    except ImportError as exc:
        raise UserInputError(MISSING_CLIENT) from exc


def connect_elasticsearch(
    url: str, api_key: str | None, *, verify_certs: bool = True, timeout_s: float = 60.0
) -> Elasticsearch:
    """An ``elasticsearch`` client (the ``elastic`` extra) for ``url``."""
    require_elasticsearch()
    from elasticsearch import Elasticsearch

    return Elasticsearch(
        url, api_key=api_key or None, verify_certs=verify_certs, request_timeout=timeout_s
    )


def describe_api_error(exc: Any) -> str:
    """``HTTP <status> <error type>: <reason>`` of an ``elasticsearch.ApiError``."""
    status = getattr(exc, "status", None) or getattr(getattr(exc, "meta", None), "status", "?")
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return f"HTTP {status} {error.get('type', 'error')}: {error.get('reason', '')}"
    if status == 401:
        return "HTTP 401: authentication failed (check --api-key / ES_API_KEY)"
    if status == 403:
        return "HTTP 403: the API key may not create indices or write documents"
    return f"HTTP {status}: {error or body or exc}"


def bulk_write(
    client: Elasticsearch,
    index: str,
    docs: Iterable[tuple[str, dict[str, Any]]],
    *,
    chunk_size: int = 500,
    on_written: Callable[[int], None] | None = None,
    error: type[DabenchError] = BulkWriteError,
) -> int:
    """Index ``(id, source)`` documents into ``index`` with the bulk API (an existing id is
    overwritten, so a repeated write is idempotent), then refresh it; the count written.
    Refused documents are collected item by item and raised together as ``error``."""
    from elasticsearch import helpers

    actions = (
        {"_op_type": "index", "_index": index, "_id": doc_id, "_source": source}
        for doc_id, source in docs
    )
    written, errors = 0, []
    for ok, item in helpers.streaming_bulk(
        client, actions, chunk_size=chunk_size, raise_on_error=False,
        raise_on_exception=True, max_retries=2,
    ):  # fmt: skip
        if ok:
            written += 1
        else:
            errors.append(item)
        if on_written is not None and written % chunk_size == 0:
            on_written(written)
    if on_written is not None:
        on_written(written)
    if errors:
        first = next(iter(errors[0].values()), errors[0])
        raise error(
            f"index {index}: {len(errors)} document(s) refused; first: "
            f"{first.get('_id') if isinstance(first, dict) else ''} "
            f"{first.get('error') if isinstance(first, dict) else first}"
        )
    client.indices.refresh(index=index)
    return written
