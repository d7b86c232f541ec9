"""Platform profiles: which tools exist, enrichment, the search gate, memory, personas.

A profile is a YAML file validated into :class:`Profile` (unknown keys are rejected). The
four reference profiles ``a0``..``a3`` ship in ``dabench/platform/profiles/``; users can
write their own and pass the path instead of a name.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dabench import safe_yaml
from dabench.defaults import DEFAULT_SQL_WORKERS as DEFAULT_SQL_WORKERS
from dabench.errors import UserInputError
from dabench.fields import Name

ToolName = Literal[
    "platform_info",
    "sql_query",
    "describe_table",
    "list_tables",
    "search",
    "fetch",
    "memory_capture",
    "memory_manage",
    "apply_knowledge",
]
"""Every tool the reference platform implements."""

ALL_TOOLS: tuple[str, ...] = get_args(ToolName)
"""Every tool name, in the order of :data:`ToolName`."""

SearchKind = Literal["dataset", "column", "glossary", "knowledge_page", "curated_query", "memory"]
"""What ``search`` can rank."""

SearchRanking = Literal["bm25", "embedding", "hybrid"]
"""How ``search`` orders results (see :mod:`dabench.platform.search.ranking`)."""

EmbeddingModelName = Literal["wordllama-l2-supercat-256", "all-minilm-l6-v2"]
"""The embedding models ``search`` can rank with (see :mod:`dabench.platform.search.embedding`)."""

DEFAULT_EMBEDDING_MODEL: EmbeddingModelName = "wordllama-l2-supercat-256"
"""The model of a profile that names none."""

MEMORY_TOOLS = frozenset({"memory_capture", "memory_manage", "apply_knowledge"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnrichmentSettings(_Strict):
    """Semantic context attached to describe_table, list_tables and sql_query."""

    enabled: bool = False
    dedupe: bool = True
    """Within a session, abbreviate a block that was already delivered."""


class GateSettings(_Strict):
    """The search-first gate."""

    search_first: bool = False
    """Refuse ``sql_query`` with ``SEARCH_REQUIRED`` until the session has called ``search``."""


class SearchSettings(_Strict):
    """What ``search`` indexes."""

    kinds: list[SearchKind] = Field(default_factory=list)
    default_limit: int = Field(default=10, ge=1, le=100)
    ranking: SearchRanking = "bm25"
    """Result order: ``bm25`` (lexical), ``embedding`` (cosine similarity of text embeddings
    from :attr:`embedding_model`) or ``hybrid`` (reciprocal rank fusion of both); the last
    two need that model's extra. See :mod:`dabench.platform.search.ranking`."""
    embedding_model: EmbeddingModelName = DEFAULT_EMBEDDING_MODEL
    """The model of the ``embedding`` and ``hybrid`` rankings: ``wordllama-l2-supercat-256``
    (static, 256 dims, extra ``embeddings``) or ``all-minilm-l6-v2`` (sentence-transformers
    MiniLM, 384 dims, extra ``embeddings-minilm`` on a CPU torch). Naming a non-default model
    with ``ranking: bm25`` is an error, since bm25 would ignore it."""

    @model_validator(mode="after")
    def _model_used(self) -> SearchSettings:
        if self.ranking == "bm25" and self.embedding_model != DEFAULT_EMBEDDING_MODEL:
            raise ValueError(
                f"embedding_model {self.embedding_model!r} is ignored by ranking 'bm25': "
                "set ranking to 'embedding' or 'hybrid', or drop embedding_model"
            )
        return self


class MemorySettings(_Strict):
    """The memory -> insight -> knowledge lifecycle."""

    enabled: bool = False
    in_enrichment: bool = True
    """Attach the caller's visible memories to enrichment blocks of related datasets."""
    supersede_threshold: float = Field(default=0.6, gt=0.0, le=1.0)
    """Token-set Jaccard similarity at or above which a new memory supersedes an old one."""


DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""Default byte cap of one ``sql_query`` result's rows (1 MiB of JSON)."""

