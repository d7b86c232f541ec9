"""Targets: what an agent talks to (the reference platform, any MCP server, ...).

Public API (import from the modules; this package stays import-light)::

    dabench.targets.base       Target, TargetSession, TargetContext, ToolOutcome, ToolConnection
    dabench.targets.registry   register_target(kind, ConfigModel, factory), make_target(raw, ctx),
                               validate_target_config(raw), KindRegistry
    dabench.targets.reference  ReferenceTarget (kind "reference"), ReferenceTargetConfig
    dabench.targets.mcp        McpTarget (kind "mcp"), McpTargetConfig
    dabench.targets.audit      AuditReaderConfig, read_audit_http, check_audit
"""
