"""The operations behind ``dabench play``: start, next, call, answer, finish.

``start`` validates the selection, starts the arm's reference platform as a detached process
(it outlives the command; its pid and port go into ``play.json``, its keys into the harness's
``platform/keys.json``) and writes the manifest. Any other target (an arm of an experiment
file: ``--experiment FILE --arm NAME``) is held by a detached play host
(:mod:`dabench.play.host`) in the same way. ``next`` opens the next episode on the
platform (a key minted for it alone) and a fresh session with that key, and returns only its
prompt; ``call`` sends one tool call through that session and records it; ``answer`` records the
answer of the current turn and, after the last turn, reads the audit rows back and journals the
episode exactly as ``dabench run`` does (:meth:`ExperimentRun.finish_episode`). ``finish``
writes the task file and the truth lock into the run (not before), stops the platform, grades
and writes the reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from rich.console import Console

from dabench.agents.base import Agent, AgentContext, EpisodeTranscript, ToolRecorder
from dabench.agents.external import ExternalAgent
from dabench.agents.registry import make_agent
from dabench.errors import DabenchError, HarnessError, UserInputError
from dabench.journal.records import EpisodeStatus, Message, episode_key
from dabench.journal.store import Journal, read_manifest, write_manifest
from dabench.play.host import (
    HostClient,
    HostSession,
    HostSpec,
    HostTarget,
    make_host_target,
    spawn_host,
)
from dabench.play.state import (
    OpenEpisode,
    PlannedPlay,
    PlatformServer,
    PlayKeys,
    PlayState,
    keys_path,
    locked,
    read_keys,
    read_state,
    state_path,
    write_keys,
    write_state,
)
from dabench.runner.experiment import ArmConfig, Experiment, WorldSpec, validate_arms
from dabench.runner.manifest import new_manifest
from dabench.runner.run import (
    TASKS_FILE,
    ArmRuntime,
    ExperimentRun,
    PlannedEpisode,
    PlayedEpisode,
    load_task_set,
    resolve_world,
)
from dabench.targets.base import TargetContext, TargetSession
from dabench.targets.process import pid_alive, stop_pid
from dabench.targets.reference import ReferenceSession, ReferenceTarget
from dabench.targets.reference_episode import ReferenceEpisode
from dabench.targets.registry import make_target
from dabench.tasks.loader import TaskSet, dump_tasks
from dabench.tasks.lock import LOCK_FILE, compute_lock, world_identity, write_lock
from dabench.tasks.model import Protocol, Suite, Task
from dabench.tasks.selection import TaskSelection, applies_to_arm

PLATFORM_DIR = "platform"
"""The platform's work directory inside the run (auth file, state, log)."""
IDENTITY = "default"

T = TypeVar("T")


class BudgetExhausted(DabenchError):
    """A tool call beyond the episode's budget (exit code 4)."""

    exit_code = 4


class PlatformDown(DabenchError):
    """The run's platform is not reachable (exit code 3)."""

    exit_code = 3


@dataclass
class PlayOptions:
    """What ``dabench play start`` plays."""

    profile: str = "a0"
    suites: list[Suite] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    smoke: bool = False
    k: int = 1
    world_dir: Path | None = None
    seed: int = 930
    scale: int = 1
    arm: str | None = None
    """The arm's name; default: the profile's name."""
    label: str | None = None
    """What plays (recorded as the episodes' model), e.g. ``human:alice``."""
    budget: int | None = None
    """Tool-call budget of every episode; default: each task's."""
    system_prompt: str | None = None
    """Instructions shown with each episode; default: the LLM agent's."""
    agent_kind: Literal["external", "human"] = "external"
    """``human`` for a person at the interactive terminal (``dabench play`` without a step)."""
    experiment: Path | None = None
    """An experiment file: play its arm ``arm`` (its target, suites and world) and its task
    selection (extra task files included) instead of a reference profile and the built-in
    suites; ``suites``, ``tasks`` and ``smoke`` replace the file's filters when given."""


