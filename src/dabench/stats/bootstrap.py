"""Seeded, vectorised bootstrap over tasks.

Tasks are the resampling unit: a resample draws T tasks with replacement and each drawn
task contributes its own per-task value (the mean of its k attempts). Columns of a
``(T, M)`` value matrix are resampled together (one draw of task indices serves all
columns), in chunks so that memory stays bounded for very large task sets.
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

from dabench.defaults import DEFAULT_RESAMPLES as DEFAULT_RESAMPLES
from dabench.defaults import DEFAULT_SEED as DEFAULT_SEED

DEFAULT_CONFIDENCE = 0.95

_CHUNK_CELLS = 1_000_000
"""Upper bound on ``resamples_per_chunk * T`` (index matrix cells per chunk)."""


def group_rng(seed: int, label: str) -> np.random.Generator:
    """A generator for one group, independent of the order groups are computed in."""
    return np.random.default_rng([seed, zlib.crc32(label.encode("utf-8"))])


_EXACT_BITS = 52
"""Integers of at most this many bits are exact in a float64 (its mantissa, less one bit)."""


def exact_grid(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Per column, the power-of-two exponent ``e`` such that any sum of ``T`` of the column's
    values, each rounded to a multiple of ``2**-e``, is an integer below ``2**52`` once
    scaled by ``2**e``: such sums are exact in float64, whatever order they are added in."""
    t = max(1, values.shape[0])
    with np.errstate(all="ignore"):
        largest = np.nanmax(np.abs(values), axis=0, initial=0.0)
        bound = np.where(largest > 0, largest * t, 1.0)
        grid = _EXACT_BITS - np.ceil(np.log2(bound)).astype(np.int64) - 1
    return np.where(np.isfinite(bound), grid, 0)


def resampled_sums(
    values: npt.NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Column sums of ``resamples`` bootstrap resamples of the rows of ``values``.

    ``values`` is ``(T, M)``; the result is ``(resamples, M)``. Each value is first rounded to
    its column's :func:`exact_grid` (a relative change below ``2**-40`` for T up to 2**11, a
    little more for larger T), so every sum is exact: the matrix product gives the same bits
    on every machine, whatever its BLAS, CPU or thread count adds in which order.
    """
    t, m = values.shape
    out = np.empty((resamples, m))
    if t == 0:
        out.fill(np.nan)
        return out
    grid = exact_grid(values)
    scaled = np.rint(np.ldexp(values, grid))  # integers (as float64), NaN kept
    chunk = max(1, _CHUNK_CELLS // t)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        rows = stop - start
        idx = rng.integers(0, t, size=(rows, t))
        idx += np.arange(rows)[:, None] * t
        weights = np.bincount(idx.ravel(), minlength=rows * t).reshape(rows, t)
        out[start:stop] = weights.astype(np.float64) @ scaled
    return np.ldexp(out, -grid)


def percentile_interval(
    samples: npt.NDArray[np.float64], confidence: float
) -> tuple[float | None, float | None]:
    """The equal-tailed percentile interval of bootstrap samples (NaN samples ignored)."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)


def column_quantiles(
    samples: npt.NDArray[np.float64], probs: tuple[float, ...]
) -> npt.NDArray[np.float64]:
    """Linear-interpolated quantiles of each column, NaN samples ignored (NaN if none).

    ``samples`` is ``(B, C)``; the result is ``(len(probs), C)``. Equivalent to
    ``np.nanquantile(samples, probs, axis=0)`` without its per-column Python loop.
    """
    ordered = np.sort(samples, axis=0)  # NaN sorts last
    finite = np.isfinite(samples).sum(axis=0)
    out = np.full((len(probs), samples.shape[1]), np.nan)
    ok = finite > 0
    if not ok.any():
        return out
    cols = np.flatnonzero(ok)
    last = finite[ok] - 1
    for i, p in enumerate(probs):
        pos = p * last
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        frac = pos - lo
        out[i, ok] = ordered[lo, cols] * (1.0 - frac) + ordered[hi, cols] * frac
    return out
