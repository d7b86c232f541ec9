"""Tolerance honesty: no careless reading of a numeric task may pass its grader.

For every numeric truth (tasks, ``also_numeric`` format tasks, numeric protocol steps) the
careless variants are:

- **policy-ignored**: for every policy of the world (its ``policies.yaml``) the truth SQL is in
  scope of and applies, each of the policy's careless readings
  (:class:`~dabench.world.policy_data.IgnoredReading`) rewrites the truth SQL with that one
  policy switched off (:func:`dabench.world.policy_data.ignored_readings`);
- **declared**: ``grading.variants`` (another year, another average), which also stand in
  for a policy reading whose rewrite cannot be derived from the truth's form;
- **naive**: a trap's ``naive_sql`` (in the margins; the grader's verdict on it is the
  dynamic "naive rejected" check, so it is not reported twice).

Each policy-ignored or declared variant's answer must fall outside the task's tolerance
(``grading.numeric.within``), also once rounded to the decimal places the question asks for
(``grading.numeric.asked_decimals``: a careless reading reported as asked), unless
``grading.tolerance_exempt`` names it with the reason.
On a world other than the one the suites are authored on (:func:`authoring_world`), a variant
whose answer *equals* the truth is a note, not an issue: that world's data gives the careless
reading the right answer (no test account among a region's three key accounts, the same peak
month), which no tolerance can separate and no task wording can fix.
:func:`margins` measures every variant; :func:`tolerance_issues` is the check ``dabench tasks
validate`` runs, and :func:`margins_markdown` the table in docs/suites.md (``dabench tasks
validate --margins``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dabench.grading.numeric import asked_decimals, tolerance, within
from dabench.interruptible import QueryTimeout
from dabench.tasks.engines import Engine, sql_in_dialect
from dabench.tasks.loader import SuiteItem, TaskSet
from dabench.tasks.lock import gradings, world_engine
from dabench.tasks.model import Grading, Protocol, Task, TruthLock
from dabench.world.constants import DEFAULT_SEED
from dabench.world.policy_data import DataPolicy, ignored_readings
from dabench.world.source import open_world

VariantSource = Literal["policy", "declared", "naive"]


@dataclass(frozen=True)
class VariantValue:
    """One careless variant of a numeric truth and its answer."""

    id: str
    reading: str
    source: VariantSource
    value: float | None = None
    """``None`` when the variant gives no number (no rows, NULL) or fails (see ``error``)."""
    error: str = ""


@dataclass
class Margin:
    """A numeric truth, its tolerance and every careless variant."""

    key: str
    """Task id, or ``<protocol id>/<step name>``."""
    truth: float
    tolerance_abs: float
    tolerance_rel: float
    variants: list[VariantValue] = field(default_factory=list)
    exempt: dict[str, str] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    coincident: list[str] = field(default_factory=list)
    """Variants equal to the truth on a world other than the authoring one (notes)."""

    @property
    def allowed(self) -> float:
        """The allowed absolute difference (``grading.numeric.tolerance``)."""
        return tolerance(self.truth, self.tolerance_abs, self.tolerance_rel)

    def inside(self, v: VariantValue) -> bool:
        """Whether the grader would accept this variant's answer."""
        return v.value is not None and within(
            v.value, self.truth, self.tolerance_abs, self.tolerance_rel
        )

    def inside_reported(self, v: VariantValue) -> bool:
        """Whether the grader would accept this variant's answer once it is rounded to the
        decimal places the question asks for (a careless reading reported as asked)."""
        d = asked_decimals(self.tolerance_abs, self.tolerance_rel)
        if v.value is None or d is None:
            return False
        return within(round(v.value, d), self.truth, self.tolerance_abs, self.tolerance_rel)

    def distance(self, v: VariantValue) -> float:
        """Relative distance of the variant from the truth (absolute when the truth is 0)."""
        assert v.value is not None
        return abs(v.value - self.truth) / (abs(self.truth) or 1.0)

    def closest(self) -> VariantValue | None:
        """The computed, not exempt variant nearest the truth."""
        live = [v for v in self.variants if v.value is not None and v.id not in self.exempt]
        return min(live, key=self.distance, default=None)

    def digits(self) -> int | None:
        """Fewest significant digits at which the rounded truth still passes."""
        for n in range(1, 16):
            if within(float(f"{self.truth:.{n}g}"), self.truth, self.tolerance_abs,
                      self.tolerance_rel):  # fmt: skip
                return n
        return None


