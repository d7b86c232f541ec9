"""Hardened YAML reading for every hand-written input file (suites, experiments, profiles).

PyYAML's safe loader still expands alias bombs, recurses into self-referencing aliases and
deeply nested collections, and lets a few malformed scalars escape as ``ValueError``. Here a
file goes through these checks, each failing as ``source:line: what was wrong``
(:class:`~dabench.errors.UserInputError`) and never as a traceback:

1. its size is at most :data:`MAX_FILE_BYTES` (checked before reading it);
2. it is strict UTF-8 without control characters;
3. a scan of the parser's events (libyaml, no tree is built) refuses tags, collections or
   aliases as mapping keys, aliases to an anchor still open (recursive), more than
   :data:`MAX_ALIASES` aliases, nesting deeper than :data:`MAX_DEPTH` and more than
   :data:`MAX_NODES` nodes once aliases are expanded;
4. the node tree is composed, duplicate keys are refused, and values are built with the safe
   constructors (a scalar they cannot build, such as ``2024-13-45``, names its line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from dabench.errors import UserInputError

MAX_FILE_BYTES = 1024 * 1024
"""Largest input file read (1 MiB; the largest shipped suite is about 33 KB)."""
MAX_DEPTH = 32
"""Deepest nesting of collections (the shipped suites nest at most 8 deep)."""
MAX_ALIASES = 100
"""Most ``*alias`` references in one file."""
MAX_NODES = 100_000
"""Most nodes (scalars and collections) in one file once every alias is expanded."""

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when available (ten times faster), with the same node marks."""
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


def _error(source: str, line: int, message: str) -> UserInputError:
    return UserInputError(f"{source}:{line}: {message}")


def read_text(path: Path) -> str:
    """A file's text: at most :data:`MAX_FILE_BYTES`, strict UTF-8, no control characters."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return decode_bytes(data, str(path))


def decode_bytes(data: bytes, source: str) -> str:
    """YAML input bytes as text: at most :data:`MAX_FILE_BYTES`, strict UTF-8 (the checks of
    :func:`read_text`, for input that is not a file)."""
    if len(data) > MAX_FILE_BYTES:
        raise _error(
            source, 1, f"file is larger than the {MAX_FILE_BYTES:,}-byte limit for YAML input"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _error(
            source,
            line,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
            "save the file as UTF-8",
        ) from exc


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, max(index, 0)) + 1


def _yaml_error(exc: yaml.YAMLError, text: str, source: str) -> UserInputError:
    if isinstance(exc, yaml.reader.ReaderError):
        line = _line_at(text, exc.position)
        return _error(source, line, f"invalid YAML: {exc.reason} (#x{exc.character:04x})")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else 1
    problem = getattr(exc, "problem", None) or str(exc)
    return _error(source, line, f"invalid YAML: {problem}")


@dataclass
class _Open:
    anchor: str | None
    is_mapping: bool
    size: int = 1
    children: int = 0

    def expects_key(self) -> bool:
        return self.is_mapping and self.children % 2 == 0


def _scan(text: str, source: str) -> None:
    """Check the event stream against the limits before any tree is built."""
    stack: list[_Open] = []
    anchors: dict[str, int] = {}
    aliases = 0

    def add(size: int, line: int) -> None:
        if stack:
            parent = stack[-1]
            parent.children += 1
            parent.size += size
            size = parent.size
        if size > MAX_NODES:
            raise _error(
                source, line, f"more than {MAX_NODES:,} YAML nodes once aliases are expanded"
            )

    for event in yaml.parse(text, Loader=_LOADER):
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if isinstance(event, yaml.CollectionEndEvent) and stack:
            done = stack.pop()
            if done.anchor is not None:
                anchors[done.anchor] = done.size
            add(done.size, line)
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _error(source, line, f"YAML tags are not allowed (found {tag!r})")
        if stack and stack[-1].expects_key() and not isinstance(event, yaml.ScalarEvent):
            raise _error(source, line, "mapping keys must be plain scalars, not aliases or lists")
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _error(source, line, f"more than {MAX_ALIASES} YAML aliases")
            name = str(event.anchor)
            if any(o.anchor == name for o in stack):
                raise _error(source, line, f"recursive alias *{name} (refers to itself)")
            if name not in anchors:
                raise _error(source, line, f"undefined alias *{name}")
            add(anchors[name], line)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                anchors[event.anchor] = 1
            add(1, line)
        else:  # a collection starts
            if len(stack) >= MAX_DEPTH:
                raise _error(source, line, f"nested deeper than {MAX_DEPTH} levels")
            stack.append(_Open(event.anchor, isinstance(event, yaml.MappingStartEvent)))


def _check_duplicate_keys(root: yaml.Node, source: str) -> None:
    seen_nodes: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                if key.value in keys:
                    raise _error(source, line_of(key), f"key {key.value!r} is given twice")
                keys.add(key.value)
                todo.append(value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)


def compose_text(text: str, source: str) -> yaml.Node | None:
    """The checked YAML node tree of ``text`` (``None`` when empty); ``source`` names it."""
    match = _NON_PRINTABLE.search(text)
    if match is not None:
        line = _line_at(text, match.start())
        code = ord(match.group())
        raise _error(source, line, f"control character U+{code:04X} is not allowed in YAML")
    try:
        _scan(text, source)
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, source) from exc
    if root is not None:
        _check_duplicate_keys(root, source)
    return root


class _Constructor(SafeConstructor):
    """The safe constructors; a scalar they cannot build becomes a marked error."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"cannot read {node.value!r:.40}: {exc}", node.start_mark
            ) from exc


def construct(node: yaml.Node, source: str) -> Any:
    """The Python value of a node from :func:`compose_text` (safe constructors only)."""
    constructor = _Constructor()
    try:
        return constructor.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, "", source) from exc


def compose_file(path: Path) -> yaml.Node | None:
    """The checked YAML node tree of a file (``None`` when empty)."""
    return compose_text(read_text(path), str(path))


def load_text(text: str, source: str) -> Any:
    """The Python value of checked YAML ``text`` (``None`` when empty)."""
    root = compose_text(text, source)
    return None if root is None else construct(root, source)


def load_file(path: Path) -> Any:
    """The Python value of a checked YAML file (``None`` when empty)."""
    return load_text(read_text(path), str(path))


def line_of(node: yaml.Node) -> int:
    """1-based line where a node starts."""
    return int(node.start_mark.line) + 1
