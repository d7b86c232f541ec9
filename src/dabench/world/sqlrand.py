"""Deterministic pseudo-randomness in DuckDB SQL.

Every random draw is ``hash(seed, key, tag)`` of DuckDB's built-in 64-bit hash, so a value
depends only on the seed, the row key and a per-column tag: no state, no thread or row-order
dependence, and the same bytes on every machine for a given DuckDB version.
"""

from __future__ import annotations

from dataclasses import dataclass

_MOD = 1_000_003


@dataclass(frozen=True)
class Rand:
    """SQL expression builders for one seed."""

    seed: int

    def h(self, tag: str, key: str) -> str:
        """The raw UBIGINT hash of ``key`` for ``tag``."""
        return f"hash({self.seed}, {key}, '{tag}')"

    def u(self, tag: str, key: str) -> str:
        """A uniform DOUBLE in [0, 1)."""
        return f"(({self.h(tag, key)} % {_MOD})::DOUBLE / {_MOD})"

    def int(self, tag: str, key: str, lo: int, hi: int) -> str:
        """A uniform integer in [lo, hi] (inclusive) as BIGINT."""
        return f"({lo} + ({self.h(tag, key)} % {hi - lo + 1})::BIGINT)"

    def pick(self, tag: str, key: str, items: list[str]) -> str:
        """One of ``items`` (string literals), uniformly."""
        lits = ", ".join(_lit(x) for x in items)
        return f"[{lits}][1 + ({self.h(tag, key)} % {len(items)})::BIGINT]"

    def weighted(self, tag: str, key: str, items: list[tuple[str, float]]) -> str:
        """One of ``items`` (value, weight) by weight, as a CASE over one uniform draw."""
        total = sum(w for _, w in items)
        u = self.u(tag, key)
        parts, acc = [], 0.0
        for value, weight in items[:-1]:
            acc += weight / total
            parts.append(f"WHEN {u} < {acc!r} THEN {_lit(value)}")
        return f"(CASE {' '.join(parts)} ELSE {_lit(items[-1][0])} END)"


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def lit(value: str) -> str:
    """A SQL string literal."""
    return _lit(value)
