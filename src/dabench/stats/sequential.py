"""An anytime-valid confidence sequence for the paired delta of two arms, run round by round.

A *round* gives every shared task one more attempt on each arm; its paired differences
``x_i = score_B - score_A`` lie in [-1, 1]. The estimand is the task-set mean delta
``Delta = mean_i E[x_i]``, which may differ from task to task.

The method is the hedged capital process of Waudby-Smith & Ramdas, "Estimating means of
bounded random variables by betting" (JRSS-B 86(1), 2024), applied to ``y = (x + 1) / 2`` in
[0, 1] for every candidate mean ``m`` on a grid: two wealth processes bet on ``y > m`` and
``y < m`` and their average ``K_r(m)`` is compared with ``1 / alpha``. By Ville's inequality
``{m : K_r(m) < 1/alpha}`` covers the true mean at every round simultaneously, so the run may
stop at any round. One adaptation keeps this exact for tasks with different means: the bet
``lambda`` is fixed for a whole round (chosen from earlier rounds only, aGRAPA: ``(mu - m) /
(sigma^2 + (mu - m)^2)`` truncated at ``c / m`` and ``c / (1 - m)``), so a round's factor
``prod_i (1 + lambda (y_i - m))`` has expectation ``prod_i (1 + lambda (mu_i - m)) <=
exp(lambda sum_i (mu_i - m)) = 1`` at the true task-set mean. Decisions are therefore taken at
round ends only. The first round, with no data yet, bets ``min(1, c/m)`` / ``min(1, c/(1-m))``.

A comparison is *decided* when the sequence excludes 0 (``better`` / ``worse``) or lies inside
``(-min_delta, +min_delta)`` (``equivalent``); it is *undecided* when the round budget ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

Decision = Literal["better", "worse", "equivalent", "undecided", "running"]

GRID = np.linspace(0.0, 1.0, 801)[1:-1]
"""Candidate means on the [0, 1] scale (the delta scale is ``2 m - 1``), step 0.00125."""
TRUNCATION = 0.75
"""``c``: bets never risk more than 75 % of the wealth on one observation."""


@dataclass
class RoundState:
    """The confidence sequence after some rounds."""

    rounds: int
    observations: int
    low: float
    """Lower end of the sequence on the delta scale (-1 when nothing is excluded)."""
    high: float
    decision: Decision


@dataclass
class PairedSequence:
    """The confidence sequence of one arm's paired delta against the baseline."""

    alpha: float = 0.05
    min_delta: float | None = None
    """With it, an interval inside ``(-min_delta, min_delta)`` decides ``equivalent``."""
    log_plus: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(GRID.size))
    log_minus: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(GRID.size))
    seen: list[float] = field(default_factory=list)
    history: list[RoundState] = field(default_factory=list)

    def _bets(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        cap_plus, cap_minus = TRUNCATION / GRID, TRUNCATION / (1.0 - GRID)
        if not self.seen:
            return np.minimum(1.0, cap_plus), np.minimum(1.0, cap_minus)
        y = np.asarray(self.seen)
        mu = float(y.mean())
        var = float(y.var()) if y.size > 1 else 0.25
        gap = mu - GRID
        lam = gap / (var + gap**2 + 1e-12)
        return np.clip(lam, 0.0, cap_plus), np.clip(-lam, 0.0, cap_minus)

    def add_round(self, differences: npt.ArrayLike) -> RoundState:
        """Take one round of paired differences (one per shared task) and decide."""
        x = np.asarray(differences, dtype=np.float64)
        if x.size == 0:
            raise ValueError("a round needs at least one paired difference")
        if np.any(np.abs(x) > 1.0 + 1e-12):
            raise ValueError("paired differences must lie in [-1, 1]")
        y = (np.clip(x, -1.0, 1.0) + 1.0) / 2.0
        plus, minus = self._bets()
        dev = y[:, None] - GRID[None, :]
        self.log_plus += np.log1p(plus[None, :] * dev).sum(axis=0)
        self.log_minus += np.log1p(-minus[None, :] * dev).sum(axis=0)
        self.seen.extend(y.tolist())
        return self._state()

    def _state(self) -> RoundState:
        log_k = np.logaddexp(self.log_plus, self.log_minus) - np.log(2.0)
        inside = GRID[log_k < np.log(1.0 / self.alpha)]
        low = float(2 * inside.min() - 1) if inside.size else 0.0
        high = float(2 * inside.max() - 1) if inside.size else 0.0
        if inside.size and low == 2 * GRID[0] - 1:
            low = -1.0
        if inside.size and high == 2 * GRID[-1] - 1:
            high = 1.0
        decision: Decision = "running"
        if low > 0:
            decision = "better"
        elif high < 0:
            decision = "worse"
        elif self.min_delta is not None and -self.min_delta < low and high < self.min_delta:
            decision = "equivalent"
        state = RoundState(len(self.history) + 1, len(self.seen), low, high, decision)
        self.history.append(state)
        return state


def run_sequential(
    rounds: list[npt.NDArray[np.float64]], *, alpha: float = 0.05,
    min_delta: float | None = None,
) -> RoundState:  # fmt: skip
    """Feed rounds until a decision; the state where it stopped (``undecided`` when the
    rounds ran out first)."""
    seq = PairedSequence(alpha=alpha, min_delta=min_delta)
    state: RoundState | None = None
    for x in rounds:
        state = seq.add_round(x)
        if state.decision != "running":
            return state
    if state is None:
        raise ValueError("no rounds")
    state.decision = "undecided"
    return state


@dataclass(frozen=True)
class SimulationResult:
    """Outcomes of simulated sequential experiments."""

    experiments: int
    decided_different: float
    """Share that decided ``better`` or ``worse`` (the type-I error under a null)."""
    mean_rounds: float
    mean_episode_share: float
    """Episodes used over the fixed design's (every task, ``max_rounds`` rounds, both arms)."""
    max_episode_share: float


def simulate_sequential(
    rates_a: npt.ArrayLike, rates_b: npt.ArrayLike, *, max_rounds: int, sims: int = 2000,
    alpha: float = 0.05, min_delta: float | None = None, seed: int = 0,
) -> SimulationResult:  # fmt: skip
    """Simulate ``sims`` experiments: per round, one Bernoulli attempt per task and arm with
    the given per-task rates; stop at the first decision or after ``max_rounds``."""
    rng = np.random.default_rng(seed)
    p_a, p_b = np.asarray(rates_a, dtype=np.float64), np.asarray(rates_b, dtype=np.float64)
    different, used = 0, []
    for _ in range(sims):
        seq = PairedSequence(alpha=alpha, min_delta=min_delta)
        state = None
        for _r in range(max_rounds):
            x = rng.binomial(1, p_b).astype(np.float64) - rng.binomial(1, p_a)
            state = seq.add_round(x)
            if state.decision != "running":
                break
        assert state is not None
        different += state.decision in ("better", "worse")
        used.append(state.rounds)
    share = np.asarray(used, dtype=np.float64) / max_rounds
    return SimulationResult(
        experiments=sims,
        decided_different=different / sims,
        mean_rounds=float(np.mean(used)),
        mean_episode_share=float(share.mean()),
        max_episode_share=float(share.max()),
    )
