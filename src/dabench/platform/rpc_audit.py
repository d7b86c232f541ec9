"""How a JSON-RPC message is named in its audit row, on either transport (no HTTP stack)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dabench.platform.admin.audit import EventKind


@dataclass
class AuditedRequest:
    """What the audit understood of one message: tool (or method), kind, arguments."""

    tool_name: str
    event_kind: EventKind = "protocol"
    parameters: dict[str, Any] = field(default_factory=dict)
    session: str | None = None
    unanswerable: bool = False
    """A request method sent as a notification (no ``id``): the SDK accepts it (HTTP 202)
    but runs nothing, so its row says ``NOTIFICATION_IGNORED``."""


def describe_message(message: Any, header_session: str | None = None) -> AuditedRequest:
    """The audit view of a parsed JSON-RPC message: its method, or for ``tools/call`` its
    tool, arguments (``session_id`` apart) and session (else ``header_session``)."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return AuditedRequest("(invalid request)", parameters={"body": message},
                              session=header_session)  # fmt: skip
    method = str(message["method"])
    request = _describe_method(method, message.get("params"), header_session)
    request.unanswerable = "id" not in message and not method.startswith("notifications/")
    return request


def _describe_method(method: str, params: Any, header_session: str | None) -> AuditedRequest:
    params = params if isinstance(params, dict) else {}
    if method != "tools/call":
        shown = {k: v for k, v in params.items() if k != "_meta"}
        return AuditedRequest(method, parameters=shown, session=header_session)
    name = params.get("name")
    arguments = params.get("arguments")
    if isinstance(arguments, dict):
        arguments = dict(arguments)
        sent = arguments.pop("session_id", None)
    else:
        arguments = {} if arguments is None else {"arguments": arguments}
        sent = None
    tool = name if isinstance(name, str) else "(no tool name)"
    kind: EventKind = "session_start" if tool == "platform_info" else "tool_call"
    session = sent if isinstance(sent, str) and sent else header_session
    return AuditedRequest(tool, kind, arguments, session if tool != "platform_info" else None)
