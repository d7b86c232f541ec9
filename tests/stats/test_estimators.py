"""pass^k and pass@k: exact values, brute-force agreement, domain errors."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from math import comb

import numpy as np
import pytest

from dabench.stats import pass_at_k, pass_hat_k
from dabench.stats.estimators import estimator_table


def test_known_values() -> None:
    assert pass_hat_k(3, 5, 2) == pytest.approx(3 / 10)
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(4, 5, 5) == 0.0
    assert pass_at_k(1, 5, 2) == pytest.approx(0.4)
    assert pass_at_k(0, 5, 3) == 0.0
    assert pass_at_k(3, 5, 3) == 1.0  # n - c < k: every draw contains a success


@pytest.mark.parametrize("n", [1, 3, 5, 6])
def test_estimators_equal_brute_force_over_all_k_subsets(n: int) -> None:
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(outcomes, k))
            all_pass = Fraction(sum(all(s) for s in subsets), len(subsets))
            any_pass = Fraction(sum(any(s) for s in subsets), len(subsets))
            assert pass_hat_k(c, n, k) == float(all_pass)
            assert pass_at_k(c, n, k) == float(any_pass)


def test_large_n_uses_exact_integers() -> None:
    # C(200, 100) overflows float64 in naive factorial code; the ratio stays exact.
    expected = Fraction(comb(150, 100), comb(200, 100))
    assert pass_hat_k(150, 200, 100) == float(expected)
    assert 0.0 < pass_hat_k(150, 200, 100) < 1e-10


@pytest.mark.parametrize(("c", "n", "k"), [(1, 3, 4), (1, 3, 0), (4, 3, 2), (-1, 3, 1)])
def test_out_of_domain_is_refused(c: int, n: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_hat_k(c, n, k)


def test_table_is_nan_below_k_and_matches_scalar() -> None:
    table = estimator_table(6, 3)
    assert np.isnan(table[2, 1]) and np.isnan(table[0, 0])
    assert table[5, 4] == pass_hat_k(4, 5, 3)
    at = estimator_table(6, 3, at=True)
    assert at[6, 2] == pass_at_k(2, 6, 3)
