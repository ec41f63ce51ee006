"""Tool catalogs: the typed Tool record, the Catalog, loaders and queries."""

from toolsense.catalog import (
    study_toolbench,  # noqa: E402,F401  (registers ``study_tools_tb``)
    study_tools,  # noqa: E402,F401  (registers the ``study_tools`` catalog builder)
    toolbench,  # noqa: E402,F401  (registers the ``toolbench`` catalog builder)
)
from toolsense.catalog.catalog import Catalog
from toolsense.catalog.loaders import (
    load_catalog,
    load_demo_catalog,
    load_toolbench_api_list,
    load_toolsense,
    load_virtual_tokens,
)
from toolsense.catalog.queries import Query, load_demo_queries, load_query_jsonl, load_toolbench_queries
from toolsense.catalog.tool import Tool, canonical_name, split_name
from toolsense.utils.io import DataError

__all__ = [
    "Catalog", "DataError", "Query", "Tool", "canonical_name", "split_name",
    "load_catalog", "load_demo_catalog", "load_toolbench_api_list", "load_toolsense",
    "load_virtual_tokens", "load_query_jsonl", "load_toolbench_queries", "load_demo_queries",
]
