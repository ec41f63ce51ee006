"""Interop with other evaluation tools that needs a scored system's pieces: the MCQ / QA probes as
lm-evaluation-harness tasks (lmeval.py). File formats that need nothing of evaluation (TREC runs,
BEIR folders, report.html) live in reporting/."""
