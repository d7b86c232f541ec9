"""``dabench play``: the stepwise CLI through which an external agent plays episodes.

::

    dabench play start  --run DIR --profile a0 --suite s3     # plan, start the platform
    dabench play start  --run DIR --experiment E.yaml --arm X # any arm's target (a play host)
    dabench play next   --run DIR                             # the next prompt, a fresh session
    dabench play tools  --run DIR                             # the open episode's tools
    dabench play call   --run DIR TOOL '{"sql": "..."}'       # one tool call
    dabench play answer --run DIR "TEXT"                      # end the turn / the episode
    dabench play restart --run DIR                            # after the platform died
    dabench play finish --run DIR                             # grade and report
    dabench play start --run DIR --sandbox -- CMD ARGS...     # the player runs sealed

Every command takes ``--json`` for scripts. Exit codes: 0 ok, 2 bad input or wrong state,
3 the platform is unreachable, 4 the tool-call budget is exhausted.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from dabench.errors import DabenchError, HarnessError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

F = TypeVar("F", bound=Callable[..., None])

RUN = typer.Option(..., "--run", help="The play run directory.")
JSON = typer.Option(False, "--json", help="Machine-readable output (one JSON object).")


def _emit(data: dict[str, Any] | list[Any]) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


def _errors(fn: F) -> F:
    """Report a :class:`DabenchError` as ``error: ...`` (and ``{"error": ...}`` with
    ``--json``) with its exit code; a harness failure exits 3."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except (DabenchError, HarnessError) as exc:
            code = exc.exit_code if isinstance(exc, DabenchError) else 3
            if kwargs.get("as_json"):
                _emit({"error": str(exc), "exit_code": code})
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


