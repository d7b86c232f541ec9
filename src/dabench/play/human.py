"""``dabench play`` without a step: a person plays the episodes at an interactive terminal.

The human baseline and task QA mode. It drives the same stepwise core as ``dabench play
next/call/answer`` (:mod:`dabench.play.session`), so each episode is recorded, audited and
graded like any arm's, with the agent kind ``human``. The person sees the instructions and
the prompt (never a task id or a truth), calls the platform's tools (tab completion of tool
and argument names where the terminal allows it), sees tabular results as tables, and types
the final answer. With ``--qa`` each episode ends with three questions (was the prompt clear,
was it answerable with these tools, a note); the answers go to ``task_qa.jsonl`` keyed by the
opaque episode id, and ``task_qa.json`` with the task ids is written only when the run is
finished (``dabench tasks validate --qa FILE`` reports it).

Commands at the ``tool>`` prompt::

    sql_query {"sql": "SELECT 1"}      a tool with JSON arguments
    search query="net revenue"         or key=value pairs (values parsed as JSON when they can be)
    search net revenue                 or, for a tool with one required argument, free text
    /answer TEXT                       the final answer (ends the turn or the episode)
    /tools                             the tools, their arguments and one example call each
    /skip                              record the episode without an answer
    /quit                              stop here and stop the platform; `dabench play --run
                                       DIR` continues (and starts the platform again)
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from dabench.errors import UserInputError
from dabench.play.session import (
    AnswerResult,
    BudgetExhausted,
    NextPrompt,
    PlayOptions,
    answer,
    call_tool,
    finish_play,
    next_episode,
    open_prompt,
    platform_running,
    restart_platform,
    start_play,
    stop_platform,
    tools_of,
)
from dabench.play.state import read_state, state_path

QA_LOG = "task_qa.jsonl"
"""Per-episode QA answers while playing (episode ids only)."""
QA_FILE = "task_qa.json"
"""QA answers by task id, written when the run is finished."""
MAX_ROWS = 50
"""Rows of a tabular result shown (the rest are counted)."""

Reader = Callable[[str, list[str]], str]
"""``(prompt, completions) -> line``; raises ``EOFError`` at the end of input."""


def terminal_reader() -> Reader:
    """A prompt_toolkit prompt with word completion on a terminal, ``input()`` otherwise."""
    if sys.stdin.isatty():
        try:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter
        except ImportError:  # the play extra is not installed: plain input still works
            pass
        else:
            session: PromptSession[str] = PromptSession()

            def read(prompt: str, words: list[str]) -> str:
                return session.prompt(prompt, completer=WordCompleter(words, sentence=True))

            return read
    return lambda prompt, _words: input(prompt)


def _schema(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    tool = next((t for t in tools if t.get("name") == name), None)
    return (tool or {}).get("input_schema") or {}


def free_text_argument(schema: dict[str, Any]) -> str | None:
    """The argument free text fills: the only required one (or the only one)."""
    required = list(schema.get("required") or [])
    props = list((schema.get("properties") or {}).keys())
    if len(required) == 1:
        return str(required[0])
    return props[0] if len(props) == 1 else None


def _is_key_values(rest: str, schema: dict[str, Any]) -> bool:
    try:
        parts = shlex.split(rest)
    except ValueError:
        return False
    props = schema.get("properties") or {}
    return all("=" in p and (not props or p.partition("=")[0] in props) for p in parts)


def parse_call(line: str, tools: list[dict[str, Any]] | None = None) -> tuple[str, dict[str, Any]]:
    """``TOOL {json}``, ``TOOL key=value ...`` or, for a tool of ``tools`` with one required
    argument, ``TOOL free text`` as a tool name and its arguments."""
    name, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if not rest:
        return name, {}
    schema = _schema(tools or [], name)
    single = free_text_argument(schema)
    if single is not None and not rest.startswith("{") and not _is_key_values(rest, schema):
        kind = ((schema.get("properties") or {}).get(single) or {}).get("type")
        if kind in (None, "string"):
            return name, {single: rest}
        try:
            return name, {single: json.loads(rest)}
        except json.JSONDecodeError:
            return name, {single: rest}
    if rest.startswith("{"):
        try:
            args = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"arguments are not valid JSON: {exc}") from exc
        if not isinstance(args, dict):
            raise UserInputError("arguments must be a JSON object")
        return name, args
    args = {}
    for part in shlex.split(rest):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise UserInputError(f"expected key=value, got {part!r}")
        try:
            args[key] = json.loads(value)
        except json.JSONDecodeError:
            args[key] = value
    return name, args


def render_result(console: Console, text: str) -> None:
    """A tool result: ``{columns, rows}`` as a table, other JSON indented, text as it is."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        console.print(text, markup=False, highlight=False)
        return
    if isinstance(data, dict) and isinstance(data.get("rows"), list) and data.get("columns"):
        columns = [c.get("name", "?") if isinstance(c, dict) else str(c) for c in data["columns"]]
        table = Table(*columns, show_lines=False)
        rows = data["rows"]
        for row in rows[:MAX_ROWS]:
            cells = row if isinstance(row, list) else [row]
            table.add_row(*("null" if v is None else str(v) for v in cells))
        console.print(table)
        more = f", {len(rows) - MAX_ROWS} not shown" if len(rows) > MAX_ROWS else ""
        extra = {k: v for k, v in data.items() if k not in ("columns", "rows")}
        console.print(
            f"({len(rows)} rows{more}) {json.dumps(extra) if extra else ''}",
            markup=False,
            highlight=False,
        )
        return
    console.print(json.dumps(data, indent=2, ensure_ascii=False), markup=False)


