"""Virtual-token indexes: which new tokens name each tool (``builders.py``, a registry;
``tool_index.py``), adding them to a model's vocabulary (``vocabulary.py``) and the prefix trie
of their token ids (``trie.py``, the one trie; its tensor form is ``toolsense.decoding``'s).

The names below load on first use (``utils/lazy.py``): importing ``toolsense.index.config`` loads no torch."""

from typing import TYPE_CHECKING

from toolsense.utils.lazy import lazy_exports

if TYPE_CHECKING:
    from toolsense.index.builders import INDEX_BUILDERS, build_index
    from toolsense.index.tool_index import ToolIndex
    from toolsense.index.trie import Trie, build_trie
    from toolsense.index.vocabulary import add_index_tokens, tool_token_ids

__getattr__, __dir__ = lazy_exports(__name__, {
    "builders": ["INDEX_BUILDERS", "build_index"],
    "tool_index": ["ToolIndex"],
    "trie": ["Trie", "build_trie"],
    "vocabulary": ["add_index_tokens", "tool_token_ids"],
})

__all__ = ["INDEX_BUILDERS", "ToolIndex", "Trie", "add_index_tokens", "build_index", "build_trie", "tool_token_ids"]