@app.command("start", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@_errors
def start_cmd(
    ctx: typer.Context,
    run_dir: Path = RUN,
    profile: str = typer.Option("a0", "--profile", help="Platform profile (a0..a3) or a file."),
    experiment: Path | None = typer.Option(
        None,
        "--experiment",
        help="Play an arm of this experiment file instead (any target: an MCP server, a "
        "semantic layer...): its target, suites, world and task selection (its own task files "
        "too; --suite/--task/--smoke replace the file's filters); --arm names the arm.",
    ),
    suite: list[str] = typer.Option([], "--suite", help="Suites to play (repeatable): s1..s4, s6."),
    task: list[str] = typer.Option([], "--task", help="Task ids to play (repeatable)."),
    smoke: bool = typer.Option(False, "--smoke", help="Only the smoke tasks."),
    k: int = typer.Option(1, "--k", min=1, help="Attempts per task."),
    world: Path | None = typer.Option(None, "--world", help="A built world directory."),
    seed: int = typer.Option(930, "--seed", help="World seed (when --world is not given)."),
    scale: int = typer.Option(1, "--scale", min=1, help="World scale."),
    arm: str | None = typer.Option(
        None,
        "--arm",
        help="Arm name (default: the profile's); with --experiment, the arm to play.",
    ),
    label: str | None = typer.Option(
        None, "--label", help="What plays, e.g. 'human:alice' (recorded as the model)."
    ),
    budget: int | None = typer.Option(None, "--budget", min=1, help="Tool-call budget."),
    system_prompt: str | None = typer.Option(
        None,
        "--system-prompt",
        help="Instructions shown with each episode (default: the LLM "
        "agent's analyst prompt; the final-answer protocol is always appended).",
    ),
    sandbox: bool = typer.Option(
        False,
        "--sandbox",
        help="Then run the player program given after `--` in the agents' sandbox, with only "
        "`dabench play next|tools|call|answer|status` reachable; exits with its code.",
    ),
    ro_bind: list[str] = typer.Option(
        [], "--ro-bind", metavar="PATH", help="With --sandbox: the player's runtime (read-only)."
    ),
    allow_host: list[str] = typer.Option(
        [], "--allow-host", metavar="HOST:PORT", help="With --sandbox: a model API it may reach."
    ),
    inherit_env: list[str] = typer.Option(
        [], "--inherit-env", metavar="NAME", help="With --sandbox: a variable passed through."
    ),
    as_json: bool = JSON,
) -> None:
    """Prepare a play run: plan the episodes and start the platform in the background (with
    --sandbox, then run the player program sealed)."""
    from dabench.errors import UserInputError
    from dabench.play.session import PlayOptions, start_play
    from dabench.tasks.selection import suite_names

    program = list(ctx.args)
    if program and not sandbox:
        raise UserInputError(f"unexpected arguments {program}; a player program needs --sandbox")
    if sandbox:
        from dabench.isolation import check_ro_binds, require_bwrap
        from dabench.sandbox import protected_paths

        if not program:
            raise UserInputError("--sandbox: name the player program after `--`")
        require_bwrap("play start --sandbox")
        check_ro_binds(ro_bind, protected_paths(run_dir.resolve()), "play start --sandbox")

    opts = PlayOptions(
        profile=profile,
        suites=suite_names(suite),
        tasks=[t.strip() for item in task for t in item.split(",") if t.strip()],
        smoke=smoke,
        k=k,
        world_dir=world,
        seed=seed,
        scale=scale,
        arm=arm,
        label=label,
        budget=budget,
        system_prompt=system_prompt,
        experiment=experiment,
    )
    state = start_play(run_dir, opts)
    info = {
        "run_dir": str(run_dir),
        "arm": state.arm,
        "episodes": len(state.plan),
        "skipped_protocols": len(state.skipped),
    }
    if as_json:
        _emit(info)
    else:
        typer.echo(f"play run {run_dir}: arm {state.arm}, {len(state.plan)} episode(s) planned")
    if state.skipped and not as_json:
        typer.echo(
            f"skipped {len(state.skipped)} lifecycle protocol(s): `dabench play` plays "
            "single-session tasks only"
        )
    if sandbox:
        from dabench.play.sandboxed import run_player

        code = run_player(
            run_dir, program, ro_binds=ro_bind, allow_hosts=allow_host, inherit_env=inherit_env
        )
        typer.echo(
            f"player exited with code {code}; next: dabench play finish --run {run_dir}", err=True
        )
        raise typer.Exit(code)
    if not as_json:
        typer.echo(f"next: dabench play next --run {run_dir}")


def _print_prompt(data: dict[str, Any], run_dir: Path) -> None:
    if data.get("instructions"):
        typer.echo("instructions:")
        typer.echo(data["instructions"])
        typer.echo(
            f"(call a tool: dabench play call --run {run_dir} TOOL 'JSON'; list them: dabench "
            f"play tools --run {run_dir}; answer: dabench play answer --run {run_dir} 'TEXT')"
        )
        typer.echo("")
    typer.echo(f"episode: {data['episode_id']}")
    typer.echo(f"turn: {data['turn']} of {data['turns']}")
    typer.echo(f"tool-call budget: {data['budget']} ({data['calls_used']} used)")
    typer.echo(f"tools: {', '.join(data['tools'])}")
    typer.echo("prompt:")
    typer.echo(data["prompt"])


@app.command("next")
@_errors
def next_cmd(
    run_dir: Path = RUN,
    abandon: bool = typer.Option(
        False, "--abandon", help="Record an open episode without an answer first."
    ),
    as_json: bool = JSON,
) -> None:
    """Open the next episode (a fresh platform session) and print its prompt."""
    from dabench.play.session import next_episode

    prompt = next_episode(run_dir, abandon=abandon)
    if prompt is None:
        if as_json:
            _emit({"done": True})
        else:
            typer.echo(f"every episode has been played: dabench play finish --run {run_dir}")
        return
    if as_json:
        _emit(prompt.as_dict())
    else:
        _print_prompt(prompt.as_dict(), run_dir)


@app.command("tools")
@_errors
def tools_cmd(run_dir: Path = RUN, as_json: bool = JSON) -> None:
    """List the open episode's tools with their argument schemas."""
    from dabench.play.session import tools_of

    tools = tools_of(run_dir)
    if as_json:
        _emit(tools)
        return
    for t in tools:
        props = t["input_schema"].get("properties") or {}
        required = set(t["input_schema"].get("required") or [])
        args = ", ".join(f"{n}{'' if n in required else '?'}" for n in props)
        typer.echo(f"{t['name']}({args})")
        if t["description"]:
            typer.echo(f"    {t['description'].strip().splitlines()[0]}")


@app.command("call")
@_errors
def call_cmd(
    tool: str = typer.Argument(..., help="Tool name."),
    arguments: str = typer.Argument("{}", help="Arguments as a JSON object ('-': stdin)."),
    run_dir: Path = RUN,
    as_json: bool = JSON,
) -> None:
    """Call a tool in the open episode; prints its result."""
    from dabench.errors import UserInputError
    from dabench.play.session import call_tool

    raw = sys.stdin.read() if arguments == "-" else arguments
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"ARGUMENTS is not JSON: {exc}") from exc
    if not isinstance(args, dict):
        raise UserInputError('ARGUMENTS must be a JSON object, e.g. \'{"sql": "SELECT 1"}\'')
    result = call_tool(run_dir, tool, args)
    if as_json:
        _emit(result.as_dict())
        return
    typer.echo(result.result)
    flag = f" error {result.error_code}" if result.is_error else ""
    typer.echo(f"[call {result.calls_used} of {result.budget}{flag}]", err=True)


@app.command("answer")
@_errors
def answer_cmd(
    text: str = typer.Argument(..., help="The answer ('-': read it from stdin)."),
    run_dir: Path = RUN,
    as_json: bool = JSON,
) -> None:
    """Answer the current turn; after the last turn the episode is recorded."""
    from dabench.play.session import answer

    result = answer(run_dir, sys.stdin.read() if text == "-" else text)
    if as_json:
        _emit(result.as_dict())
        return
    if result.next_turn is not None:
        _print_prompt(result.next_turn.as_dict(), run_dir)
        return
    audit = "ok" if result.audit_ok else f"GAP: {result.audit_detail}"
    typer.echo(
        f"episode {result.episode_id} recorded: {result.status}, "
        f"{result.tool_calls} tool call(s), audit {audit}"
    )
    typer.echo(
        f"next: dabench play next --run {run_dir}"
        if result.remaining
        else f"every episode has been played: dabench play finish --run {run_dir}"
    )


