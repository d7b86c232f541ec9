"""Policies as data (``policies.yaml`` of the knowledge format) and how they are checked.

Every world's policies are records of this module, read from its knowledge directory by
:func:`dabench.world.source.open_world`: the built-in generator writes its own policies
(:data:`dabench.world.policies.POLICIES`) as ``policies.yaml`` like any user would. A
:class:`DataPolicy` holds the rule in words, its scope (:class:`PolicyScope`: which truth SQL
and prompts it covers), the SQL forms that apply it, and optionally its careless readings
(:class:`IgnoredReading`: rewrites that switch it off) and the knowledge texts that must agree
with it (:mod:`dabench.world.consistency`).

The checks are syntactic (regular expressions over normalised SQL):

- :func:`policy_issues` (``dabench tasks validate``): a truth SQL in a policy's scope must
  apply it, or the task is exempt (tag ``policy-exempt:<id>``) and its prompt says so;
- :func:`ignored_readings`: each careless reading of a policy a truth SQL applies, as the
  rewritten SQL (the answer of an analyst who ignores the policy; validation requires it to
  fall outside the task's tolerance).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

KNOWLEDGE_FORMAT_VERSION = 1
"""Version of the knowledge directory format this code reads and writes."""

EXEMPT_TAG = "policy-exempt:"
"""Task tag prefix that exempts a task from one policy (its prompt must say so)."""

_FLAG = re.IGNORECASE | re.DOTALL


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PolicyScope(_Record):
    """One case of a policy's scope. A truth SQL (with its prompt) is in it when the SQL reads
    one of ``tables`` and one of ``also_tables`` and none of ``not_tables`` (an empty list: no
    condition), its prompt matches ``prompt`` (case-insensitive) and its lower-cased,
    whitespace-normalised SQL matches ``sql`` (regular expressions; empty: any)."""

    tables: list[str] = Field(default_factory=list)
    also_tables: list[str] = Field(default_factory=list)
    not_tables: list[str] = Field(default_factory=list)
    prompt: str = ""
    sql: str = ""


class Rewrite(_Record):
    """One rewrite of a careless reading: every match of ``pattern`` (case-insensitive, ``.``
    matches newlines) in the SQL as written is replaced by ``replacement`` (``re.sub``
    syntax), or, with ``shift_months``, the date the pattern's groups 1-3 (year, month, day)
    capture becomes the quoted date that many months earlier (a month end stays one)."""

    pattern: str
    replacement: str | None = None
    shift_months: int | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Rewrite:
        if (self.replacement is None) == (self.shift_months is None):
            raise ValueError("a rewrite needs exactly one of replacement and shift_months")
        return self


class IgnoredReading(_Record):
    """One careless reading of a policy: the policy switched off, as rewrites of its SQL."""

    id: str
    """Variant id (``<policy id>`` or ``<policy id>.<reading>``), unique over all policies."""
    reading: str
    """What the careless analyst does, in words."""
    rewrites: list[Rewrite] = Field(min_length=1)
    """Applied in order to the SQL as written; they undo the forms that apply the policy."""


class DataPolicy(_Record):
    """One policy as data: the rule, its scope, and the SQL forms that apply it."""

    id: str
    title: str
    rule: str
    """The rule in one or two sentences."""
    page: str
    """Knowledge page that states it."""
    applies_to: list[str] = Field(default_factory=list)
    """What the rule covers, in words."""
    not_applies_to: list[str] = Field(default_factory=list)
    """What it explicitly does not cover."""
    scope: list[PolicyScope] = Field(min_length=1)
    """The cases of the scope (any of them); one mapping is read as a list of one."""
    applied_by: list[str] = Field(min_length=1)
    """Regular expressions over lower-cased, whitespace-normalised SQL: SQL in scope must match
    one of them."""
    exemption: str = r"\bexempt\b"
    """Regular expression the prompt of a task tagged ``policy-exempt:<id>`` must match."""
    ignored: list[IgnoredReading] = Field(default_factory=list)
    """The careless readings (the policy switched off), one variant each."""
    states: list[str] = Field(default_factory=list)
    """Knowledge texts besides :attr:`page` that must state :attr:`rule` verbatim
    (``catalog:<dataset>[.<column>]``, ``glossary:<id>``, ``query:<id>``, ``knowledge:<id>``)."""
    queries: list[str] = Field(default_factory=list)
    """Curated queries whose SQL must apply the policy."""
    members_sql: str = ""
    """For a definition: SQL whose first column lists its members; a curated query in
    :attr:`queries` must return the same set in its first column (DuckDB SQL, translated for
    a PostgreSQL world)."""
    term: str = ""
    """Regular expression of the defined term; any knowledge text that matches it and
    :attr:`defining` must state :attr:`rule` (no text may give another definition)."""
    defining: str = ""
    """Regular expression of the words a definition of :attr:`term` uses."""

    @field_validator("scope", mode="before")
    @classmethod
    def _one_scope(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class PolicyFile(_Record):
    """``policies.yaml``."""

    format_version: int = KNOWLEDGE_FORMAT_VERSION
    policies: list[DataPolicy] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> PolicyFile:
        ids = [p.id for p in self.policies]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"policy id(s) given more than once: {', '.join(twice)}")
        return self


def dump_policies(policies: list[DataPolicy] | tuple[DataPolicy, ...], header: str = "") -> str:
    """``policies.yaml`` text for ``policies`` (defaults left out; the same input gives the
    same bytes)."""
    data = PolicyFile(policies=list(policies)).model_dump(mode="json", exclude_defaults=True)
    data = {"format_version": KNOWLEDGE_FORMAT_VERSION, **data}
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + body


def scope_markdown(p: DataPolicy) -> str:
    """The "Rule" and "Scope" paragraphs a knowledge page shows for a policy."""
    applies = "; ".join(p.applies_to)
    not_applies = "; ".join(p.not_applies_to)
    return (
        f"**Rule.** {p.rule}\n\n"
        f"**Scope.** Applies to: {applies}. Does **not** apply to: {not_applies}."
    )


def normalise_sql(sql: str) -> str:
    """Lower case, one space between tokens, no spaces inside parentheses."""
    text = " ".join(sql.lower().split())
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


def tables_read(sql: str) -> set[str]:
    """Schema-qualified tables after FROM or JOIN."""
    return set(re.findall(r"\b(?:from|join)\s+([a-z_]+\.[a-z_0-9]+)", normalise_sql(sql)))


def _reads(tables: set[str], wanted: list[str]) -> bool:
    return bool(tables & {t.lower() for t in wanted})


def _case_matches(case: PolicyScope, tables: set[str], norm: str, prompt: str) -> bool:
    return (
        (not case.tables or _reads(tables, case.tables))
        and (not case.also_tables or _reads(tables, case.also_tables))
        and not _reads(tables, case.not_tables)
        and (not case.prompt or bool(re.search(case.prompt, prompt, re.IGNORECASE)))
        and (not case.sql or bool(re.search(case.sql, norm)))
    )


def in_scope(p: DataPolicy, sql: str, prompt: str) -> bool:
    """Whether a truth SQL (for this prompt) falls in the policy's scope."""
    tables, norm = tables_read(sql), normalise_sql(sql)
    return any(_case_matches(case, tables, norm, prompt) for case in p.scope)


