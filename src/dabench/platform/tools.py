"""Tool argument models, descriptions and the JSON schemas the MCP server lists.

Every tool except ``platform_info`` takes a required ``session_id`` string; it is added
to each schema here and taken out of the arguments before the model is validated (it may
also arrive in the ``X-DPS-Session`` HTTP header).
"""

from __future__ import annotations

import copy
import functools
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from dabench.platform.profile import SearchKind
from dabench.platform.state import InsightType, Sink

MAX_TEXT = 20000
"""Upper bound of any free-text argument (characters)."""


def _whole_float_to_int(value: Any) -> Any:
    """A float with no fractional part (``1.0``) as the integer it is; anything else as is
    (the strict integer check then refuses ``1.5``, ``true`` and ``"5"``)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


WholeInt = Annotated[int, BeforeValidator(_whole_float_to_int)]
"""The integer type of every tool argument: JSON Schema's ``"type": "integer"`` accepts
``1.0``, and Python's ``json`` and many LLM frameworks send whole numbers that way, so a
whole-number float is taken as its integer; booleans, strings and fractional floats are
still refused (strict mode)."""


def _catalog_ids(value: Any) -> Any:
    """Related ids as the catalog writes them: the ``dataset:`` / ``column:`` prefix that
    ``search`` puts on its result ids is dropped (``dataset:sales.orders`` is
    ``sales.orders``)."""
    if isinstance(value, list):
        prefixes = ("dataset:", "column:")
        return [
            v.split(":", 1)[1] if isinstance(v, str) and v.startswith(prefixes) else v
            for v in value
        ]
    return value


RelatedIds = Annotated[list[str], BeforeValidator(_catalog_ids)]
"""Dataset or column ids, with or without the prefix of a ``search`` result id."""


class _Args(BaseModel):
    """Arguments as their schema states them: no unknown keys, and strict types (``true``
    or ``"5"`` is no integer, ``5`` no string), so a schema violation is
    ``INVALID_ARGUMENTS`` naming the field instead of a silent coercion. Integer fields are
    :data:`WholeInt` (``1.0`` is the integer 1, as JSON Schema has it)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _ActionArgs(_Args):
    """Arguments of a tool with an ``action``: some actions need a field (any one of
    :attr:`REQUIRED`'s names), refused by name when it is missing."""

    REQUIRED: ClassVar[dict[str, tuple[str, ...]]] = {}

    @model_validator(mode="after")
    def _required_for_action(self) -> Self:
        action = getattr(self, "action", None)
        needed = self.REQUIRED.get(action) if isinstance(action, str) else None
        if needed and all(getattr(self, name) is None for name in needed):
            raise ValueError(f"{' or '.join(needed)} is required when action is {action!r}")
        return self


class PlatformInfoArgs(_Args):
    """No arguments."""


class SqlQueryArgs(_Args):
    sql: str = Field(max_length=200000, description="One read-only SELECT or WITH statement.")
    limit: WholeInt | None = Field(
        default=None, ge=1, description="Maximum rows to return (default 1000, capped)."
    )


class DescribeTableArgs(_Args):
    table: str = Field(
        min_length=1, max_length=256, description="Fully qualified table, e.g. sales.orders."
    )


class ListTablesArgs(_Args):
    pattern: str | None = Field(
        default=None,
        max_length=256,
        description="Optional filter: a glob (sales.*) or a substring of the table name.",
    )


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=2000, description="What you are looking for.")
    kinds: list[SearchKind] | None = Field(
        default=None, max_length=6, description="Restrict to these result kinds."
    )
    limit: WholeInt = Field(default=10, ge=1, le=50, description="Maximum results.")


class FetchArgs(_Args):
    id: str = Field(
        min_length=1, max_length=512, description="A search result id, e.g. page:fiscal-calendar."
    )


class MemoryCaptureArgs(_Args):
    type: InsightType = Field(default="fact", description="What kind of insight this is.")
    content: str = Field(min_length=1, max_length=4000, description="The insight, in words.")
    related_ids: RelatedIds = Field(
        default_factory=list,
        max_length=20,
        description="Dataset or column ids it is about (sales.orders, sales.orders.amount; a "
        "search result's dataset:/column: id works too).",
    )
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    supersedes: str | None = Field(
        default=None, max_length=64, description="Id of an insight this one corrects."
    )


class MemoryManageArgs(_ActionArgs):
    REQUIRED: ClassVar[dict[str, tuple[str, ...]]] = {
        "update": ("insight_id",),
        "forget": ("insight_id",),
    }
    action: Literal["list", "update", "forget"]
    insight_id: str | None = Field(default=None, max_length=64)
    content: str | None = Field(default=None, min_length=1, max_length=4000)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    related_ids: RelatedIds | None = Field(default=None, max_length=20)
    status: Literal["pending", "approved", "rejected", "superseded", "forgotten"] | None = None


class ApplyKnowledgeArgs(_ActionArgs):
    REQUIRED: ClassVar[dict[str, tuple[str, ...]]] = {
        "apply": ("insight_id",),
        "reject": ("insight_id",),
        "rollback": ("changeset_id", "insight_id"),
    }
    action: Literal["list", "apply", "reject", "rollback"]
    insight_id: str | None = Field(default=None, max_length=64)
    changeset_id: str | None = Field(default=None, max_length=64)
    sink: Sink | None = None
    target: str | None = Field(
        default=None,
        max_length=256,
        description="Dataset or column id (sink=description) or a page id (sink=knowledge_page).",
    )
    title: str | None = Field(
        default=None, max_length=200, description="Title of a new knowledge page."
    )