@dataclass
class NextPrompt:
    """What ``play next`` (and ``play answer`` of a non-final turn) shows the agent."""

    episode_id: str
    turn: int
    """1-based."""
    turns: int
    prompt: str
    budget: int
    calls_used: int
    tools: list[str]
    remaining: int
    """Episodes not yet opened after this one."""
    instructions: str | None = None
    """The agent's instructions (with the first turn of an episode only)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"done": False, **self.__dict__}


@dataclass
class CallResult:
    """One tool call's outcome."""

    episode_id: str
    index: int
    tool: str
    result: str
    is_error: bool
    error_code: str | None
    calls_used: int
    budget: int

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


@dataclass
class AnswerResult:
    """What ``play answer`` did: the next turn's prompt, or the recorded episode."""

    episode_id: str
    next_turn: NextPrompt | None = None
    status: EpisodeStatus | None = None
    tool_calls: int = 0
    audit_ok: bool | None = None
    audit_detail: str | None = None
    remaining: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {
            "episode_id": self.episode_id,
            "recorded": self.next_turn is None,
        }
        if self.next_turn is not None:
            out["next_turn"] = self.next_turn.as_dict()
        else:
            out.update(
                status=self.status,
                tool_calls=self.tool_calls,
                audit_ok=self.audit_ok,
                audit_detail=self.audit_detail,
                remaining=self.remaining,
            )
        return out


@dataclass
class FinishResult:
    """What ``play finish`` did."""

    run_dir: Path
    played: int
    not_played: int
    statuses: dict[str, int]
    audit_gaps: list[str]
    skipped: list[str]
    reports: list[Path] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "run_dir": str(self.run_dir),
            "played": self.played,
            "not_played": self.not_played,
            "statuses": self.statuses,
            "audit_gaps": self.audit_gaps,
            "skipped": self.skipped,
            "reports": [str(p) for p in self.reports],
        }


# -- the run's components, rebuilt by every command ---------------------------------------


@dataclass
class _Play:
    """A play run's experiment, tasks and live components for one command."""

    run_dir: Path
    state: PlayState
    exp: Experiment
    tasks: TaskSet
    target: ReferenceTarget | HostTarget
    agent: Agent
    keys: PlayKeys | None = None

    @property
    def work_dir(self) -> Path:
        return self.run_dir / PLATFORM_DIR

    def scope(self, ep: OpenEpisode) -> ReferenceEpisode | HostTarget:
        """The open episode's view of the target (on the reference platform, its key bound
        to the episode)."""
        if isinstance(self.target, HostTarget):
            view = HostTarget(self.target.inner, self.target.client, ep.key)
            view.episode_id = ep.platform_episode or None
            return view
        episode_keys = self.keys.episode_keys if self.keys is not None else {}
        return ReferenceEpisode(self.target, ep.platform_episode, episode_keys)

    async def session(self, ep: OpenEpisode) -> TargetSession:
        """The open episode's session, again in this command."""
        if isinstance(self.target, HostTarget):
            return HostSession(self.target.client, ep.session, ep.identity, ep.tools)
        scope = self.scope(ep)
        assert isinstance(scope, ReferenceEpisode)
        return ReferenceSession(await scope.connection(ep.identity), ep.session, ep.identity)

    @property
    def arm(self) -> ArmConfig:
        return self.exp.arms[0]

    def task(self, task_id: str) -> Task:
        for t in self.tasks.tasks:
            if t.id == task_id:
                return t
        raise UserInputError(f"{self.run_dir}: task {task_id!r} is no longer in the task set")

    def runner(self) -> ExperimentRun:
        run = ExperimentRun(
            self.exp, self.run_dir, experiment_dir=Path.cwd(), console=Console(stderr=True)
        )
        run.arms = [ArmRuntime(self.arm, self.target, self.agent)]
        return run


def _arm_of(path: Path, name: str | None) -> tuple[ArmConfig, Experiment]:
    """The arm ``name`` of the experiment file (its only arm when ``name`` is not given)."""
    from dabench.runner.experiment import load_experiment

    source = load_experiment(path)
    names = [a.name for a in source.arms]
    if name is None:
        if len(names) != 1:
            raise UserInputError(
                f"{path}: name the arm to play with --arm (one of {', '.join(names)})"
            )
        name = names[0]
    for arm in source.arms:
        if arm.name == name:
            return arm, source
    raise UserInputError(f"{path}: no arm {name!r} (arms: {', '.join(names)})")


