"""Tool-trace audits: PT2D per-tool decomposition, dilution sweeps, token-class redaction."""

from toolsense.audit.config import AuditConfig, audit_config
from toolsense.audit.run import run

__all__ = ["AuditConfig", "audit_config", "run"]
