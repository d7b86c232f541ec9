"""The seeded task bootstrap: determinism, coverage, degenerate cases."""

from __future__ import annotations

import numpy as np
import pytest

from dabench.stats.bootstrap import (
    column_quantiles,
    group_rng,
    percentile_interval,
    resampled_sums,
)


def test_same_seed_and_label_are_identical_and_labels_differ() -> None:
    values = np.arange(40, dtype=float)[:, None] % 3
    a = resampled_sums(values, 500, group_rng(1, "x"))
    b = resampled_sums(values, 500, group_rng(1, "x"))
    c = resampled_sums(values, 500, group_rng(1, "y"))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_constant_values_give_a_degenerate_interval() -> None:
    values = np.full((25, 2), 0.4)
    sums = resampled_sums(values, 300, group_rng(3, "c"))
    low, high = percentile_interval(sums[:, 0] / 25, 0.95)
    assert low == pytest.approx(0.4) and high == pytest.approx(0.4)  # every resample alike


def test_interval_covers_the_mean_and_narrows_with_more_tasks() -> None:
    rng = np.random.default_rng(11)
    widths = []
    for t in (30, 300):
        values = (rng.random((t, 1)) < 0.5).astype(float)
        sums = resampled_sums(values, 2000, group_rng(5, f"t{t}"))
        low, high = percentile_interval(sums[:, 0] / t, 0.95)
        assert low is not None and high is not None
        assert low <= values.mean() <= high
        widths.append(high - low)
    assert widths[1] < widths[0] / 2


def test_resamples_draw_whole_tasks_with_replacement() -> None:
    # Two columns drawn together: a task's two values always travel together.
    values = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])
    sums = resampled_sums(values, 200, group_rng(0, "pair"))
    assert np.allclose(sums[:, 1], 2 * sums[:, 0])


def test_empty_input_is_nan() -> None:
    sums = resampled_sums(np.zeros((0, 2)), 10, group_rng(0, "e"))
    assert np.isnan(sums).all()
    assert percentile_interval(sums[:, 0], 0.95) == (None, None)


def test_column_quantiles_match_numpy_nanquantile() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((999, 6))
    x[rng.random(x.shape) < 0.2] = np.nan
    x[:, 2] = np.nan  # a statistic no resample could estimate
    x[:, 4] = 0.25
    got = column_quantiles(x, (0.025, 0.5, 0.975))
    with pytest.warns(RuntimeWarning):  # numpy warns on the all-NaN column
        want = np.nanquantile(x, [0.025, 0.5, 0.975], axis=0)
    assert np.allclose(got, want, equal_nan=True)
    assert np.isnan(got[:, 2]).all() and (got[:, 4] == 0.25).all()


def _sums_in_a_subprocess(threads: str) -> bytes:
    """Bootstrap sums of a (500, 4) matrix with ``threads`` BLAS threads (at this shape, a
    plain float matrix product gives other bits with one thread than with two)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from dabench.stats.bootstrap import group_rng, resampled_sums\n"
        "rng = np.random.default_rng(7)\n"
        "v = np.column_stack([rng.random((500, 2)), rng.random(500) * 1e5, rng.normal(size=500)])\n"
        "sys.stdout.buffer.write(resampled_sums(v, 2000, group_rng(1, 'x')).tobytes())\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, check=True
    ).stdout


def test_sums_are_exact_so_every_machine_gets_the_same_bits() -> None:
    """The sums do not depend on the order a BLAS adds in (its thread count, its CPU's
    kernel): each equals the exact sum of the values on the column's grid, and a process
    with one BLAS thread gets the same bytes as one with two."""
    from fractions import Fraction

    from dabench.stats.bootstrap import exact_grid

    rng = np.random.default_rng(3)
    values = np.column_stack([rng.random(57), rng.random(57) * 1e7, -rng.random(57) / 3])
    sums = resampled_sums(values, 50, group_rng(2, "e"))
    grid = exact_grid(values)
    on_grid = [
        [
            Fraction(float(np.rint(np.ldexp(x, int(g))))) / 2 ** int(g)
            for x, g in zip(row, grid, strict=True)
        ]
        for row in values
    ]
    again = group_rng(2, "e")  # the same draws, summed exactly in Python
    idx = again.integers(0, 57, size=(50, 57))
    for r in range(50):
        for c in range(3):
            exact = sum((on_grid[i][c] for i in idx[r]), Fraction(0))
            assert sums[r, c] == float(exact)  # bit for bit, not approximately
    float_sums = (
        np.bincount((idx + np.arange(50)[:, None] * 57).ravel(), minlength=50 * 57).reshape(50, 57)
        @ values
    )
    assert np.allclose(sums, float_sums, rtol=1e-9, atol=0)  # the grid costs nothing visible
    assert _sums_in_a_subprocess("1") == _sums_in_a_subprocess("2")
