"""Virtual-token indexes: which new tokens name each tool, their trie, and adding them to a model."""

from toolsense.index.builders import INDEX_BUILDERS, build_index
from toolsense.index.embeddings import add_index_tokens, build_trie, tool_token_ids
from toolsense.index.tool_index import ToolIndex
from toolsense.index.trie import Trie

__all__ = ["INDEX_BUILDERS", "ToolIndex", "Trie", "add_index_tokens", "build_index", "build_trie", "tool_token_ids"]
