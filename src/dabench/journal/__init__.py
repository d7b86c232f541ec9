"""The episode journal: run manifests, episodes and grades as they are written to disk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.journal.records": [
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
        ],
    },
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
