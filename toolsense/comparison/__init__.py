"""Many runs from their results files: run discovery (runs.py), the ablation table (compare.py;
``python compare.py``), its cells pooled over seeds (cell_stats.py), item-clustered statistics and
Fleiss' kappa (stats.py), significance (significance.py), plots (plots.py), and blind rater sheets
with their agreement (annotate.py; ``python annotate.py``)."""
