"""The page's detail record of each episode (what its panel shows), built once per journal
record.

A record has three parts: what the episode and its grade say (:func:`record_detail`), what the
statistics frame derived for its row (:func:`frame_detail`), and its tool calls and transcript
(:func:`transcript_detail`, embedded for at most ``max_transcripts`` episodes). While
``dabench report`` streams the journal, a :class:`DetailSpool` writes the first part of every
record, and the third of the episodes that will probably show a transcript, as JSON into a
temporary file; ``report.html`` then copies them in key order instead of reading and parsing
every episode a second time. An episode whose transcript was not spooled is read back from
its line. The record is the same either way (:func:`episode_detail`).
"""

from __future__ import annotations

import json
import math
import tempfile
from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import orjson

from dabench.grading.tool_equivalents import manifest_roles, tool_roles
from dabench.journal.records import Episode, Grade
from dabench.roles import Role, ToolRoles, reference_role
from dabench.stats.frame import EpisodeFrame, counts_as_passed, overall_score
from dabench.stats.rundir import EpisodeLines, GradeLines, RunData, TaskInfo
from dabench.stats.taxonomy import episode_calls
from dabench.tasks.model import TruthLock

if TYPE_CHECKING:
    from dabench.report.context import ReportContext

TEXT_LIMIT = 4000
"""Characters kept of one answer, prompt or transcript message."""
ARGS_LIMIT = 600
MAX_MESSAGES = 80
MAX_CALLS = 100


def _clip(text: str | None, limit: int = TEXT_LIMIT) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more chars]"