def _selection(opts: PlayOptions, source: Experiment | None, experiment_dir: Path) -> TaskSelection:
    """What a play run plays: the experiment file's selection (its task files made absolute,
    so later commands find them from any directory), with ``opts``' filters in place of the
    file's where given; without a file, the built-in suites filtered by ``opts``."""
    if source is None:
        return TaskSelection(suites=opts.suites, tasks=opts.tasks, smoke=opts.smoke)
    sel = source.tasks
    files = [str(p if Path(p).is_absolute() else (experiment_dir / p).resolve()) for p in sel.files]
    return sel.model_copy(
        update={
            "files": files,
            "suites": opts.suites or sel.suites,
            "tasks": opts.tasks or sel.tasks,
            "smoke": opts.smoke or sel.smoke,
        }
    )


def _experiment(
    opts: PlayOptions,
    world_dir: Path | None,
    source_arm: ArmConfig | None,
    selection: TaskSelection,
) -> Experiment:
    """The one-arm experiment of a play run: ``source_arm`` (the experiment file's arm, read
    once by the caller) or the reference profile of ``opts``, over ``selection``."""
    target: dict[str, Any] = {"kind": "reference", "profile": opts.profile}
    suites: list[Suite] = []
    description = ""
    if source_arm is not None:
        arm = source_arm.name
        target, suites, description = source_arm.target, source_arm.suites, source_arm.description
    else:
        arm = opts.arm or Path(opts.profile).stem
    agent: dict[str, Any] = {"kind": opts.agent_kind}
    if opts.label:
        agent["label"] = opts.label
    if opts.budget:
        agent["budget"] = opts.budget
    if opts.system_prompt:
        agent["system_prompt"] = opts.system_prompt
    exp = Experiment(
        name=f"play-{arm}",
        description="episodes played by an external agent through `dabench play`",
        world=WorldSpec(
            seed=opts.seed, scale=opts.scale, dir=str(world_dir.resolve()) if world_dir else None
        ),
        tasks=selection,
        k=opts.k,
        concurrency=1,
        arms=[
            ArmConfig(name=arm, description=description, target=target, agent=agent, suites=suites)
        ],
    )
    validate_arms(exp, "dabench play start")
    return exp


def _is_reference(exp: Experiment) -> bool:
    return exp.arms[0].target.get("kind") == "reference"


def _host_spec(exp: Experiment, run_dir: Path, world_dir: Path, experiment_dir: Path) -> HostSpec:
    return HostSpec(
        target=exp.arms[0].target,
        world_dir=str(world_dir),
        work_dir=str((run_dir / PLATFORM_DIR).resolve()),
        experiment_dir=str(experiment_dir.resolve()),
    )


def _make_target(
    exp: Experiment, run_dir: Path, world_dir: Path, experiment_dir: Path
) -> ReferenceTarget:
    ctx = TargetContext(
        world_dir=world_dir, work_dir=run_dir / PLATFORM_DIR, experiment_dir=experiment_dir
    )
    target = make_target(exp.arms[0].target, ctx, "arms[0].target")
    assert isinstance(target, ReferenceTarget)
    return target


def _experiment_dir(state: PlayState) -> Path:
    return Path(state.experiment_dir) if state.experiment_dir else Path.cwd()


def _load(run_dir: Path) -> _Play:
    """The run's state, experiment, tasks, and its platform attached (not started)."""
    state = read_state(run_dir)
    manifest = read_manifest(run_dir, with_secrets=True)
    if manifest is None:
        raise UserInputError(f"{run_dir}: play run without a manifest")
    exp = Experiment.model_validate(manifest.experiment)
    tasks = load_task_set(exp, Path.cwd())
    if tasks.hash() != manifest.task_set_hash:
        raise UserInputError(
            f"{run_dir}: the tasks changed since the run started (task-set hash "
            f"{manifest.task_set_hash[:12]} -> {tasks.hash()[:12]})"
        )
    assert exp.world.dir is not None  # start records it absolute
    server = state.server
    keys = None
    if server is not None and not state.finished:
        keys = read_keys(Path(server.work_dir))
    target: ReferenceTarget | HostTarget
    if not _is_reference(exp):
        spec = _host_spec(exp, run_dir, Path(exp.world.dir), _experiment_dir(state))
        client = HostClient(
            server.port if server else 0,
            keys.admin_key if keys else "",
            server.pid if server else None,
        )
        from dabench.targets.mcp import unexpanded_env

        with unexpanded_env():  # the host started it with play start's environment
            target = HostTarget(make_host_target(spec), client)
    else:
        target = _make_target(exp, run_dir, Path(exp.world.dir), _experiment_dir(state))
        if server is not None and keys is not None:
            target.port = server.port
            target.keys = dict(keys.keys)
            target.admin_key = keys.admin_key
            target.health = dict(server.health)
    agent = make_agent(exp.arms[0].agent, AgentContext(run_dir=run_dir), "arms[0].agent")
    return _Play(run_dir, state, exp, tasks, target, agent, keys)


