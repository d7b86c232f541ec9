"""``dabench play``: external agents (a person, a script, an LLM-driven process) play episodes
step by step through the CLI; they are journaled, audit-checked and graded like any arm's.

:mod:`dabench.play.session` holds the operations (``start_play``, ``next_episode``,
``call_tool``, ``answer``, ``restart_platform``, ``finish_play``), :mod:`dabench.play.state`
the run directory's play state, :mod:`dabench.play.commands` the CLI. The package imports
nothing at import time, so that ``dabench`` starts fast.
"""
