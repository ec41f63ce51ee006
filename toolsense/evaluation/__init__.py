"""Scoring one system: benchmarks, retrieval (constrained + free-form) and probe scoring, probe
statistics, systems beside the model (hybrids), embedding drift, fingerprints, output files and
data-parallel sharding. The metrics (Rc@k, Rf@k, IS@k, NDCG, ... and their registry) are
``toolsense.metrics``, the search ``toolsense.decoding``, the BM25 / dense rankers
``toolsense.baselines``, tables and report.html ``toolsense.reporting``; tables over many runs are
``toolsense.comparison`` and the reproduction study ``toolsense.study``. See ARCHITECTURE.md for
the rooms and the import direction."""
