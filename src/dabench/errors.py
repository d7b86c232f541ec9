"""Errors that the command line reports as one clear line and exit code 2."""

from __future__ import annotations

import errno


class DabenchError(Exception):
    """A user-facing error: bad input, a missing file, an invalid configuration.

    The CLI prints ``error: <message>`` on one line and exits with code 2. The message
    names the file, line and field where it can, and what was expected.
    """

    exit_code: int = 2


class UserInputError(DabenchError):
    """Input from the user (a flag, a file, a directory) is not acceptable."""


class UnreachableError(DabenchError):
    """A server the command needs (a model provider, a target) did not answer (exit code 3:
    infrastructure, not bad input)."""

    exit_code = 3


class HarnessError(Exception):
    """An infrastructure failure during an episode (provider outage after retries, a target
    that died or timed out, a missing recording). The runner records the episode with
    ``status="harness_error"`` and this cause; it is never graded as a model failure."""

    retries: int = 0
    """Transient failures retried on the way to this error (set by the code that retried)."""


WRITE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})
"""A file the command must write cannot be: the disk, not the program, is at fault."""


def unwritable_message(exc: OSError) -> str | None:
    """``cannot write PATH: read-only file system`` for an OSError on writing a named file
    (a read-only run directory, a full disk); ``None`` for any other error."""
    if exc.errno not in WRITE_ERRNOS or exc.filename is None:
        return None
    reason = (exc.strerror or "unwritable").lower()
    return f"cannot write {exc.filename}: {reason}"
