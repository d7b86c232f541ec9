"""Token prices and cost: a dated price table shipped in the package, overridable by config.

A provider-reported cost (OpenRouter's ``usage.cost``, the claude CLI's ``total_cost_usd``)
always wins over the table; see :func:`resolve_cost`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import UserInputError
from dabench.fields import FiniteNonNegative
from dabench.journal.records import TokenUsage

CostSource = Literal["provider", "price_table", "none"]
PriceOverrides = Mapping[str, Mapping[str, Any]] | str | Path | None
"""Overrides: ``{provider: {model: {input, output, cache_read, cache_write}}}`` or a YAML file
holding that mapping (optionally under a top-level ``models:`` key)."""

WILDCARD = "*"
"""A model key that prices every model of a provider (e.g. ``ollama: {"*": {input: 0, ...}}``)."""

_SNAPSHOT_SUFFIX = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")
_PER_TOKEN = 1_000_000.0


class ModelPrice(BaseModel):
    """USD per million tokens of one model; an absent field means the price is unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: FiniteNonNegative | None = None
    output: FiniteNonNegative | None = None
    cache_read: FiniteNonNegative | None = None
    cache_write: FiniteNonNegative | None = None

    def cost(self, usage: TokenUsage) -> float | None:
        """USD for ``usage``, or ``None`` when a component with tokens has no price."""
        total = 0.0
        for tokens, price in (
            (usage.input, self.input),
            (usage.output, self.output),
            (usage.cache_read, self.cache_read),
            (usage.cache_write, self.cache_write),
        ):
            if tokens == 0:
                continue
            if price is None:
                return None
            total += tokens * price / _PER_TOKEN
        return total


class PriceTable(BaseModel):
    """Prices by provider kind and model id, with the date they were checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    as_of: str
    currency: Literal["USD"] = "USD"
    unit: Literal["per_million_tokens"] = "per_million_tokens"
    models: dict[str, dict[str, ModelPrice]] = Field(default_factory=dict)

    def lookup(self, provider: str, model: str) -> ModelPrice | None:
        """The price of ``model`` under ``provider``: exact id, then without a snapshot suffix
        (``-20250929``, ``-2025-04-14``, ``-latest``), then the provider's ``*`` entry."""
        prices = self.models.get(provider, {})
        if model in prices:
            return prices[model]
        base = _SNAPSHOT_SUFFIX.sub("", model)
        if base in prices:
            return prices[base]
        return prices.get(WILDCARD)

    def merged(self, overrides: Mapping[str, Mapping[str, ModelPrice]]) -> PriceTable:
        """A copy with ``overrides`` replacing whole model entries."""
        models = {provider: dict(entries) for provider, entries in self.models.items()}
        for provider, entries in overrides.items():
            models.setdefault(provider, {}).update(entries)
        return self.model_copy(update={"models": models})


@lru_cache(maxsize=1)
def default_price_table() -> PriceTable:
    """The price table shipped in the package (``providers/prices.yaml``)."""
    text = resources.files("dabench.providers").joinpath("prices.yaml").read_text("utf-8")
    return _parse_table(yaml.safe_load(text), "dabench/providers/prices.yaml")


def _parse_table(data: Any, origin: str) -> PriceTable:
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        raise UserInputError(f"{origin}: invalid price table: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err["loc"])
    return f"field {where}: {err['msg']}"


def load_overrides(overrides: PriceOverrides) -> dict[str, dict[str, ModelPrice]]:
    """Validate price overrides given as a mapping or a YAML file path."""
    if overrides is None:
        return {}
    origin = "price overrides"
    data: Any = overrides
    if isinstance(overrides, str | Path):
        path = Path(overrides)
        origin = str(path)
        if not path.is_file():
            raise UserInputError(f"{path}: price override file not found")
        try:
            data = yaml.safe_load(path.read_text("utf-8"))
        except yaml.YAMLError as exc:
            raise UserInputError(f"{path}: not valid YAML: {exc}") from exc
        if isinstance(data, dict) and "models" in data:
            data = data["models"]
    if not isinstance(data, Mapping):
        raise UserInputError(f"{origin}: expected a mapping provider -> model -> prices")
    result: dict[str, dict[str, ModelPrice]] = {}
    for provider, entries in data.items():
        if not isinstance(entries, Mapping):
            raise UserInputError(f"{origin}: {provider}: expected a mapping model -> prices")
        for model, price in entries.items():
            try:
                result.setdefault(str(provider), {})[str(model)] = ModelPrice.model_validate(price)
            except ValidationError as exc:
                raise UserInputError(
                    f"{origin}: {provider}.{model}: {_first_error(exc)} "
                    "(expected input/output/cache_read/cache_write in USD per million tokens)"
                ) from exc
    return result


def price_table(overrides: PriceOverrides | PriceTable = None) -> PriceTable:
    """The shipped table with ``overrides`` applied (a :class:`PriceTable` is used as is)."""
    if isinstance(overrides, PriceTable):
        return overrides
    table = default_price_table()
    loaded = load_overrides(overrides)
    return table.merged(loaded) if loaded else table


def cost_for(
    provider: str, model: str, usage: TokenUsage, overrides: PriceOverrides | PriceTable = None
) -> tuple[float | None, CostSource]:
    """Cost of ``usage`` from the price table: ``(usd, "price_table")`` or ``(None, "none")``.

    ``provider`` is the provider kind; each kind has its own section of the table, so
    ``openrouter``/``vllm``/``ollama`` models are unpriced unless configured.
    """
    price = price_table(overrides).lookup(provider, model)
    if price is None:
        return None, "none"
    cost = price.cost(usage)
    return (cost, "price_table") if cost is not None else (None, "none")


def resolve_cost(
    reported: float | None,
    provider: str,
    model: str,
    usage: TokenUsage,
    overrides: PriceOverrides | PriceTable = None,
) -> tuple[float | None, CostSource]:
    """The provider-reported cost when there is one, else :func:`cost_for`."""
    if reported is not None:
        return float(reported), "provider"
    return cost_for(provider, model, usage, overrides)
