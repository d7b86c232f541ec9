"""Synchronous twins of coroutine functions, so an async API and its blocking form share one
signature instead of repeating its parameter list."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def blocking(
    coroutine_function: Callable[P, Coroutine[Any, Any, R]], *, name: str, doc: str
) -> Callable[P, R]:
    """A function named ``name`` that runs ``coroutine_function`` to completion with
    :func:`asyncio.run` (so it must not be called from inside a running event loop)."""

    @functools.wraps(coroutine_function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(coroutine_function(*args, **kwargs))

    run.__name__ = run.__qualname__ = name
    run.__doc__ = doc
    return run
