"""Retrieval metrics and their registry: per-item functions (ranking.py), aggregates with 95%
intervals (intervals.py), the registration that gives each metric its names, aggregation and
table column (registry.py), and every registered metric over one evaluation (aggregate.py).
Stands on utils only, so evaluation, comparison and reporting all read the same registrations."""
