"""Dataset declarations per business domain, in build order."""

from __future__ import annotations

from dabench.world.datasets import (
    customers,
    derived,
    finance,
    marketing,
    product,
    sales,
    support,
)
from dabench.world.datasets.spec import Col, DatasetSpec, Helper
from dabench.world.sqlrand import Rand

Step = DatasetSpec | Helper


def build_steps(rand: Rand, scale: int) -> list[Step]:
    """Every helper and dataset in the order the build creates them."""
    return [
        *product.steps(rand, scale),
        *customers.base_steps(rand, scale),
        *sales.steps(rand, scale),
        *customers.steps(rand, scale),
        *finance.steps(rand, scale),
        *marketing.steps(rand, scale),
        *support.steps(rand, scale),
        *derived.steps(rand, scale),
    ]


__all__ = ["Col", "DatasetSpec", "Helper", "Step", "build_steps"]
