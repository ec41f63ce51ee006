"""The reproduction report (docs/reproduction.md): the paper's findings beside a study's results.

sweep.py reads one sweep's results into a comparison with the lookups the findings need;
findings.py computes the seven findings; report.py renders the Markdown and writes the files.
"""

from toolsense.study.findings import FINDINGS
from toolsense.study.report import load_sweeps, study_findings, write_report
from toolsense.study.sweep import Finding, Sweep

__all__ = ["FINDINGS", "Finding", "Sweep", "load_sweeps", "study_findings", "write_report"]
