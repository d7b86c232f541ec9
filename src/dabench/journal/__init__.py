"""The episode journal: run manifests, episodes and grades as they are written to disk."""

from dabench.journal.records import (
    AuditCheck,
    Episode,
    EpisodeStatus,
    Grade,
    GradeCheck,
    Message,
    RunManifest,
    StepRecord,
    TokenUsage,
    ToolCall,
    episode_key,
)

__all__ = [
    "AuditCheck",
    "Episode",
    "EpisodeStatus",
    "Grade",
    "GradeCheck",
    "Message",
    "RunManifest",
    "StepRecord",
    "TokenUsage",
    "ToolCall",
    "episode_key",
]
