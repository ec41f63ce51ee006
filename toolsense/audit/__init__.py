"""Tool-trace audits: PT2D per-tool decomposition, dilution sweeps, token-class redaction.

The names below load on first use (``utils/lazy.py``): importing ``toolsense.audit.config`` loads no torch.
``run`` names a module and its function: once ``toolsense.audit.run`` was imported as a module,
``toolsense.audit.run`` is that module, so code that may run after it imports the function from
``toolsense.audit.run`` itself."""

from typing import TYPE_CHECKING

from toolsense.utils.lazy import lazy_exports

if TYPE_CHECKING:
    from toolsense.audit.config import AuditConfig, audit_config, register_configs
    from toolsense.audit.run import run, sweep_metric

__getattr__, __dir__ = lazy_exports(__name__, {
    "config": ["AuditConfig", "audit_config", "register_configs"],
    "run": ["run", "sweep_metric"],
})

__all__ = ["AuditConfig", "audit_config", "register_configs", "run", "sweep_metric"]
