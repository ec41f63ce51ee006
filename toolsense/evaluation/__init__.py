"""Scoring what a model retrieves: benchmarks, metrics + bootstrap CIs (Rc@k, Rf@k, IS@k, NDCG),
MCQ/QA probes, BM25/dense baselines, embedding drift, fingerprints, outputs and data-parallel
sharding. The search itself (trie tensors, beam search, the Retriever) is ``toolsense.decoding``;
the trie is ``toolsense.index.trie``. See ARCHITECTURE.md for the rooms and the import direction."""