def _clip_values(obj: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy with long string values clipped (embedded as JSON); ``obj`` itself
    when no value needs it (it is only serialised)."""
    for v in obj.values():
        if isinstance(v, str) and len(v) > ARGS_LIMIT:
            return {k: _clip(v, ARGS_LIMIT) if isinstance(v, str) else v for k, v in obj.items()}
    return obj


_ORJSON = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
"""Keys sorted (byte-identical pages); NumPy scalars and arrays as JSON numbers and lists."""


def script_json(value: Any) -> str:
    """JSON safe to embed inside a ``<script>`` element (keys sorted; a value JSON cannot
    hold, such as NaN, written as ``null``)."""
    return script_json_bytes(value).decode("utf-8")


def script_json_bytes(value: Any) -> bytes:
    """:func:`script_json` as UTF-8."""
    try:
        data = orjson.dumps(value, default=str, option=_ORJSON)
    except (orjson.JSONEncodeError, TypeError):
        # What orjson refuses (an integer beyond 64 bits, a lone surrogate from a tool's
        # output, a non-string key) the standard library writes, escaped.
        data = json.dumps(
            _no_nan(value), separators=(",", ":"), sort_keys=True, default=str, allow_nan=False
        ).encode("utf-8")
    # No byte of a multi-byte UTF-8 character is ASCII, so these replace characters.
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _no_nan(value: Any) -> Any:
    """``value`` with every float that JSON cannot hold (NaN, infinities) as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


def truth_with_precision(value: float, tolerance: tuple[float, float] | None) -> str:
    """A numeric truth exactly as the truth SQL returned it (the shortest text that reads
    back as the same float, never rounded for display) with what the grader accepts."""
    text = repr(float(value)).removesuffix(".0")
    if tolerance is None:
        return f"{text} (full precision)"
    tol_abs, tol_rel = tolerance
    margin = max(tol_abs, tol_rel * abs(value))
    return (
        f"{text} (full precision; accepted within ± {margin:.6g}: the larger of "
        f"absolute {tol_abs:g} and relative {tol_rel:g})"
    )


@dataclass(frozen=True)
class DetailSources:
    """What a detail record reads besides its episode and grade."""

    tasks: dict[str, TaskInfo]
    truths: TruthLock | None
    roles: dict[str, ToolRoles]
    tool_labels: dict[tuple[str, ...], str] = field(default_factory=dict, compare=False)
    """(arm, tool[, "", recorded roles...]) -> the tool's label with its roles ..."""
    score_order: dict[tuple[str, ...], list[str]] = field(default_factory=dict, compare=False)
    """... a grade's score names -> their order in the record ..."""
    expected: dict[str, list[str]] = field(default_factory=dict, compare=False)
    """... and a task's expected tools with their roles: worked out once per run."""

    @classmethod
    def of(cls, run: RunData) -> DetailSources:
        """The sources of a loaded or streamed run."""
        return cls(run.tasks or {}, run.truths, manifest_roles(run.manifest))


def _truth(src: DetailSources, task_id: str, grade: Grade | None) -> str:
    info = src.tasks.get(task_id)
    truth = src.truths.truths.get(task_id) if src.truths else None
    if truth is not None:
        if truth.value is not None:
            return truth_with_precision(truth.value, info.tolerance if info else None)
        if truth.entities:
            return ", ".join(truth.entities)
        if truth.rows:
            head = " | ".join(truth.columns)
            body = "\n".join(" | ".join(str(c) for c in r) for r in truth.rows[:20])
            return _clip(f"{head}\n{body}")
    if grade is not None:
        for check in grade.checks:
            if check.expected is not None:
                return _clip(str(check.expected))
    return ""


def _judge(grade: Grade | None) -> dict[str, Any] | None:
    if grade is None or not grade.judge:
        return None
    judge = grade.judge
    reasoning = judge.get("reasoning") or judge.get("rationale") or judge.get("explanation") or ""
    raw_claims = judge.get("claims")
    claims: list[Any] = raw_claims if isinstance(raw_claims, list) else []
    return {
        "reasoning": _clip(str(reasoning)),
        "claims": claims[:50],
        "rubric": judge.get("rubric") or judge.get("rubric_items") or [],
    }


def _scores(src: DetailSources, grade: Grade | None) -> list[dict[str, Any]]:
    """The episode's scores, the overall mix last; their labels and what they measure are
    in the page once, not repeated in every episode."""
    if grade is None:
        return []
    scores = grade.scores
    key = tuple(scores)
    names = src.score_order.get(key)
    if names is None:
        names = src.score_order[key] = sorted(scores, key=lambda n: (n == "overall", n))
    return [{"name": n, "value": scores[n]} for n in names]


def _with_roles(name: str, roles: list[Role]) -> str:
    return f"{name} ({', '.join(roles)})" if roles else name


def _expected_with_role(tool: str) -> str:
    role = reference_role(tool)
    return f"{tool} (role {role})" if role else tool


def _used_tools(src: DetailSources, ep: Episode) -> list[str]:
    """The tools the episode called, in order of first use, each with the roles it played."""
    memo = src.tool_labels
    arm = ep.arm
    used: dict[str, None] = {}
    for c in episode_calls(ep):
        key = (arm, c.name) if c.roles is None else (arm, c.name, "", *c.roles)
        label = memo.get(key)
        if label is None:
            roles = c.roles if c.roles is not None else tool_roles(c.name, src.roles.get(arm))
            label = memo[key] = _with_roles(c.name, list(roles))
        used[label] = None
    return list(used)


def _expected_tools(src: DetailSources, info: TaskInfo | None) -> list[str]:
    if info is None:
        return []
    labels = src.expected.get(info.id)
    if labels is None:
        labels = src.expected[info.id] = [_expected_with_role(t) for t in info.expected_tools]
    return list(labels)


def record_detail(src: DetailSources, ep: Episode, grade: Grade | None) -> dict[str, Any]:
    """The part of a detail record that the episode and its grade alone decide."""
    info = src.tasks.get(ep.task_id)
    used = _used_tools(src, ep)
    return {
        "key": ep.key,
        "arm": ep.arm,
        "task": ep.task_id,
        "attempt": ep.attempt,
        "status": ep.status,
        "harness_error": ep.harness_error,
        "score": None if grade is None else overall_score(grade),
        "scores": _scores(src, grade),
        "reason": grade.reason if grade else "not graded",
        "checks": [
            {
                "name": c.name,
                "passed": c.passed,
                "reason": c.reason,
                "expected": _clip(str(c.expected), 500) if c.expected is not None else None,
                "found": _clip(str(c.found), 500) if c.found is not None else None,
            }
            for c in (grade.checks if grade else [])
        ],
        "prompts": [_clip(p) for p in ep.prompts],
        "answer": _clip(ep.final_answer),
        "truth": _truth(src, ep.task_id, grade),
        "judge": _judge(grade),
        "expected_tools": _expected_tools(src, info),
        "used_tools": used,
        "steps": [
            {"name": s.name, "passed": s.passed, "detail": _clip(s.detail, 500)} for s in ep.steps
        ],
        "wall_s": round(ep.wall_ms / 1000.0, 2),
        "tokens": ep.usage.total,
        "cost": ep.cost_usd,
    }


def frame_detail(frame: EpisodeFrame, i: int) -> dict[str, Any]:
    """The part of a detail record that the statistics frame derived for row ``i``."""
    return {
        "failure": str(frame.failure[i]),
        "passed": bool(frame.passed[i]),
        "excluded": not bool(frame.graded[i]),
        "mismatch": bool(frame.tool_mismatch[i]),
    }


def _transcript(ep: Episode) -> list[dict[str, Any]]:
    out = []
    for m in ep.messages[:MAX_MESSAGES]:
        content = m.content
        item: dict[str, Any] = {
            "role": m.role,
            "content": content if len(content) <= TEXT_LIMIT else _clip(content),
        }
        if m.tool_calls:
            item["tool_calls"] = [_clip_values(tc) for tc in m.tool_calls]
        out.append(item)
    if len(ep.messages) > MAX_MESSAGES:
        out.append({"role": "note", "content": f"{len(ep.messages) - MAX_MESSAGES} more messages"})
    return out


def transcript_detail(ep: Episode | None) -> dict[str, Any]:
    """The tool calls and transcript of a detail record (``None`` when not embedded)."""
    if ep is None:
        return {"calls": None, "transcript": None}
    return {
        "calls": [
            {
                "name": c.name,
                "args": _clip_values(c.arguments),
                "error": c.error_code or ("error" if c.is_error else None),
                "ms": round(c.latency_ms, 1),
            }
            for c in episode_calls(ep)[:MAX_CALLS]
        ],
        "transcript": _transcript(ep),
    }


def _inner(part: dict[str, Any]) -> str:
    """A part's JSON members without the braces (parts never share a member)."""
    return script_json(part)[1:-1]


def _inner_bytes(part: dict[str, Any]) -> bytes:
    """:func:`_inner` as UTF-8."""
    return script_json_bytes(part)[1:-1]


def _join(*inners: str) -> str:
    return "{" + ",".join(p for p in inners if p) + "}"


NO_TRANSCRIPT = _inner(transcript_detail(None))


def episode_detail(ctx: ReportContext, i: int, with_transcript: bool) -> dict[str, Any]:
    """The detail record of row ``i`` of a report context (what its panel shows)."""
    ep = ctx.run.episodes[i]
    src = DetailSources.of(ctx.run)
    return {
        **record_detail(src, ep, ctx.run.grades.get(ep.key)),
        **frame_detail(ctx.frame, i),
        **transcript_detail(ep if with_transcript else None),
    }


def detail_text(
    src: DetailSources,
    episodes: Sequence[Episode],
    grades: Mapping[str, Grade],
    frame: EpisodeFrame,
    i: int,
    with_transcript: bool,
) -> str:
    """Row ``i``'s detail record as embedded JSON, its episode read from ``episodes``."""
    ep = episodes[i]
    return _join(
        _inner(record_detail(src, ep, grades.get(ep.key))),
        _inner(frame_detail(frame, i)),
        _inner(transcript_detail(ep)) if with_transcript else NO_TRANSCRIPT,
    )


class DetailSpool:
    """Detail records written while the journal streams (:func:`dabench.stats.frame.stream_run`
    calls :meth:`add` for every record), read back in any order by :meth:`text`.

    The page shows transcripts of failed episodes first, then of passed ones, up to
    ``max_transcripts``. A transcript is spooled for a failed episode among the first
    ``max_transcripts`` failed ones, and for a passed one while the passed episodes before it
    and the failed episodes (seen so far, or known from the grades, whichever is more) are
    fewer than ``max_transcripts``. A transcript the page shows that was not spooled is read
    back from the journal.
    """

    def __init__(self, max_transcripts: int) -> None:
        self.max_transcripts = max_transcripts
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="dabench-details-")  # noqa: SIM115
        self._src: DetailSources | None = None
        self._offsets = array("q")
        """Journal offset of each spooled record, in journal order (increasing)."""
        self._at = array("q")
        """Where each record's JSON starts in the spool ..."""
        self._record_len = array("q")
        self._transcript_len = array("q")
        """... its lengths (-1: no transcript spooled)."""
        self._pos = 0
        self._moved = False
        """A read moved the file's position away from the end."""
        self._failing = 0
        """At least this many episodes fail (their latest grade did)."""
        self._failed = 0
        self._passed = 0
        self.read_back = 0
        """Transcripts read back from the journal by :meth:`text` (not spooled)."""
        self._derived: dict[tuple[Any, ...], str] = {}
        """The JSON of each combination of :func:`frame_detail`'s few values."""

    def _write(self, data: bytes) -> int:
        if self._moved:  # a read left the file's position elsewhere
            self._file.seek(self._pos)
            self._moved = False
        self._file.write(data)
        self._pos += len(data)
        return len(data)

    def add(self, run: RunData, offset: int, ep: Episode, grade: Grade | None) -> None:
        """Spool the record of the journal line at ``offset``."""
        if self._src is None:
            self._src = DetailSources.of(run)
            self._failing = run.grades.failing if isinstance(run.grades, GradeLines) else 0
        if counts_as_passed(ep, grade):
            ahead = max(self._failed, self._failing)
            spool_transcript = self._passed + ahead < self.max_transcripts
            self._passed += 1
        else:
            spool_transcript = self._failed < self.max_transcripts
            self._failed += 1
        self._offsets.append(offset)
        self._at.append(self._pos)
        self._record_len.append(self._write(_inner_bytes(record_detail(self._src, ep, grade))))
        self._transcript_len.append(
            self._write(_inner_bytes(transcript_detail(ep))) if spool_transcript else -1
        )

    def _read(self, at: int, length: int) -> bytes:
        self._moved = True
        self._file.seek(at)
        return self._file.read(length)

    def text(
        self, episodes: EpisodeLines, frame: EpisodeFrame, i: int, with_transcript: bool
    ) -> str:
        """Row ``i``'s detail record as embedded JSON."""
        n = bisect_left(self._offsets, episodes.offset(i))
        at, length, t_len = self._at[n], self._record_len[n], self._transcript_len[n]
        if with_transcript and t_len >= 0:  # the transcript follows its record
            data = self._read(at, length + t_len)
            record, transcript = data[:length].decode("utf-8"), data[length:].decode("utf-8")
        else:
            record = self._read(at, length).decode("utf-8")
            if not with_transcript:
                transcript = NO_TRANSCRIPT
            else:
                self.read_back += 1
                transcript = _inner(transcript_detail(episodes[i]))
        derived = frame_detail(frame, i)
        key = tuple(derived.values())
        inner = self._derived.get(key)
        if inner is None:
            inner = self._derived[key] = _inner(derived)
        return _join(record, inner, transcript)

    def close(self) -> None:
        """Delete the spool."""
        self._file.close()
