"""Training/evaluation examples built from catalogs and queries, and the shared prompts."""

from toolsense.data.examples import Example, to_dataset, tokenize_example
from toolsense.data.memorization import MEMORIZATION_FORMATS, MemorizationConfig, build_memorization_examples
from toolsense.data.retrieval import retrieval_examples
from toolsense.data.sources import QUERY_SOURCES, QuerySource, load_queries, load_toolgen_retrieval

__all__ = [
    "Example", "MEMORIZATION_FORMATS", "MemorizationConfig", "QUERY_SOURCES", "QuerySource",
    "build_memorization_examples", "load_queries", "load_toolgen_retrieval", "retrieval_examples",
    "to_dataset", "tokenize_example",
]
