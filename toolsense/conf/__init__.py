"""The configs every job composes (Hydra's ``pkg://toolsense.conf``): one YAML per job, one folder per group.

A package, so that Hydra finds it by import wherever toolsense is installed (toolsense/utils/compose.py).
"""
