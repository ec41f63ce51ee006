"""A study's pre-registered analysis plan: its rules (``config.py``: ``AnalysisPlan``, ``FindingRule``, the power
calculation's inputs), and its registration with the plan's hash before the data (``registration.py``). The study
(``toolsense/study/``) judges its findings under it; the plan knows nothing of findings or sweeps."""
