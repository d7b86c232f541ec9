"""``dabench run --world-seed random|N``: a fresh built-in world for a contamination-free run.

A named seed is used as given. ``random`` draws one with :mod:`secrets`, builds its world into
the world cache and keeps it only when the tasks can be graded honestly on it: the build's
trap invariant holds (every planted trap's naive answer more than 5 % from the correct one,
else :class:`~dabench.world.traps.TrapInvariantError`) and the run's tasks pass the static
checks of ``dabench tasks validate`` (every truth runs; every careless variant of a numeric
task falls outside its tolerance or equals the truth; the knowledge layer agrees with the
policies) and its naive check (no trap task's grader accepts its naive answer, judged on the
warehouse without a platform). A refused draw is reported and another drawn. The run's
manifest and reports record the seed (``world_seed_random``), so ``--world-seed N`` repeats
the run on the same world; every task is locked on that world (the run computes its truth
lock from the world it serves).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from dabench.errors import UserInputError
from dabench.tasks.loader import TaskSet
from dabench.world.cache import ensure_world, world_cache_dir
from dabench.world.constants import MAX_SEED
from dabench.world.traps import TrapInvariantError

RANDOM_SEED_BOUND = 10**9
"""A drawn seed is below this (nine digits: easy to quote, a billion worlds)."""
MAX_DRAWS = 20
"""Refused draws before giving up."""


def parse_world_seed(value: str) -> int | None:
    """``random`` -> ``None``; an integer in 0..2^63-1 -> itself; anything else an error."""
    if value.strip().lower() == "random":
        return None
    try:
        seed = int(value)
    except ValueError:
        raise UserInputError(
            f"--world-seed must be 'random' or an integer from 0 to {MAX_SEED}, got {value!r}"
        ) from None
    if not 0 <= seed <= MAX_SEED:
        raise UserInputError(f"--world-seed must be from 0 to {MAX_SEED}, got {seed}")
    return seed


def world_issues(world_dir: Path, tasks: TaskSet) -> list[str]:
    """The static checks of ``dabench tasks validate`` for ``tasks`` on a built world and its
    naive check (:func:`~dabench.validation.tasks.naive_issues`), one line per issue (empty:
    the world can grade them honestly)."""
    # above the runner's own layer
    from dabench.validation.tasks import naive_issues, static_checks

    lock, issues = static_checks(tasks, world_dir)
    if lock is not None:
        issues += naive_issues(tasks, lock, world_dir)
    return [f"{i.item}: {i.check}: {i.detail}" for i in issues]


def draw_world_seed(
    scale: int,
    tasks: TaskSet,
    *,
    say: Callable[[str], None] = lambda _: None,
    draw: Callable[[], int] | None = None,
    cache_dir: Path | None = None,
) -> int:
    """A random seed whose world (at ``scale``) builds into ``cache_dir`` (default: the world
    cache) and passes :func:`world_issues` for ``tasks``; each refused draw is reported
    through ``say`` and replaced. ``draw`` (default: :func:`secrets.randbelow` below
    :data:`RANDOM_SEED_BOUND`) gives the candidates."""
    for _ in range(MAX_DRAWS):
        seed = draw() if draw is not None else secrets.randbelow(RANDOM_SEED_BOUND)
        try:
            path = ensure_world(seed, scale, cache_dir or world_cache_dir())
        except TrapInvariantError as exc:
            say(f"world seed {seed} refused: {exc}; drawing another")
            continue
        issues = world_issues(path, tasks)
        if issues:
            more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
            say(f"world seed {seed} refused: {issues[0]}{more}; drawing another")
            continue
        return seed
    raise UserInputError(f"--world-seed random: {MAX_DRAWS} drawn seeds were all refused")
