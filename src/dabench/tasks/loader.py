"""Load suite files (YAML) into validated tasks and protocols, with precise errors.

A suite file is either a YAML list of items or a mapping with a ``tasks`` list (and optionally
a ``protocols`` list). An item with a ``steps`` key is a :class:`Protocol`, every other item a
:class:`Task`. Errors name the file, the line, the item id and the field, and say what was
expected. An id defined twice (in one file or across files) is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dabench.errors import UserInputError
from dabench.tasks.hashing import canonical_hash
from dabench.tasks.model import Protocol, Task
from dabench.tasks.yaml_source import compose_file, line_of, node_data, validation_message

SuiteItem = Task | Protocol
"""One entry of a suite file."""

BUILTIN_SUITES = Path(__file__).resolve().parent.parent / "suites"
"""The suites shipped as package data (``dabench/suites/*.yaml``)."""


@dataclass
class TaskSet:
    """An ordered, id-unique collection of tasks and protocols with where each came from."""

    tasks: list[Task] = field(default_factory=list)
    protocols: list[Protocol] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    """Item id -> ``file:line`` where it is defined."""

    @property
    def items(self) -> list[SuiteItem]:
        """Tasks then protocols, in load order."""
        return [*self.tasks, *self.protocols]

    @property
    def ids(self) -> list[str]:
        """Item ids in load order."""
        return [i.id for i in self.items]

    def get(self, item_id: str) -> SuiteItem:
        """The item with this id."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)

    def hash(self) -> str:
        """The canonical task-set hash: independent of file layout, order and YAML style."""
        return task_set_hash(self.items)

    def subset(self, ids: Iterable[str]) -> TaskSet:
        """The items with these ids, keeping load order."""
        keep = set(ids)
        return TaskSet(
            tasks=[t for t in self.tasks if t.id in keep],
            protocols=[p for p in self.protocols if p.id in keep],
            sources={k: v for k, v in self.sources.items() if k in keep},
        )


def item_hash(item: SuiteItem) -> str:
    """Canonical hash of one task or protocol (its validated content, defaults included)."""
    return canonical_hash(item.model_dump(mode="json"))


def task_set_hash(items: Iterable[SuiteItem]) -> str:
    """Canonical hash of a set of items: sorted by id, each by its canonical content."""
    return canonical_hash(sorted((i.id, item_hash(i)) for i in items))


def _items_node(root: yaml.Node, path: Path) -> list[yaml.Node]:
    if isinstance(root, yaml.SequenceNode):
        return list(root.value)
    if isinstance(root, yaml.MappingNode):
        items: list[yaml.Node] = []
        for key, value in root.value:
            if key.value not in ("tasks", "protocols"):
                raise UserInputError(
                    f"{path}:{key.start_mark.line + 1}: unknown top-level key {key.value!r}; "
                    "expected 'tasks' and/or 'protocols'"
                )
            if not isinstance(value, yaml.SequenceNode):
                raise UserInputError(
                    f"{path}:{value.start_mark.line + 1}: '{key.value}' must be a list of items"
                )
            items.extend(value.value)
        return items
    raise UserInputError(
        f"{path}:{root.start_mark.line + 1}: expected a list of tasks or a mapping with 'tasks'"
    )


def load_file(path: Path) -> list[tuple[SuiteItem, int]]:
    """Load one suite file: its items with the 1-based line each starts on (a file without
    items is refused: it is a mistake, not an empty suite)."""
    root = compose_file(path)
    if root is None:
        raise UserInputError(f"{path}:1: no tasks in this file")
    out: list[tuple[SuiteItem, int]] = []
    for node in _items_node(root, path):
        line = line_of(node)
        data: Any = node_data(node, path)
        if not isinstance(data, dict):
            raise UserInputError(f"{path}:{line}: each item must be a mapping, got {data!r:.40}")
        raw_id = data.get("id")
        label = f"item {raw_id!r}" if raw_id else "item"
        model: type[Task] | type[Protocol] = Protocol if "steps" in data else Task
        try:
            out.append((model.model_validate(data), line))
        except ValidationError as exc:
            raise UserInputError(validation_message(exc, path, node, label)) from exc
    if not out:
        raise UserInputError(f"{path}:{line_of(root)}: no tasks in this file")
    return out


def _expand(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted([*p.rglob("*.yaml"), *p.rglob("*.yml")]))
        elif p.exists():
            files.append(p)
        else:
            raise UserInputError(f"{p}: no such task file or folder")
    return files


def load_tasks(paths: Iterable[Path | str]) -> TaskSet:
    """Load task files and folders (``*.yaml``/``*.yml``, recursively) into one task set."""
    ts = TaskSet()
    for path in _expand(Path(p) for p in paths):
        for item, line in load_file(path):
            where = f"{path}:{line}"
            if item.id in ts.sources:
                raise UserInputError(
                    f"{where}: duplicate task id {item.id!r} "
                    f"(first defined at {ts.sources[item.id]})"
                )
            ts.sources[item.id] = where
            if isinstance(item, Protocol):
                ts.protocols.append(item)
            else:
                ts.tasks.append(item)
    return ts


def load_builtin_tasks() -> TaskSet:
    """The suites shipped with dabench."""
    return load_tasks([BUILTIN_SUITES])


def dump_tasks(task_set: TaskSet, path: Path) -> Path:
    """Write a task set as one suite file that loads back to the same task-set hash."""
    data = {
        "tasks": [t.model_dump(mode="json") for t in task_set.tasks],
        "protocols": [p.model_dump(mode="json") for p in task_set.protocols],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
