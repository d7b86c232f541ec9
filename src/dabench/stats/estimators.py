"""Unbiased pass^k and pass@k estimators with exact integer combinatorics.

For a task attempted ``n`` times with ``c`` successes:

* pass^k = C(c, k) / C(n, k): the probability that k attempts drawn without replacement
  all succeed (tau-bench);
* pass@k = 1 - C(n - c, k) / C(n, k): the probability that at least one of them succeeds.

Both are defined for ``k <= n``; the ratios are computed as exact fractions and only then
converted to float.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import numpy.typing as npt


def pass_hat_k(c: int, n: int, k: int) -> float:
    """pass^k of one task: C(c, k) / C(n, k); needs ``1 <= k <= n`` and ``0 <= c <= n``."""
    _check(c, n, k)
    return float(Fraction(comb(c, k), comb(n, k)))


def pass_at_k(c: int, n: int, k: int) -> float:
    """pass@k of one task: 1 - C(n - c, k) / C(n, k); needs ``1 <= k <= n``."""
    _check(c, n, k)
    return float(1 - Fraction(comb(n - c, k), comb(n, k)))


def _check(c: int, n: int, k: int) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"successes must be within 0..n, got c={c}, n={n}")


def estimator_table(max_n: int, k: int, *, at: bool = False) -> npt.NDArray[np.float64]:
    """A lookup table ``T[n, c]`` of pass^k (or pass@k with ``at=True``); NaN where k > n.

    Vectorised code indexes it with per-task ``(n, c)`` arrays.
    """
    table = np.full((max_n + 1, max_n + 1), np.nan)
    fn = pass_at_k if at else pass_hat_k
    for n in range(k, max_n + 1):
        for c in range(n + 1):
            table[n, c] = fn(c, n, k)
    return table
