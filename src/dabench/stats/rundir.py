"""Read a run directory into memory: manifest, episodes, grades and the task snapshot.

The journal files are read with :mod:`dabench.journal.store`; ``tasks.json`` (the runner's
snapshot of the selected tasks) and an optional ``tasks.lock.json`` (truths) are read here.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, overload

import yaml
from pydantic import ValidationError

from dabench.errors import UserInputError
from dabench.journal.records import Episode, Grade, RunManifest
from dabench.journal.store import (
    GRADES_FILE,
    Journal,
    RecordScan,
    TornLine,
    load_grades,
    read_manifest,
    read_record_at,
)
from dabench.tasks.model import TruthLock

T = TypeVar("T")

TASKS_FILES = ("tasks.json", "tasks.yaml")
"""The task snapshot of a run (the runner writes ``tasks.yaml``)."""
TRUTHS_FILE = "tasks.lock.json"


@dataclass(frozen=True)
class TaskInfo:
    """What statistics and reports need of a task (or protocol) from ``tasks.json``."""

    id: str
    suite: str = ""
    category: str = ""
    difficulty: str = ""
    prompts: tuple[str, ...] = ()
    trap_classes: tuple[str, ...] = ()
    expected_tools: tuple[str, ...] = ()
    fast_path: tuple[str, ...] = ()
    rubric: tuple[str, ...] = ()
    grading_kind: str = ""
    tolerance: tuple[float, float] | None = None
    """(absolute, relative) tolerance of a numeric grading; ``None`` when not numeric."""
    step_metrics: tuple[tuple[str, str], ...] = ()
    """For a protocol: (step name, lifecycle metric) of each tagged step."""


class EpisodeLines(Sequence[Episode]):
    """The settled episodes of a journal, each read back from its line on access: a streamed
    run (:func:`dabench.stats.frame.stream_run`) holds byte offsets, not episodes."""

    def __init__(self, path: Path, offsets: list[int]) -> None:
        self.path = path
        self._offsets = offsets
        self._fh: BinaryIO | None = None

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> Episode: ...
    @overload
    def __getitem__(self, index: slice) -> list[Episode]: ...
    def __getitem__(self, index: int | slice) -> Episode | list[Episode]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._fh is None:
            self._fh = self.path.open("rb")
        return read_record_at(self._fh, self._offsets[index], Episode)

    def offset(self, index: int) -> int:
        """The byte offset of episode ``index``'s line in the journal."""
        return self._offsets[index]

    def close(self) -> None:
        """Close the journal file (reopened on the next access)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class GradeLines(Mapping[str, Grade]):
    """The latest grade of each key, read back from its line of ``grades.jsonl`` on access."""

    def __init__(self, path: Path, offsets: dict[str, int], failing: int = 0) -> None:
        self.path = path
        self._offsets = offsets
        self._fh: BinaryIO | None = None
        self.failing = failing
        """How many keys' latest grade failed or was excluded."""

    def __len__(self) -> int:
        return len(self._offsets)

    def __iter__(self) -> Iterator[str]:
        return iter(self._offsets)

    def __contains__(self, key: object) -> bool:
        return key in self._offsets

    def __getitem__(self, key: str) -> Grade:
        offset = self._offsets[key]
        if self._fh is None:
            self._fh = self.path.open("rb")
        return read_record_at(self._fh, offset, Grade)

    @overload
    def get(self, key: str, /) -> Grade | None: ...
    @overload
    def get(self, key: str, /, default: Grade | T) -> Grade | T: ...
    def get(self, key: str, /, default: object = None) -> object:
        """The grade of ``key``, else ``default`` (one dictionary lookup, no exception)."""
        offset = self._offsets.get(key)
        if offset is None:
            return default
        if self._fh is None:
            self._fh = self.path.open("rb")
        return read_record_at(self._fh, offset, Grade)

    def close(self) -> None:
        """Close the grades file (reopened on the next access)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def grade_lines(run_dir: Path) -> GradeLines:
    """Index ``grades.jsonl`` by key (the last grade of a key wins, as in ``load_grades``)
    without holding the grades."""
    path = run_dir / GRADES_FILE
    latest: dict[str, int] = {}
    failing: set[str] = set()
    for offset, grade in RecordScan(path, Grade):
        latest.pop(grade.key, None)
        latest[grade.key] = offset
        if grade.passed and not grade.excluded:
            failing.discard(grade.key)
        else:
            failing.add(grade.key)
    return GradeLines(path, latest, len(failing))


@dataclass
class RunData:
    """One run directory loaded: the inputs of :func:`dabench.stats.compute_stats`.

    :func:`load_run` holds every episode and grade; a streamed run holds
    :class:`EpisodeLines` and :class:`GradeLines`, which read one record back on access.
    """

    run_dir: Path
    manifest: RunManifest
    episodes: Sequence[Episode]
    grades: Mapping[str, Grade]
    tasks: dict[str, TaskInfo] | None
    """``None`` when the run has no ``tasks.json`` (trap classes, fast path unknown)."""
    truths: TruthLock | None = None
    notes: list[str] = field(default_factory=list)
    """Problems found while loading (torn journal line...), reported as caveats."""

    @property
    def arm_names(self) -> list[str]:
        """Arm names in manifest order, then any arm only seen in the journal."""
        names = manifest_arm_names(self.manifest)
        for ep in self.episodes:
            if ep.arm not in names:
                names.append(ep.arm)
        return names

    def close(self) -> None:
        """Close the files a streamed run reads its records back from."""
        for view in (self.episodes, self.grades):
            if isinstance(view, EpisodeLines | GradeLines):
                view.close()


def manifest_arm_names(manifest: RunManifest) -> list[str]:
    """The arm names of a manifest, in its order."""
    return [str(a.get("name", "")) for a in manifest.arms if a.get("name")]


def _tuple(value: Any) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


def _task_info(raw: Any, path: Path, index: int) -> TaskInfo:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise UserInputError(f"{path}: item {index}: expected a task object with a string 'id'")
    prompts: tuple[str, ...]
    if raw.get("prompt"):
        prompts = (str(raw["prompt"]),)
    elif raw.get("turns"):
        prompts = _tuple(raw["turns"])
    else:
        prompts = tuple(str(s.get("prompt")) for s in raw.get("steps", []) if s.get("prompt"))
    raw_grading = raw.get("grading")
    grading: dict[str, Any] = raw_grading if isinstance(raw_grading, dict) else {}
    return TaskInfo(
        id=raw["id"],
        suite=str(raw.get("suite", "")),
        category=str(raw.get("category", "")),
        difficulty=str(raw.get("difficulty", "")),
        prompts=prompts,
        trap_classes=_tuple(raw.get("trap_classes")),
        expected_tools=_tuple(raw.get("expected_tools")),
        fast_path=_tuple(raw.get("fast_path")),
        rubric=_tuple(raw.get("rubric")),
        grading_kind=str(grading.get("kind", "")),
        tolerance=_tolerance(grading),
        step_metrics=tuple(
            (str(s["name"]), str(s["metric"]))
            for s in raw.get("steps") or []
            if isinstance(s, dict) and s.get("name") and s.get("metric")
        ),
    )


def _tolerance(grading: dict[str, Any]) -> tuple[float, float] | None:
    """A numeric grading's (absolute, relative) tolerance (the task model's defaults when
    the snapshot leaves them out)."""
    if grading.get("kind") not in ("numeric", "format") or not grading.get("truth_sql"):
        return None
    return float(grading.get("tolerance_abs", 0.0)), float(grading.get("tolerance_rel", 0.005))


def load_tasks(path: Path) -> dict[str, TaskInfo]:
    """Read a task snapshot: ``tasks.json`` (a list of Task or Protocol objects) or the
    runner's ``tasks.yaml`` (``{tasks: [...], protocols: [...]}``)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        try:
            raw: Any = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UserInputError(f"{path}: invalid YAML: {exc}") from exc
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    if isinstance(raw, dict):
        raw = list(raw.get("tasks") or []) + list(raw.get("protocols") or [])
    if not isinstance(raw, list):
        raise UserInputError(f"{path}: expected a list of tasks")
    infos = [_task_info(item, path, i) for i, item in enumerate(raw)]
    return {t.id: t for t in infos}


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while parsing (it only finds nothing to free in
    freshly parsed records, and its passes over them double the load time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_run(run_dir: Path | str) -> RunData:
    """Load a run directory; a missing or invalid file raises :class:`UserInputError`."""
    with _no_gc():
        return _load_run(Path(run_dir))


def _load_run(run_dir: Path) -> RunData:
    manifest = read_run_manifest(run_dir)
    journal = Journal(run_dir)
    episodes = journal.load()
    grades = {g.key: g for g in load_grades(run_dir)}
    return run_data(run_dir, manifest, episodes, grades, journal.torn)


def torn_note(torn: TornLine, run_dir: Path) -> str:
    """The loading note of a torn journal line (a caveat of the report), also said at once
    as one ``warning:`` line on stderr: a report or publish must not skip it silently."""
    note = f"episodes.jsonl line {torn.line} is torn ({torn.reason}) and was skipped"
    print(f"warning: {run_dir}: {note}", file=sys.stderr)
    return note


def read_run_manifest(run_dir: Path) -> RunManifest:
    """The manifest of a run directory (a path that is not a directory is refused)."""
    if not run_dir.is_dir():
        raise UserInputError(f"{run_dir}: not a directory (expected a run directory)")
    return read_manifest(run_dir)


def run_data(
    run_dir: Path,
    manifest: RunManifest,
    episodes: Sequence[Episode],
    grades: Mapping[str, Grade],
    torn: TornLine | None,
) -> RunData:
    """A :class:`RunData` of these records with the run's task snapshot, truths and loading
    notes."""
    notes = [] if torn is None else [torn_note(torn, run_dir)]
    tasks_path = next((run_dir / n for n in TASKS_FILES if (run_dir / n).exists()), None)
    tasks = load_tasks(tasks_path) if tasks_path is not None else None
    truths: TruthLock | None = None
    truths_path = run_dir / TRUTHS_FILE
    if truths_path.exists():
        try:
            truths = TruthLock.model_validate_json(truths_path.read_bytes())
        except ValidationError as exc:
            notes.append(f"{TRUTHS_FILE} is invalid and was ignored ({exc.errors()[0]['msg']})")
    return RunData(run_dir, manifest, episodes, grades, tasks, truths, notes)
