"""Tasks and protocols: the schema, loading suite files, selection, the truth lock.

Public API::

    load_tasks(paths) -> TaskSet            load_builtin_tasks() -> TaskSet
    TaskSet(.tasks, .protocols, .sources, .ids, .hash(), .subset(ids))
    item_hash(item), task_set_hash(items)   dump_tasks(task_set, path)
    TaskSelection, select_tasks(task_set, selection), applies_to_arm(item, arm)
    compute_lock(task_set, world_dir) -> TruthLock, check_lock(...), read_lock, write_lock
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.tasks.loader import (
        TaskSet,
        dump_tasks,
        item_hash,
        load_builtin_tasks,
        load_tasks,
        task_set_hash,
    )
    from dabench.tasks.lock import LOCK_FILE, check_lock, compute_lock, read_lock, write_lock
    from dabench.tasks.model import Grading, Protocol, Task, Truth, TruthLock
    from dabench.tasks.selection import TaskSelection, applies_to_arm, select_tasks

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.tasks.loader": [
            "TaskSet",
            "dump_tasks",
            "item_hash",
            "load_builtin_tasks",
            "load_tasks",
            "task_set_hash",
        ],
        "dabench.tasks.lock": [
            "LOCK_FILE",
            "check_lock",
            "compute_lock",
            "read_lock",
            "write_lock",
        ],
        "dabench.tasks.model": [
            "Grading",
            "Protocol",
            "Task",
            "Truth",
            "TruthLock",
        ],
        "dabench.tasks.selection": [
            "TaskSelection",
            "applies_to_arm",
            "select_tasks",
        ],
    },
)

__all__ = [
    "LOCK_FILE",
    "Grading",
    "Protocol",
    "Task",
    "TaskSelection",
    "TaskSet",
    "Truth",
    "TruthLock",
    "applies_to_arm",
    "check_lock",
    "compute_lock",
    "dump_tasks",
    "item_hash",
    "load_builtin_tasks",
    "load_tasks",
    "read_lock",
    "select_tasks",
    "task_set_hash",
    "write_lock",
]
