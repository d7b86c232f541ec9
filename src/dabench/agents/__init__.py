"""Agents: turn a task into tool calls on a target and answers.

Public API (import from the modules; this package stays import-light)::

    dabench.agents.base      Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
    dabench.agents.registry  register_agent(kind, ConfigModel, factory), make_agent(raw, ctx)
    dabench.agents.llm       LlmAgent (kind "llm"), FINAL_ANSWER_PROTOCOL
    dabench.agents.oracle    OracleAgent (kind "oracle"), render_answer, read_result
    dabench.agents.replay    ReplayAgent (kind "replay")
"""
