"""Experiments: the world, the task selection, k, concurrency, timeouts, the judge, the arms.

An experiment YAML::

    name: platform-ablation
    world: {seed: 930, scale: 1}
    tasks: {suites: [s1, s2, s3]}
    k: 5
    concurrency: 8
    provider_concurrency: {anthropic: 4}
    episode_timeout_s: 600
    judge: {model: "anthropic:claude-sonnet-4-5"}
    arms:
      - name: a0
        target: {kind: reference, profile: a0}
        agent: {kind: llm, model: "anthropic:claude-sonnet-4-5", temperature: 0}

Each arm's ``target`` and ``agent`` mapping is validated by the config model of its ``kind``
(see the target and agent registries).
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from dabench.agents.registry import validate_agent_config
from dabench.errors import UserInputError
from dabench.fields import Seconds
from dabench.targets.registry import ConfigError, validate_target_config
from dabench.tasks.hashing import canonical_hash
from dabench.tasks.model import Suite
from dabench.tasks.selection import TaskSelection, suite_names
from dabench.tasks.yaml_source import (
    NAME_PATTERN,
    compose_file,
    line_of,
    node_at,
    node_data,
    validation_message,
)
from dabench.world.constants import DEFAULT_SEED, MAX_SCALE, MAX_SEED

Loc = tuple[str | int, ...]

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN, max_length=100)]
"""An experiment's or an arm's name (a directory name of the run: at most 100 characters)."""


class _Spec(BaseModel):
    """Hand-written experiment content: types are strict (``k: "3"``, ``k: true`` and
    ``seed: 1.0`` are refused, not coerced), as in task files."""

    model_config = ConfigDict(extra="forbid", strict=True)


class WorldSpec(_Spec):
    """Which world the experiment runs on: the built-in world (seed, scale, or a built
    ``dir``), a directory holding an external world's ``world.yaml``, or an external world
    inline: ``{kind: warehouse, engine: duckdb|postgres|parquet, location: ..., knowledge:
    DIR}`` (docs/own-data.md)."""

    seed: int = Field(default=DEFAULT_SEED, ge=0, le=MAX_SEED)
    scale: int = Field(default=1, ge=1, le=MAX_SCALE)
    dir: str | None = None
    """A built world directory or an external world's directory; default: the built-in
    world, built once into the world cache."""
    drawn: bool = False
    """The seed was drawn at random (``dabench run --world-seed random``); not part of the
    experiment's hash (the seed is)."""
    kind: Literal["warehouse"] | None = None
    engine: Literal["duckdb", "postgres", "parquet"] | None = None
    location: str | None = None
    knowledge: str | None = None
    snapshot_id: str | None = None

    @model_validator(mode="after")
    def _external(self) -> WorldSpec:
        inline = (self.engine, self.location, self.knowledge)
        if self.kind == "warehouse":
            if None in inline:
                raise ValueError("world kind warehouse needs engine, location and knowledge")
            if self.dir:
                raise ValueError("give world.dir or an inline warehouse world, not both")
        elif any(v is not None for v in (*inline, self.snapshot_id)):
            raise ValueError("engine, location, knowledge and snapshot_id need kind: warehouse")
        return self


class ArmConfig(_Spec):
    """One arm: a named, pinned target x agent combination."""

    name: Name
    description: str = ""
    target: dict[str, Any]
    """``{kind: reference, profile: a2}``, ``{kind: mcp, command: [...]}`` ..."""
    agent: dict[str, Any]
    """``{kind: oracle}``, ``{kind: llm, model: PROVIDER:MODEL}``, ``{kind: replay, run: DIR}``."""
    suites: list[Suite] = Field(default_factory=list)
    """Suites this arm runs (empty: every selected suite), e.g. ``[s5]`` for a memory arm
    that only plays the lifecycle protocols."""

    def runs_suite(self, suite: str) -> bool:
        """Whether this arm plays items of ``suite``."""
        return not self.suites or suite in self.suites


class RaySpec(_Spec):
    """Settings of the Ray executor (``executor: ray``)."""

    address: str | None = None
    """The cluster to join (``HOST:PORT`` of the head, or ``auto``); ``--ray-address`` wins;
    default: ``$RAY_ADDRESS``, else a local Ray started for the run."""
    node_concurrency: int | None = Field(default=None, ge=1, le=256)
    """Episodes in flight per node (all arms); default: ``concurrency``."""