TOOL_ARGS: dict[str, type[_Args]] = {
    "platform_info": PlatformInfoArgs,
    "sql_query": SqlQueryArgs,
    "describe_table": DescribeTableArgs,
    "list_tables": ListTablesArgs,
    "search": SearchArgs,
    "fetch": FetchArgs,
    "memory_capture": MemoryCaptureArgs,
    "memory_manage": MemoryManageArgs,
    "apply_knowledge": ApplyKnowledgeArgs,
}

TOOL_DESCRIPTIONS: dict[str, str] = {
    "platform_info": (
        "Platform version and profile, and a new session handle (session_id, dps_...). "
        "Call it first; pass session_id to every other tool."
    ),
    "sql_query": (
        "Run one read-only SQL query ({dialect} dialect) on the warehouse. Returns columns, rows "
        "(capped in rows and bytes; truncated=true when more exist) and semantic context for "
        "referenced tables."
    ),
    "describe_table": "Columns and types of a table, with its semantic context when available.",
    "list_tables": "List warehouse tables, optionally filtered by a glob or substring.",
    "search": (
        "Search datasets, columns, glossary terms, knowledge pages, curated queries and "
        "memories. Returns ranked ids to pass to fetch."
    ),
    "fetch": "The full content of a search result by id.",
    "memory_capture": (
        "Remember an insight (a fact, caveat, correction...) for later sessions. A near-"
        "duplicate of an existing insight supersedes it."
    ),
    "memory_manage": "List, update or forget your own insights.",
    "apply_knowledge": (
        "Review insights: list pending ones, apply one to a dataset/column description or a "
        "knowledge page (a changeset), reject one, or roll a changeset back."
    ),
}

SESSION_PROPERTY: dict[str, Any] = {
    "type": "string",
    "description": "The session handle from platform_info (dps_...).",
}


@functools.cache
def input_schema(tool: str) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (with ``session_id`` where required).

    Cached: callers must not mutate the returned dict.
    """
    schema = TOOL_ARGS[tool].model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    if tool != "platform_info":
        schema["properties"] = {"session_id": SESSION_PROPERTY, **schema["properties"]}
        schema["required"] = ["session_id", *schema.get("required", [])]
    return schema


KIND_NAMES = {
    "dataset": "datasets",
    "column": "columns",
    "glossary": "glossary terms",
    "knowledge_page": "knowledge pages",
    "curated_query": "curated queries",
    "memory": "memories",
}
"""How each search kind is named in the search tool's description."""

READ_ONLY_TOOLS = frozenset(
    {"platform_info", "sql_query", "describe_table", "list_tables", "search", "fetch"}
)
"""Tools that change nothing a user can see (they only open sessions and write audit rows)."""
DESTRUCTIVE_TOOLS = frozenset({"memory_manage", "apply_knowledge"})
"""Tools that can forget, reject or roll back what is stored."""


def tool_annotations(tool: str) -> dict[str, bool]:
    """MCP tool annotations (``readOnlyHint`` ...) of a tool, as keyword arguments of
    ``mcp.types.ToolAnnotations``; every tool works on the platform's own world only."""
    read_only = tool in READ_ONLY_TOOLS
    return {
        "read_only_hint": read_only,
        "destructive_hint": tool in DESTRUCTIVE_TOOLS,
        "idempotent_hint": read_only and tool != "platform_info",
        "open_world_hint": False,
    }


def profile_tool(
    tool: str, *, max_sql_chars: int, row_limit_default: int, row_limit_max: int,
    search_kinds: list[str], search_first: bool, sql_dialect: str = "DuckDB",
) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """A tool's description and input schema as one profile enforces them: the SQL length and
    row limits it applies, the search kinds it offers, its search-first gate, and the SQL
    dialect of the warehouse behind ``sql_query`` (``DuckDB`` or ``PostgreSQL``)."""
    description = TOOL_DESCRIPTIONS[tool]
    schema = input_schema(tool)
    if tool == "sql_query":
        description = description.replace("{dialect}", sql_dialect)
        schema = copy.deepcopy(schema)
        schema["properties"]["sql"]["maxLength"] = max_sql_chars
        limit = schema["properties"]["limit"]
        branch = next((b for b in limit.get("anyOf", []) if b.get("type") == "integer"), limit)
        branch["maximum"] = row_limit_max
        schema["properties"]["limit"]["description"] = (
            f"Maximum rows to return (default {row_limit_default}, at most {row_limit_max})."
        )
        if search_first:
            description += (
                " This profile requires a search first: until the session has called search, "
                "sql_query is refused with SEARCH_REQUIRED."
            )
    elif tool == "search":
        schema = copy.deepcopy(schema)
        kinds = schema["properties"]["kinds"]
        item = kinds["anyOf"][0]["items"] if "anyOf" in kinds else kinds["items"]
        item.pop("$ref", None)
        item.update({"type": "string", "enum": list(search_kinds)})
        array = kinds["anyOf"][0] if "anyOf" in kinds else kinds
        array["maxItems"] = len(search_kinds)
        schema.pop("$defs", None)
        names = ", ".join(KIND_NAMES.get(k, k) for k in search_kinds)
        description = f"Search {names}. Returns ranked ids to pass to fetch."
        if search_first:
            description += " Calling it opens this session's search-first gate for sql_query."
    return description, schema
