"""``dabench providers ...``: list kinds, show the price table, check one provider."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from dabench.providers.base import ChatMessage, ModelResponse
from dabench.providers.builtin import OPENAI_COMPAT_KINDS
from dabench.providers.pricing import price_table
from dabench.providers.registry import make_provider, provider_kinds

app = typer.Typer(no_args_is_help=True, add_completion=False)

_NOTES = {
    "anthropic": "Messages API, prompt caching",
    "fake": "scripted, no network",
}


@app.command("kinds")
def kinds_cmd() -> None:
    """List the provider kinds with their default base URL and key variable."""
    table = Table(title="provider kinds (spec KIND:MODEL)")
    for column in ("kind", "base url", "api key", "notes"):
        table.add_column(column)
    for kind in provider_kinds():
        compat = OPENAI_COMPAT_KINDS.get(kind)
        if compat is None:
            key = "ANTHROPIC_API_KEY" if kind == "anthropic" else ""
            table.add_row(kind, "SDK default" if key else "", key, _NOTES.get(kind, ""))
            continue
        key = compat.key_env or "-"
        if not compat.key_required and compat.key_env:
            key += " (optional)"
        url = compat.base_url or ("required" if compat.needs_base_url else "SDK default")
        table.add_row(kind, url, key, "chat completions")
    Console().print(table)


@app.command("prices")
def prices_cmd(
    provider: str | None = typer.Option(None, "--provider", help="Only this provider kind."),
    overrides: Path | None = typer.Option(
        None, "--overrides", help="A YAML file of price overrides to apply first."
    ),
) -> None:
    """Print the price table (USD per million tokens) with its date."""
    table_data = price_table(overrides)
    table = Table(title=f"prices, USD per million tokens (as of {table_data.as_of})")
    for column in ("provider", "model", "input", "output", "cache read", "cache write"):
        table.add_column(column, justify="left" if column in {"provider", "model"} else "right")
    for kind, models in sorted(table_data.models.items()):
        if provider is not None and kind != provider:
            continue
        for model, price in sorted(models.items()):
            cells = [price.input, price.output, price.cache_read, price.cache_write]
            table.add_row(kind, model, *("-" if c is None else f"{c:g}" for c in cells))
    Console().print(table)


@app.command("ping")
def ping_cmd(
    spec: str = typer.Argument(..., help="KIND:MODEL, e.g. openai:gpt-4.1 or fake."),
    base_url: str | None = typer.Option(None, "--base-url", help="Override the API base URL."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds before giving up."),
    prompt: str = typer.Option("Reply with the single word OK.", "--prompt"),
) -> None:
    """Make one model call and print the reply, usage, cost and latency."""
    settings: dict[str, object] = {"timeout": timeout}
    if base_url:
        settings["base_url"] = base_url
    provider = make_provider(spec, **settings)
    response: ModelResponse = asyncio.run(
        provider.complete(
            [ChatMessage(role="user", content=prompt)],
            system="",
            tools=[],
            max_tokens=32,
            temperature=0.0,
        )
    )
    usage = response.usage
    cost = "unknown" if response.cost_usd is None else f"${response.cost_usd:.6f}"
    console = Console()
    console.print(f"{provider.name}:{response.model or provider.model} -> {response.text!r}")
    console.print(
        f"tokens in {usage.input} out {usage.output} cache read {usage.cache_read} "
        f"cache write {usage.cache_write}  cost {cost} ({response.cost_source})  "
        f"latency {response.latency_ms:.0f} ms"
    )