class Experiment(_Spec):
    """A matrix of arms over a task selection, k times."""

    name: Name
    description: str = ""
    world: WorldSpec = Field(default_factory=WorldSpec)
    tasks: TaskSelection = Field(default_factory=TaskSelection)
    k: int = Field(default=1, ge=1, le=100)
    concurrency: int = Field(default=4, ge=1, le=256)
    """Episodes in flight at once (all arms); with ``executor: ray``, per node unless
    ``ray.node_concurrency`` says otherwise."""
    provider_concurrency: dict[str, int] = Field(default_factory=dict)
    """Per provider kind (``anthropic``, ``openai``...; ``none`` for oracle/replay)."""
    episode_timeout_s: Seconds = 600.0
    """The agent's time limit per episode (an exceeded limit is the episode's ``timeout``)."""
    judge: dict[str, Any] | None = None
    """Judge settings (model, rubric version) handed to grading."""
    allow_audit_gaps: bool = False
    lock: str | None = None
    """A truth lock file to use (checked, refused when stale); default: computed per run."""
    arms: list[ArmConfig] = Field(min_length=1)
    executor: Literal["local", "ray"] = "local"
    """Where episodes run: ``local`` (asyncio in this process) or ``ray`` (a Ray cluster)."""
    ray: RaySpec = Field(default_factory=RaySpec)
    unsealed: bool = False
    """Agent programs (``command``, ``claude-cli``) run without the bubblewrap sandbox
    (``--unsealed``; the manifest and every report then carry a caveat)."""
    _origin: tuple[Path, yaml.Node] | None = PrivateAttr(default=None)
    """The file the experiment was loaded from and its YAML nodes (for error lines)."""

    def located(self, message: str, *loc: str | int, value: Any = None) -> str:
        """``FILE:LINE: message`` when the experiment's file sets ``loc`` (an arm by index or
        by name: ``("arms", "a0", "target")``) and, given ``value``, sets it to that value (not
        a command-line override); else ``message``."""
        if self._origin is None:
            return message
        path, root = self._origin
        parts = list(loc)
        if len(parts) > 1 and parts[0] == "arms" and isinstance(parts[1], str):
            names = [a.get("name") for a in node_data(root, path).get("arms") or []]
            if parts[1] not in names:
                return message
            parts[1] = names.index(parts[1])
        if value is not None and _value_at(root, parts) != value:
            return message
        return f"{path}:{line_of(node_at(root, parts))}: {message}"

    @model_validator(mode="after")
    def _unique_arms(self) -> Experiment:
        names = [a.name for a in self.arms]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"arm names must be unique; repeated: {', '.join(dupes)}")
        return self

    def hash(self) -> str:
        """Canonical hash of the resolved experiment (where it runs is not part of it;
        ``unsealed`` only when set, so sealed experiments keep their hash)."""
        exclude: dict[str, Any] = {"executor": True, "ray": True, "world": {"drawn"}}
        if not self.unsealed:
            exclude["unsealed"] = True
        data = self.model_dump(mode="json", exclude=exclude)
        for key in EXTERNAL_WORLD_KEYS:  # absent for the built-in world: its hash stays
            if data["world"].get(key) is None:
                data["world"].pop(key, None)
        return canonical_hash(data)

    def uses_model(self) -> bool:
        """Whether any arm's agent calls a model."""
        return any(a.agent.get("kind") in MODEL_AGENT_KINDS for a in self.arms)


EXTERNAL_WORLD_KEYS = ("kind", "engine", "location", "knowledge", "snapshot_id")

MODEL_AGENT_KINDS = frozenset({"llm", "kibana", "claude-cli", "command"})
"""Agent kinds that call a model (the ``kibana`` agent's model runs inside Kibana, the
``claude-cli`` agent's inside the claude CLI, a ``command`` agent's inside its program)."""


def _value_at(root: yaml.Node, loc: list[str | int]) -> Any:
    """The scalar the YAML sets at ``loc`` (``None`` when it sets none there)."""
    node: yaml.Node | None = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return None
    return node.value if isinstance(node, yaml.ScalarNode) else None


def validate_arms(exp: Experiment, where: str) -> None:
    """Validate every arm's target and agent config against the registries; an error names
    the experiment's file and line (else ``where``)."""
    for i, arm in enumerate(exp.arms):
        for part, check in (("target", validate_target_config), ("agent", validate_agent_config)):
            try:
                check(getattr(arm, part), f"arms[{i}].{part}")
            except ConfigError as exc:
                located = exp.located(str(exc), "arms", arm.name, part, *exc.loc)
                if located == str(exc):
                    located = f"{where}: {exc}"
                raise UserInputError(located) from exc


def _refuse_repeated_arm(data: dict[str, Any], path: Path, root: yaml.Node) -> None:
    """An arm name given twice, at the line of its second arm."""
    arms = data.get("arms")
    first: dict[str, int] = {}
    for i, arm in enumerate(arms if isinstance(arms, list) else []):
        name = arm.get("name") if isinstance(arm, dict) else None
        if not isinstance(name, str):
            continue
        if name in first:
            earlier = line_of(node_at(root, ["arms", first[name], "name"]))
            raise UserInputError(
                f"{path}:{line_of(node_at(root, ['arms', i, 'name']))}: experiment field "
                f"'arms.{i}.name': arm name {name!r} is already used at line {earlier}; "
                "arm names must be unique"
            )
        first[name] = i


