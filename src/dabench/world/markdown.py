"""Markdown tables of a world's datasets and traps (``dabench world info --markdown``).

docs/world.md embeds their output for seed 930, scale 1.
"""

from __future__ import annotations

from dabench.world.load import World


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def datasets_table(world: World) -> str:
    """One row per dataset: id, kind, domain, rows, freshness, description."""
    lines = [
        "| id | kind | domain | rows | last loaded | description |",
        "| --- | --- | --- | ---: | --- | --- |",
    ]
    for d in world.catalog.datasets:
        desc = _cell(d.description)
        if d.deprecated:
            desc += f" **Deprecated: use `{d.replaced_by}`.**"
        lines.append(
            f"| `{d.id}` | {d.kind} | {d.domain} | {d.row_count:,} | {d.last_loaded} | {desc} |"
        )
    return "\n".join(lines) + "\n"


def traps_table(world: World) -> str:
    """One row per trap: id, control or hidden, question, both answers, fact locations."""
    lines = [
        "| trap | kind | question | correct | naive | fact lives in |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for t in world.traps:
        locations = ", ".join(f"`{loc}`" for loc in t.fact_locations)
        lines.append(
            f"| `{t.id}` | {'control' if t.control else 'hidden'} | {_cell(t.question)} | "
            f"{t.correct_answer:,.2f} | "
            f"{t.naive_answer:,.2f} | {locations} |"
        )
    return "\n".join(lines) + "\n"
