"""Tool-trace audits: PT2D per-tool decomposition, dilution sweeps, token-class redaction."""

from toolsense.audit.config import AuditConfig, audit_config, register_configs
from toolsense.audit.run import run, sweep_metric

__all__ = ["AuditConfig", "audit_config", "register_configs", "run", "sweep_metric"]