def applies(p: DataPolicy, sql: str) -> bool:
    """Whether the SQL applies the policy (matches one of its ``applied_by`` forms)."""
    norm = normalise_sql(sql)
    return any(re.search(rx, norm) for rx in p.applied_by)


def _exempt(tags: list[str] | tuple[str, ...]) -> set[str]:
    return {t[len(EXEMPT_TAG) :] for t in tags if t.startswith(EXEMPT_TAG)}


def policy_issues(
    policies: list[DataPolicy] | tuple[DataPolicy, ...],
    sql: str,
    prompt: str,
    tags: list[str] | tuple[str, ...],
) -> list[str]:
    """Every policy a truth SQL is in scope of but does not apply, as one message each.

    A tag ``policy-exempt:<id>`` exempts the task when its prompt states the exemption
    (matches the policy's ``exemption`` pattern); an exemption the prompt does not state, or
    one for an unknown policy, is itself an issue.
    """
    exempt = _exempt(tags)
    known = {p.id for p in policies}
    issues = [f"unknown policy in tag {EXEMPT_TAG}{pid}" for pid in sorted(exempt - known)]
    for p in policies:
        if p.id in exempt:
            if not re.search(p.exemption, prompt, re.IGNORECASE):
                issues.append(
                    f"exempt from policy {p.id!r} but the prompt does not say so "
                    f"(expected it to match /{p.exemption}/)"
                )
            continue
        if in_scope(p, sql, prompt) and not applies(p, sql):
            issues.append(
                f"truth SQL does not apply policy {p.id!r} ({p.title}, knowledge page "
                f"{p.page}): {p.rule}"
            )
    return issues


def _shift_dates(months: int) -> Callable[[re.Match[str]], str]:
    """Replace a date literal by the same date ``months`` earlier (a month end stays one)."""

    def shift(m: re.Match[str]) -> str:
        day = dt.date(int(m[1]), int(m[2]), int(m[3]))
        index = day.year * 12 + day.month - 1 - months
        year, month = divmod(index, 12)
        last = calendar.monthrange(year, month + 1)[1]
        month_end = day.day == calendar.monthrange(day.year, day.month)[1]
        return f"'{dt.date(year, month + 1, last if month_end else min(day.day, last))}'"

    return shift


def ignore(reading: IgnoredReading, sql: str) -> str | None:
    """``sql`` with the policy switched off as ``reading`` says, or ``None`` when none of its
    forms occurs in ``sql`` (the variant cannot be derived by rewriting)."""
    out = sql
    for rw in reading.rewrites:
        repl: str | Callable[[re.Match[str]], str]
        if rw.shift_months is not None:
            repl = _shift_dates(rw.shift_months)
        else:
            assert rw.replacement is not None  # exactly one of the two (validated)
            repl = rw.replacement
        out = re.sub(rw.pattern, repl, out, flags=_FLAG)
    return None if out == sql else out


def ignored_readings(
    policies: list[DataPolicy] | tuple[DataPolicy, ...],
    sql: str,
    prompt: str,
    tags: list[str] | tuple[str, ...],
) -> list[tuple[DataPolicy, IgnoredReading, str | None]]:
    """Every careless reading of the policies a truth SQL is in scope of and applies (not the
    ones it is exempt from), with the rewritten SQL (``None`` when it cannot be derived)."""
    exempt = _exempt(tags)
    return [
        (p, reading, ignore(reading, sql))
        for p in policies
        if p.ignored and p.id not in exempt and in_scope(p, sql, prompt) and applies(p, sql)
        for reading in p.ignored
    ]
