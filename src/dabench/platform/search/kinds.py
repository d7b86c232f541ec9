"""The kinds of searchable documents and their id prefixes (``page:revenue-policy``); no
search machinery imported (the platform's tools check a prefix without building an index)."""

KIND_PREFIX = {
    "dataset": "dataset",
    "column": "column",
    "glossary": "glossary",
    "knowledge_page": "page",
    "curated_query": "query",
    "memory": "memory",
}
"""Document kind -> the prefix of its ids."""
PREFIX_KIND = {v: k for k, v in KIND_PREFIX.items()}
"""Id prefix -> document kind."""