def load_experiment(path: Path) -> Experiment:
    """Load and validate an experiment file (errors name file, line and field)."""
    root = compose_file(path)
    if root is None:
        raise UserInputError(f"{path}: empty experiment file")
    data = node_data(root, path)
    if not isinstance(data, dict):
        raise UserInputError(f"{path}:1: an experiment is a mapping (name, world, tasks, arms...)")
    _refuse_repeated_arm(data, path, root)
    try:
        exp = Experiment.model_validate(data)
    except ValidationError as exc:
        raise UserInputError(validation_message(exc, path, root, "experiment")) from exc
    exp._origin = (path, root)
    validate_arms(exp, str(path))
    return exp


def builtin_experiment(name: str) -> Experiment:
    """A built-in experiment (``smoke``)."""
    ref = resources.files("dabench.runner").joinpath("experiments", f"{name}.yaml")
    with resources.as_file(ref) as path:
        if not path.exists():
            raise UserInputError(f"no built-in experiment {name!r}")
        return load_experiment(path)


SHIPPED_PROFILES = ("a0", "a1", "a2", "a3")
"""The reference platform profiles shipped with dabench (an ad-hoc run's default arms)."""


def adhoc_experiment(arms: list[str] | None) -> Experiment:
    """An experiment built from command-line flags alone: one arm per reference platform
    profile (``arms``, default all shipped profiles), each named after its profile, with the
    oracle agent until ``--agent`` / ``--model`` override it."""
    names = arms or list(SHIPPED_PROFILES)
    unknown = [n for n in names if n not in SHIPPED_PROFILES]
    if unknown:
        raise UserInputError(
            f"--arms: {', '.join(unknown)} is not a shipped profile "
            f"({', '.join(SHIPPED_PROFILES)}); for other arms write an experiment YAML"
        )
    return Experiment(
        name="adhoc-" + "-".join(names),
        description="built from the command line (dabench run --suite/--arms/--agent)",
        arms=[
            ArmConfig(
                name=n,
                description=f"reference platform, profile {n}",
                target={"kind": "reference", "profile": n},
                agent={"kind": "oracle"},
            )
            for n in names
        ],
    )


def apply_overrides(
    exp: Experiment,
    *,
    k: int | None = None,
    arms: list[str] | None = None,
    model: str | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    world_dir: str | None = None,
    allow_audit_gaps: bool = False,
    suites: list[str] | None = None,
    agent: str | None = None,
) -> Experiment:
    """The experiment with command-line overrides applied.

    ``suites`` replaces the task selection's suites (an arm restricted to other suites is
    dropped), ``agent`` gives every arm that agent kind, ``model`` turns every arm's agent
    into the LLM agent with that model.
    """
    data = copy.deepcopy(exp.model_dump(mode="json"))
    if suites:
        data["tasks"]["suites"] = suite_names(suites)
        kept = []
        for arm in data["arms"]:
            if arm["suites"]:
                arm["suites"] = [s for s in arm["suites"] if s in suites]
                if not arm["suites"]:
                    continue
            kept.append(arm)
        if not kept:
            raise UserInputError(f"--suite {','.join(suites)}: no arm of the experiment runs it")
        data["arms"] = kept
    if agent is not None:
        if model is not None and agent != "llm":
            raise UserInputError(f"--agent {agent} calls no model; give --model only with llm")
        if model is None:
            if agent == "llm":
                raise UserInputError("--agent llm needs --model PROVIDER:MODEL")
            for arm in data["arms"]:
                arm["agent"] = {"kind": agent}
    if k is not None:
        data["k"] = k
    if concurrency is not None:
        data["concurrency"] = concurrency
    if world_dir is not None:
        data["world"]["dir"] = world_dir
    if allow_audit_gaps:
        data["allow_audit_gaps"] = True
    if arms:
        known = [a["name"] for a in data["arms"]]
        unknown = [a for a in arms if a not in known]
        if unknown:
            raise UserInputError(
                f"--arms: unknown arm(s) {', '.join(unknown)}; "
                f"the experiment has {', '.join(known)}"
            )
        data["arms"] = [a for a in data["arms"] if a["name"] in arms]
    if model is not None:
        for arm in data["arms"]:
            llm: dict[str, Any] = {"kind": "llm", "model": model}
            if base_url:
                llm["provider_settings"] = {"base_url": base_url}
            arm["agent"] = llm
    elif base_url is not None:
        raise UserInputError("--base-url needs --model PROVIDER:MODEL")
    try:
        out = Experiment.model_validate(data)
    except ValidationError as exc:
        raise UserInputError(f"invalid override: {exc.errors()[0]['msg']}") from exc
    out._origin = exp._origin
    validate_arms(out, "command line")
    return out