DEFAULT_PER_SESSION_QUERIES = 1
DEFAULT_QUEUE_TIMEOUT_S = 60.0
DEFAULT_MEMORY_LIMIT = "2GiB"
"""Default DuckDB ``memory_limit`` of the warehouse: a few GiB of a shared 24 GiB machine."""

DEFAULT_MAX_TEMP_DIRECTORY_SIZE = "4GiB"
"""Default cap of what DuckDB may spill to its temp directory."""

_SIZE_PATTERN = r"^[0-9]+(\.[0-9]+)?\s*([KMGT]i?B|B)$"


class SqlSettings(_Strict):
    """Bounds of ``sql_query`` and of the warehouse's DuckDB."""

    row_limit_default: int = Field(default=1000, ge=1)
    row_limit_max: int = Field(default=10000, ge=1)
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    max_sql_chars: int = Field(default=20000, ge=16)
    max_result_bytes: int = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1024, le=256 * 1024 * 1024)
    """Byte cap of a result's rows (their JSON size); ``truncated`` is set when it cuts."""
    memory_limit: str = Field(default=DEFAULT_MEMORY_LIMIT, pattern=_SIZE_PATTERN)
    """What the DuckDB SQL workers together may grow beyond their start-up size (``512MB``,
    ``2GiB`` ...): each worker's share is its memory budget, half of it DuckDB's own
    ``memory_limit`` (larger operators spill to :attr:`temp_directory`)."""
    temp_directory: str | None = None
    """Where DuckDB spills; default ``<state-dir>/duckdb-tmp``."""
    max_temp_directory_size: str = Field(
        default=DEFAULT_MAX_TEMP_DIRECTORY_SIZE, pattern=_SIZE_PATTERN
    )
    """Cap of the spill files; a query needing more fails with ``SQL_ERROR``."""
    workers: int = Field(default=DEFAULT_SQL_WORKERS, ge=1, le=64)
    """Queries that run at once: DuckDB worker processes at most, started on demand
    (``memory_limit`` is split among them); on PostgreSQL, pooled connections."""
    per_user_queries: int | None = Field(default=None, ge=1)
    """Queries one identity may run at once (default: all slots but one, at least one), so
    another identity always finds a free slot."""
    per_session_queries: int = Field(default=DEFAULT_PER_SESSION_QUERIES, ge=1)
    """Queries one session may run at once; more wait in its identity's queue."""
    queue_timeout_s: float = Field(default=DEFAULT_QUEUE_TIMEOUT_S, gt=0, le=3600)
    """How long a query may wait for a slot before it is refused with ``SQL_BUSY``."""


class Persona(_Strict):
    """Tool allow/deny lists with ``fnmatch`` wildcards; deny wins."""

    allow: list[str] = Field(default_factory=lambda: ["*"])
    deny: list[str] = Field(default_factory=list)

    def permits(self, tool: str) -> bool:
        """Whether this persona may see and call ``tool``."""
        if any(fnmatch.fnmatchcase(tool, pat) for pat in self.deny):
            return False
        return any(fnmatch.fnmatchcase(tool, pat) for pat in self.allow)


DEFAULT_PERSONAS: dict[str, Persona] = {
    "analyst": Persona(allow=["*"], deny=["apply_knowledge"]),
    "reviewer": Persona(allow=["*"]),
}
"""Personas of a profile that defines none: the same as the shipped profiles'."""


HASH_NEUTRAL_DEFAULTS: dict[tuple[str, str], object] = {
    ("search", "ranking"): "bm25",
    ("search", "embedding_model"): DEFAULT_EMBEDDING_MODEL,
    ("sql", "max_result_bytes"): DEFAULT_MAX_RESULT_BYTES,
    ("sql", "memory_limit"): DEFAULT_MEMORY_LIMIT,
    ("sql", "temp_directory"): None,
    ("sql", "max_temp_directory_size"): DEFAULT_MAX_TEMP_DIRECTORY_SIZE,
    ("sql", "workers"): DEFAULT_SQL_WORKERS,
    ("sql", "per_user_queries"): None,
    ("sql", "per_session_queries"): DEFAULT_PER_SESSION_QUERIES,
    ("sql", "queue_timeout_s"): DEFAULT_QUEUE_TIMEOUT_S,
}
"""``(section, field) -> default`` left out of :meth:`Profile.canonical_json` at that default."""


