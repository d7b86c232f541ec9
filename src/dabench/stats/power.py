"""Power analysis for the paired arm comparison: how many tasks and trials a decision needs.

The design: ``n`` tasks, each attempted ``k`` times by the baseline arm A and by arm B. A task's
outcome is its mean over the k attempts; the paired difference ``d_i = mean_B - mean_A`` is
tested with a two-sided paired t-test at level ``alpha``. Tasks are drawn from a population
described by baseline per-task pass rates ``p`` (a run's, or assumed); B's rate on a task is
``min(1, p + delta)`` (``max(0, ...)`` for a negative delta).

With ``Delta_i`` the per-task effect after clipping, the paired differences have mean
``mu = E[Delta_i]`` and variance ``sigma^2 = Var(Delta_i) + E[(p_A(1-p_A) + p_B(1-p_B)) / k]``,
so for many tasks the test statistic follows a noncentral t with ``n - 1`` degrees of freedom
and noncentrality ``sqrt(n) mu / sigma``; its power is computed by integrating over the
chi-square of the variance estimate (no SciPy). With few tasks the paired differences are too
discrete and skewed for that (k-attempt means of Bernoulli outcomes, rates clipped at 0 and
1: the normal theory was off by up to 7 points at 12 tasks), and so they are with many tasks
when most tasks cannot differ at all: a k = 1 baseline has per-task rates of 0 or 1, so the
differences are 0 on every task but the few a delta can move, and the normal theory was off
by 10-17 points at 100-300 tasks (it planned 282 tasks where 110 give 80 %). The skewness of
the paired difference is exact (:func:`skewness`), and :func:`power` simulates the design with
:data:`EXACT_SIMS` seeded experiments (Monte Carlo error about 0.4 points) below
:func:`simulated_below` tasks: :data:`ANALYTIC_MIN_TASKS`, or more while ``|skewness| /
sqrt(n)`` exceeds :data:`SKEW_LIMIT` (up to :data:`SIM_MAX_TASKS`).
:func:`simulate_power` is that simulation; ``benchmarks/sequential.py`` and the tests compare
:func:`power` with independent simulations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Rates = npt.NDArray[np.float64]

_GRID = 4000
"""Points of the chi-square integration grid."""
ANALYTIC_MIN_TASKS = 100
"""From this many tasks on, :func:`power` uses the noncentral t; below, a simulation."""
EXACT_SIMS = 12_000
"""Simulated experiments behind :func:`power` for small or skewed designs."""
SKEW_LIMIT = 0.15
"""The noncentral t is used only where ``|skewness| / sqrt(n)`` of the paired difference is at
most this: measured gaps to simulation were at most 1.5 points below 0.12 and 2-17 points
above 0.2 (``benchmarks/sequential.py`` prints both regimes)."""
SIM_MAX_TASKS = 4000
"""Above this many tasks the noncentral t is used whatever the skewness (simulation cost)."""
_CHUNK_DRAWS = 2_000_000
"""Simulated task outcomes held in memory at once per arm."""


def _phi(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Standard normal CDF (Abramowitz & Stegun 7.1.26 for erf: absolute error < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                + t * 1.061405429))))  # fmt: skip
    erf = 1.0 - poly * np.exp(-z * z)
    return np.asarray(0.5 * (1.0 + np.sign(x) * erf), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def _chi_grid(df: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Points ``s = sqrt(V / df)`` and weights for ``V ~ chi-square(df)``."""
    hi = df + 40.0 * math.sqrt(2.0 * df) + 40.0
    v = np.linspace(hi / _GRID / 2, hi, _GRID)
    log_pdf = (df / 2 - 1) * np.log(v) - v / 2 - (df / 2) * math.log(2) - math.lgamma(df / 2)
    w = np.exp(log_pdf)
    w /= w.sum()
    return np.sqrt(v / df), w


def t_power(n: int, effect: float, sigma: float, alpha: float) -> float:
    """Power of the two-sided one-sample t-test on ``n`` paired differences with mean
    ``effect`` and standard deviation ``sigma``."""
    if n < 2:
        return 0.0
    if sigma <= 0:
        return 1.0 if effect != 0 else alpha
    s, w = _chi_grid(n - 1)
    c = t_critical(n - 1, alpha)
    delta = math.sqrt(n) * effect / sigma
    reject = _phi(delta - c * s) + _phi(-c * s - delta)
    return float(np.sum(w * reject))


def t_critical(df: int, alpha: float) -> float:
    """The two-sided critical value ``t_{1 - alpha/2, df}`` (bisection on the exact tail)."""
    return _t_critical_cached(df, alpha)


@functools.lru_cache(maxsize=256)
def _t_critical_cached(df: int, alpha: float) -> float:
    s, w = _chi_grid(df)
    lo, hi = 0.0, 100.0
    for _ in range(80):
        mid = (lo + hi) / 2
        tail = float(np.sum(w * 2 * _phi(-mid * s)))
        lo, hi = (mid, hi) if tail > alpha else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class PairedDesign:
    """The distribution of the paired difference for one (rates, delta, k)."""

    effect: float
    """Mean per-task effect after clipping to [0, 1]."""
    sigma: float
    """Standard deviation of a task's paired difference of k-attempt means."""


