"""The ``kibana`` target kind: Elastic Agent Builder's converse API (see docs/targets.md).

Importing this package registers the kind.
"""

from dabench.targets.kibana.client import KibanaClient
from dabench.targets.kibana.retrying import KibanaRetryPolicy, retry_rule
from dabench.targets.kibana.target import (
    KibanaAgentDefinition,
    KibanaSession,
    KibanaTarget,
    KibanaTargetConfig,
    KibanaToolDefinition,
)
from dabench.targets.kibana.wire import ConverseRound, StreamAccumulator, ToolStep

__all__ = [
    "ConverseRound",
    "KibanaAgentDefinition",
    "KibanaClient",
    "KibanaRetryPolicy",
    "KibanaSession",
    "KibanaTarget",
    "KibanaTargetConfig",
    "KibanaToolDefinition",
    "StreamAccumulator",
    "ToolStep",
    "retry_rule",
]