def authoring_world(world_dir: Path) -> bool:
    """Whether ``world_dir`` is the world the suites are authored and locked on (seed
    :data:`~dabench.world.constants.DEFAULT_SEED`, scale 1): there every careless variant
    must fall outside the tolerance, one equal to the truth included. An external world
    (no ``world.json``: docs/own-data.md) is its own tasks' authoring world."""
    from dabench.tasks.lock import read_world_manifest

    if not (world_dir / "world.json").exists():
        return True
    manifest = read_world_manifest(world_dir)
    return (manifest.seed, manifest.scale) == (DEFAULT_SEED, 1)


def _equal(value: float | None, truth: float) -> bool:
    """The same answer (up to floating-point summation order)."""
    return value is not None and abs(value - truth) <= 1e-9 * max(1.0, abs(truth))


def _first_cell(con: Engine, sql: str) -> tuple[float | None, str]:
    """The first cell of DuckDB ``sql`` run on ``con`` (translated to its dialect)."""
    try:
        rows = con.run(sql_in_dialect(sql, con.dialect))[1]
    except QueryTimeout as exc:
        return None, f"SQL took longer than {exc.timeout_s:g} s and was interrupted"
    except Exception as exc:  # duckdb.Error, psycopg.Error, a translation error
        return None, f"SQL failed: {exc}"
    row = rows[0] if rows else None
    if row is None or row[0] is None:
        return None, ""  # no answer at all (say, a period without data): nothing can pass
    try:
        return float(row[0]), ""
    except (TypeError, ValueError):
        return None, f"first cell {row[0]!r} is not a number"


def _prompts(item: SuiteItem) -> dict[str, str]:
    if isinstance(item, Task):
        return {item.id: " ".join(item.messages)}
    assert isinstance(item, Protocol)
    return {f"{item.id}/{s.name}": s.prompt or "" for s in item.steps}


def _margin(
    key: str,
    grading: Grading,
    prompt: str,
    tags: list[str],
    truth: float,
    naive: float | None,
    con: Engine,
    policies: list[DataPolicy],
    *,
    strict: bool = True,
) -> Margin:
    m = Margin(key, truth, grading.tolerance_abs, grading.tolerance_rel)
    m.exempt = dict(grading.tolerance_exempt)
    declared = {v.id: v for v in grading.variants}
    seen_sql: set[str] = set()
    assert grading.truth_sql is not None
    for p, reading, sql in ignored_readings(policies, grading.truth_sql, prompt, tags):
        if reading.id in declared:
            continue  # the task's own SQL for this reading
        if sql is None:
            if reading.id not in m.exempt:
                m.issues.append(
                    f"cannot derive variant {reading.id!r} ({reading.reading}): the truth "
                    f"applies policy {p.id!r} in a form its rewrite does not know; declare it "
                    "in grading.variants or say in grading.tolerance_exempt why it cannot differ"
                )
            m.variants.append(VariantValue(reading.id, reading.reading, "policy"))
            continue
        if sql in seen_sql:
            continue
        seen_sql.add(sql)
        value, error = _first_cell(con, sql)
        m.variants.append(VariantValue(reading.id, reading.reading, "policy", value, error))
    for d in grading.variants:
        value, error = _first_cell(con, d.sql)
        m.variants.append(VariantValue(d.id, d.reading, "declared", value, error))
    if naive is not None:
        m.variants.append(VariantValue("naive", "the trap's naive SQL", "naive", naive))
    ids = {v.id for v in m.variants}
    for v in m.variants:
        if v.error:
            m.issues.append(f"variant {v.id!r}: {v.error}")
        elif v.source != "naive" and m.inside(v) and v.id not in m.exempt:
            if not strict and _equal(v.value, truth):
                m.coincident.append(f"variant {v.id!r} ({v.reading}) equals the truth here")
                continue
            m.issues.append(
                f"variant {v.id!r} ({v.reading}) gives {v.value:.6g}, inside the tolerance of "
                f"the truth {truth:.6g} (+/- {m.allowed:.3g}): tighten the tolerance, reword "
                "the question, or say in grading.tolerance_exempt why it is accepted"
            )
        elif v.source != "naive" and m.inside_reported(v) and v.id not in m.exempt:
            places = asked_decimals(m.tolerance_abs, m.tolerance_rel)
            m.issues.append(
                f"variant {v.id!r} ({v.reading}) gives {v.value:.6g}; rounded to the "
                f"{places} decimal place(s) the question asks for it is inside the "
                f"tolerance of the truth {truth:.6g} (+/- {m.allowed:.3g}): ask for more "
                "places, reword the question, or say in grading.tolerance_exempt why it is "
                "accepted"
            )
    # An exemption of a variant that happens to fall outside is harmless (its reason may hold
    # on one seed's data only); one that names no variant of the task is a mistake.
    for vid in sorted(set(m.exempt) - ids):
        m.issues.append(f"tolerance_exempt names {vid!r}, which is not a variant of the task")
    return m