@app.command("status")
@_errors
def status_cmd(run_dir: Path = RUN, as_json: bool = JSON) -> None:
    """Progress of a play run."""
    from dabench.play.session import play_status, status_lines

    info = play_status(run_dir)
    if as_json:
        _emit(info)
        return
    typer.echo("\n".join(status_lines(info)))


@app.command("restart")
@_errors
def restart_cmd(run_dir: Path = RUN, as_json: bool = JSON) -> None:
    """Start the run's platform again after it died (an open episode is replayed later)."""
    from dabench.play.session import restart_platform

    replanned = restart_platform(run_dir)
    if as_json:
        _emit({"restarted": True, "replanned": replanned})
        return
    typer.echo(f"platform restarted for {run_dir}")
    if replanned:
        typer.echo(
            f"the open episode lost its session: recorded as a harness error, to be played "
            f"again as {replanned}"
        )


def _grade(run_dir: Path) -> object:
    from dabench.grading import grade_run

    return grade_run(run_dir)


def _report(run_dir: Path) -> list[Path]:
    from dabench.report.build import write_reports

    files = write_reports(run_dir)
    return [files.markdown_path, files.html_path]


@app.command("finish")
@_errors
def finish_cmd(
    run_dir: Path = RUN,
    abandon: bool = typer.Option(
        False, "--abandon", help="Record an open episode without an answer first."
    ),
    grade: bool = typer.Option(True, "--grade/--no-grade", help="Grade and write the report."),
    as_json: bool = JSON,
) -> None:
    """Stop the platform, write the answer key into the run, grade and report."""
    from dabench.play.session import finish_play

    result = finish_play(
        run_dir,
        abandon=abandon,
        grade=_grade if grade else None,
        report=_report if grade else None,
    )
    if as_json:
        _emit(result.as_dict())
        return
    typer.echo(
        f"play run {run_dir} finished: {result.played} episode(s) recorded, "
        f"{result.not_played} not played; {result.statuses}"
    )
    for gap in result.audit_gaps:
        typer.echo(f"audit gap {gap}", err=True)
    for path in result.reports:
        typer.echo(f"report: {path}")


@app.callback(invoke_without_command=True)
def interactive(
    ctx: typer.Context,
    run_dir: Path | None = typer.Option(
        None, "--run", metavar="DIR", help="Play run directory (default runs/<time>-play-human)."
    ),
    profile: str = typer.Option("a2", "--profile", metavar="a0..a3|FILE", help="Platform profile."),
    experiment: Path | None = typer.Option(
        None, "--experiment", metavar="FILE", help="Play an arm of this experiment file instead."
    ),
    arm: str | None = typer.Option(None, "--arm", metavar="NAME", help="With --experiment."),
    suite: list[str] = typer.Option([], "--suite", metavar="S", help="Suites (s1..s4, s6)."),
    task: list[str] = typer.Option([], "--task", metavar="ID", help="Task ids to play."),
    smoke: bool = typer.Option(False, "--smoke", help="Only the smoke tasks."),
    world: Path | None = typer.Option(None, "--world", metavar="DIR", help="A built world."),
    label: str = typer.Option(
        "human", "--label", metavar="TEXT", help="Who plays, e.g. human:alice (the arm's model)."
    ),
    budget: int | None = typer.Option(None, "--budget", min=1, metavar="N", help="Tool calls."),
    qa: bool = typer.Option(
        False, "--qa", help="After each task, ask whether its prompt was clear and answerable."
    ),
) -> None:
    """Without a step: play the episodes yourself at this terminal (a human baseline; with
    --qa, task QA). With a step (start/next/call/answer/finish): the stepwise external-agent
    interface."""
    if ctx.invoked_subcommand is not None:
        return
    from datetime import UTC, datetime

    from rich.console import Console

    from dabench.play.human import play_interactively, terminal_reader
    from dabench.play.session import PlayOptions
    from dabench.tasks.selection import suite_names

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = run_dir or Path("runs") / f"{stamp}-play-human"
    opts = PlayOptions(
        profile=profile,
        suites=suite_names(suite),
        tasks=[t.strip() for item in task for t in item.split(",") if t.strip()],
        smoke=smoke,
        world_dir=world,
        label=label,
        budget=budget,
        agent_kind="human",
        experiment=experiment,
        arm=arm,
    )
    try:
        play_interactively(
            target, opts, qa=qa, read=terminal_reader(), console=Console(),
            grade=_grade, report=_report,
        )  # fmt: skip
    except (DabenchError, HarnessError) as exc:
        code = exc.exit_code if isinstance(exc, DabenchError) else 3
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code) from None
