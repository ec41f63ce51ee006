"""Training/evaluation examples built from catalogs and queries, and the shared prompts."""
