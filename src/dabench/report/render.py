"""The jinja environment shared by the markdown and HTML reports."""

from __future__ import annotations

import contextlib
from functools import cache
from importlib import resources

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket

from dabench import __version__
from dabench.cachedir import cache_root
from dabench.report.context import TTFT_CAPTION, score_help, score_label
from dabench.report.fmt import FILTERS
from dabench.report.summary import headline_accuracy
from dabench.stats.model import FAILURE_CLASSES, headline_ok


class _TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept in the dabench cache, so a report does not compile them again
    (jinja checks each against its template's source); a cache it cannot write is skipped."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _template_cache() -> _TemplateCache | None:
    folder = cache_root() / "templates" / f"dabench-{__version__}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _TemplateCache(str(folder))


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
        bytecode_cache=_template_cache(),
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
