"""Selecting the tasks of an experiment: by suite, id, smoke flag, category and difficulty."""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from pydantic import BaseModel, ConfigDict, Field

from dabench.cli_values import comma_list
from dabench.errors import UserInputError
from dabench.tasks.loader import SuiteItem, TaskSet
from dabench.tasks.model import Category, Difficulty, Suite


class TaskSelection(BaseModel):
    """Which tasks an experiment runs. Empty filters select everything; filters combine with AND."""

    model_config = ConfigDict(extra="forbid", strict=True)

    files: list[str] = Field(default_factory=list)
    """Extra task files or folders loaded besides the built-in suites (relative to the
    experiment file)."""
    builtin: bool = True
    """Load the suites shipped with dabench."""
    suites: list[Suite] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    """Explicit task ids; each must exist."""
    smoke: bool = False
    """Only tasks marked ``smoke: true``."""
    categories: list[Category] = Field(default_factory=list)
    difficulty: list[Difficulty] = Field(default_factory=list)


def suite_names(values: Iterable[str], flag: str = "--suite") -> list[Suite]:
    """The suites named by a repeatable, comma-separated option; an unknown name is an error
    that lists the known ones."""
    names = [s for value in values for s in comma_list(value, flag, "suites, e.g. s1,s3")]
    known: tuple[Suite, ...] = get_args(Suite)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UserInputError(
            f"{flag}: unknown suite(s) {', '.join(unknown)}; expected some of {', '.join(known)}"
        )
    return [suite for name in names for suite in known if suite == name]


def _matches(item: SuiteItem, sel: TaskSelection) -> bool:
    if sel.tasks and item.id not in sel.tasks:
        return False
    if sel.suites and item.suite not in sel.suites:
        return False
    if sel.smoke and not item.smoke:
        return False
    if sel.categories and item.category not in sel.categories:
        return False
    return not (sel.difficulty and item.difficulty not in sel.difficulty)


def select_tasks(task_set: TaskSet, selection: TaskSelection) -> TaskSet:
    """The items of ``task_set`` the selection names; an unknown id or an empty result is an
    error."""
    known = set(task_set.ids)
    missing = [t for t in selection.tasks if t not in known]
    if missing:
        raise UserInputError(f"selection names unknown task ids: {', '.join(missing)}")
    chosen = task_set.subset(i.id for i in task_set.items if _matches(i, selection))
    if not chosen.items:
        filters = {
            k: v for k, v in selection.model_dump().items() if v and k not in ("files", "builtin")
        }
        described = ", ".join(f"{k}: {v}" for k, v in filters.items()) or "no filters"
        raise UserInputError(f"the task selection matches no task ({described})")
    return chosen


def applies_to_arm(item: SuiteItem, arm: str) -> bool:
    """Whether a task runs on an arm (its ``arms`` list is empty or names the arm)."""
    return not item.arms or arm in item.arms