def _run(play: _Play, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with the platform reachable; its connections are closed afterwards (the
    platform process keeps running)."""
    server = play.state.server
    if server is None or play.state.finished:
        raise UserInputError(f"{play.run_dir}: the play run is finished")
    if not pid_alive(server.pid):
        raise PlatformDown(
            f"{play.run_dir}: the platform (pid {server.pid}) is not running (see "
            f"{Path(server.work_dir) / 'platform.log'}); start it again with `dabench play "
            f"restart --run {play.run_dir}`"
        )

    async def main() -> T:
        try:
            return await work()
        finally:
            await play.target.stop()  # attached: closes connections, never the process

    return asyncio.run(main())


# -- start ----------------------------------------------------------------------------------


def start_play(run_dir: Path, opts: PlayOptions) -> PlayState:
    """Prepare a play run: plan the episodes, start the platform, write the manifest. Nothing
    is written before the selection is valid."""
    with locked(run_dir, start=True):
        if state_path(run_dir).exists():
            raise UserInputError(
                f"{run_dir}: a play run already exists; continue with `dabench play next --run "
                f"{run_dir}` or choose another directory"
            )
        if Journal(run_dir).path.exists():
            raise UserInputError(f"{run_dir} already holds episodes; choose another directory")
        experiment_dir = opts.experiment.parent if opts.experiment else Path.cwd()
        world_dir = opts.world_dir
        source_arm: ArmConfig | None = None
        source: Experiment | None = None
        if opts.experiment is not None:  # read once
            source_arm, source = _arm_of(opts.experiment, opts.arm)
            if world_dir is None:
                world_dir = resolve_world(source, experiment_dir)
        selection = _selection(opts, source, experiment_dir)
        exp = _experiment(opts, world_dir, source_arm, selection)
        world_dir = resolve_world(exp, Path.cwd()).resolve()
        exp = _experiment(opts, world_dir, source_arm, selection)
        world_hash = world_identity(world_dir)
        tasks = load_task_set(exp, Path.cwd())
        arm = exp.arms[0]
        plan: list[PlannedPlay] = []
        skipped: list[str] = []
        for attempt in range(exp.k):
            for item in tasks.items:
                if isinstance(item, Protocol):
                    if item.id not in skipped:
                        skipped.append(item.id)
                    continue
                if applies_to_arm(item, arm.name) and arm.runs_suite(item.suite):
                    n = len(plan) + 1
                    plan.append(
                        PlannedPlay(episode_id=f"ep-{n:03d}", task_id=item.id, attempt=attempt)
                    )
        if not plan:
            raise UserInputError(
                "nothing to play: the selection holds only S5 lifecycle protocols, which "
                "`dabench play` does not run"
            )
        description, efficiency, server = _spawn_platform(exp, run_dir, world_dir, experiment_dir)
        try:
            state = PlayState(
                run_id=run_dir.name,
                arm=arm.name,
                plan=plan,
                skipped=skipped,
                server=server,
                experiment_dir=str(experiment_dir.resolve()),
            )
            manifest = new_manifest(
                run_id=run_dir.name,
                experiment=exp,
                world_hash=world_hash,
                task_set_hash=tasks.hash(),
                task_ids=tasks.ids,
                arms=[
                    {
                        "name": arm.name,
                        "description": arm.description,
                        "target": description,
                        "agent": make_agent(arm.agent, AgentContext(), "agent").describe(),
                        "efficiency_source": efficiency,
                    }
                ],
            )
            write_manifest(run_dir, manifest)
            write_state(run_dir, state)
        except BaseException:
            stop_pid(server.pid)
            raise
        return state


def _spawn_platform(
    exp: Experiment, run_dir: Path, world_dir: Path, experiment_dir: Path
) -> tuple[dict[str, Any], str, PlatformServer]:
    """Start the arm's platform (or the play host of any other target) as a detached
    process: its description, efficiency source, and where it runs. Fresh keys, kept in the
    harness's keys file, not in ``play.json``; the state directory in the run is reused."""
    if not _is_reference(exp):
        spec = _host_spec(exp, run_dir, world_dir, experiment_dir)
        address, token = spawn_host(spec)
        write_keys(Path(spec.work_dir), PlayKeys(admin_key=token, keys={}))
        server = PlatformServer(
            pid=address.pid, port=address.port, work_dir=spec.work_dir, kind="host"
        )
        return address.description, address.efficiency_source, server
    target = _make_target(exp, run_dir, world_dir, experiment_dir)
    target.detached = True
    asyncio.run(target.start())
    proc = target.process
    assert proc is not None and proc.pid is not None
    work_dir = (run_dir / PLATFORM_DIR).resolve()
    write_keys(work_dir, PlayKeys(admin_key=target.admin_key, keys=target.keys))
    server = PlatformServer(
        pid=proc.pid, port=target.port, work_dir=str(work_dir), health=target.health
    )
    return target.describe(), target.efficiency_source, server


def restart_platform(run_dir: Path) -> str | None:
    """Start the run's platform again after it died. An episode that was open lost its session
    with the platform: it is journaled as a harness error (excluded from grading) and planned
    again at the end under a new episode id, which is returned."""
    with locked(run_dir):
        play = _load(run_dir)
        state = play.state
        if state.finished:
            raise UserInputError(f"{run_dir}: the play run is finished")
        if state.server is not None and pid_alive(state.server.pid):
            raise UserInputError(
                f"{run_dir}: the platform is running (pid {state.server.pid}); nothing to restart"
            )
        replanned: str | None = None
        ep = state.open
        if ep is not None:
            entry = state.plan[ep.index]

            async def record() -> None:
                try:
                    await _record(play, ep, "harness_error", "the platform died during the episode")
                finally:
                    await play.target.stop()

            asyncio.run(record())
            replanned = f"ep-{len(state.plan) + 1:03d}"
            state.plan.append(
                PlannedPlay(episode_id=replanned, task_id=entry.task_id, attempt=entry.attempt)
            )
            state.open = None
            write_state(run_dir, state)
        assert play.exp.world.dir is not None
        _description, _efficiency, state.server = _spawn_platform(
            play.exp, run_dir, Path(play.exp.world.dir), _experiment_dir(state)
        )
        write_state(run_dir, state)
        return replanned


def stop_platform(run_dir: Path) -> int | None:
    """Stop the run's platform (``/quit``); its pid, or ``None`` when it was not running. An
    open episode loses its session: :func:`restart_platform` replans it."""
    with locked(run_dir):
        state = read_state(run_dir)
        if state.server is None or not pid_alive(state.server.pid):
            return None
        stop_pid(state.server.pid)
        return state.server.pid


def platform_running(run_dir: Path) -> bool:
    """Whether the run's platform process is alive."""
    server = read_state(run_dir).server
    return server is not None and pid_alive(server.pid)


# -- next -----------------------------------------------------------------------------------


def _instructions(play: _Play) -> str:
    agent = play.agent
    assert isinstance(agent, ExternalAgent)
    return agent.instructions


def _prompt(play: _Play, ep: OpenEpisode) -> NextPrompt:
    entry = play.state.plan[ep.index]
    task = play.task(entry.task_id)
    return NextPrompt(
        instructions=_instructions(play) if ep.turn == 0 else None,
        episode_id=entry.episode_id,
        turn=ep.turn + 1,
        turns=ep.turns,
        prompt=task.messages[ep.turn],
        budget=ep.budget,
        calls_used=len(ep.tool_calls),
        tools=[t.name for t in ep.tools],
        remaining=play.state.remaining,
    )


def _open_error(play: _Play, ep: OpenEpisode) -> UserInputError:
    entry = play.state.plan[ep.index]
    return UserInputError(
        f"episode {entry.episode_id} is still open (turn {ep.turn + 1} of {ep.turns}, "
        f"{len(ep.tool_calls)} tool call(s)): answer it with `dabench play answer`, or pass "
        "--abandon to record it without an answer"
    )


def open_prompt(run_dir: Path) -> NextPrompt | None:
    """The open episode's current prompt again (``None`` when no episode is open)."""
    play = _load(run_dir)
    if play.state.open is None:
        return None
    return _prompt(play, play.state.open)


def next_episode(run_dir: Path, *, abandon: bool = False) -> NextPrompt | None:
    """Open the next episode in a fresh platform session and return its first prompt;
    ``None`` when every episode has been played."""
    with locked(run_dir):
        play = _load(run_dir)
        state = play.state

        async def work() -> NextPrompt | None:
            if state.open is not None:
                if not abandon:
                    raise _open_error(play, state.open)
                await _record(play, state.open, "no_answer", "abandoned by the agent")
                state.open = None
                write_state(run_dir, state)
            if state.next_index >= len(state.plan):
                return None
            index = state.next_index
            entry = state.plan[index]
            task = play.task(entry.task_id)
            key = episode_key(state.arm, entry.task_id, entry.attempt)
            try:
                scope = await play.target.begin_episode(key)
                session = await scope.open_session(IDENTITY)
                tools = await session.tools()
            except HarnessError as exc:
                raise PlatformDown(f"could not open a platform session: {exc}") from exc
            assert play.keys is not None
            if isinstance(scope, ReferenceEpisode):
                play.keys.episode_keys = dict(scope.keys)
                write_keys(play.work_dir, play.keys)
            state.open = OpenEpisode(
                index=index,
                key=key,
                session=session.handle,
                platform_episode=scope.episode_id or "",
                identity=IDENTITY,
                turns=len(task.messages),
                budget=play.agent.budget_for(task),
                tools=tools,
                started_at=datetime.now(UTC),
                messages=[
                    Message(role="system", content=_instructions(play)),
                    Message(role="user", content=task.messages[0]),
                ],
            )
            state.next_index += 1
            write_state(run_dir, state)
            return _prompt(play, state.open)

        return _run(play, work)


# -- call -----------------------------------------------------------------------------------


def _transcript(ep: OpenEpisode) -> EpisodeTranscript:
    return EpisodeTranscript(
        messages=ep.messages,
        tool_calls=ep.tool_calls,
        answers=ep.answers,
        sessions=[ep.session],
        episode=ep.platform_episode,
    )


def _current(play: _Play) -> OpenEpisode:
    if play.state.open is None:
        raise UserInputError(
            f"{play.run_dir}: no episode is open; open one with `dabench play next`"
        )
    return play.state.open


def call_tool(run_dir: Path, tool: str, arguments: dict[str, Any]) -> CallResult:
    """Call ``tool`` in the open episode's session and record the call. A call beyond the
    budget is refused (:class:`BudgetExhausted`) and the episode will end ``budget_exhausted``;
    an unknown tool is answered by the harness (``UNKNOWN_TOOL``) and counts, as for the LLM
    agent."""
    with locked(run_dir):
        play = _load(run_dir)
        ep = _current(play)
        entry = play.state.plan[ep.index]
        if len(ep.tool_calls) >= ep.budget:
            ep.budget_hit = True
            write_state(run_dir, play.state)
            raise BudgetExhausted(
                f"episode {entry.episode_id}: the tool-call budget is exhausted "
                f"({len(ep.tool_calls)} of {ep.budget} used); the call was not sent and the "
                "episode will end as budget_exhausted. Answer with `dabench play answer`."
            )
        transcript = _transcript(ep)
        recorder = ToolRecorder(transcript)
        names = {t.name for t in ep.tools}
        call_id = f"call_{len(ep.tool_calls)}"
        ep.messages.append(
            Message(
                role="assistant",
                tool_calls=[{"id": call_id, "name": tool, "arguments": arguments}],
            )
        )

        async def work() -> None:
            if tool not in names:
                text = json.dumps(
                    {
                        "error": {
                            "code": "UNKNOWN_TOOL",
                            "message": f"no tool named {tool!r}; available: "
                            f"{', '.join(sorted(names))}",
                        }
                    }
                )
                recorder.refuse(tool, arguments, ep.turn, "UNKNOWN_TOOL", text)
                return
            session = await play.session(ep)
            try:
                await recorder.call(session, tool, arguments, ep.turn)
            except HarnessError as exc:
                # The platform failed, not the agent: the episode is journaled as a harness
                # error (excluded from grading) and closed.
                await _record(play, ep, "harness_error", str(exc))
                play.state.open = None
                write_state(run_dir, play.state)
                raise PlatformDown(
                    f"episode {entry.episode_id}: the platform failed ({exc}); the episode was "
                    "recorded as a harness error. Continue with `dabench play next`."
                ) from exc

        _run(play, work)
        record = ep.tool_calls[-1]
        ep.messages.append(Message(role="tool", content=record.result, tool_call_id=call_id))
        write_state(run_dir, play.state)
        return CallResult(
            episode_id=entry.episode_id,
            index=record.index,
            tool=tool,
            result=record.result,
            is_error=record.is_error,
            error_code=record.error_code,
            calls_used=len(ep.tool_calls),
            budget=ep.budget,
        )


# -- answer ---------------------------------------------------------------------------------


async def _record(
    play: _Play, ep: OpenEpisode, status: EpisodeStatus, cause: str | None = None
) -> AnswerResult:
    """Revoke the episode's key, read the audit rows back and journal the episode (as
    :class:`ExperimentRun` does)."""
    entry = play.state.plan[ep.index]
    finished = datetime.now(UTC)
    with contextlib.suppress(HarnessError):  # the platform is down: its keys died with it
        await play.scope(ep).end_episode([ep.session])
    if play.keys is not None and play.keys.episode_keys:
        play.keys.episode_keys = {}
        write_keys(play.work_dir, play.keys)
    played = PlayedEpisode(
        transcript=_transcript(ep),
        started=ep.started_at,
        status=status,
        cause=cause if status == "harness_error" else None,
        wall_ms=(finished - ep.started_at).total_seconds() * 1000,
        finished=finished,
    )
    run = play.runner()
    planned = PlannedEpisode(run.arms[0], play.task(entry.task_id), entry.attempt)
    episode = await run.finish_episode(planned, played)
    await asyncio.to_thread(run.journal.append, episode)
    return AnswerResult(
        episode_id=entry.episode_id,
        status=status,
        tool_calls=len(ep.tool_calls),
        audit_ok=episode.audit.ok if episode.audit else None,
        audit_detail=episode.audit.detail if episode.audit else None,
        remaining=play.state.remaining,
    )


def answer(run_dir: Path, text: str) -> AnswerResult:
    """Record the answer of the open episode's current turn. A later turn follows in the same
    session; after the last turn the episode is audit-checked and journaled."""
    with locked(run_dir):
        play = _load(run_dir)
        ep = _current(play)
        ep.answers.append(text)
        ep.messages.append(Message(role="assistant", content=text))
        if ep.turn + 1 < ep.turns:
            ep.turn += 1
            task = play.task(play.state.plan[ep.index].task_id)
            ep.messages.append(Message(role="user", content=task.messages[ep.turn]))
            write_state(run_dir, play.state)
            return AnswerResult(
                episode_id=play.state.plan[ep.index].episode_id, next_turn=_prompt(play, ep)
            )
        status: EpisodeStatus = (
            "budget_exhausted" if ep.budget_hit else "completed" if text.strip() else "no_answer"
        )
        result = _run(play, lambda: _record(play, ep, status))
        play.state.open = None
        write_state(run_dir, play.state)
        return result


# -- status and finish ----------------------------------------------------------------------


def play_status(run_dir: Path) -> dict[str, Any]:
    """Progress of a play run (no task ids, prompts or truths)."""
    state = read_state(run_dir)
    episodes = Journal(run_dir).load()
    statuses: dict[str, int] = {}
    for e in episodes:
        statuses[e.status] = statuses.get(e.status, 0) + 1
    out: dict[str, Any] = {
        "run_dir": str(run_dir),
        "arm": state.arm,
        "episodes": len(state.plan),
        "recorded": len(episodes),
        "remaining": state.remaining,
        "statuses": statuses,
        "finished": state.finished,
        "platform_running": bool(state.server and pid_alive(state.server.pid)),
        "open": None,
    }
    if state.open is not None:
        current = state.open
        out["open"] = {
            "episode_id": state.plan[current.index].episode_id,
            "turn": current.turn + 1,
            "turns": current.turns,
            "calls_used": len(current.tool_calls),
            "budget": current.budget,
        }
    return out


def status_lines(info: dict[str, Any]) -> list[str]:
    """:func:`play_status` in words, one fact a line."""
    statuses = ", ".join(
        f"{n} {status.replace('_', ' ')}" for status, n in sorted(info["statuses"].items())
    )
    run = info["run_dir"]
    lines = [
        f"play run {run} (arm {info['arm']})",
        f"episodes: {info['episodes']} planned, {info['recorded']} recorded, "
        f"{info['remaining']} remaining",
        f"recorded as: {statuses or 'nothing yet'}",
    ]
    if info["finished"]:
        lines.append("finished: yes (graded and reported by `dabench play finish`)")
        return lines
    lines.append(
        "platform: running"
        if info["platform_running"]
        else f"platform: stopped (start it again with `dabench play restart --run {run}`)"
    )
    current = info["open"]
    if current is None:
        lines.append("open episode: none")
    else:
        lines.append(
            f"open episode: {current['episode_id']}, turn {current['turn']} of "
            f"{current['turns']}, {current['calls_used']} of {current['budget']} tool calls used"
        )
    return lines


def tools_of(run_dir: Path) -> list[dict[str, Any]]:
    """The open episode's tools (name, description, input schema; ``session_id`` hidden)."""
    state = read_state(run_dir)
    if state.open is None:
        raise UserInputError(f"{run_dir}: no episode is open; open one with `dabench play next`")
    return [t.model_dump() for t in state.open.tools]


def finish_play(
    run_dir: Path,
    *,
    abandon: bool = False,
    grade: Callable[[Path], object] | None = None,
    report: Callable[[Path], list[Path]] | None = None,
) -> FinishResult:
    """Close the run: write the tasks and the truth lock into it, stop the platform, then
    grade and report with ``grade`` and ``report`` (given by the command layer)."""
    with locked(run_dir):
        play = _load(run_dir)
        state = play.state
        if state.finished:
            raise UserInputError(
                f"{run_dir}: the play run is already finished (regrade with `dabench grade`)"
            )
        if state.open is not None:
            if not abandon:
                raise _open_error(play, state.open)
            ep = state.open
            _run(play, lambda: _record(play, ep, "no_answer", "abandoned by the agent"))
            state.open = None
            write_state(run_dir, state)
        assert play.exp.world.dir is not None
        # The key enters the run directory only now, after the last episode.
        dump_tasks(play.tasks, run_dir / TASKS_FILE)
        write_lock(compute_lock(play.tasks, Path(play.exp.world.dir)), run_dir / LOCK_FILE)
        if state.server is not None:
            stop_pid(state.server.pid)
            keys_path(Path(state.server.work_dir)).unlink(missing_ok=True)  # dead with it
        manifest = read_manifest(run_dir, with_secrets=True)
        if manifest is not None:
            write_manifest(run_dir, manifest.model_copy(update={"finished_at": datetime.now(UTC)}))
        state.finished = True
        write_state(run_dir, state)
        episodes = Journal(run_dir).load()
        statuses: dict[str, int] = {}
        for e in episodes:
            statuses[e.status] = statuses.get(e.status, 0) + 1
        result = FinishResult(
            run_dir=run_dir,
            played=len(episodes),
            not_played=len(state.plan) - len(episodes),
            statuses=statuses,
            audit_gaps=[
                f"{e.key}: {e.audit.detail}" for e in episodes if e.audit and not e.audit.ok
            ],
            skipped=state.skipped,
        )
        if episodes and grade is not None:
            grade(run_dir)
        if episodes and report is not None:
            result.reports = report(run_dir)
        return result
