"""The shipped price table, cost computation, overrides and the reported-cost rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.journal.records import TokenUsage
from dabench.providers.pricing import (
    ModelPrice,
    cost_for,
    default_price_table,
    load_overrides,
    price_table,
    resolve_cost,
)


def test_shipped_table_is_dated_and_valid() -> None:
    table = default_price_table()
    assert table.as_of.count("-") == 2
    assert table.currency == "USD"
    assert {"anthropic", "openai"} <= set(table.models)
    for prices in table.models.values():
        for price in prices.values():
            assert price.input is not None and price.output is not None


def test_cost_of_every_component() -> None:
    usage = TokenUsage(input=1_000_000, output=1_000_000, cache_read=1_000_000, cache_write=0)
    cost, source = cost_for("anthropic", "claude-haiku-4-5", usage)
    assert source == "price_table"
    assert cost == pytest.approx(1.0 + 5.0 + 0.10)


@pytest.mark.parametrize(
    ("model", "base"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
    ],
)
def test_snapshot_ids_fall_back_to_their_base(model: str, base: str) -> None:
    provider = "openai" if model.startswith("gpt") else "anthropic"
    table = default_price_table()
    assert table.lookup(provider, model) == table.lookup(provider, base)
    assert table.lookup(provider, model) is not None


def test_no_prefix_guessing_between_sizes() -> None:
    table = default_price_table()
    assert table.lookup("openai", "gpt-4o-mini") != table.lookup("openai", "gpt-4o")
    assert table.lookup("openai", "gpt-4.5-preview") is None


def test_unknown_model_or_provider_is_none() -> None:
    usage = TokenUsage(input=10)
    assert cost_for("anthropic", "claude-unknown", usage) == (None, "none")
    assert cost_for("vllm", "gpt-4.1", usage) == (None, "none")


def test_absent_component_price_makes_cost_unknown_not_wrong() -> None:
    price = ModelPrice(input=1.0, output=2.0)
    assert price.cost(TokenUsage(input=10, output=10)) == pytest.approx(30 / 1e6)
    assert price.cost(TokenUsage(input=10, cache_read=5)) is None


def test_override_mapping_and_wildcard() -> None:
    overrides = {
        "ollama": {"*": {"input": 0, "output": 0}},
        "anthropic": {"claude-haiku-4-5": {"input": 2.0, "output": 4.0}},
    }
    assert cost_for("ollama", "qwen2.5:7b", TokenUsage(input=99), overrides) == (0.0, "price_table")
    cost, _ = cost_for("anthropic", "claude-haiku-4-5", TokenUsage(output=1_000_000), overrides)
    assert cost == pytest.approx(4.0)
    # The shipped table is untouched by an override.
    assert default_price_table().lookup("anthropic", "claude-haiku-4-5").output == 5.0  # type: ignore[union-attr]


def test_override_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  vllm:\n    my-model: {input: 0.5, output: 1.5}\n")
    cost, source = cost_for("vllm", "my-model", TokenUsage(input=2_000_000), path)
    assert (cost, source) == (pytest.approx(1.0), "price_table")
    assert price_table(str(path)).lookup("vllm", "my-model") == ModelPrice(input=0.5, output=1.5)


def test_bad_overrides_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match=r"anthropic\.m: field input"):
        load_overrides({"anthropic": {"m": {"input": -1}}})
    with pytest.raises(UserInputError, match="field inptu"):
        load_overrides({"anthropic": {"m": {"inptu": 1}}})
    with pytest.raises(UserInputError, match="not found"):
        load_overrides(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(UserInputError, match="expected a mapping"):
        load_overrides(bad)


def test_reported_cost_wins() -> None:
    usage = TokenUsage(input=1_000_000)
    assert resolve_cost(0.5, "openai", "gpt-4.1", usage) == (0.5, "provider")
    assert resolve_cost(None, "openai", "gpt-4.1", usage) == (pytest.approx(2.0), "price_table")
