"""Judge calibration: agreement and Cohen's kappa against human labels, and judge variance.

The calibration file is JSON lines of :class:`CalibrationItem`. Each item is judged with its
one rubric item; the judge's yes/no is compared with the human label. Items that also carry
``human_central_correct`` are compared at claim level: the judge agrees when "every central
claim is correct" matches the human label. With ``repeat > 1`` every item is judged that many
times without the cache and the flip rate (items whose verdicts are not all equal) is reported.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import UserInputError
from dabench.judge.judge import Judge
from dabench.judge.prompt import JudgeInput, truncate
from dabench.judge.rubric import RUBRIC_DIR

CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"
DEFAULT_CALIBRATION_FILE = CALIBRATION_DIR / "v1.jsonl"
Label = Literal["yes", "no"]


class CalibrationItem(BaseModel):
    """One human-labelled judgement."""

    model_config = ConfigDict(extra="forbid")

    id: str
    rubric_item: str
    question: str
    ground_truth: str
    tool_output: str
    answer: str
    human_label: Label
    human_central_correct: bool | None = None
    """Claim-level label: are all central claims of the answer correct?"""
    note: str = ""


class ItemResult(BaseModel):
    """The judge's verdicts on one calibration item."""

    id: str
    rubric_item: str
    human: Label
    judge: list[Label]
    """One verdict per repeat."""
    human_central_correct: bool | None = None
    judge_central_correct: bool | None = None


class ItemStats(BaseModel):
    """Agreement for one rubric item."""

    n: int
    agreement: float
    kappa: float


class CalibrationReport(BaseModel):
    """What ``dabench judge calibrate`` writes next to the rubric version."""

    judge: str
    prompt_version: str
    rubric_version: str
    calibration_file: str
    n_items: int
    agreement: float
    kappa: float
    per_item: dict[str, ItemStats]
    claim_items: int = 0
    claim_agreement: float | None = None
    repeat: int = 1
    flip_rate: float | None = None
    items: list[ItemResult] = Field(default_factory=list)
    created_at: datetime


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's kappa of two raters: ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed
    agreement and ``p_e = sum_k p_a(k) * p_b(k)`` the chance agreement. When ``p_e == 1``
    (both raters used one same label throughout) kappa is 1."""
    if len(a) != len(b) or not a:
        raise ValueError("kappa needs two equally long, non-empty label lists")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    p_e = sum(count_a[k] * count_b[k] for k in set(a) | set(b)) / (n * n)
    if p_e >= 1.0:
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def agreement(a: Sequence[str], b: Sequence[str]) -> float:
    """Share of positions where the labels agree."""
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a) if a else 0.0


def load_calibration(path: Path = DEFAULT_CALIBRATION_FILE) -> list[CalibrationItem]:
    """Read a calibration file; errors name the file, line and field."""
    if not path.is_file():
        raise UserInputError(f"{path}: no such calibration file")
    items: list[CalibrationItem] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(CalibrationItem.model_validate_json(line))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "<line>"
            raise UserInputError(f"{path}:{number}: {loc}: {err['msg']}") from exc
    if not items:
        raise UserInputError(f"{path}: no calibration items")
    return items


def _input(item: CalibrationItem, judge: Judge) -> JudgeInput:
    return JudgeInput(
        question=item.question,
        ground_truth=item.ground_truth,
        tool_outputs=truncate(item.tool_output, judge.tool_output_chars),
        answer=item.answer,
        rubric_items=[item.rubric_item],
    )


async def _judge_item(
    item: CalibrationItem, judge: Judge, repeat: int, semaphore: asyncio.Semaphore
) -> ItemResult:
    verdicts: list[Label] = []
    central: bool | None = None
    for index in range(repeat):
        async with semaphore:
            result = await judge.judge(_input(item, judge), use_cache=repeat == 1)
        verdicts.append(result.verdict.rubric[0].verdict)
        if index == 0:
            claims = [c for c in result.verdict.claims if c.centrality == "central"]
            central = bool(claims) and all(c.correctness == "correct" for c in claims)
    return ItemResult(
        id=item.id,
        rubric_item=item.rubric_item,
        human=item.human_label,
        judge=verdicts,
        human_central_correct=item.human_central_correct,
        judge_central_correct=central if item.human_central_correct is not None else None,
    )


async def run_calibration(
    judge: Judge,
    items: list[CalibrationItem],
    *,
    repeat: int = 1,
    calibration_file: str = "",
    concurrency: int = 4,
) -> CalibrationReport:
    """Judge every item (``repeat`` times) and compute agreement, kappa and flip rate."""
    if repeat < 1:
        raise UserInputError(f"--repeat must be at least 1, got {repeat}")
    for item in items:
        judge.rubric.item(item.rubric_item)
    semaphore = asyncio.Semaphore(concurrency)
    results = await asyncio.gather(*(_judge_item(i, judge, repeat, semaphore) for i in items))
    human = [r.human for r in results]
    first = [r.judge[0] for r in results]
    groups: dict[str, list[ItemResult]] = defaultdict(list)
    for r in results:
        groups[r.rubric_item].append(r)
    per_item = {
        rid: ItemStats(
            n=len(rs),
            agreement=agreement([r.human for r in rs], [r.judge[0] for r in rs]),
            kappa=cohen_kappa([r.human for r in rs], [r.judge[0] for r in rs]),
        )
        for rid, rs in sorted(groups.items())
    }
    claim = [r for r in results if r.human_central_correct is not None]
    claim_agreement = (
        sum(r.human_central_correct == r.judge_central_correct for r in claim) / len(claim)
        if claim
        else None
    )
    flip_rate = sum(len(set(r.judge)) > 1 for r in results) / len(results) if repeat > 1 else None
    return CalibrationReport(
        judge=judge.model,
        prompt_version=judge.prompt.version,
        rubric_version=judge.rubric.version,
        calibration_file=calibration_file,
        n_items=len(results),
        agreement=agreement(human, first),
        kappa=cohen_kappa(human, first),
        per_item=per_item,
        claim_items=len(claim),
        claim_agreement=claim_agreement,
        repeat=repeat,
        flip_rate=flip_rate,
        items=list(results),
        created_at=datetime.now(UTC),
    )


def default_report_path(rubric_version: str) -> Path:
    """``dabench/judge/rubric/<version>.calibration.json``, next to the rubric file."""
    return RUBRIC_DIR / f"{rubric_version}.calibration.json"


def write_report(report: CalibrationReport, path: Path) -> Path:
    """Write the report as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    return path