class Profile(_Strict):
    """One platform configuration (a0..a3 or a user's own file)."""

    name: Name
    description: str = ""
    tools: list[ToolName]
    enrichment: EnrichmentSettings = EnrichmentSettings()
    gate: GateSettings = GateSettings()
    search: SearchSettings = SearchSettings()
    memory: MemorySettings = MemorySettings()
    sql: SqlSettings = SqlSettings()
    personas: dict[Name, Persona] = Field(default_factory=lambda: dict(DEFAULT_PERSONAS))
    default_persona: str = "analyst"

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        tools = set(self.tools)
        if "platform_info" not in tools:
            raise ValueError("tools must include platform_info (it hands out session handles)")
        if self.gate.search_first and "search" not in tools:
            raise ValueError("gate.search_first needs the search tool")
        if ("search" in tools) != bool(self.search.kinds):
            raise ValueError("search.kinds must be non-empty exactly when the search tool is on")
        if "fetch" in tools and "search" not in tools:
            raise ValueError("fetch needs the search tool")
        if tools & MEMORY_TOOLS and not self.memory.enabled:
            raise ValueError("memory tools need memory.enabled: true")
        if self.memory.enabled and "memory_capture" not in tools:
            raise ValueError("memory.enabled needs the memory_capture tool")
        if "memory" in self.search.kinds and not self.memory.enabled:
            raise ValueError("search kind 'memory' needs memory.enabled: true")
        if self.sql.row_limit_default > self.sql.row_limit_max:
            raise ValueError("sql.row_limit_default exceeds sql.row_limit_max")
        if self.default_persona not in self.personas:
            raise ValueError(f"default_persona {self.default_persona!r} is not in personas")
        return self

    def tools_for(self, persona: str) -> list[str]:
        """The profile's tools visible to ``persona``, in canonical order."""
        rule = self.personas.get(persona)
        if rule is None:
            return []
        return [t for t in ALL_TOOLS if t in self.tools and rule.permits(t)]

    def canonical_json(self) -> str:
        """Canonical JSON of the profile (sorted keys, no whitespace).

        Fields added after a profile format was in use are left out while they hold their
        default (:data:`HASH_NEUTRAL_DEFAULTS`), so existing profiles keep their hashes.
        """
        data = self.model_dump(mode="json")
        for (section, key), default in HASH_NEUTRAL_DEFAULTS.items():
            if data[section].get(key) == default:
                del data[section][key]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @property
    def profile_hash(self) -> str:
        """SHA-256 hex of :meth:`canonical_json`."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()


SHIPPED_PROFILES: tuple[str, ...] = ("a0", "a1", "a2", "a3")


def _format_validation_error(source: str, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "<root>"
        parts.append(f"{loc}: {e['msg']}")
    return f"{source}: invalid profile: " + "; ".join(parts)


def parse_profile(text: str, source: str) -> Profile:
    """Parse and validate profile YAML ``text``; ``source`` names it in errors."""
    data = safe_yaml.load_text(text, source)  # size, UTF-8, alias and depth limits; FILE:LINE
    if not isinstance(data, dict):
        raise UserInputError(f"{source}: a profile must be a YAML mapping")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise UserInputError(_format_validation_error(source, exc)) from exc


def load_profile(name_or_path: str) -> Profile:
    """Load a shipped profile by name (``a0``..``a3``) or a YAML file by path."""
    if name_or_path in SHIPPED_PROFILES:
        res = resources.files("dabench.platform").joinpath("profiles", f"{name_or_path}.yaml")
        return parse_profile(res.read_text(encoding="utf-8"), f"profiles/{name_or_path}.yaml")
    path = Path(name_or_path)
    if not path.is_file():
        raise UserInputError(
            f"profile {name_or_path!r}: not a shipped profile ({', '.join(SHIPPED_PROFILES)}) "
            "and no such file"
        )
    return parse_profile(safe_yaml.read_text(path), str(path))