def margins(
    task_set: TaskSet, lock: TruthLock, world_dir: Path, *, strict: bool | None = None
) -> list[Margin]:
    """Every numeric truth of the task set with its careless variants, in task-set order.

    ``strict`` (default: :func:`authoring_world`) makes a variant equal to the truth an issue;
    otherwise it is a note (``Margin.coincident``)."""
    strict = authoring_world(world_dir) if strict is None else strict
    out: list[Margin] = []
    world = open_world(world_dir)
    con = world_engine(world)
    try:
        for item in task_set.items:
            prompts = _prompts(item)
            for key, grading in gradings(item):
                truth = lock.truths.get(key)
                if truth is None or truth.value is None or not grading.truth_sql:
                    continue
                if not (grading.kind == "numeric" or grading.also_numeric):
                    continue
                prompt = prompts.get(key, "")
                out.append(
                    _margin(
                        key,
                        grading,
                        prompt,
                        item.tags,
                        truth.value,
                        truth.naive_value,
                        con,
                        world.policies,
                        strict=strict,
                    )
                )
    finally:
        con.close()
    return out


def tolerance_issues(margins_found: list[Margin]) -> list[tuple[str, str]]:
    """(task id, message) per inside variant, underivable variant or stale exemption."""
    return [
        (m.key.split("/")[0], text if "/" not in m.key else f"{m.key}: {text}")
        for m in margins_found
        for text in m.issues
    ]


def coincidence_notes(margins_found: list[Margin]) -> list[tuple[str, str]]:
    """(task id, message) per variant that equals the truth on a non-authoring world."""
    return [
        (m.key.split("/")[0], text if "/" not in m.key else f"{m.key}: {text}")
        for m in margins_found
        for text in m.coincident
    ]


def margins_markdown(rows: list[Margin]) -> str:
    """The margins table of docs/suites.md, tightest first: per numeric truth its tolerance,
    the nearest careless variant that is not exempt, that variant's relative distance from the
    truth and the ratio of its gap to the tolerance (at most 1 = inside = the check fails), and
    the fewest significant digits at which the rounded truth still passes. Truth values are
    left out (the docs are not an answer key)."""
    lines = [
        "| task | tolerance | nearest variant | its distance | distance / tolerance | digits "
        "| exempt |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for m in sorted(rows, key=_sort_key):
        near = m.closest()
        tol = f"{m.allowed / (abs(m.truth) or 1.0):.3%}" if m.allowed else "exact"
        if near is None or near.value is None:
            cells = ["-", "-", "-"]
        else:
            gap = abs(near.value - m.truth)
            ratio = f"{gap / m.allowed:.2f}" if m.allowed else ("inf" if gap else "0")
            cells = [f"`{near.id}`", f"{m.distance(near):.3%}", ratio]
        digits = m.digits()
        exempt = ", ".join(f"`{e}`" for e in sorted(m.exempt))
        lines.append(
            f"| `{m.key}` | {tol} | {' | '.join(cells)} | "
            f"{digits if digits is not None else '-'} | {exempt} |"
        )
    return "\n".join(lines)


def _sort_key(m: Margin) -> tuple[float, str]:
    """Tightest first: the ratio of the nearest variant's gap to the tolerance."""
    near = m.closest()
    if near is None or near.value is None:
        return (math.inf, m.key)
    gap = abs(near.value - m.truth)
    return (gap / m.allowed if m.allowed else (math.inf if gap else 0.0), m.key)
