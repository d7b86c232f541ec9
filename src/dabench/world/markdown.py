"""Markdown tables of a world's datasets, traps or hidden rules, and policies (``dabench world
info --markdown``), for a built world or an external one.

docs/world.md embeds the dataset and trap tables for seed 930, scale 1.
"""

from __future__ import annotations

from dabench.world.load import World
from dabench.world.model import Trap
from dabench.world.policy_data import DataPolicy
from dabench.world.source import HiddenRule, OpenWorld


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def datasets_table(world: World | OpenWorld) -> str:
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


def traps_table(world: World | OpenWorld) -> str:
    """One row per planted trap of a built world: id, control or hidden, question, both
    answers, fact locations."""
    lines = [
        "| trap | kind | question | correct | naive | fact lives in |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for t in world.traps:
        if not isinstance(t, Trap):
            continue
        locations = ", ".join(f"`{loc}`" for loc in t.fact_locations)
        lines.append(
            f"| `{t.id}` | {'control' if t.control else 'hidden'} | {_cell(t.question)} | "
            f"{t.correct_answer:,.2f} | "
            f"{t.naive_answer:,.2f} | {locations} |"
        )
    return "\n".join(lines) + "\n"


def rules_table(rules: list[HiddenRule]) -> str:
    """One row per hidden rule of an external world: id, control or hidden, kind, trap class,
    deciding fact, where it is stated."""
    lines = [
        "| rule | kind | class | deciding fact | stated in |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rules:
        locations = ", ".join(f"`{loc}`" for loc in r.fact_locations)
        kind = f"{'control' if r.control else 'hidden'} ({r.kind})"
        lines.append(
            f"| `{r.id}` | {kind} | `{r.trap_class}` | {_cell(r.deciding_fact)} | {locations} |"
        )
    return "\n".join(lines) + "\n"


def policies_table(policies: list[DataPolicy]) -> str:
    """One row per policy (``policies.yaml``): id, title, page, rule, careless readings."""
    lines = [
        "| policy | title | page | rule | careless readings |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for p in policies:
        lines.append(
            f"| `{p.id}` | {_cell(p.title)} | `{p.page}` | {_cell(p.rule)} | {len(p.ignored)} |"
        )
    return "\n".join(lines) + "\n"