def _show_prompt(console: Console, prompt: NextPrompt) -> None:
    if prompt.instructions:
        console.print(Panel(prompt.instructions, title="instructions", expand=False))
    title = f"episode {prompt.episode_id} · turn {prompt.turn} of {prompt.turns}"
    console.print(Panel(prompt.prompt, title=title, expand=False))
    console.print(
        f"budget {prompt.budget} tool calls ({prompt.calls_used} used) · tools: "
        f"{', '.join(prompt.tools)} · /answer TEXT to answer, /tools, /skip, /quit"
    )


_EXAMPLE_TEXT = {"sql": "SELECT 1", "query": "net revenue"}
_EXAMPLE_BY_TYPE = {"integer": "5", "number": "1.5", "boolean": "true", "array": '["a"]'}


def example_call(tool: dict[str, Any]) -> str:
    """One call of ``tool`` as typed at the ``tool>`` prompt: free text for a tool with one
    required argument, else its required arguments as ``key=value``."""
    schema = tool.get("input_schema") or {}
    props = schema.get("properties") or {}
    name = str(tool["name"])
    single = free_text_argument(schema)
    if single is not None and (props.get(single) or {}).get("type") in (None, "string"):
        return f"{name} {_EXAMPLE_TEXT.get(single, 'some text')}"
    parts = []
    for key in schema.get("required") or []:
        kind = (props.get(key) or {}).get("type")
        value = _EXAMPLE_BY_TYPE.get(str(kind), json.dumps(_EXAMPLE_TEXT.get(key, "text")))
        parts.append(f"{key}={value}")
    return " ".join([name, *parts])


def _show_tools(console: Console, run_dir: Path) -> None:
    table = Table("tool", "arguments (? optional)", "example call", "description")
    for tool in tools_of(run_dir):
        props = (tool.get("input_schema") or {}).get("properties", {})
        required = set((tool.get("input_schema") or {}).get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}" for k in props)
        table.add_row(tool["name"], args, example_call(tool), tool.get("description") or "")
    console.print(table)


def _words(run_dir: Path) -> list[str]:
    words = ["/answer", "/tools", "/skip", "/quit"]
    for tool in tools_of(run_dir):
        words.append(tool["name"])
        words.extend(f"{k}=" for k in (tool.get("input_schema") or {}).get("properties", {}))
    return words


