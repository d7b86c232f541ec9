"""Fuzz the task loader with mutated suite files and count what goes wrong.

Each file is one shipped suite (``src/dabench/suites/*.yaml``) with one seeded mutation whose
effect on validity is known by construction: ``invalid`` (the documented rules refuse it),
``valid`` (a restyled or still-correct file) or ``unknown`` (random byte flips and
truncations, for which only crashes and hangs are counted). Every file is loaded with
``load_tasks([file]).hash()`` in a worker process with a per-file time limit and an address
space cap; a file that is not done in time is a hang (the worker is killed and replaced).
A sample of files (one per mutation kind by default) also goes through the real command line,
``python -m dabench.cli tasks list --tasks FILE``, which must exit 0 or 2 and, on 2, print
``error: FILE:LINE: ...`` and no traceback. Printed figures:

- ``tracebacks``: any exception other than ``UserInputError`` (and CLI exits other than 0/2,
  or a traceback on its stderr), worker crashes included;
- ``hangs``: files past the time limit;
- ``invalid accepted``: files known to be invalid that loaded;
- also ``valid refused`` and ``unlocated`` (a refusal whose message lacks ``FILE:LINE:``).

The target is 0 for all of them. Usage::

    python benchmarks/fuzz_tasks.py [--files 2000] [--seed 13] [--jobs 2] [--timeout 10]
                                    [--mem-mb 1536] [--cli-sample 1] [--keep DIR]
    python benchmarks/fuzz_tasks.py --src OLD_CHECKOUT/src   # the same files, another loader
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import multiprocessing
import queue
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from dabench.safe_yaml import MAX_ALIASES, MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES
from dabench.tasks.loader import BUILTIN_SUITES

PH = "__FUZZ_PLACEHOLDER__"
"""A scalar put into the data, then replaced in the dumped text by a raw YAML snippet."""

DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

Mutant = tuple[bytes, str]
"""A file's bytes and its expected outcome: ``invalid``, ``valid`` or ``unknown``."""


# -- base files ------------------------------------------------------------------------------


@dataclass
class Base:
    """One shipped suite file: its text and parsed data."""

    name: str
    text: str
    data: Any

    def items(self, data: Any) -> list[dict[str, Any]]:
        """The item mappings of (a copy of) this file's data."""
        if isinstance(data, list):
            return data
        return [*data.get("tasks", []), *data.get("protocols", [])]


def dump(data: Any, rng: random.Random | None = None) -> str:
    """YAML text of ``data``; with ``rng``, in a random (still block) style."""
    if rng is None:
        return yaml.dump(data, Dumper=DUMPER, sort_keys=False, allow_unicode=True, width=1_000_000)
    return yaml.dump(
        data,
        Dumper=DUMPER,
        sort_keys=rng.random() < 0.3,
        allow_unicode=rng.random() < 0.5,
        width=rng.choice([40, 80, 200, 1_000_000]),
        indent=rng.choice([2, 4]),
        default_flow_style=rng.choice([False, None]),
    )


