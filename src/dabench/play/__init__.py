"""``dabench play``: external agents (a person, a script, an LLM-driven process) play episodes
step by step through the CLI; they are journaled, audit-checked and graded like any arm's.

Public API::

    start_play(run_dir, options) -> PlayState
    next_episode(run_dir, abandon=False) -> NextPrompt | None
    call_tool(run_dir, tool, arguments) -> CallResult
    answer(run_dir, text) -> AnswerResult
    finish_play(run_dir, abandon=False) -> FinishResult
"""

from dabench.play.session import (
    AnswerResult,
    CallResult,
    FinishResult,
    NextPrompt,
    PlayOptions,
    answer,
    call_tool,
    finish_play,
    next_episode,
    play_status,
    start_play,
)
from dabench.play.state import PlayState

__all__ = [
    "AnswerResult",
    "CallResult",
    "FinishResult",
    "NextPrompt",
    "PlayOptions",
    "PlayState",
    "answer",
    "call_tool",
    "finish_play",
    "next_episode",
    "play_status",
    "start_play",
]
