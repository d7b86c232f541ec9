"""``report.md``: the report as markdown tables (for docs pages and pull requests)."""

from __future__ import annotations

from dabench.report.context import ReportContext
from dabench.report.render import environment


def render_markdown(ctx: ReportContext) -> str:
    """Render ``report.md`` from a report context."""
    breakdowns = [("overall", "all")] + [("suite", v) for v in ctx.values["suite"]]
    template = environment().get_template("report.md.j2")
    return template.render(ctx=ctx, delta_breakdowns=breakdowns)