def placed(base: Base, rng: random.Random, snippet: str, where: str = "value") -> str:
    """The file with ``snippet`` as a field's raw YAML value (``value``) or as a raw
    ``key: value`` line inside an item (``key``)."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    if where == "key":
        item[PH] = 0
        return dump(data).replace(f"{PH}: 0", snippet, 1)
    target, key = _free_field(item, rng)
    target[key] = PH
    return dump(data).replace(PH, snippet, 1)


def _free_field(item: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str]:
    """A field that takes any structure (in a verify step's ``expect``) or a string list."""
    if "steps" in item:
        verify = [s for s in item["steps"] if s.get("kind") == "verify"]
        if verify and rng.random() < 0.7:
            return rng.choice(verify).setdefault("expect", {}), "insights"
        return item, "tags"
    return item, rng.choice(["tags", "expected_tools", "trap_classes", "rubric"])


# -- mutations ---------------------------------------------------------------------------------


def m_control(base: Base, rng: random.Random) -> Mutant:
    """The file restyled (key order, indentation, flow style, width): still valid."""
    text = base.text if rng.random() < 0.2 else dump(base.data, rng)
    return text.encode(), "valid"


def m_subset(base: Base, rng: random.Random) -> Mutant:
    """A random non-empty subset of the items: valid."""
    data = copy.deepcopy(base.data)
    items = base.items(data)
    keep = {id(i) for i in rng.sample(items, rng.randint(1, len(items)))}
    if isinstance(data, list):
        data = [i for i in data if id(i) in keep]
    else:
        data = {k: [i for i in v if id(i) in keep] for k, v in data.items()}
    return dump(data, rng).encode(), "valid"


def m_benign_alias(base: Base, rng: random.Random) -> Mutant:
    """Items sharing one tag list (anchors and aliases within the limits): valid."""
    data = copy.deepcopy(base.data)
    items = base.items(data)
    shared = [f"shared-{rng.randint(0, 99)}", "fuzz"]
    for item in rng.sample(items, min(len(items), rng.randint(2, MAX_ALIASES))):
        item["tags"] = shared
    return dump(data).encode(), "valid"


def m_edge_values(base: Base, rng: random.Random) -> Mutant:
    """Values at the edges of what is allowed: valid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    choice = rng.randrange(5)
    if choice == 0:  # a protocol's id and step names also make each step episode's id
        longest = max((len(s["name"]) + 1 for s in item.get("steps", [])), default=0)
        item["id"] = "x" * (100 - longest)
    elif choice == 1:
        item["tags"] = [" padded ", "ünïcödé ✓", "emoji \U0001f600"]
    elif choice == 2 and "grading" in item:
        item["grading"]["tolerance_rel"] = rng.choice([0.0, 0, 1e-12, 5, 1e300])
        item["grading"]["tolerance_abs"] = rng.choice([0.0, 0, 3])
    elif choice == 3 and "steps" not in item:
        item["budget"] = rng.choice([1, 200])
    else:
        nested: Any = "leaf"
        for _ in range(MAX_DEPTH - 12):
            nested = [nested]
        item["tags"] = ["t"]
        if "steps" in item:
            verify = [s for s in item["steps"] if s.get("kind") == "verify"]
            if verify:
                verify[0]["expect"] = {"insights": {"nested": nested}}
    return dump(data).encode(), "valid"


def m_non_utf8(base: Base, rng: random.Random) -> Mutant:
    """A byte sequence that is not UTF-8 inserted anywhere: invalid."""
    raw = base.text.encode()
    bad = rng.choice([b"\xff", b"\xfe", b"\xc0", b"\x80", b"\xbf", b"\xed\xa0\x80", b"\xf8"])
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + bad + raw[at:], "invalid"


def m_control_char(base: Base, rng: random.Random) -> Mutant:
    """A control character (not allowed anywhere in YAML) inserted anywhere: invalid."""
    char = chr(rng.choice([*range(0, 9), 11, 12, *range(14, 32), 127]))
    at = rng.randrange(len(base.text) + 1)
    return (base.text[:at] + char + base.text[at:]).encode(), "invalid"


def m_truncate(base: Base, rng: random.Random) -> Mutant:
    """The file cut at a random byte: validity unknown."""
    raw = base.text.encode()
    return raw[: rng.randrange(len(raw))], "unknown"


def m_byte_flip(base: Base, rng: random.Random) -> Mutant:
    """1-16 random bytes overwritten: validity unknown."""
    raw = bytearray(base.text.encode())
    for _ in range(rng.randint(1, 16)):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    return bytes(raw), "unknown"


def m_alias_bomb(base: Base, rng: random.Random) -> Mutant:
    """A billion-laughs structure (expands past the node limit) in a field: invalid."""
    while True:
        width, levels = rng.randint(4, 12), rng.randint(5, 12)
        if width**levels > MAX_NODES:
            break
    parts = [f"&b0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        parts.append(f"&b{level} [{', '.join([f'*b{level - 1}'] * width)}]")
    return placed(base, rng, "[" + ", ".join(parts) + "]").encode(), "invalid"


def m_many_aliases(base: Base, rng: random.Random) -> Mutant:
    """More aliases than the limit, each small: invalid."""
    n = rng.randint(MAX_ALIASES + 1, 4 * MAX_ALIASES)
    snippet = "[&s x, " + ", ".join(["*s"] * n) + "]"
    return placed(base, rng, snippet).encode(), "invalid"


def m_recursive_alias(base: Base, rng: random.Random) -> Mutant:
    """An alias to its own enclosing anchor: invalid."""
    snippet = rng.choice(["&r [*r]", "&r {k: *r}", "&r [a, [b, {c: *r}]]", "&r [&q [*r, *q]]"])
    return placed(base, rng, snippet).encode(), "invalid"


def m_tag(base: Base, rng: random.Random) -> Mutant:
    """An explicit YAML tag (python objects, custom, even standard ones): invalid."""
    snippet = rng.choice(
        [
            '!!python/object/apply:os.system ["true"]',
            "!!python/name:os.system",
            "!!python/object:collections.OrderedDict {}",
            "!custom x",
            "!!str x",
            "!!binary aGk=",
            "!!set {a, b}",
            "!!omap [{a: 1}]",
            "!!float 1",
            "! x",
            "[!!int 3]",
        ]
    )
    if rng.random() < 0.2:
        return ("%TAG !e! tag:example.com,2000:\n---\n" + placed(base, rng, "!e!foo x")).encode(), (
            "invalid"
        )
    return placed(base, rng, snippet).encode(), "invalid"


def m_complex_key(base: Base, rng: random.Random) -> Mutant:
    """A collection or an alias used as a mapping key: invalid."""
    snippet = rng.choice(["[a, b]: 1", "{x: 1}: 2", "[]: 1", "{}: 1"])
    if rng.random() < 0.25:
        data = copy.deepcopy(base.data)
        item = rng.choice(base.items(data))
        item["tags"] = PH
        item[PH + "K"] = 0
        text = dump(data).replace(PH + "K: 0", "*k : 1", 1).replace(PH, "[&k anchor]", 1)
        return text.encode(), "invalid"
    return placed(base, rng, snippet, where="key").encode(), "invalid"


def m_deep_nesting(base: Base, rng: random.Random) -> Mutant:
    """Collections nested past the depth limit (up to 200,000 deep): invalid."""
    depth = int(math.exp(rng.uniform(math.log(MAX_DEPTH + 1), math.log(200_000))))
    if rng.random() < 0.5:
        snippet = "[" * depth + "x" + "]" * depth
    else:
        snippet = "{a: " * depth + "x" + "}" * depth
    if rng.random() < 0.2:
        return snippet.encode(), "invalid"  # the whole file
    return placed(base, rng, snippet).encode(), "invalid"


def _graded(base: Base, rng: random.Random, data: Any) -> dict[str, Any]:
    gradings: list[dict[str, Any]] = []
    for item in base.items(data):
        if "grading" in item:
            gradings.append(item["grading"])
        gradings.extend(s["grading"] for s in item.get("steps", []) if "grading" in s)
    return rng.choice(gradings)


def m_bad_number(base: Base, rng: random.Random) -> Mutant:
    """A NaN, infinite or negative tolerance, or an out-of-range budget: invalid."""
    data = copy.deepcopy(base.data)
    if rng.random() < 0.8:
        grading = _graded(base, rng, data)
        key = rng.choice(["tolerance_rel", "tolerance_abs"])
        value = rng.choice(["nan", "inf", "-inf", "neg", "1e999", "-1e999"])
        grading[key] = PH
        raw = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}
        raw |= {"1e999": "1.0e+999", "-1e999": "-1.0e+999"}
        snippet = raw.get(value) or repr(-rng.choice([1e-9, 0.001, 0.5, 3, 1e300]))
        return dump(data).replace(PH, snippet, 1).encode(), "invalid"
    item = rng.choice(base.items(data))
    target = rng.choice(item["steps"]) if "steps" in item else item
    target["budget"] = rng.choice([0, -1, 201, 10**30])
    return dump(data).encode(), "invalid"


BLANKS = ["", " ", "\t", "   \n  ", "\u3000"]


def m_blank(base: Base, rng: random.Random) -> Mutant:
    """A blank prompt, turn, SQL, fact or list entry: invalid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    blank = rng.choice(BLANKS)
    if "steps" in item:
        step = rng.choice(item["steps"])
        key = rng.choice(["fact", "step_prompt", "step_fact", "related", "step_sql"])
        if key == "fact":
            item["fact"] = blank
        elif key == "related":
            item["related_ids"] = [*item.get("related_ids", []), blank]
        elif key == "step_sql" and "grading" in step:
            step["grading"][rng.choice(["truth_sql", "naive_sql"])] = blank
        elif key == "step_fact":
            step["fact"] = blank
        else:
            step["prompt"] = blank
    else:
        key = rng.choice(["prompt", "sql", "list"])
        if key == "prompt" and "turns" in item:
            item["turns"][rng.randrange(len(item["turns"]))] = blank
        elif key == "prompt":
            item["prompt"] = blank
        elif key == "sql":
            item["grading"][rng.choice(["truth_sql", "naive_sql"])] = blank
        else:
            field_name = rng.choice(["tags", "arms", "expected_tools", "rubric", "trap_classes"])
            item[field_name] = [*item.get(field_name, []), blank]
    return dump(data).encode(), "invalid"


def m_steps(base: Base, rng: random.Random) -> Mutant:
    """A protocol with no steps, or two steps of one name: invalid."""
    data = copy.deepcopy(base.data)
    protocols = [i for i in base.items(data) if "steps" in i]
    if not protocols:  # no protocol in this file: add one without steps
        proto = {"id": f"fuzz.p{rng.randint(0, 999)}", "fact": "A fact.", "steps": []}
        data = {"protocols": [proto]} if isinstance(data, list) else {**data, "protocols": [proto]}
        return dump(data).encode(), "invalid"
    proto = rng.choice(protocols)
    if rng.random() < 0.6:
        proto["steps"] = []
    else:
        proto["steps"].append(copy.deepcopy(rng.choice(proto["steps"])))
    return dump(data).encode(), "invalid"


BAD_IDS: list[Any] = [
    "",
    " ",
    "A",
    "Upper.case",
    "has space",
    "-lead",
    "trail-",
    "trail.",
    "a/b",
    "ä",
    "x" * 101,
    "a\nb",
    "tab\t",
    42,
    None,
    ["a"],
]


def m_bad_id(base: Base, rng: random.Random) -> Mutant:
    """An ill-formed item id or step name: invalid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    if "steps" in item and rng.random() < 0.5:
        rng.choice(item["steps"])["name"] = rng.choice(BAD_IDS)
    else:
        item["id"] = rng.choice(BAD_IDS)
    return dump(data).encode(), "invalid"


WRONG_TYPES: dict[str, list[Any]] = {
    "budget": ["30", 30.5, True, [30], {"n": 30}],
    "smoke": ["yes", 1, "true", [True]],
    "prompt": [42, 4.2, True, ["p"], {"p": 1}],
    "grading": ["numeric", ["kind"], 1],
    "tags": ["tag", 3, {"a": 1}],
    "arms": ["a3", 0],
    "suite": ["s9", "S1", 1],
    "difficulty": ["trivial", 2],
    "category": [3, "nope"],
}


def m_wrong_type(base: Base, rng: random.Random) -> Mutant:
    """A field of the wrong type or outside its allowed values: invalid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    if "steps" in item:
        choice = rng.randrange(4)
        if choice == 0:
            item["steps"] = rng.choice([{}, "teach", 3])
        elif choice == 1:
            rng.choice(item["steps"])["kind"] = rng.choice(["lecture", 1, ["episode"]])
        elif choice == 2:
            item["difficulty"] = rng.choice(WRONG_TYPES["difficulty"])
        else:
            item["fact"] = rng.choice([1, ["a"], {"b": 2}, True])
        return dump(data).encode(), "invalid"
    if rng.random() < 0.2:
        item["grading"]["kind"] = rng.choice(["exact", 1, None])
    elif rng.random() < 0.2:
        item["grading"]["tolerance_rel"] = rng.choice(["0.01", True, [0.1]])
    else:
        key = rng.choice(sorted(WRONG_TYPES))
        item[key] = rng.choice(WRONG_TYPES[key])
    return dump(data).encode(), "invalid"


def m_duplicate_key(base: Base, rng: random.Random) -> Mutant:
    """A key given twice in one mapping: invalid."""
    return placed(base, rng, rng.choice(["id: dup.key", "id: x"]), where="key").encode(), "invalid"


def m_duplicate_id(base: Base, rng: random.Random) -> Mutant:
    """An item copied (same id): invalid."""
    data = copy.deepcopy(base.data)
    items = data if isinstance(data, list) else data[rng.choice(list(data))]
    items.append(copy.deepcopy(rng.choice(items)))
    return dump(data).encode(), "invalid"


def m_unknown_field(base: Base, rng: random.Random) -> Mutant:
    """A field not in the schema: invalid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    target = item.get("grading") if "grading" in item and rng.random() < 0.3 else item
    target[rng.choice(["promt", "tolerance", "grading_kind", "Id", "notes"])] = "x"
    return dump(data).encode(), "invalid"


REQUIRED_TASK = ["id", "suite", "category", "difficulty", "grading"]
REQUIRED_PROTOCOL = ["id", "fact", "steps"]


def m_missing_field(base: Base, rng: random.Random) -> Mutant:
    """A required field removed: invalid."""
    data = copy.deepcopy(base.data)
    item = rng.choice(base.items(data))
    item.pop(rng.choice(REQUIRED_PROTOCOL if "steps" in item else REQUIRED_TASK))
    return dump(data).encode(), "invalid"


def m_multi_document(base: Base, rng: random.Random) -> Mutant:
    """A second YAML document in the file: invalid."""
    return (base.text + "\n---\n" + dump(base.data)).encode(), "invalid"


def m_huge(base: Base, rng: random.Random) -> Mutant:
    """A file past the size limit (a long comment or a long prompt): invalid."""
    size = MAX_FILE_BYTES + rng.randint(1, 3 * MAX_FILE_BYTES)
    if rng.random() < 0.5:
        pad = "# " + "x" * 78 + "\n"
        return (base.text + pad * (size // len(pad) + 1)).encode(), "invalid"
    return placed(base, rng, "[" + "y" * size + "]").encode(), "invalid"


MUTATIONS: dict[str, Callable[[Base, random.Random], Mutant]] = {
    name.removeprefix("m_"): fn for name, fn in globals().items() if name.startswith("m_")
}
"""Every mutation kind, in definition order; files cycle through them."""


def mutant(bases: list[Base], seed: int, index: int) -> tuple[str, bytes, str]:
    """The kind, bytes and expected outcome of file ``index`` (deterministic in the seed)."""
    rng = random.Random(f"{seed}:{index}")
    kind = list(MUTATIONS)[index % len(MUTATIONS)]
    raw, expect = MUTATIONS[kind](rng.choice(bases), rng)
    return kind, raw, expect


# -- loading in worker processes -----------------------------------------------------------------


def _worker(conn: Connection, mem_bytes: int, src: str | None) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    if src:  # load with another checkout's dabench (e.g. the loader before hardening)
        for name in [m for m in sys.modules if m == "dabench" or m.startswith("dabench.")]:
            del sys.modules[name]
        sys.path.insert(0, src)
    from dabench.errors import UserInputError
    from dabench.tasks.loader import load_tasks

    while True:
        path = conn.recv()
        if path is None:
            return
        started = time.perf_counter()
        try:
            load_tasks([path]).hash()
            result = ("accepted", "")
        except UserInputError as exc:
            result = ("refused", str(exc))
        except BaseException:
            result = ("traceback", traceback.format_exc(limit=-3))
        conn.send((*result, time.perf_counter() - started))


@dataclass
class Worker:
    """A loader process and the pipe to it."""

    mem_bytes: int
    src: str | None
    conn: Connection = field(init=False)
    proc: multiprocessing.Process = field(init=False)

    def __post_init__(self) -> None:
        self.start()

    def start(self) -> None:
        """Start (or restart) the process."""
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.mem_bytes, self.src), daemon=True)
        self.proc.start()
        child.close()

    def load(self, path: Path, timeout: float) -> tuple[str, str, float]:
        """Outcome (``accepted``, ``refused``, ``traceback``, ``hang``), detail, seconds."""
        started = time.perf_counter()
        self.conn.send(str(path))
        if not self.conn.poll(timeout):
            self.proc.kill()
            self.proc.join()
            self.start()
            return "hang", f"not done after {timeout:g} s", time.perf_counter() - started
        try:
            outcome, detail, seconds = self.conn.recv()
        except EOFError:
            self.proc.join()
            code = self.proc.exitcode
            self.start()
            return "traceback", f"worker died (exit {code})", time.perf_counter() - started
        return str(outcome), str(detail), float(seconds)

    def stop(self) -> None:
        """Ask the process to end and wait for it."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


# -- the command line --------------------------------------------------------------------


def run_cli(path: Path, timeout: float) -> tuple[str, str, float]:
    """Load one file through ``dabench tasks list``: outcome, detail (the error message
    without its ``error: `` prefix) and seconds."""
    cmd = [sys.executable, "-m", "dabench.cli", "tasks", "list", "--tasks", str(path)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        return "hang", "command line timed out", time.perf_counter() - started
    seconds = time.perf_counter() - started
    first = (proc.stderr.splitlines() or [""])[0]
    if "Traceback" in proc.stderr or proc.returncode not in (0, 2):
        return "traceback", f"exit {proc.returncode}: {proc.stderr[-300:]}", seconds
    if proc.returncode == 2:
        if not first.startswith("error: "):
            return "unlocated", first, seconds
        return "refused", first.removeprefix("error: "), seconds
    return "accepted", "", seconds


# -- main ------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts for one mutation kind."""

    files: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    invalid_accepted: int = 0
    valid_refused: int = 0
    unlocated: int = 0
    max_seconds: float = 0.0
    examples: list[str] = field(default_factory=list)


def main() -> int:
    """Generate, load and count; exit 1 unless tracebacks, hangs and invalid-accepted are 0."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per file")
    parser.add_argument("--mem-mb", type=int, default=1536, help="address space per worker")
    parser.add_argument("--cli-sample", type=int, default=1, help="CLI files per kind")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    parser.add_argument("--src", type=Path, help="load with the dabench package under this src/")
    parser.add_argument(
        "--quick", action="store_true", help="seconds: 20 files, 1 worker, no CLI sample"
    )
    args = parser.parse_args()
    if args.quick:
        args.files, args.jobs, args.cli_sample = 20, 1, 0

    bases = []
    for path in sorted(BUILTIN_SUITES.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        bases.append(Base(path.name, text, yaml.safe_load(text)))
    tmp = tempfile.TemporaryDirectory(prefix="fuzz-tasks-")
    out_dir = args.keep or Path(tmp.name)
    out_dir.mkdir(parents=True, exist_ok=True)

    tallies: dict[str, Tally] = defaultdict(Tally)
    cli_todo: list[tuple[str, Path, str]] = []
    if args.src:
        args.cli_sample = 0  # the command line would run the installed dabench
    cli_per_kind: Counter[str] = Counter()
    src = str(args.src) if args.src else None
    workers = [Worker(args.mem_mb * 1024 * 1024, src) for _ in range(args.jobs)]
    started = time.perf_counter()
    lock = threading.Lock()

    def one(index: int, worker: Worker) -> None:
        kind, raw, expect = mutant(bases, args.seed, index)
        path = out_dir / f"{index:05d}-{kind}.yaml"
        path.write_bytes(raw)
        outcome, detail, seconds = worker.load(path, args.timeout)
        record(kind, path, expect, outcome, detail, seconds)
        with lock:
            sample = cli_per_kind[kind] < args.cli_sample
            if sample:
                cli_per_kind[kind] += 1
                cli_todo.append((kind, path, expect))
        if not sample and not args.keep:
            path.unlink()

    def record(kind: str, path: Path, expect: str, outcome: str, detail: str, secs: float) -> None:
        with lock:
            _record(kind, path, expect, outcome, detail, secs)

    def _record(kind: str, path: Path, expect: str, outcome: str, detail: str, secs: float) -> None:
        tally = tallies[kind]
        tally.files += 1
        tally.max_seconds = max(tally.max_seconds, secs)
        if outcome == "refused" and not re.match(rf"{re.escape(str(path))}:\d+: ", detail):
            tally.unlocated += 1
            outcome = "unlocated"
        tally.outcomes[outcome] += 1
        bad = outcome in ("traceback", "hang", "unlocated")
        if expect == "invalid" and outcome == "accepted":
            tally.invalid_accepted += 1
            bad = True
        if expect == "valid" and outcome in ("refused", "unlocated"):
            tally.valid_refused += 1
            bad = True
        if bad and len(tally.examples) < 2:
            tally.examples.append(f"{path.name} ({expect}, {outcome}): {detail.strip()[-300:]}")

    with ThreadPoolExecutor(args.jobs) as pool:
        ready: queue.Queue[Worker] = queue.Queue()
        for w in workers:
            ready.put(w)

        def task(index: int) -> None:
            worker = ready.get()
            try:
                one(index, worker)
            finally:
                ready.put(worker)

        for _ in pool.map(task, range(args.files)):
            pass
    for w in workers:
        w.stop()
    load_seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    cli_counts: Counter[str] = Counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda t: (t, run_cli(t[1], args.timeout)), cli_todo))
    for (kind, path, expect), (outcome, detail, seconds) in results:
        cli_counts[outcome] += 1
        record(f"cli:{kind}", path, expect, outcome, detail, seconds)
    tmp.cleanup()

    console = Console(width=150)
    table = Table(title=f"{args.files} mutated suite files (seed {args.seed})")
    for col in ("kind", "files", "expect", "accepted", "refused", "traceback", "hang"):
        table.add_column(col, justify="left" if col in ("kind", "expect") else "right")
    for col in ("invalid accepted", "valid refused", "unlocated", "max s"):
        table.add_column(col, justify="right")
    expects = {kind: mutant(bases, args.seed, i)[2] for i, kind in enumerate(MUTATIONS)}
    totals: Counter[str] = Counter()
    for kind in [*MUTATIONS, *[f"cli:{k}" for k in MUTATIONS]]:
        if kind not in tallies:
            continue
        t = tallies[kind]
        row = {
            "files": t.files,
            "accepted": t.outcomes["accepted"],
            "refused": t.outcomes["refused"],
            "traceback": t.outcomes["traceback"],
            "hang": t.outcomes["hang"],
            "invalid accepted": t.invalid_accepted,
            "valid refused": t.valid_refused,
            "unlocated": t.unlocated,
        }
        if not kind.startswith("cli:"):
            totals.update(row)
        else:
            totals.update({f"cli {k}": v for k, v in row.items()})
        expect = expects[kind.removeprefix("cli:")]
        table.add_row(
            kind, *(str(row[c]) for c in ("files",)), expect,
            *(str(row[c]) for c in list(row)[1:]), f"{t.max_seconds:.2f}",
        )  # fmt: skip
    console.print(table)
    for kind, t in tallies.items():
        for example in t.examples:
            console.print(f"[red]{kind}[/]: {example}", soft_wrap=True)
    tracebacks = totals["traceback"] + totals["cli traceback"]
    hangs = totals["hang"] + totals["cli hang"]
    invalid = totals["invalid accepted"] + totals["cli invalid accepted"]
    console.print(
        f"loaded {args.files} files in {load_seconds:.1f} s with {args.jobs} workers "
        f"(time limit {args.timeout:g} s, address space {args.mem_mb} MB each); slowest file "
        f"{max(t.max_seconds for k, t in tallies.items() if not k.startswith('cli:')):.2f} s; "
        f"peak worker RSS "
        f"{peak_kb / 1024:.0f} MB; {sum(cli_counts.values())} files also through the CLI"
    )
    console.print(
        f"valid refused: {totals['valid refused'] + totals['cli valid refused']}; "
        f"unlocated refusals: {totals['unlocated'] + totals['cli unlocated']}"
    )
    console.print(f"tracebacks/hangs/invalid-accepted: {tracebacks}/{hangs}/{invalid}")
    return 0 if tracebacks == hangs == invalid == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