def _ask_qa(run_dir: Path, episode_id: str, read: Reader, console: Console) -> None:
    def yes_no(question: str) -> bool:
        while True:
            reply = read(f"{question} [y/n] ", ["y", "n"]).strip().lower()
            if reply in ("y", "yes", "n", "no"):
                return reply.startswith("y")
            console.print("answer y or n")

    clear = yes_no("QA: was the prompt clear (one defensible answer)?")
    answerable = yes_no("QA: could it be answered with these tools?")
    note = read("QA: note (optional): ", []).strip()
    entry = {"episode_id": episode_id, "clear": clear, "answerable": answerable, "note": note}
    with (run_dir / QA_LOG).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def _play_episode(
    run_dir: Path, prompt: NextPrompt, read: Reader, console: Console, qa: bool, first: bool
) -> bool:
    """One episode; ``False`` when the person asked to quit. The first one of a sitting also
    shows the tools with one example call each."""
    _show_prompt(console, prompt)
    if first:
        _show_tools(console, run_dir)
    words = _words(run_dir)
    tools = tools_of(run_dir)
    while True:
        try:
            line = read("tool> ", words).strip()
        except EOFError:
            return False
        if not line:
            continue
        if line in ("/quit", "/exit"):
            return False
        if line == "/tools":
            _show_tools(console, run_dir)
            continue
        if line == "/skip":
            nxt = next_episode(run_dir, abandon=True)
            console.print("episode recorded without an answer")
            if nxt is None:
                return True
            return _play_episode(run_dir, nxt, read, console, qa, first=False)
        if line.startswith("/answer"):
            text = line[len("/answer") :].strip()
            if not text:
                console.print("type the answer after /answer")
                continue
            result: AnswerResult = answer(run_dir, text)
            if result.next_turn is not None:
                _show_prompt(console, result.next_turn)
                continue
            console.print(
                f"episode {result.episode_id} recorded ({result.status}, {result.tool_calls} "
                f"tool calls, audit {'ok' if result.audit_ok else result.audit_detail})",
                highlight=False,
            )
            if qa:
                _ask_qa(run_dir, result.episode_id, read, console)
            return True
        try:
            name, args = parse_call(line, tools)
            out = call_tool(run_dir, name, args)
        except BudgetExhausted as exc:
            console.print(f"[red]{exc}[/red]")
            return True
        except UserInputError as exc:
            console.print(f"[red]{exc}[/red]", highlight=False)
            continue
        flag = " [red](error)[/red]" if out.is_error else ""
        console.print(f"[bold]{out.tool}[/bold] #{out.index + 1}{flag} · {out.calls_used} of "
                      f"{out.budget} calls used", highlight=False)  # fmt: skip
        render_result(console, out.result)


def write_task_qa(run_dir: Path) -> Path | None:
    """``task_qa.json``: the QA answers with their task ids (once the run is finished)."""
    log = run_dir / QA_LOG
    if not log.exists():
        return None
    by_episode = {e.episode_id: e.task_id for e in read_state(run_dir).plan}
    entries = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            entries.append({"task_id": by_episode.get(entry["episode_id"]), **entry})
    path = run_dir / QA_FILE
    path.write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    return path


def play_interactively(
    run_dir: Path,
    opts: PlayOptions,
    *,
    qa: bool,
    read: Reader,
    console: Console,
    grade: Callable[[Path], object],
    report: Callable[[Path], list[Path]],
) -> None:
    """Start (or continue) a human play run and play it to the end, then grade and report."""
    if not state_path(run_dir).exists():
        state = start_play(run_dir, opts)
        console.print(f"play run {run_dir}: {len(state.plan)} episode(s) for {state.arm}")
    state = read_state(run_dir)
    if state.finished:
        raise UserInputError(f"{run_dir}: this play run is already finished")
    if not platform_running(run_dir):  # stopped by /quit (or died): start it again
        replanned = restart_platform(run_dir)
        console.print("platform started again", highlight=False)
        if replanned is not None:
            console.print(
                f"the episode open at /quit lost its session: it is played again later as "
                f"{replanned}",
                highlight=False,
            )
    first = True
    while True:
        reopened = open_prompt(run_dir)  # an episode left open by /quit
        if reopened is not None:
            console.print("continuing the open episode")
            prompt = reopened
        else:
            nxt = next_episode(run_dir)
            if nxt is None:
                break
            prompt = nxt
        if not _play_episode(run_dir, prompt, read, console, qa, first):
            pid = stop_platform(run_dir)
            stopped = f"the platform (pid {pid}) is stopped" if pid else "the platform is stopped"
            console.print(
                f"stopped; {stopped}. Continue with: dabench play --run {run_dir} (it starts "
                "the platform again)",
                highlight=False,
                soft_wrap=True,
            )
            return
        first = False
        state = read_state(run_dir)
    result = finish_play(run_dir, grade=grade, report=report)
    qa_path = write_task_qa(run_dir)
    console.print(f"played {result.played} episode(s): {result.statuses}")
    for path in result.reports:
        console.print(f"report: {path}")
    if qa_path is not None:
        console.print(f"task QA: {qa_path} (dabench tasks validate --qa {qa_path})")
