"""``dabench judge calibrate``: the judge's agreement with human labels."""

from __future__ import annotations

from pathlib import Path

import typer

from dabench.defaults import DEFAULT_RUBRIC_VERSION, DEFAULT_TOOL_OUTPUT_CHARS
from dabench.listing import stdout_console

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("calibrate")
def calibrate_cmd(
    judge: str = typer.Option(..., "--judge", help="Judge model as provider:model."),
    file: Path | None = typer.Option(
        None, "--file", metavar="FILE", help="Calibration JSONL (default: the shipped v1 set)."
    ),
    repeat: int = typer.Option(1, "--repeat", help="Judge each item N times (variance)."),
    base_url: str | None = typer.Option(None, "--base-url", help="Judge API base URL."),
    rubric: str = typer.Option(DEFAULT_RUBRIC_VERSION, "--rubric", help="Rubric version or file."),
    prompt: str = typer.Option("claims_v1", "--prompt", help="Prompt version or file."),
    out: Path | None = typer.Option(
        None, "--out", help="Report JSON (default: next to the rubric, <version>.calibration.json)."
    ),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Judge cache directory."),
    tool_output_chars: int = typer.Option(
        DEFAULT_TOOL_OUTPUT_CHARS,
        "--tool-output-chars",
        help="Truncate tool outputs for the judge.",
    ),
) -> None:
    """Judge the human-labelled calibration items; print agreement and Cohen's kappa."""
    import asyncio

    from rich.table import Table

    from dabench.judge.calibrate import (
        DEFAULT_CALIBRATION_FILE,
        default_report_path,
        load_calibration,
        run_calibration,
        write_report,
    )
    from dabench.judge.factory import make_judge

    file = file or DEFAULT_CALIBRATION_FILE
    the_judge = make_judge(
        judge,
        base_url=base_url,
        cache_dir=cache_dir,
        rubric=rubric,
        prompt=prompt,
        tool_output_chars=tool_output_chars,
    )
    items = load_calibration(file)
    report = asyncio.run(
        run_calibration(the_judge, items, repeat=repeat, calibration_file=str(file))
    )
    console = stdout_console()
    table = Table(title=f"judge {report.judge} vs human labels (rubric {report.rubric_version})")
    for column in ("rubric item", "n", "agreement", "kappa"):
        table.add_column(column, justify="left" if column == "rubric item" else "right")
    for item_id, stats in report.per_item.items():
        table.add_row(item_id, str(stats.n), f"{stats.agreement:.0%}", f"{stats.kappa:.2f}")
    console.print(table)
    console.print(
        f"items {report.n_items}  agreement {report.agreement:.1%}  "
        f"Cohen's kappa {report.kappa:.3f}"
    )
    if report.claim_agreement is not None:
        console.print(
            f"claim level: central-claim correctness agreement {report.claim_agreement:.1%} "
            f"over {report.claim_items} items"
        )
    if report.flip_rate is not None:
        console.print(f"judge variance over {repeat} repeats: flip rate {report.flip_rate:.1%}")
    path = write_report(report, out or default_report_path(report.rubric_version))
    console.print(f"wrote {path}")