def paired_design(rates: Rates, delta: float, k: int) -> PairedDesign:
    """Mean and spread of the paired difference when B = A + ``delta`` on every task."""
    p_a = np.clip(np.asarray(rates, dtype=np.float64), 0.0, 1.0)
    p_b = np.clip(p_a + delta, 0.0, 1.0)
    effects = p_b - p_a
    noise = (p_a * (1 - p_a) + p_b * (1 - p_b)) / k
    return PairedDesign(float(effects.mean()), math.sqrt(float(effects.var() + noise.mean())))


def skewness(rates: Rates, delta: float, k: int) -> float:
    """Exact skewness of one task's paired difference of k-attempt means, the task drawn
    from ``rates`` (0 when the difference never varies)."""
    p_a = np.clip(np.asarray(rates, dtype=np.float64), 0.0, 1.0)
    p_b = np.clip(p_a + delta, 0.0, 1.0)
    # cumulants of Bin(k, p) / k, then of the difference B - A, then the mixture's moments
    k1 = p_b - p_a
    k2 = (p_b * (1 - p_b) + p_a * (1 - p_a)) / k
    k3 = (p_b * (1 - p_b) * (1 - 2 * p_b) - p_a * (1 - p_a) * (1 - 2 * p_a)) / k**2
    m1 = float(k1.mean())
    m2 = float((k2 + k1**2).mean())
    m3 = float((k3 + 3 * k2 * k1 + k1**3).mean())
    var = m2 - m1**2
    if var <= 1e-15:
        return 0.0
    return float((m3 - 3 * m1 * m2 + 2 * m1**3) / var**1.5)


def simulated_below(rates: Rates, delta: float, k: int) -> int:
    """The number of tasks from which :func:`power` uses the noncentral t (below: simulation)."""
    skewed = math.ceil((skewness(rates, delta, k) / SKEW_LIMIT) ** 2)
    return min(SIM_MAX_TASKS, max(ANALYTIC_MIN_TASKS, skewed))


def power(rates: Rates, delta: float, n: int, k: int, alpha: float = 0.05) -> float:
    """Power of the paired design with ``n`` tasks drawn from ``rates`` and ``k`` trials:
    a seeded simulation below :func:`simulated_below` tasks, the noncentral t from there on."""
    if n < simulated_below(rates, delta, k):
        return simulate_power(rates, delta, n, k, alpha=alpha, sims=EXACT_SIMS, seed=7919)
    return analytic_power(rates, delta, n, k, alpha)


def analytic_power(rates: Rates, delta: float, n: int, k: int, alpha: float = 0.05) -> float:
    """The noncentral-t power of the design (accurate for many tasks)."""
    d = paired_design(rates, delta, k)
    return t_power(n, d.effect, d.sigma, alpha)


def _first(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest ``n`` in ``lo..hi`` with ``ok(n)`` (``ok`` monotone, ``ok(hi)`` true)."""
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def tasks_needed(
    rates: Rates, delta: float, k: int, *, alpha: float = 0.05, target: float = 0.8,
    max_tasks: int = 100_000,
) -> int | None:  # fmt: skip
    """The fewest tasks reaching ``target`` power (``None`` above ``max_tasks``): by the
    noncentral t, then, when that answer is in the simulated regime (below
    :func:`simulated_below`), by simulation, searched first up to twice that answer."""
    if analytic_power(rates, delta, max_tasks, k, alpha) < target:
        return None
    n = _first(lambda m: analytic_power(rates, delta, m, k, alpha) >= target, 2, max_tasks)
    edge = simulated_below(rates, delta, k)
    if n >= edge:
        return n

    def ok(m: int) -> bool:
        return power(rates, delta, m, k, alpha) >= target

    for hi in sorted({min(edge - 1, max(2 * n, ANALYTIC_MIN_TASKS)), edge - 1}):
        if ok(hi):
            return _first(ok, 2, hi)
    return edge


def minimum_detectable_delta(
    rates: Rates, n: int, k: int, *, alpha: float = 0.05, target: float = 0.8
) -> float | None:
    """The smallest positive delta this design detects with ``target`` power (``None`` when
    even +100 points would not be)."""
    if power(rates, 1.0, n, k, alpha) < target:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(14):  # 1/16384: finer than any delta worth reporting
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power(rates, mid, n, k, alpha) < target else (lo, mid)
    return hi


def simulate_power(
    rates: Rates, delta: float, n: int, k: int, *, alpha: float = 0.05, sims: int = 2000,
    seed: int = 0,
) -> float:  # fmt: skip
    """Monte Carlo power of the same design: ``sims`` experiments, each drawing ``n`` tasks
    from ``rates``, ``k`` Bernoulli trials per arm and task, and a paired t-test."""
    rng = np.random.default_rng(seed)
    p = np.clip(np.asarray(rates, dtype=np.float64), 0.0, 1.0)
    c = t_critical(n - 1, alpha)
    rejected = 0
    chunk = max(1, _CHUNK_DRAWS // n)
    for start in range(0, sims, chunk):
        m = min(chunk, sims - start)
        p_a = p[rng.integers(0, p.size, size=(m, n))]
        p_b = np.clip(p_a + delta, 0.0, 1.0)
        d = (rng.binomial(k, p_b) - rng.binomial(k, p_a)) / k
        mean = d.mean(axis=1)
        sd = d.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(sd > 0, mean / (sd / math.sqrt(n)), np.where(mean != 0, np.inf, 0.0))
        rejected += int(np.count_nonzero(np.abs(t) > c))
    return rejected / sims
