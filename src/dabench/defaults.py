"""Defaults that the CLI's help shows, kept in a module with no imports so that
``dabench <command> --help`` does not load the package each default belongs to.

Each owning module re-exports its own (``dabench.stats.bootstrap.DEFAULT_SEED``...).
"""

DEFAULT_SEED = 20240501
"""Bootstrap seed of the statistics."""
DEFAULT_RESAMPLES = 5000
"""Bootstrap resamples of the statistics."""
MAX_TRANSCRIPTS = 5000
"""Default number of episodes whose transcript the HTML report embeds."""
DEFAULT_TOOL_OUTPUT_CHARS = 6000
"""Tool outputs shown to the judge are truncated to this many characters."""
DEFAULT_RUBRIC_VERSION = "v2"
"""The judge rubric used when none is named."""
DEFAULT_STORE = "duckdb:runs/results.duckdb"
"""The results store used when none is named."""
DEFAULT_SQL_THREADS = 1
"""DuckDB threads per query. One: a tool call's query runs on its own worker thread, so
concurrent sessions already run in parallel, and for the small queries agents send, waking
DuckDB's pool costs more than it saves (``benchmarks/platform_roundtrip.py``)."""
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
"""URL schemes of a PostgreSQL DSN."""

DEFAULT_SQL_WORKERS = 4
"""Queries that run at once (DuckDB worker processes, or PostgreSQL connections)."""
