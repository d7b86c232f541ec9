"""Lazy names: a package's public API and a registry's built-in kinds, imported on first use.

A package ``__init__`` that re-exports from heavy submodules (DuckDB, numpy, the MCP SDK)
would make every ``import dabench.<package>.<anything>`` pay for them, the CLI's ``--help``
included. Instead it declares where each name lives::

    __getattr__ = lazy_exports(__name__, {"dabench.world.build": ["build_world"]})

and keeps the real imports under ``if TYPE_CHECKING:`` for the type checker.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def load_ref(ref: str) -> Any:
    """The object a ``"package.module:attr"`` string names."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"{ref!r}: expected 'package.module:attr'")
    return getattr(importlib.import_module(module), attr)


def lazy_exports(package: str, modules: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name from its module on first access
    (``modules``: module -> the names it provides) and caches it on the package."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
