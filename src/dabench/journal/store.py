"""The run directory on disk: an append-only, crash-safe episode journal, the manifest, grades.

``episodes.jsonl`` holds one :class:`~dabench.journal.records.Episode` per line. Each append
is a single ``write`` on a file opened ``O_APPEND`` followed by ``flush`` and ``os.fsync``, so a
process killed at any moment leaves at most one torn (partial) last line. :meth:`Journal.load`
tolerates and reports such a line; :meth:`Journal.repair` truncates it before a resumed run
appends again.

An episode key is settled at most once: :meth:`Journal.append` refuses a key already journaled,
except that a ``harness_error`` record (an infrastructure failure, not a measurement) may be
followed by a retry of the same key. :meth:`Journal.load` returns the last record of each key,
and :attr:`Journal.retried` keeps the harness errors that a retry replaced.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from dabench.errors import DabenchError
from dabench.journal.records import Episode, Grade, RunManifest
from dabench.recordfile import first_error, read_record_file
from dabench.redaction import redact_data
from dabench.secretfile import write_private

EPISODES_FILE = "episodes.jsonl"
GRADES_FILE = "grades.jsonl"
MANIFEST_FILE = "manifest.json"
PRIVATE_EXPERIMENT_FILE = "experiment.private.json"
"""The experiment with the URL passwords that ``manifest.json`` masks (mode 0600; only when
there are any): what ``run --resume`` and ``play`` re-run."""

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class TornLine:
    """A partial last line left by a process killed mid-write."""

    line: int
    """1-based line number in the file."""
    offset: int
    """Byte offset where the torn line starts (the file is truncated here by ``repair``)."""
    reason: str


def _fsync_append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


class RecordScan(Generic[R]):
    """Stream the records of a JSON-lines file with their byte offsets, one line at a time
    (the file is never held whole). A bad *last* line is torn (set in :attr:`torn` once the
    iteration ends); a bad earlier line raises :class:`DabenchError`."""

    def __init__(self, path: Path, model: type[R]) -> None:
        self.path = path
        self.model = model
        self.torn: TornLine | None = None

    def __iter__(self) -> Iterator[tuple[int, R]]:
        self.torn = None
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            offset = 0
            pending: tuple[int, int, ValidationError] | None = None
            for number, raw in enumerate(fh, start=1):
                if pending is not None:  # an invalid line with more lines after it
                    self._raise(*pending)
                if not raw.endswith(b"\n"):
                    self.torn = TornLine(number, offset, "no terminating newline")
                    return
                if not raw.isspace():  # a blank line is skipped
                    try:
                        record = self.model.model_validate_json(raw)
                    except ValidationError as exc:
                        pending = (number, offset, exc)
                    else:
                        yield offset, record
                offset += len(raw)
            if pending is not None:
                line, start, error = pending
                self.torn = TornLine(line, start, f"invalid record: {first_error(error)}")

    def _raise(self, number: int, _offset: int, exc: ValidationError) -> None:
        raise DabenchError(
            f"{self.path}:{number}: not a valid {self.model.__name__} record: {first_error(exc)}"
        ) from exc


def read_record_at(fh: BinaryIO, offset: int, model: type[R]) -> R:
    """The record of the line at ``offset`` of an open JSON-lines file (already validated
    once by a :class:`RecordScan`)."""
    fh.seek(offset)
    return model.model_validate_json(fh.readline())


def _parse_lines(path: Path, model: type[R]) -> tuple[list[R], TornLine | None]:
    """Parse a JSON-lines file; a bad *last* line is torn, a bad earlier line is an error."""
    scan = RecordScan(path, model)
    records = [record for _, record in scan]
    return records, scan.torn


class Journal:
    """The episode journal of one run directory (``episodes.jsonl``).

    Safe to share between asyncio tasks and threads of one process: appends are serialised
    by a lock and each is durable (fsync) before :meth:`append` returns.
    """

    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / EPISODES_FILE
        self.torn: TornLine | None = None
        """Set by :meth:`load` when the last line was torn."""
        self.retried: list[Episode] = []
        """Set by :meth:`load`: harness-error records replaced by a later retry of their key."""
        self._lock = threading.Lock()
        self._keys: dict[str, bool] | None = None
        """Key -> whether its latest record is a harness error (retry allowed)."""

    def load(self) -> list[Episode]:
        """All complete episodes in file order; a torn last line is skipped and reported in
        :attr:`torn`. A corrupt line anywhere else raises :class:`DabenchError`."""
        records, torn = _parse_lines(self.path, Episode)
        self.torn = torn
        episodes, self.retried = self._settle(records)
        keys = {ep.key: ep.status == "harness_error" for ep in episodes}
        # A torn journal must be repaired before it is appended to.
        self._keys = keys if torn is None else None
        return episodes

    def _settle(self, records: list[Episode]) -> tuple[list[Episode], list[Episode]]:
        """The last record of each key (at its first position) and the harness errors a retry
        replaced; any other repeated key is a corrupt journal."""
        latest: dict[str, Episode] = {}
        retried: list[Episode] = []
        for ep in records:
            prev = latest.get(ep.key)
            if prev is not None:
                if prev.status != "harness_error":
                    raise DabenchError(f"{self.path}: episode {ep.key!r} appears more than once")
                retried.append(prev)
            latest[ep.key] = ep
        return list(latest.values()), retried

    def keys(self) -> set[str]:
        """The keys of the complete episodes in the journal."""
        with self._lock:
            if self._keys is not None:
                return set(self._keys)
        return {ep.key for ep in self.load()}

    def settled_keys(self) -> set[str]:
        """Keys whose latest record is a measurement (not a harness error): what a resumed run
        need not play again."""
        return {ep.key for ep in self.load() if ep.status != "harness_error"}

    def repair(self) -> TornLine | None:
        """Truncate a torn last line (left by a killed process) and return what was removed."""
        with self._lock:
            _, torn = _parse_lines(self.path, Episode)
            if torn is not None:
                with self.path.open("r+b") as fh:
                    fh.truncate(torn.offset)
                    fh.flush()
                    os.fsync(fh.fileno())
            self._keys = None
            self.torn = None
            return torn

    def append(self, episode: Episode) -> None:
        """Append one episode durably; refuses a key already journaled unless its record is a
        harness error (then this is its retry)."""
        line = episode.model_dump_json().encode("utf-8") + b"\n"
        if b"\n" in line[:-1]:  # pragma: no cover - JSON never contains a raw newline
            raise DabenchError("episode JSON contains a newline")
        with self._lock:
            if self._keys is None:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                records, torn = _parse_lines(self.path, Episode)
                if torn is not None:
                    raise DabenchError(
                        f"{self.path}:{torn.line}: torn last line ({torn.reason}); "
                        "call Journal.repair() before appending"
                    )
                settled, _ = self._settle(records)
                self._keys = {ep.key: ep.status == "harness_error" for ep in settled}
            if self._keys.get(episode.key) is False:
                raise DabenchError(f"{self.path}: episode {episode.key!r} is already journaled")
            _fsync_append(self.path, line)
            self._keys[episode.key] = episode.status == "harness_error"


def write_manifest(run_dir: Path | str, manifest: RunManifest) -> Path:
    """Write ``manifest.json`` atomically (temp file, fsync, rename), URL passwords masked
    (the experiment as given goes to the private :data:`PRIVATE_EXPERIMENT_FILE`)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    masked = manifest.model_copy(
        update={
            "experiment": redact_data(manifest.experiment),
            "arms": redact_data(manifest.arms),
        }
    )
    if masked.experiment != manifest.experiment:
        data = json.dumps(manifest.experiment, indent=2, sort_keys=True).encode()
        write_private(run_dir / PRIVATE_EXPERIMENT_FILE, data + b"\n")
    manifest = masked
    path = run_dir / MANIFEST_FILE
    tmp = path.with_suffix(".json.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(manifest.model_dump_json(indent=2))
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_manifest(run_dir: Path | str, *, with_secrets: bool = False) -> RunManifest:
    """Read ``manifest.json`` of a run directory; ``with_secrets``: with the experiment as
    given (its URL passwords unmasked), to run it again."""
    path = Path(run_dir) / MANIFEST_FILE
    manifest = read_record_file(
        path,
        RunManifest,
        what="manifest",
        missing=f"{Path(run_dir)}: not a run directory (no manifest.json)",
        error=DabenchError,
    )
    private = Path(run_dir) / PRIVATE_EXPERIMENT_FILE
    if with_secrets and private.is_file():
        try:
            experiment = json.loads(private.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DabenchError(f"{private}: unreadable ({exc})") from exc
        manifest = manifest.model_copy(update={"experiment": experiment})
    return manifest


def append_grades(run_dir: Path | str, grades: Iterable[Grade]) -> None:
    """Append grades to ``grades.jsonl`` durably (one JSON line each)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    data = b"".join(g.model_dump_json().encode("utf-8") + b"\n" for g in grades)
    if data:
        _fsync_append(run_dir / GRADES_FILE, data)


def write_grades(run_dir: Path | str, grades: Iterable[Grade]) -> Path:
    """Replace ``grades.jsonl`` atomically with these grades (a full re-grade)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / GRADES_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("wb") as fh:
        for g in grades:
            fh.write(g.model_dump_json().encode("utf-8") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def load_grades(run_dir: Path | str) -> list[Grade]:
    """All grades in ``grades.jsonl``; a torn last line is skipped. When a key was graded
    more than once, the last grade wins (re-grading appends)."""
    records, _ = _parse_lines(Path(run_dir) / GRADES_FILE, Grade)
    latest: dict[str, Grade] = {}
    for r in records:
        latest.pop(r.key, None)
        latest[r.key] = r
    return list(latest.values())
