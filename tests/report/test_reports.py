"""report.md and report.html from a synthetic run: contents, determinism, self-containment."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from dabench.report.build import ReportFiles, write_reports
from dabench.report.context import TTFT_CAPTION
from dabench.stats import load_run


def test_markdown_has_every_section_with_cis(reported_run: tuple[Path, ReportFiles]) -> None:
    _, files = reported_run
    md = files.markdown_path.read_text(encoding="utf-8")
    for heading in (
        "## Manifest",
        "## Ranking",
        "## Arm × suite",
        "## Deltas against the baseline arm `a0`",
        "## Knowledge-trap classes",
        "## Lifecycle (S5)",
        "## Lifecycle funnel (S5)",
        "## Efficiency\n",
        "## Failure taxonomy",
        "## Caveats",
    ):
        assert heading in md, heading
    # A title names a suite only when the run played it: this run has S5 tasks, no S4.
    assert "(S4)" not in md
    # Rates with their CI, deltas with signed points and CI.
    assert re.search(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]", md)
    assert re.search(r"[+-]\d+\.\d pts \[[+-]\d+\.\d, [+-]\d+\.\d\]", md)
    for trap in ("cents_units", "gross_vs_net", "fiscal_calendar"):
        assert f"| {trap} |" in md
    assert "| `a2` | teach |" in md
    assert "agrees with the human-labelled calibration set on 90%" in md


def test_reports_are_byte_identical_when_rebuilt(
    reported_run: tuple[Path, ReportFiles], tmp_path: Path
) -> None:
    run_dir, files = reported_run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    again = write_reports(copy, resamples=1000)
    assert again.markdown_path.read_bytes() == files.markdown_path.read_bytes()
    assert again.html_path.read_bytes() == files.html_path.read_bytes()
    assert again.stats_path.read_bytes() == files.stats_path.read_bytes()


def _embedded(html: str, element_id: str) -> dict[str, object]:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', html)
    assert match, element_id
    data: dict[str, object] = json.loads(match.group(1))
    return data


def test_html_is_self_contained_and_complete(reported_run: tuple[Path, ReportFiles]) -> None:
    run_dir, files = reported_run
    html = files.html_path.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "url(http" not in html and "@import" not in html
    assert "Chart.js v4.5.1" in html and "Released under the MIT License" in html
    run = load_run(run_dir)
    episodes = _embedded(html, "dabench-episodes")
    assert set(episodes) == {ep.key for ep in run.episodes}
    for task_id in {ep.task_id for ep in run.episodes}:
        assert f'id="task-{task_id}"' in html
        assert f'href="#task-{task_id}"' in html
    for ep in run.episodes:
        assert f'href="#ep-{ep.key}"' in html
    for arm in ("a0", "a1", "a2"):
        assert f'id="arm-{arm}"' in html
    charts = _embedded(html, "dabench-charts")
    radar = charts["radar"]
    assert isinstance(radar, dict) and len(radar["labels"]) >= 8
    detail = episodes[run.episodes[0].key]
    assert isinstance(detail, dict)
    assert detail["transcript"] and detail["prompts"] and "truth" in detail


def test_transcript_limit_prefers_failed_episodes(
    reported_run: tuple[Path, ReportFiles], tmp_path: Path
) -> None:
    run_dir, _ = reported_run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    files = write_reports(copy, resamples=0, max_transcripts=10)
    episodes = _embedded(files.html_path.read_text(encoding="utf-8"), "dabench-episodes")
    with_transcript = [e for e in episodes.values() if isinstance(e, dict) and e["transcript"]]
    assert len(with_transcript) == 10
    assert not any(e["passed"] for e in with_transcript)
    assert "Transcripts are embedded for 10 of" in files.html_path.read_text(encoding="utf-8")


def test_html_escapes_hostile_text(tmp_path: Path) -> None:
    from tests.stats.builders import episode, grade, write_run

    ep = episode("a", "t1", answer="</script><script>alert(1)</script>")
    run = write_run(tmp_path, [ep], [grade(ep, False)], k=1)
    html = write_reports(run, resamples=0).html_path.read_text(encoding="utf-8")
    assert "<script>alert(1)" not in html
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)" in html


def test_single_arm_and_empty_runs_still_report(tmp_path: Path) -> None:
    from tests.stats.builders import outcome_run, write_run

    one = outcome_run(tmp_path / "one", {"a": {"t1": [True, False], "t2": [True, True]}}, k=2)
    md = write_reports(one, resamples=100).markdown_path.read_text(encoding="utf-8")
    assert "only one arm: no deltas" in md
    empty = write_run(tmp_path / "empty", [], [], k=2, arms=["a", "b"])
    files = write_reports(empty, resamples=100)
    assert "The journal holds no episodes" in files.markdown_path.read_text(encoding="utf-8")
    assert files.stats.groups == [] and files.html_path.exists()


def _ttft_column(md: str) -> dict[str, str]:
    """The TTFT cell of each arm's row in report.md's efficiency table."""
    section = md[md.index("## Efficiency") : md.index("Per suite:")]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
    col = rows[0].index("TTFT p50 / p95 (ms)")
    return {row[0].strip("| `"): row[col] for row in rows[2:]}


def test_ttft_beside_latency_for_a_streaming_arm(ttft_reported: ReportFiles) -> None:
    md = ttft_reported.markdown_path.read_text(encoding="utf-8")
    assert _ttft_column(md) == {"kb": "300 / 480 (n 5, measured by dabench)", "llm": "n/a"}
    assert f"\n{TTFT_CAPTION}\n" in md
    assert '"Measured by dabench"' in TTFT_CAPTION and '"Reported by Kibana"' in TTFT_CAPTION
    assert "different sources" not in md  # one source only: nothing to warn about
    html = ttft_reported.html_path.read_text(encoding="utf-8")
    kb = html[html.index('id="arm-kb"') : html.index("</article>", html.index('id="arm-kb"'))]
    assert "<b>300 ms</b><span>TTFT p50 (p95 480 ms, n 5, measured by dabench)</span>" in kb
    llm = html[html.index('id="arm-llm"') : html.index("</article>", html.index('id="arm-llm"'))]
    assert "<b>n/a</b><span>TTFT p50</span>" in llm
    efficiency = html[
        html.index('<section id="efficiency"') : html.index('<section id="lifecycle"')
    ]
    # One row per figure, an arm per column (kb first, llm second).
    row = efficiency[efficiency.index(">TTFT p50 / p95 (ms)</th>") :]
    row = row[: row.index("</tr>")]
    assert re.findall(r'<td class="r">([^<]*)</td>', row) == [
        "300 / 480 (n 5, measured by dabench)",
        "n/a",
    ]
    assert html.count('class="sub ttft-caption"') == 2


def test_no_ttft_figures_when_no_arm_streams(reported_run: tuple[Path, ReportFiles]) -> None:
    _, files = reported_run
    assert all(g.efficiency.ttft_n == 0 for g in files.stats.groups)
    assert "TTFT" not in files.markdown_path.read_text(encoding="utf-8")
    assert "TTFT" not in files.html_path.read_text(encoding="utf-8")


def test_an_arm_with_harness_errors_never_shows_a_bare_accuracy(tmp_path: Path) -> None:
    """Ranking and arm card say how many episodes were excluded as harness errors."""
    from tests.stats.builders import episode, grade, write_run

    eps = [episode("a", f"t{i}") for i in range(3)] + [
        episode("a", "t3", status="harness_error", answer=None)
    ]
    run = write_run(tmp_path / "r", eps, [grade(e, e.status != "harness_error") for e in eps], k=1)
    files = write_reports(run, resamples=0)
    md = files.markdown_path.read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| 1 | `a` |"))
    assert "100.0%" in row and "(1 of 4 episodes excluded: harness errors)" in row
    html = files.html_path.read_text(encoding="utf-8")
    assert "1 of 4 episodes excluded (harness errors)" in html
    assert "1 of 4 excluded: harness errors" in html


def test_uncertain_grades_are_counted_with_how_the_judge_settled_them(tmp_path: Path) -> None:
    """Uncertain grades are shown apart: settled by the judge (passed / failed) or not."""
    from tests.stats.builders import episode, grade, write_run

    eps = [episode("a", f"t{i}") for i in range(5)]
    grades = [grade(e, i < 2) for i, e in enumerate(eps)]
    grades[1] = grades[1].model_copy(update={"uncertain": True, "settled_by": "judge"})
    grades[2] = grades[2].model_copy(update={"uncertain": True, "settled_by": "judge"})
    grades[3] = grades[3].model_copy(update={"uncertain": True})
    run = write_run(tmp_path / "r", eps, grades, k=1)
    files = write_reports(run, resamples=0)
    md = files.markdown_path.read_text(encoding="utf-8")
    assert "| `a` | 3 | 1 | 1 | 1 |" in md
    html = files.html_path.read_text(encoding="utf-8")
    assert "3 (judge: 1 passed, 1 failed; 1 unsettled, counted as not passed)" in html
    plain = write_run(tmp_path / "p", eps, [grade(e, True) for e in eps], k=1)
    assert "Uncertain grades: none." in write_reports(plain, resamples=0).markdown_path.read_text(
        encoding="utf-8"
    )


def test_titles_empty_states_ids_and_manifest(
    reported_run: tuple[Path, ReportFiles], tmp_path: Path
) -> None:
    """Suite tags only for suites played, one empty-state line per missing section, no
    internal ids, and a manifest card with k and the arms."""
    from tests.stats.builders import outcome_run

    _, files = reported_run  # suites s1, s2, s3, s5
    html = files.html_path.read_text(encoding="utf-8")
    md = files.markdown_path.read_text(encoding="utf-8")
    assert "<h2>Lifecycle (S5)</h2>" in html and "(S4)" not in html and "(S4)" not in md
    for text in (html, md):
        assert "seed-003" not in text and "seed 003" not in text
    manifest = html[html.index('<section id="manifest"') :]
    assert '<dd id="manifest-k">3 attempts per task and arm</dd>' in manifest
    arms = manifest[manifest.index('id="manifest-arms"') : manifest.index("</table>")]
    assert arms.count("<tr>") == 1 + 3  # header and one row per arm
    for arm in ("a0", "a1", "a2"):
        assert f'</span>{arm}</td><td data-label="target">reference:{arm}</td>' in arms

    run = outcome_run(tmp_path / "s2", {"a": {"t1": [True]}, "b": {"t1": [False]}}, k=1)
    files = write_reports(run, resamples=0)  # suite s2 only: no lifecycle, no S4 or S5
    html = files.html_path.read_text(encoding="utf-8")
    md = files.markdown_path.read_text(encoding="utf-8")
    for text in (html, md):
        assert text.count("No lifecycle protocol episodes in this run.") == 1
        assert "(S5)" not in text and "(S4)" not in text
    assert "chart-funnel" not in html.split('<script type="application/json"')[0]


def test_caveats_say_what_each_agent_kind_measures(tmp_path: Path) -> None:
    from tests.stats.builders import outcome_run

    agents = {"p": {"kind": "probe"}, "o": {"kind": "oracle"}, "m": {"kind": "llm"}}
    run = outcome_run(
        tmp_path / "r",
        {arm: {"t1": [True], "t2": [False]} for arm in agents},
        k=1,
        agents=agents,
    )
    caveats = write_reports(run, resamples=0).stats.caveats
    probe = next(c for c in caveats if "probe agent" in c)
    oracle = next(c for c in caveats if "oracle agent" in c)
    assert (
        probe.startswith("Arm p uses the probe agent") and "measure the target's retrieval" in probe
    )
    assert "validate" not in probe
    assert oracle.startswith("Arm o uses the oracle agent") and "validate the tasks" in oracle
    assert not any("Arm m " in c for c in caveats)


def test_a_fake_provider_run_says_it_measures_the_harness(tmp_path: Path) -> None:
    from tests.stats.builders import outcome_run

    agents = {
        "f": {"kind": "llm", "provider": "fake", "model": "calls=2"},
        "m": {"kind": "llm", "provider": "anthropic", "model": "claude-sonnet-4-5"},
    }
    run = outcome_run(
        tmp_path / "r", {arm: {"t1": [True], "t2": [False]} for arm in agents}, k=1, agents=agents
    )
    caveats = write_reports(run, resamples=0).stats.caveats
    fake = [c for c in caveats if "fake provider" in c]
    assert fake == [
        "Arm f uses the scripted fake provider (no model: the LLM agent's replies are "
        "scripted, e.g. `fake:calls=2`): the numbers measure the harness, not a model."
    ]
    assert not any("Arm m " in c for c in caveats)
