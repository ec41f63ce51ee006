"""The reporting tests read evaluations of the tiny run the evaluation tests build."""

from tests.evaluation.conftest import tiny_run  # noqa: F401  (a session fixture)
