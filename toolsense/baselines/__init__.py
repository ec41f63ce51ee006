"""Non-parametric rankers beside the parametric model: BM25, dense and OpenAI-embedding retrieval
over the tools' text (``rankers.py``: the ``BASELINES`` registry) and their config section
(``config.py``: ``BaselineConfig``). Systems that combine them with the model live in
``evaluation/systems.py``."""
