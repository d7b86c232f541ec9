"""The jinja environment shared by the markdown and HTML reports."""

from __future__ import annotations

from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined

from dabench.report.context import TTFT_CAPTION, score_help, score_label
from dabench.report.fmt import FILTERS
from dabench.report.summary import headline_accuracy
from dabench.stats.model import FAILURE_CLASSES, headline_ok


@cache
def environment() -> Environment:
    """Templates from ``dabench/report/templates`` with the report filters."""
    env = Environment(
        loader=PackageLoader("dabench.report", "templates"),
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters.update(FILTERS)
    env.filters["headline_accuracy"] = headline_accuracy
    env.filters["score_label"] = score_label
    env.filters["score_help"] = score_help
    env.globals["failure_classes"] = FAILURE_CLASSES
    env.globals["headline_ok"] = headline_ok
    env.globals["ttft_caption"] = TTFT_CAPTION
    return env


def static_text(name: str) -> str:
    """A file of ``dabench/report/static`` as text (chart library, CSS, JS)."""
    return resources.files("dabench.report").joinpath("static", name).read_text(encoding="utf-8")
