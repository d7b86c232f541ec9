"""``dabench providers ...``: list kinds, show the price table, check one provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dabench.listing import FORMAT_OPTION, Column, ListFormat, emit_rows, stdout_console

app = typer.Typer(no_args_is_help=True, add_completion=False)

_NOTES = {
    "anthropic": "Messages API, prompt caching",
    "fake": "scripted, no network",
}


@app.command("kinds")
def kinds_cmd(fmt: ListFormat = FORMAT_OPTION) -> None:
    """List the provider kinds with their default base URL and key variable."""
    from dabench.providers.builtin import OPENAI_COMPAT_KINDS
    from dabench.providers.registry import provider_kinds

    rows: list[dict[str, Any]] = []
    for kind in provider_kinds():
        compat = OPENAI_COMPAT_KINDS.get(kind)
        if compat is None:
            key = "ANTHROPIC_API_KEY" if kind == "anthropic" else ""
            url = "SDK default" if key else ""
            rows.append({"kind": kind, "base_url": url, "api_key": key, "notes": _NOTES.get(kind)})
            continue
        key = compat.key_env or "-"
        if not compat.key_required and compat.key_env:
            key += " (optional)"
        url = compat.base_url or ("required" if compat.needs_base_url else "SDK default")
        rows.append({"kind": kind, "base_url": url, "api_key": key, "notes": "chat completions"})
    columns = [
        Column("kind", "kind"),
        Column("base url", "base_url"),
        Column("api key", "api_key"),
        Column("notes", "notes"),
    ]
    emit_rows(columns, rows, fmt, title="provider kinds (spec KIND:MODEL)")


@app.command("prices")
def prices_cmd(
    provider: str | None = typer.Option(
        None, "--provider", metavar="KIND", help="Only this provider kind."
    ),
    overrides: Path | None = typer.Option(
        None, "--overrides", metavar="FILE", help="A YAML file of price overrides to apply first."
    ),
    fmt: ListFormat = FORMAT_OPTION,
) -> None:
    """Print the price table (USD per million tokens) with its date."""
    from dabench.providers.pricing import price_table

    table_data = price_table(overrides)
    rows: list[dict[str, Any]] = []
    for kind, models in sorted(table_data.models.items()):
        if provider is not None and kind != provider:
            continue
        for model, price in sorted(models.items()):
            rows.append(
                {
                    "provider": kind,
                    "model": model,
                    "input": price.input,
                    "output": price.output,
                    "cache_read": price.cache_read,
                    "cache_write": price.cache_write,
                }
            )

    def show(value: Any) -> str:
        return "-" if value is None else f"{value:g}"

    columns = [Column("provider", "provider"), Column("model", "model")] + [
        Column(name.replace("_", " "), name, show, right=True)
        for name in ("input", "output", "cache_read", "cache_write")
    ]
    title = f"prices, USD per million tokens (as of {table_data.as_of})"
    emit_rows(columns, rows, fmt, title=title)


@app.command("ping")
def ping_cmd(
    spec: str = typer.Argument(..., help="KIND:MODEL, e.g. openai:gpt-4.1 or fake."),
    base_url: str | None = typer.Option(None, "--base-url", help="Override the API base URL."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds before giving up."),
    prompt: str = typer.Option(
        "Reply with the single word OK.", "--prompt", help="The one user message sent."
    ),
) -> None:
    """Make one model call and print the reply, usage, cost and latency."""
    import asyncio

    from dabench.errors import UnreachableError
    from dabench.providers.base import ProviderError
    from dabench.providers.builtin import endpoint_url
    from dabench.providers.ping import ping
    from dabench.providers.registry import make_provider

    settings: dict[str, object] = {"timeout": timeout}
    if base_url:
        settings["base_url"] = base_url
    provider = make_provider(spec, **settings)
    try:
        response = asyncio.run(ping(provider, prompt))
    except ProviderError as exc:
        url = endpoint_url(provider.name, base_url)
        raise UnreachableError(f"{spec} at {url}: {exc}") from None
    usage = response.usage
    cost = "unknown" if response.cost_usd is None else f"${response.cost_usd:.6f}"
    console = stdout_console()
    console.print(f"{provider.name}:{response.model or provider.model} -> {response.text!r}")
    console.print(
        f"tokens in {usage.input} out {usage.output} cache read {usage.cache_read} "
        f"cache write {usage.cache_write}  cost {cost} ({response.cost_source})  "
        f"latency {response.latency_ms:.0f} ms"
    )
